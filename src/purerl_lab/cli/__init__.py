"""The lab's commands on `purerl`'s command line: the studies' (compare, analyze, act, mfos, pbt-study, versus),
`results` and `bench`. `add_commands` is the `purerl.commands` entry point (pyproject.toml); every command that
trains and checkpoints is marked `graceful`, so that it hears SIGINT/SIGTERM from its first line."""

from __future__ import annotations

from purerl_lab.cli import analyze, compare, tools

TRAINING = ("compare", "act", "mfos", "analyze", "pbt-study", "versus")


def add_commands(sub) -> None:
    compare.add_compare(sub)
    analyze.add_act(sub)
    tools.add_bench(sub)
    from purerl_lab.studies.mfos import cli as mfos

    mfos.add_arguments(sub)
    sub.choices["mfos"].set_defaults(run=mfos.run_cli)
    from purerl_lab.studies.pbt import cli as pbt_study

    pbt_study.add_arguments(sub)
    from purerl_lab.studies.versus import cli as versus

    versus.add_arguments(sub)
    analyze.add_analyze(sub)
    tools.add_results(sub)
    for name in TRAINING:
        sub.choices[name].set_defaults(graceful=True)
