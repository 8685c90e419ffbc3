"""Algorithms side by side at the same env steps (SAC's learning curve beside PPO's on Brax,
docs/results/offpolicy.md).

`design.py` says what each algorithm trains and how the curves are compared (the numbers); `report.py` writes the
document; `cli.py` is `purerl versus`. This package imports nothing heavy, so `purerl --help` stays fast.
"""
