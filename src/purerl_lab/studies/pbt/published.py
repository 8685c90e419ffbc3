"""The PBT study's published document, docs/results/pbt.md: PBT against random search and the preset's
hyperparameters, a part per task. It has no authors' code: pbt.md states its differences from Jaderberg et al.'s
paper itself."""

from __future__ import annotations

from purerl_lab.publish.catalog import TRAINING, Study
from purerl_lab.studies.pbt.fingerprint import pbt_study_part


# 10 repetitions x 8 members each: Pendulum-v1 at half its preset's budget (240 updates, 491,520 steps per member),
# Acrobot-v1 at its preset's own 500,000, sized to finish on 2 CPU cores (benchmarks/README.md, "What the published
# studies' budgets cost").
_PBT = "purerl pbt-study --seeds 8 --repetitions 10 --runs-dir {runs}/pbt --report docs/results/pbt.md --no-progress"
_SOURCES = ("purerl/run/pbt.py", "purerl/run/pbt_config.py", "purerl/run/pbt_files.py", "purerl/run/policy.py",
            "purerl_lab/studies/pbt/design.py")

_TASKS = (("Pendulum-v1", " --total-timesteps 491520"), ("Acrobot-v1", ""))
_FRESH = " --fresh-seeds"  # each task's replication (part fresh_ENV): the same command on fresh seeds


def _part_commands(study: Study, part: str) -> list[str]:
    """Part ENV is made by the command on ENV, part fresh_ENV by that command with --fresh-seeds."""
    env = part.removeprefix("fresh_")
    fresh = part != env
    return [c for c in study.commands if f" --env {env} " in f"{c} " and c.endswith(_FRESH) == fresh]


STUDY = Study(
    "pbt", "pbt.md", TRAINING + _SOURCES + ("purerl_lab/studies/pbt/report.py",),
    (*(env for env, _ in _TASKS), *(f"fresh_{env}" for env, _ in _TASKS)),
    (*(f"{_PBT} --env {env}{budget}" for env, budget in _TASKS),
     *(f"{_PBT} --env {env}{budget}{_FRESH}" for env, budget in _TASKS)),
    render="purerl_lab.studies.pbt.report:write_report",
    fingerprint=pbt_study_part, part_commands=_part_commands, cost=4.0, resumes=(("purerl pbt-study", "always"),),
)
