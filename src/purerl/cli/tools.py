"""`purerl plot | summary`: finished runs compared side by side."""

from __future__ import annotations

import argparse

from purerl.cli.args import path


def add_runs(sub) -> None:
    """`purerl plot` and `purerl summary`: compare finished runs."""
    for name, help_text in (("plot", "runs (and their grid settings) as IQM curves, one panel per env; a 95%% "
                                     "bootstrap band from 10 seeds, single seeds below"),
                            ("summary", "one table of the final returns of runs, with 95%% CIs from 10 seeds")):
        compare_runs = sub.add_parser(name, help=help_text)
        compare_runs.add_argument("runs", nargs="+", type=path, metavar="RUN", help="purerl train run directories")
        if name == "plot":
            compare_runs.add_argument("--out", type=path, required=True, metavar="FILE.png")
            compare_runs.add_argument("--metric", default="episode_return", help="a metrics.csv column (default return)")
            compare_runs.add_argument("--pbt", action="store_true", help="instead, one PBT run's hyperparameter "
                                      "schedules and the lineage of its final best member")
        compare_runs.set_defaults(run=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    from purerl.run import side_by_side

    return side_by_side.main(args)
