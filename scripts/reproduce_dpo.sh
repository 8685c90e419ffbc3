#!/usr/bin/env bash
# Regenerates docs/results/dpo.md (PPO vs DPO at CPU budgets); the commands are the registry's.
exec "$(dirname "$0")/reproduce.sh" dpo
