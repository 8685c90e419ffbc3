"""Which evosax strategy an evolve run uses, and how: its settings (`ESConfig`), the fitness shapings each
strategy is sound under, and the optimiser and standard-deviation schedules. `evolve` runs what this builds."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import optax
from evosax import algorithms as es_algorithms
from evosax.core import fitness_shaping as es_shaping

from purerl.checks import MAX_DIMENSION, ConfigError

STRATEGIES = {
    "open_es": es_algorithms.Open_ES,
    "snes": es_algorithms.SNES,
    "cma_es": es_algorithms.CMA_ES,
    "sep_cma_es": es_algorithms.Sep_CMA_ES,
    "pgpe": es_algorithms.PGPE,
    "xnes": es_algorithms.xNES,
    "simple_es": es_algorithms.SimpleES,
}
# Open-ES and PGPE step along a gradient estimate of the shaped fitness, so any of these shapings is sound for
# them. The other strategies recombine candidates with their own rank weights (CMA-ES's recombination weights,
# the NES utilities) and their updates assume exactly those weights: under another shaping they climb the
# wrong way or diverge, so they take only their own, named OWN_WEIGHTS.
SHAPING = {
    "centered_rank": es_shaping.centered_rank_fitness_shaping_fn,
    "z_score": es_shaping.standardize_fitness_shaping_fn,
    "none": es_shaping.identity_fitness_shaping_fn,
}
GRADIENT_STRATEGIES = ("open_es", "pgpe")
OWN_WEIGHTS = "rank_weights"


def shapings(strategy: str) -> tuple[str, ...]:
    """The fitness shapings `strategy` is sound under; the first is its default."""
    return tuple(SHAPING) if strategy in GRADIENT_STRATEGIES else (OWN_WEIGHTS,)


OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}


@dataclass(frozen=True)
class ESConfig:
    """The evolution strategy: which evosax strategy, its population and schedule (fields: `ES_DESCRIPTIONS`)."""

    strategy: str = "open_es"
    population_size: int = 16
    generations: int = 20
    rollouts: int = 1  # independent training runs (seeds) per candidate, averaged
    fitness_shaping: str | None = None  # None or "default": the strategy's own (`shapings(strategy)[0]`)
    optimizer: str = "adam"
    lr: float = 0.01
    lr_final: float | None = None  # exponential decay from lr to lr_final over the generations
    std: float = 0.04
    std_final: float | None = None  # exponential decay from std to std_final (Open-ES)
    seed: int = 0
    max_parallel: int | None = None  # candidates per compiled evaluation call; None = all

    def __post_init__(self):
        if self.fitness_shaping in (None, "default") and self.strategy in STRATEGIES:  # recorded by its name
            object.__setattr__(self, "fitness_shaping", shapings(self.strategy)[0])

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy '{self.strategy}'; choose from {', '.join(STRATEGIES)}")
        sound = shapings(self.strategy)
        if self.fitness_shaping not in sound:
            known = self.fitness_shaping in (*SHAPING, OWN_WEIGHTS)
            why = (f"{self.strategy} recombines candidates with its own rank weights" if known
                   else f"unknown fitness shaping '{self.fitness_shaping}'")
            raise ConfigError(f"{why}; --fitness-shaping for {self.strategy} must be {' or '.join(sound)}"
                              + ("" if known else " (or default)"))
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"unknown optimizer '{self.optimizer}'; choose from {', '.join(OPTIMIZERS)}")
        for name in ("population_size", "generations", "rollouts"):
            if not 0 < getattr(self, name) <= MAX_DIMENSION:
                raise ConfigError(f"{name.replace('_', '-')} must be in [1, {MAX_DIMENSION:,}], got {getattr(self, name)}")
        if not 0 <= self.seed < 2**32:
            raise ConfigError(f"seed must be in [0, {2**32 - 1}], got {self.seed}")
        if self.strategy == "open_es" and self.population_size % 2:
            raise ConfigError(f"open_es samples antithetic pairs: population-size must be even, got {self.population_size}")
        for name in ("lr", "std", "lr_final", "std_final"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name.replace('_', '-')} must be > 0, got {value:g}")
        if self.max_parallel is not None and self.max_parallel <= 0:
            raise ConfigError(f"max-parallel must be positive, got {self.max_parallel}")


# What each ESConfig field means: the API reference's table and `purerl evolve --help` read it.
ES_DESCRIPTIONS = {
    "strategy": f"evosax strategy: {', '.join(STRATEGIES)}",
    "population_size": "candidates per generation (open_es: even, antithetic pairs)",
    "generations": "generations",
    "rollouts": "training runs (seeds) per candidate, averaged; the same seeds for every candidate",
    "fitness_shaping": "open_es, pgpe: centered_rank (their default), z_score or none; the others rank_weights "
                       "(their own); None: the strategy's default",
    "optimizer": "the ES mean's optimiser: adam or sgd",
    "lr": "the ES mean's learning rate",
    "lr_final": "exponential decay from lr to this over the generations (None: constant)",
    "std": "the search distribution's std",
    "std_final": "exponential decay from std to this over the generations (None: constant; open_es)",
    "seed": "the ES seed (its candidates and the training seeds it draws)",
    "max_parallel": "candidates per compiled evaluation call, for memory (None: all at once; same results)",
}

# The OpenES settings of the 2022 meta-RL papers (LPO, ACT, M-FOS): Adam, lr 0.01 to 0.001, std 0.04 to 0.01.
ES_PRESETS = {
    "paper-openes": dict(strategy="open_es", optimizer="adam", lr=0.01, lr_final=0.001, std=0.04, std_final=0.01,
                         fitness_shaping="z_score"),
}


def _decay(start: float, final: float | None, generations: int):
    if final is None or generations <= 1:
        return optax.constant_schedule(start)
    return optax.exponential_decay(start, transition_steps=generations - 1, decay_rate=final / start)


def make_strategy(config: ESConfig, template: Any):
    """An evosax strategy from a name; options it does not take are left out."""
    cls = STRATEGIES[config.strategy]
    accepted = inspect.signature(cls.__init__).parameters
    options = {
        "optimizer": OPTIMIZERS[config.optimizer](_decay(config.lr, config.lr_final, config.generations)),
        "std_schedule": _decay(config.std, config.std_final, config.generations),
    }
    if config.fitness_shaping in SHAPING:  # otherwise the strategy's own rank weights
        options["fitness_shaping_fn"] = SHAPING[config.fitness_shaping]
    kwargs = {k: v for k, v in options.items() if k in accepted}
    strategy = cls(population_size=config.population_size, solution=template, **kwargs)
    params = strategy.default_params
    if hasattr(params, "std_init"):
        params = params.replace(std_init=jnp.asarray(config.std, jnp.float32))
    return strategy, params
