"""What `purerl versus` trains and how it reads the curves: every algorithm at its own registered preset for the
env's family, on the same seeds and the same env steps per run, its episode return read at shared env-step marks.

Updates differ in size between algorithms (PPO's brax preset steps 2048 envs x 10 steps, 20,480 env steps, per
update; SAC's 16 x 64, 1,024), so curves are compared by env steps, never by update. The return at a mark is each
seed's mean over the updates that end in the `window` env steps before it, a window as wide for every algorithm:
`results.FINAL_WINDOW` updates of the algorithm with the largest ones. At the end of the budget that is that
algorithm's own final return, as `purerl train` reports it; an algorithm with smaller updates averages more of them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from purerl import stats
from purerl.config import ConfigError
from purerl.run import results
from purerl.run.trainspec import TrainSpec

MARKS = (0.25, 0.5, 0.75, 1.0)  # fractions of the budget at which the curves are read


@dataclass(frozen=True)
class Design:
    """The runs compared: one `TrainSpec` per algorithm (by name, in the order given), on the same env and seeds."""

    specs: dict[str, TrainSpec]

    def validate(self) -> None:
        """Every check that can fail on the flags, before anything compiles."""
        for algo, spec in self.specs.items():
            if spec.grid:
                raise ConfigError("versus compares algorithms at one setting each; give single values")
            spec.validate()
        budgets = {algo: env_steps(spec) for algo, spec in self.specs.items()}
        if len(set(budgets.values())) > 1:
            unit = math.lcm(*(spec.config.batch_size for spec in self.specs.values()))
            given = ", ".join(f"{algo} {steps:,}" for algo, steps in budgets.items())
            raise ConfigError(f"the algorithms would run different env steps per run ({given}: each rounds up to "
                              f"whole updates); give --total-timesteps as a multiple of {unit:,}")
        need = math.ceil(1 / MARKS[0])
        for algo, spec in self.specs.items():
            if spec.config.num_updates < need:
                raise ConfigError(f"--total-timesteps gives {algo} {spec.config.num_updates} update(s); the first mark "
                                  f"({MARKS[0]:.0%} of the budget) needs at least {need} "
                                  f"(--total-timesteps {need * spec.config.batch_size:,} or more)")

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
        return env_steps(self.first)

    @property
    def window(self) -> int:
        """The env steps a mark's return averages over, the same for every algorithm."""
        return results.FINAL_WINDOW * max(spec.config.batch_size for spec in self.specs.values())

    @property
    def marks(self) -> list[int]:
        return [round(fraction * self.env_steps_per_run) for fraction in MARKS]


def env_steps(spec: TrainSpec) -> int:
    return spec.config.env_steps


def return_at(curve: np.ndarray, steps_per_update: int, mark: int, window: int) -> np.ndarray:
    """Per seed, the mean episode return of the updates that end in (mark - window, mark] env steps, the last
    finite value carried over updates where no episode ended (as `results.final_returns`); NaN for a seed none of
    whose episodes had ended by the mark. `curve` is [updates, seeds]."""
    ends = (np.arange(curve.shape[0]) + 1) * steps_per_update
    rows = stats.forward_fill(curve)[(ends > mark - window) & (ends <= mark)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(rows, axis=0)


def at_marks(design: Design, curves: dict[str, np.ndarray]) -> dict[str, list[dict]]:
    """Per algorithm and mark: `stats.summarize` of the seeds that had finished an episode by then (None if none
    had) and how many had not (`missing`)."""
    out = {}
    for algo, curve in curves.items():
        out[algo] = []
        for mark in design.marks:
            values = return_at(curve, design.specs[algo].config.batch_size, mark, design.window)
            finite = values[np.isfinite(values)]
            out[algo].append({"mark": mark, "return": stats.summarize(finite) if finite.size else None,
                              "missing": int(values.size - finite.size)})
    return out


def verdict(a: dict | None, b: dict | None, name_a: str, name_b: str) -> str:
    """A against B at one mark: ahead or behind only where both 95% CIs are valid and separate."""
    if a is None or b is None:
        return f"{stats.NOT_DISTINGUISHABLE} (no episode had ended)"
    sign = stats.separation(a, b)
    if sign:
        return f"{name_a} {'ahead of' if sign > 0 else 'behind'} {name_b} (the 95% CIs separate)"
    why = ("the 95% CIs overlap" if a["ci_valid"] and b["ci_valid"] else
           f"no CI: fewer than {stats.MIN_SEEDS_FOR_CI} seeds with an ended episode")
    return f"{stats.NOT_DISTINGUISHABLE} ({why})"
