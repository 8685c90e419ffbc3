#!/usr/bin/env bash
# One CartPole agent on one pinned core under each XLA:CPU option, in fresh processes, ROUNDS rounds of every
# option in turn (benchmarks/README.md, "XLA:CPU options for one agent"). Run it on an idle machine.
# Run directories go to a new temporary folder, printed at the start.
set -euo pipefail
PURERL=${PURERL:-purerl}
OUT=$(mktemp -d -t purerl-xla-flags-XXXX)
echo "runs in $OUT"
OPTIONS=(
  ""
  "--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"
  "--xla_cpu_experimental_xnn_fusion_type=LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"
  "--xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY"
  "--xla_cpu_opt_preset=CPU_OPT_PRESET_FAST_RUNTIME"
  "--xla_cpu_scheduler_type=CPU_SCHEDULER_TYPE_CONCURRENCY_OPTIMIZED"
  "--xla_cpu_enable_fast_math=true"
  "--xla_cpu_prefer_vector_width=512 --xla_cpu_enable_fast_math=true"
  "--xla_cpu_use_fusion_emitters=false"
)
for round in $(seq 1 "${ROUNDS:-2}"); do
  for i in "${!OPTIONS[@]}"; do
    line=$(XLA_FLAGS="${OPTIONS[$i]}" taskset -c 0 "$PURERL" train --seeds 1 --no-progress \
      --total-timesteps "${STEPS:-1048576}" --out "$OUT/option$i-round$round" 2>&1 | grep 'env steps/s' || true)
    echo "round $round [${OPTIONS[$i]:-none}] ${line:-failed}"
  done
done
