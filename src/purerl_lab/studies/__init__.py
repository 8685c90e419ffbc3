"""Case studies: thin layers on the library's algorithms and ES loop, each owning its games, environments and
networks: LPO/DPO (`lpo.py`, with `compare.py` and `lpo_report.py`, objectives compared on identical seeds), the
value loss, M-FOS, ACT, PBT and algorithms side by side. The meta-tasks among them (value-loss, lpo) reach
`purerl evolve` through the `purerl.meta_tasks` entry points in pyproject.toml (`purerl.meta.tasks`)."""
