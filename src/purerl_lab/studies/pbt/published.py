"""The PBT study's published document, docs/results/pbt.md: PBT against random search and the preset's
hyperparameters, a part per task. It has no authors' code: pbt.md states its differences from Jaderberg et al.'s
paper itself."""

from __future__ import annotations

from purerl_lab.publish.catalog import FRESH, TRAINING, Study, by_env
from purerl_lab.publish.replication import fresh_part
from purerl_lab.studies.pbt.fingerprint import pbt_study_part


# 10 repetitions x 8 members each: Pendulum-v1 at half its preset's budget (240 updates, 491,520 steps per member),
# Acrobot-v1 at its preset's own 500,000, sized to finish on 2 CPU cores (benchmarks/README.md, "What the published
# studies' budgets cost").
_PBT = "purerl pbt-study --seeds 8 --repetitions 10 --runs-dir {runs}/pbt --report docs/results/pbt.md --no-progress"
_SOURCES = ("purerl/run/pbt.py", "purerl/run/pbt_config.py", "purerl/run/pbt_files.py", "purerl/run/policy.py",
            "purerl_lab/studies/pbt/design.py")

_TASKS = (("Pendulum-v1", " --total-timesteps 491520"), ("Acrobot-v1", ""))
# each task's replication (part fresh_ENV): the same command with --fresh-seeds (`publish.replication`)

STUDY = Study(
    "pbt", "pbt.md", TRAINING + _SOURCES + ("purerl_lab/studies/pbt/report.py",),
    (*(env for env, _ in _TASKS), *(fresh_part(env) for env, _ in _TASKS)),
    (*(f"{_PBT} --env {env}{budget}" for env, budget in _TASKS),
     *(f"{_PBT} --env {env}{budget} {FRESH}" for env, budget in _TASKS)),
    render="purerl_lab.studies.pbt.report:write_report",
    fingerprint=pbt_study_part, part_commands=by_env, cost=4.0, resumes=(("purerl pbt-study", "always"),),
)
