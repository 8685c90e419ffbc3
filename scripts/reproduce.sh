#!/usr/bin/env bash
# Regenerates docs/results/ at HEAD, end to end through the CLI: every registered study, or the named ones
# (scripts/reproduce.sh dpo act). The commands come from the study registry (purerl results --commands);
# each one records its part of a document in docs/results/manifest.json. Run it on a clean commit: parts
# made from uncommitted source are marked dirty and stay stale. Scratch run directories go to $RUNS.
# Stopped (Ctrl-C, SIGTERM, a failure), it prints how to continue: the same command with the same RUNS
# continues every long run from its checkpoint and starts the ones that had not begun.
set -uo pipefail
cd "$(dirname "$0")/.."
PURERL=${PURERL:-purerl}
RUNS=${RUNS:-runs/reproduce-$(date -u +%Y%m%d-%H%M%S)}
if [ -n "$(git status --porcelain -- src pyproject.toml)" ]; then
  echo "reproduce.sh: uncommitted changes under src/ or pyproject.toml; commit first" >&2
  exit 2
fi
commands=$($PURERL results --commands "$@" --runs-dir "$RUNS" --resume) || exit 2
while IFS= read -r command; do
  echo "+ $command"
  start=$(date +%s)
  eval "${command/#purerl/$PURERL}" < /dev/null
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "reproduce.sh: stopped (exit $rc); continue with: RUNS=$RUNS $0 $*" >&2
    exit $rc
  fi
  echo "  ($(( $(date +%s) - start )) s)"
done <<< "$commands"
$PURERL results --check --mark || true
