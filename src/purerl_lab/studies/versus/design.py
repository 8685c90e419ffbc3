"""What `purerl versus` trains and how it scores it: every algorithm at its own registered preset for the env's
family, on the same seeds and the same env steps per run, each member's policy evaluated at shared env-step marks
(`evaluation.py`: fresh episodes of the whole time limit, greedy and sampled), and its training curve read there
too.

Updates differ in size between algorithms (PPO's brax preset steps 2048 envs x 10 steps, 20,480 env steps, per
update; SAC's 16 x 64, 1,024), so curves are compared by env steps, never by update, and the budget is a whole
number of every algorithm's updates at every mark. A training curve's return at a mark is each seed's mean over the
updates that end in the `window` env steps before it, a window as wide for every algorithm: `results.FINAL_WINDOW`
updates of the algorithm with the largest ones. It is censored where an env has not yet taken a time limit's steps
(`censored_below`), so only the evaluations carry verdicts.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from purerl import stats
from purerl.checks import ConfigError
from purerl.run import results
from purerl.run.trainspec import TrainSpec

MARKS = (0.25, 0.5, 0.75, 1.0)  # fractions of the budget at which the curves are read


@dataclass(frozen=True)
class Design:
    """The runs compared: one `TrainSpec` per algorithm (by name, in the order given), on the same env and seeds."""

    specs: dict[str, TrainSpec]
    episodes: int = 16  # evaluation episodes per member and mark, in each mode

    def validate(self) -> None:
        """Every check that can fail on the flags, before anything compiles."""
        if not isinstance(self.episodes, int) or self.episodes < 1:
            raise ConfigError(f"--episodes must be a positive integer, got {self.episodes}")
        for algo, spec in self.specs.items():
            if spec.grid:
                raise ConfigError("versus compares algorithms at one setting each; give single values")
            spec.validate()
        budgets = {algo: spec.config.env_steps for algo, spec in self.specs.items()}
        unit = len(MARKS) * math.lcm(*(spec.config.batch_size for spec in self.specs.values()))
        if len(set(budgets.values())) > 1:
            given = ", ".join(f"{algo} {steps:,}" for algo, steps in budgets.items())
            raise ConfigError(f"the algorithms would run different env steps per run ({given}: each rounds up to "
                              f"whole updates); give --total-timesteps as a multiple of {unit:,}")
        need = math.ceil(1 / MARKS[0])
        for algo, spec in self.specs.items():
            if spec.config.num_updates < need:
                raise ConfigError(f"--total-timesteps gives {algo} {spec.config.num_updates} update(s); the first mark "
                                  f"({MARKS[0]:.0%} of the budget) needs at least {need} "
                                  f"(--total-timesteps {need * spec.config.batch_size:,} or more)")
        if self.env_steps_per_run % unit:
            raise ConfigError(f"every mark ({', '.join(f'{m:.0%}' for m in MARKS)} of the budget) must end a whole "
                              f"update of each algorithm, where it is evaluated; give --total-timesteps as a "
                              f"multiple of {unit:,}")

    @property
    def first(self) -> TrainSpec:
        return next(iter(self.specs.values()))

    @property
    def env(self) -> str:
        return self.first.config.env

    @property
    def seeds(self) -> list[int]:
        return list(self.first.seeds)

    @property
    def env_steps_per_run(self) -> int:
        return self.first.config.env_steps

    @property
    def window(self) -> int:
        """The env steps a mark's return averages over, the same for every algorithm."""
        return results.FINAL_WINDOW * max(spec.config.batch_size for spec in self.specs.values())

    @property
    def marks(self) -> list[int]:
        return [round(fraction * self.env_steps_per_run) for fraction in MARKS]

    def mark_updates(self, algo: str) -> list[int]:
        """The updates after which `algo`'s members are evaluated: those that end at the marks."""
        return [mark // self.specs[algo].config.batch_size for mark in self.marks]


def return_at(curve: np.ndarray, steps_per_update: int, mark: int, window: int) -> np.ndarray:
    """Per seed, the mean episode return of the updates that end in (mark - window, mark] env steps, the last
    finite value carried over updates where no episode ended (as `results.final_returns`); NaN for a seed none of
    whose episodes had ended by the mark. `curve` is [updates, seeds]."""
    ends = (np.arange(curve.shape[0]) + 1) * steps_per_update
    rows = stats.forward_fill(curve)[(ends > mark - window) & (ends <= mark)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(rows, axis=0)


def censored_below(mark: int, num_envs: int, time_limit: int) -> int | None:
    """The episode length no training episode ended by `mark` can have reached, when that is short of the time
    limit: each of `num_envs` envs has taken mark / num_envs steps in all. None when nothing is censored."""
    steps = mark // num_envs
    return steps if steps < time_limit else None


def at_marks(design: Design, curves: dict[str, np.ndarray], time_limit: int) -> dict[str, list[dict]]:
    """Per algorithm and mark, from the training curves: `stats.summarize` of the seeds that had finished an
    episode by then (None if none had), how many had not (`missing`), and the censoring (`censored_below`)."""
    out = {}
    for algo, curve in curves.items():
        out[algo] = []
        cfg = design.specs[algo].config
        for mark in design.marks:
            values = return_at(curve, cfg.batch_size, mark, design.window)
            finite = values[np.isfinite(values)]
            out[algo].append({"mark": mark, "return": stats.summarize(finite) if finite.size else None,
                              "missing": int(values.size - finite.size),
                              "censored_below": censored_below(mark, cfg.num_envs, time_limit)})
    return out


def evaluated_at_marks(design: Design, evaluations: dict[str, dict[str, np.ndarray]]) -> dict[str, dict]:
    """Per algorithm and mode (greedy, sampled), per mark: `stats.summarize` over seeds of each seed's mean
    evaluation return. `evaluations[algo][mode]` is [marks, seeds]."""
    return {algo: {mode: [{"mark": mark, "return": stats.summarize(row)} for mark, row in zip(design.marks, rows)]
                   for mode, rows in modes.items()}
            for algo, modes in evaluations.items()}


def verdict(a: dict, b: dict, name_a: str, name_b: str) -> str:
    """A against B at one mark: ahead or behind only where both 95% CIs are valid and separate."""
    sign = stats.separation(a, b)
    if sign:
        return f"{name_a} {'ahead of' if sign > 0 else 'behind'} {name_b} (the 95% CIs separate)"
    why = stats.no_ci_reason(a, b) or "the 95% CIs overlap"
    return f"{stats.NOT_DISTINGUISHABLE} ({why})"
