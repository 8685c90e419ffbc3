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
    run="$OUT/option$i-round$round"
    log=$(XLA_FLAGS="${OPTIONS[$i]}" taskset -c 0 "$PURERL" train --seeds 1 --no-progress \
      --total-timesteps "${STEPS:-1048576}" --out "$run" 2>&1 || true)
    if line=$(grep 'env steps/s' <<< "$log"); then
      # the metrics.csv column: the same numbers as this round's run without options, to the bit?
      cmp -s "$OUT/option0-round$round/metrics.csv" "$run/metrics.csv" && same=identical || same=differs
      echo "round $round [${OPTIONS[$i]:-none}] $line; metrics.csv $same"
    else
      echo "round $round [${OPTIONS[$i]:-none}] failed: $(tail -n 1 <<< "$log")"
    fi
  done
done
