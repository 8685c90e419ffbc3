#!/usr/bin/env bash
# Before a lent GPU's one call: what the device machine lacks, in two git-ignored folders of this
# checkout that the call carries. The machine has no network; its image holds jax 0.11.2 with CUDA, flax, optax,
# orbax-checkpoint, chex, scipy, matplotlib, seaborn and rich on Python 3.12 (the device tool's KINDS.md), not
# gymnax and evosax, nor what PureJaxRL's ppo.py needs beyond them.
#   .whl/             wheels for that Python: gymnax, gymnasium, evosax and PureJaxRL's distrax with its needs
#   .peer/purejaxrl/  a checkout of PureJaxRL at 31756b1, the commit docs/benchmarks.md's peer rows name
# Usage: bash benchmarks/gpu_prepare.sh PUREJAXRL_GIT_DIR   (a clone or mirror of luchris429/purejaxrl)
# Then one call, with carry [".whl", ".peer"] (benchmarks/README.md, "PPO's GPU levers", has the command).
set -euo pipefail
cd "$(dirname "$0")/.."
source_repo=${1:?"usage: $0 PUREJAXRL_GIT_DIR"}
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for path in /.whl/ /.peer/; do
  grep -qxF "$path" "$exclude" 2>/dev/null || echo "$path" >> "$exclude"
done
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
  platforms+=(--platform "$p")
done
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .whl \
  gymnax==1.0.1 gymnasium==1.3.0 farama-notifications==0.0.6 evosax==0.3.2 \
  distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 dm-tree==0.1.10 decorator gast dotmap
peer=.peer/purejaxrl  # a checkout, so that the peer's record names its commit
if [ ! -e "$peer" ]; then
  mkdir -p .peer && git clone -q "$source_repo" "$peer" && git -C "$peer" checkout -q --detach 31756b1
elif [ "$(git -C "$peer" rev-parse --short=7 HEAD 2>/dev/null)" != 31756b1 ]; then
  echo "gpu_prepare.sh: $peer exists and is not a PureJaxRL checkout at 31756b1; move it away first" >&2
  exit 2
fi
du -sh .whl .peer
