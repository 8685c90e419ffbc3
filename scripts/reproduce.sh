#!/usr/bin/env bash
# Regenerates docs/results/ at HEAD, end to end through the CLI: every registered study, or the named ones
# (scripts/reproduce.sh dpo act). The commands come from the study registry (purerl results --commands);
# each one records its part of a document in docs/results/manifest.json. Run it on a clean commit: parts
# made from uncommitted source are marked dirty and stay stale. Scratch run directories go to $RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
PURERL=${PURERL:-purerl}
RUNS=${RUNS:-runs/reproduce-$(date -u +%Y%m%d-%H%M%S)}
if [ -n "$(git status --porcelain -- src pyproject.toml)" ]; then
  echo "reproduce.sh: uncommitted changes under src/ or pyproject.toml; commit first" >&2
  exit 2
fi
commands=$($PURERL results --commands "$@" --runs-dir "$RUNS")
while IFS= read -r command; do
  echo "+ $command"
  start=$(date +%s)
  eval "${command/#purerl/$PURERL}"
  echo "  ($(( $(date +%s) - start )) s)"
done <<< "$commands"
$PURERL results --check || true
