"""What the PBT study trains, selects and evaluates: PBT, random search and the defaults at equal budgets.

Issue 55's study (docs/results/pbt.md). Each method trains R independent repetitions; a repetition is a
population of N members on seeds of its own, so PBT's rounds act within one repetition and never across
them. The methods share the program and the budget: random search is PBT with no rounds (`PBTConfig`'s
`fraction=0`, the same priors, and on the same seeds the same first draws as PBT), and the default is the
preset's values for every member. Each repetition keeps its best member by its final training return (the
rule PBT itself ranks on) and that member is evaluated greedily on fresh episodes; the R evaluated returns
per method are the published sample. The study replicates itself (`--fresh-seeds`): the same design again on
seeds from `replication.FRESH_SEED_START` on, and on evaluation episodes of their own, in run folders and a record
of their own.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from purerl import stats
from purerl.checks import ConfigError
from purerl.run import files, pbt_files, results
from purerl.run.pbt_config import PBTConfig
from purerl.run.trainspec import TrainSpec
from purerl_lab.publish import replication

METHODS = {"pbt": "PBT", "random": "random search", "default": "preset defaults"}  # run-folder name: label
EVAL_SEED = 20_240_555  # the fresh episodes' key: apart from every training seed's stream


@dataclass(frozen=True)
class Design:
    """What one task's comparison trains: `base` gives the env, preset, budget and repetition 0's seeds (its
    population); `pbt` PBT's settings (random search is them with fraction 0)."""

    base: TrainSpec
    repetitions: int
    pbt: PBTConfig
    episodes: int
    fresh: bool = False  # the study's replication: base seeds from FRESH_SEED_START (`with_fresh_seeds`)

    def validate(self) -> None:
        if not isinstance(self.repetitions, int) or self.repetitions < 1:
            raise ConfigError(f"--repetitions must be a positive integer, got {self.repetitions}")
        if not isinstance(self.episodes, int) or self.episodes < 1:
            raise ConfigError(f"--episodes must be a positive integer, got {self.episodes}")
        if self.base.grid:
            raise ConfigError("the study compares methods of choosing hyperparameters: give single values")
        if self.pbt.search:
            raise ConfigError("--pbt-fraction 0 is random search, which the study runs beside PBT; give PBT's "
                              "fraction in (0, 0.5]")
        for method in METHODS:
            self.spec(method, self.repetitions - 1).validate()

    def with_fresh_seeds(self) -> "Design":
        """The replication of this design: every seed moved past every seed a study of ours trains on."""
        moved = dataclasses.replace(self.base, seeds=replication.fresh_seeds(self.base.seeds))
        return dataclasses.replace(self, base=moved, fresh=True)

    def seeds(self, repetition: int) -> list[int]:
        """Repetition r's members: the base seeds shifted by r populations, so no two repetitions share one."""
        size = len(self.base.seeds)
        return [seed + repetition * size for seed in self.base.seeds]

    def spec(self, method: str, repetition: int) -> TrainSpec:
        """One repetition of one method as a `purerl train` run."""
        pbt = {"pbt": self.pbt, "random": dataclasses.replace(self.pbt, fraction=0.0), "default": None}[method]
        return dataclasses.replace(self.base, seeds=self.seeds(repetition), pbt=pbt)

    def episodes_key(self, repetition: int) -> jax.Array:
        """The repetition's evaluation episodes, the same for every method, and apart from every training seed's
        stream; a replication's (its first seed 70,000) are its own."""
        return jax.random.fold_in(jax.random.PRNGKey(EVAL_SEED), self.base.seeds[0] + repetition)

    @property
    def part(self) -> str:
        """Its part of pbt.md: the env, or fresh_ENV for its replication."""
        return replication.fresh_part(self.base.config.env) if self.fresh else self.base.config.env

    def run_dir(self, runs_dir: Path, method: str, repetition: int) -> Path:
        folder = replication.run_folder(files.slug(self.base.config.env), self.fresh)
        return Path(runs_dir) / folder / f"{method}-rep{repetition}"

    @property
    def env_steps_per_member(self) -> int:
        return self.base.config.env_steps


def selected(run: Path) -> dict:
    """The repetition's best member by final training return, and its training curve (population mean)."""
    curve = results.read_member_metric(run)  # [updates, members]
    final = results.final_returns(curve)
    best = pbt_files.best_member(final)
    with warnings.catch_warnings():  # an update where no member's episode ended is NaN, as in metrics.csv
        warnings.simplefilter("ignore", RuntimeWarning)
        population = np.nanmean(curve, axis=1)
    return {"member": best, "final_return": float(final[best]), "population_curve": population}


def evaluate_best(run: Path, member: int, episodes: int, key: jax.Array) -> tuple[float, dict]:
    """The member's greedy return over `episodes` fresh episodes drawn from `key` (`policy.evaluate`; every method
    of a repetition gets the same key, `Design.episodes_key`), and the hyperparameters it ended with."""
    from purerl.run.checkpoint import Checkpointer
    from purerl.run.policy import evaluate, load_run
    from purerl.run import pbt, rundir

    spec, members, train, state = load_run(run)
    hp = jax.tree.map(lambda x: x[member], members.hyperparams.as_arrays())
    if spec.pbt is not None:  # the values it ended with, from the population's checkpoint
        checkpointer = Checkpointer(run / rundir.CHECKPOINT)
        population, _ = checkpointer.restore(pbt.like(train, members, spec.pbt))
        checkpointer.close()
        hp = jax.tree.map(lambda x: x[member], population.hp)
    pick = lambda tree: jax.tree.map(lambda x: x[member], tree)  # noqa: E731
    returns = jax.jit(lambda p, s, h: evaluate(train, p, s, key, episodes, False, h))(
        pick(state.params), pick(state.obs_stats), hp)
    return float(np.mean(np.asarray(returns))), {k: float(v) for k, v in hp._asdict().items()}


def summarize(design: Design, rows: dict[str, list[dict]]) -> dict:
    """The task's record: per method, each repetition's selection and evaluation, and their statistics."""
    cfg = design.base.config
    methods = {}
    for method, reps in rows.items():
        methods[method] = {
            "label": METHODS[method],
            "evaluated_return": stats.summarize([r["evaluated_return"] for r in reps]),
            "selected_final_training_return": stats.summarize([r["final_return"] for r in reps]),
            "repetitions": [{k: v for k, v in r.items() if k != "population_curve"} for r in reps],
        }
    return {
        "env": cfg.env, "fresh_seeds": design.fresh, "preset": design.base.preset, "algo": design.base.algo,
        "members": len(design.base.seeds), "repetitions": design.repetitions,
        "seeds": [s for r in range(design.repetitions) for s in design.seeds(r)],
        "env_steps_per_member": design.env_steps_per_member, "num_updates": cfg.num_updates,
        "batch_size": cfg.batch_size, "episodes": design.episodes,
        "defaults": {k: float(v) for k, v in design.base.hyperparams._asdict().items()},
        "pbt": design.pbt.to_json(), "methods": methods,
    }

