#!/usr/bin/env bash
# The 2-core CPU benchmark, each command one side-by-side run that regenerates its section of docs/benchmarks.md:
#   CartPole 1, 8, 64 seeds vs SB3, rejax and PureJaxRL's own ppo.py; Breakout-MinAtar 8 seeds vs PureJaxRL;
#   DQN and PQN on CartPole at 1, 8, 64 seeds vs rejax's DQN and PQN; meta-evolution throughput (value-loss study,
#   CPU preset); and, each process pinned to one core (--cores 1), CartPole 1 and 64 seeds and Breakout-MinAtar 8 seeds
#   vs PureJaxRL: the per-core figures, since a peer's one device may still use both cores in threads.
# PUREJAXRL=PATH is a checkout of luchris429/purejaxrl (without it that peer is skipped, with its reason).
# PEERS (default sb3,rejax), CARTPOLE_STEPS (default 500000), MINATAR_STEPS (default 1048576) and VALUE_STEPS (DQN
# and PQN, default 100000: at 64 seeds PQN's 256-256 network runs about 30k steps/s here) shorten a run
# on a busy machine; both sides of every ratio always run the same steps.
set -euo pipefail
purerl="${PURERL:-purerl}"
pjr=()
if [ -n "${PUREJAXRL:-}" ]; then pjr=(--purejaxrl "$PUREJAXRL"); fi
"$purerl" bench --task cartpole --seeds 1,8,64 --total-timesteps "${CARTPOLE_STEPS:-500000}" --repeats "${REPEATS:-3}" \
    --peers "${PEERS:-sb3,rejax}" "${pjr[@]}"
"$purerl" bench --task minatar --seeds 8 --total-timesteps "${MINATAR_STEPS:-1048576}" --repeats "${REPEATS:-3}" \
    --peers none "${pjr[@]}"
if [ -n "${PUREJAXRL:-}" ]; then
    "$purerl" bench --task cartpole --seeds 1,64 --total-timesteps "${CARTPOLE_STEPS:-500000}" --repeats "${REPEATS:-3}" \
        --peers none --cores 1 "${pjr[@]}"
    "$purerl" bench --task minatar --seeds 8 --total-timesteps "${MINATAR_STEPS:-1048576}" --repeats "${REPEATS:-3}" \
        --peers none --cores 1 "${pjr[@]}"
fi
for algo in dqn pqn; do
    "$purerl" bench --task "$algo" --seeds 1,8,64 --total-timesteps "${VALUE_STEPS:-100000}" --repeats "${REPEATS:-3}" \
        --peers rejax
done
"$purerl" bench --task evolve --preset cpu --repeats "${REPEATS:-3}"
