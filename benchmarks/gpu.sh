#!/usr/bin/env bash
# One GPU: CartPole at 1..2048 agents and MinAtar at 1..256, beside PureJaxRL's own ppo.py when PUREJAXRL names a
# checkout of luchris429/purejaxrl; then each paper preset for a few generations (memory and speed).
# rejax and SB3 need a network to build their venvs; name them in PEERS to add them.
set -euo pipefail
peer=()
if [ -n "${PUREJAXRL:-}" ]; then peer=(--purejaxrl "$PUREJAXRL"); fi
"${PURERL:-purerl}" bench --task all --preset gpu --peers "${PEERS:-none}" --repeats 1 ${peer[@]+"${peer[@]}"} "$@"
"${PYTHON:-python3}" -m purerl_lab.bench.gpu paper-presets
"${PURERL:-purerl}" bench --task gpu-levers ${peer[@]+"${peer[@]}"}
