"""The DPO/LPO study (arXiv 2210.05639): the LPO meta-task (`lpo.py`: a drift evolved over whole PPO runs, and its
analysis), policy objectives compared on identical seeds (`compare.py`, `purerl compare`), the LPO section of its
report (`lpo_report.py`), and its published document (`published.py`, `fingerprint.py`)."""
