"""PBT against random search and the preset's hyperparameters (docs/results/pbt.md).

`design.py` says what each method trains, selects and evaluates; `report.py` writes the document; `cli.py` is
`purerl pbt-study`. This package imports nothing heavy, so `purerl --help` stays fast.
"""
