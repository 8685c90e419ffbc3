"""The tuned-L2 baseline: L2 at the value coefficient that trains best on the evolutions' own training runs.

A learned loss that beats PPO's L2 may only have found a better scale, which a grid over the value-loss
coefficient finds as well. `tune` trains L2 at every coefficient of `GRID`, on the keys the evolutions' fitness
trained on (never a held-out seed) and at their budget, as one population, and `choose` takes the coefficient
with the highest mean fitness (the evolution's own: mean return over training). Where that is the grid's first or
last coefficient, the grid grows past it a factor 2 at a time (`EXTEND` at most), so that the baseline is not tuned
only as far as a fixed grid happens to reach. The choice is made before any held-out run and recorded with the
numbers behind it, so `tuned_l2` had the same chance to fit these runs that the learned loss had.
"""

from __future__ import annotations

import numpy as np

from purerl import stats
from purerl.algos.objectives import l2
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import ConfigError
from purerl.meta.evolve import training_keys
from purerl.meta.strategies import ESConfig
from purerl_lab.studies import value_loss

GRID = tuple(0.5 * 2.0**k for k in range(-6, 2))  # log-spaced, a factor 2 apart around PPO's 0.5: 1/128 to 1
RUNS = 128  # training keys per coefficient
EXTEND = 3  # coefficients a tuning may add past an edge of its grid where the best lies there


def tuning_keys(es_settings: list[dict], runs: int) -> np.ndarray:
    """The first `runs` training keys of the evolutions (their config.json's "es"), generation by generation and
    ES seed by ES seed. Runs of two loss forms at one ES seed trained on the same keys, so each seed counts once."""
    per_seed: dict[tuple[int, int], np.ndarray] = {}
    for es in es_settings:
        config = ESConfig(**es)
        keys = training_keys(config).reshape(config.generations, config.rollouts, 2)
        held = per_seed.get((config.seed, config.rollouts))
        if held is None or len(held) < len(keys):
            per_seed[(config.seed, config.rollouts)] = keys
    ordered = [per_seed[seed] for seed in sorted(per_seed)]
    keys = [row for generation in range(max(len(k) for k in ordered))
            for seed_keys in ordered if generation < len(seed_keys) for row in seed_keys[generation]]
    if len(keys) < runs:
        raise ConfigError(f"the evolutions trained on {len(keys)} keys; tuning L2 on {runs} needs more")
    return np.stack(keys[:runs])


def tune(config: PPOConfig, keys: np.ndarray, grid: tuple[float, ...], extend: int = EXTEND) -> dict:
    """L2 at every value coefficient of `grid`, on every key, as one population, then past an edge where the best
    lies (`extend_past_edges`); `choose` picks one. The record's `grid` is every coefficient trained, `start_grid`
    the one asked for."""
    def fitness_of(coefficients: tuple[float, ...]) -> np.ndarray:
        count = len(coefficients) * len(keys)
        hyperparams = HyperParams(*(np.full(count, value, np.float32) for value in HyperParams()))
        hyperparams = hyperparams._replace(vf_coef=np.repeat(np.asarray(coefficients, np.float32), len(keys)))
        returns = value_loss.returns_of(l2, None, config, np.tile(keys, (len(coefficients), 1)),
                                        hyperparams.as_arrays())
        return value_loss.fitness_per_seed(returns)["auc"].reshape(len(coefficients), len(keys))

    tried, fitness = extend_past_edges(tuple(grid), fitness_of, extend)
    return choose(tried, fitness) | {"start_grid": [float(c) for c in grid], "runs": len(keys),
                                     "total_timesteps": config.total_timesteps}


def extend_past_edges(grid: tuple[float, ...], fitness_of, extend: int) -> tuple[tuple[float, ...], np.ndarray]:
    """`fitness_of(grid)` ([coefficients, runs]), then while the best mean lies at the first or last coefficient,
    one more a factor 2 past it, up to `extend` more: every coefficient tried, ascending, and its fitness rows."""
    tried, fitness = list(grid), list(np.asarray(fitness_of(grid)))
    for _ in range(extend):
        best = choose(tuple(tried), np.asarray(fitness))["vf_coef"]
        if best not in (tried[0], tried[-1]):
            break
        beyond = best / 2 if best == tried[0] else best * 2
        row = np.asarray(fitness_of((beyond,)))[0]
        tried, fitness = (([beyond] + tried, [row] + fitness) if best == tried[0]
                          else (tried + [beyond], fitness + [row]))
    return tuple(tried), np.asarray(fitness)


def choose(grid: tuple[float, ...], fitness: np.ndarray) -> dict:
    """The coefficient with the highest mean fitness over the runs (fitness [coefficients, runs]; a coefficient
    with a NaN run cannot win, as a NaN candidate cannot in evolution), with each coefficient's summary."""
    means = np.mean(np.asarray(fitness, np.float64), axis=1)
    if not np.isfinite(means).any():
        raise ConfigError("no value coefficient gave a finite fitness on every tuning run")
    best = int(np.nanargmax(np.where(np.isfinite(means), means, np.nan)))
    summaries = [{k: v for k, v in stats.summarize(row).items() if k != "values"} for row in fitness]
    return {"grid": [float(c) for c in grid], "mean_fitness": [float(m) for m in means],
            "summaries": summaries, "vf_coef": float(grid[best])}
