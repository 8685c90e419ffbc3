"""Evolution strategies over whole training runs, on evosax 0.3.

A *meta-task* is a template pytree of meta-parameters and a pure
`fitness(key, meta_params) -> scalar` (higher is better), usually one PPO
training run with a meta-parameterised hook. Each generation evaluates
population x rollouts in one compiled, vmapped program (optionally in chunks of
`max_parallel` candidates), tells evosax the negated fitness (evosax
minimises), and checkpoints the ES state, so the same command resumes after a
kill and ends with exactly the same ES mean.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from evosax import algorithms as es_algorithms
from evosax.core import fitness_shaping as es_shaping
from flax import serialization

from purerl import results, rundir
from purerl.checkpoint import Checkpointer
from purerl.config import MAX_DIMENSION, ConfigError
from purerl.evolve_files import (BEST_PARAMS, MEAN_PARAMS, GenerationBar, fitness_row, plot_fitness, read_log,
                                 write_log)
from purerl.population import Placement, barrier, batched, is_writer
from purerl.stopping import StopRequested, graceful_stop, tell

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
FITNESS_KINDS = ("final", "auc")



class MetaTask(NamedTuple):
    """What to evolve: a template of the meta-parameters, their initial mean, and a fitness to maximise."""

    name: str
    template: Any
    fitness: Callable[[jax.Array, Any], jax.Array]
    info: dict  # recorded in config.json (for example which fitness kind is used)
    cpu_group: int = 0  # inner training runs one CPU device runs at a time (its config's cpu_group)


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


def train_fitness(train, hp, kind: str, final_window: int = results.FINAL_WINDOW):
    """`fitness(key, meta_params)` from a `train` function: final return, or mean return over training (AUC)."""
    if kind not in FITNESS_KINDS:
        raise ConfigError(f"unknown fitness '{kind}'; choose from {', '.join(FITNESS_KINDS)}")

    def fitness(key, meta_params):
        returns = train(key, hp, meta_params).metrics["episode_return"]
        window = returns[-final_window:] if kind == "final" else returns
        return jnp.nanmean(window)

    return fitness


class Evolution:
    """The ES loop for one meta-task; `run` writes the run directory."""

    def __init__(self, task: MetaTask, config: ESConfig, initial_mean: Any | None = None,
                 memory_budget_bytes: float | None = None):
        config.validate()
        self.task, self.config = task, config
        self.initial_mean = task.template if initial_mean is None else initial_mean
        self.strategy, self.params = make_strategy(config, task.template)
        self.placement = Placement()
        per_candidate = jax.vmap(task.fitness, in_axes=(0, None))  # rollouts of one candidate
        candidates_per_group = max(1, task.cpu_group // config.rollouts) if task.cpu_group else 0
        self._evaluate = batched(lambda meta, keys: per_candidate(keys, meta).mean(), self.placement,
                                 num_shared_args=1, cpu_group=candidates_per_group)
        self.chunk = self._chunk_size(memory_budget_bytes)

    def _chunk_size(self, memory_budget_bytes: float | None) -> int:
        """Candidates per compiled call: `max_parallel`, else what fits the memory budget, else all."""
        size = self.config.population_size
        if self.config.max_parallel:
            return min(self.config.max_parallel, size)
        if memory_budget_bytes is None:
            return size
        per_device = memory_per_candidate(self)  # measured on a one-candidate-per-device program
        fits = int(memory_budget_bytes // per_device) * self.placement.num_devices
        return max(self.placement.num_devices, min(size, fits))

    def evaluate(self, key: jax.Array, population: Any) -> np.ndarray:
        """Fitness of every candidate; the same rollout keys for all (common random numbers).

        The population is evaluated `self.chunk` candidates per call, each call sharded over the
        devices; chunking and sharding change memory use, not results.
        """
        keys = jax.random.split(key, self.config.rollouts)
        size = self.config.population_size
        chunk = self.placement.padded(self.chunk)
        out = []
        for start in range(0, size, chunk):
            part = jax.tree.map(lambda x: np.asarray(x[start : start + chunk]), population)
            count = jax.tree.leaves(part)[0].shape[0]
            if count < chunk:  # pad the last chunk so every call has one compiled shape
                part = jax.tree.map(lambda x: np.concatenate([x, np.repeat(x[-1:], chunk - count, 0)]), part)
            fitness = self._evaluate(self.placement.put(part), keys)
            out.append(self.placement.get(fitness, count))
        return np.concatenate(out)

    def init_state(self):
        return self.strategy.init(jax.random.PRNGKey(self.config.seed), self.initial_mean, self.params)

    def generation(self, state, index: int) -> tuple[Any, dict[str, float], np.ndarray, Any | None]:
        """One generation: ask, evaluate, repair bad fitness, tell. Deterministic in (seed, index).

        The row logs the raw fitness the task defines, over the candidates where it is finite. A generation with
        no finite fitness leaves the ES state as it was and has no best candidate (None).
        """
        key = jax.random.fold_in(jax.random.PRNGKey(self.config.seed), index)
        ask_key, eval_key, tell_key = jax.random.split(key, 3)
        tick = time.perf_counter()
        population, state = self.strategy.ask(ask_key, state, self.params)
        fitness = np.asarray(self.evaluate(eval_key, population), np.float64)
        repaired, bad = repair_fitness(fitness)
        if bad < fitness.size:
            state, _ = self.strategy.tell(tell_key, population, jnp.asarray(-repaired), state, self.params)
            if not all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(self.mean(state))):
                raise ESDiverged(f"the {self.config.strategy} mean became non-finite at generation {index}; "
                                 "lower --lr or --std")
        jax.block_until_ready(state)
        row = fitness_row(index, fitness, time.perf_counter() - tick)
        best = None if bad == fitness.size else jax.tree.map(lambda x: x[int(np.nanargmax(fitness))], population)
        return state, row, fitness, best

    def mean(self, state) -> Any:
        return self.strategy.get_mean(state)


def memory_per_candidate(evolution: Evolution) -> float:
    """Bytes one candidate needs on a device, from XLA's memory analysis of the compiled evaluation."""
    placement = evolution.placement
    probe = jax.tree.map(lambda x: np.repeat(np.asarray(x)[None], placement.num_devices, 0), evolution.task.template)
    keys = jax.random.split(jax.random.PRNGKey(0), evolution.config.rollouts)
    compiled = evolution._evaluate.lower(placement.put(probe), keys).compile()
    analysis = compiled.memory_analysis()
    total = (analysis.temp_size_in_bytes + analysis.argument_size_in_bytes + analysis.output_size_in_bytes)
    return float(max(total, 1))


class ESDiverged(ConfigError):
    """The ES state itself became non-finite: its settings, not one candidate, failed."""


def repair_fitness(fitness: np.ndarray) -> tuple[np.ndarray, int]:
    """NaN or infinite fitness gets the generation's worst finite fitness (0 if none is finite)."""
    fitness = np.asarray(fitness, np.float64)
    finite = np.isfinite(fitness)
    worst = fitness[finite].min() if finite.any() else 0.0
    return np.where(finite, fitness, worst), int((~finite).sum())


def run(
    evolution: Evolution,
    out: Path,
    config_json: dict,
    resume: bool | str = False,
    overwrite: bool = False,
    progress: bool = True,
    stop_after: int | None = None,
) -> list[dict]:
    """Run (or, with `resume`, continue) the ES into `out`; returns the per-generation log.

    `resume="auto"` continues the run in `out` if there is one, else starts it: rerunning a script continues.

    Every generation is checkpointed; on SIGINT/SIGTERM the run stops after the current generation
    and raises `stopping.StopRequested`. The run-directory rules are `rundir.prepare`'s.
    """
    out = Path(out)
    resumed = rundir.prepare(out, config_json, resume, overwrite)
    writer = is_writer()
    barrier("purerl-evolve-prepared")  # every process has checked `out` before process 0 writes to it
    if writer:
        rundir.start(out, config_json, resumed)
    barrier("purerl-evolve-started")
    cfg = evolution.config
    checkpointer = Checkpointer(out / results.CHECKPOINT)
    state = evolution.init_state()
    best_params, best_fitness, log = evolution.initial_mean, -np.inf, []
    start = 0
    if resumed and checkpointer.latest() is not None:
        saved, progress = checkpointer.restore({"es_state": state, "best_params": best_params})
        start = progress["step"]
        state, best_params = saved["es_state"], saved["best_params"]
        log = read_log(out)[:start]
        best_fitness = max((row["best"] for row in log if np.isfinite(row["best"])), default=-np.inf)

    with GenerationBar(progress and writer, cfg.generations, start) as bar, graceful_stop() as stop_signal:
        for index in range(start, cfg.generations):
            state, row, _, best = evolution.generation(state, index)
            if best is None and writer:
                tell(f"purerl: generation {index}: no candidate had a finite fitness; the ES state is unchanged")
            if best is not None and row["best"] > best_fitness:
                best_fitness, best_params = row["best"], best
            log.append(row)
            if writer:
                write_log(out, log)
                checkpointer.save(index + 1, {"es_state": state, "best_params": best_params})
            bar.advance(row)
            if stop_signal.requested and index + 1 < cfg.generations:
                checkpointer.close()
                raise StopRequested(stop_signal.requested, index + 1, cfg.generations, saved=writer)
            if stop_after is not None and index + 1 >= stop_after:
                break
    checkpointer.close()
    if writer and not np.isfinite(best_fitness):
        tell(f"purerl: no generation had a finite fitness; {BEST_PARAMS} holds the initial mean")
    if writer:
        results.write_atomic(out / MEAN_PARAMS, serialization.to_bytes(evolution.mean(state)))
        results.write_atomic(out / BEST_PARAMS, serialization.to_bytes(best_params))
        plot_fitness(out, log, evolution.task.name)
    return log


def config_json(task: MetaTask, config: ESConfig, extra: dict | None = None) -> dict:
    """What identifies an evolve run. `max_parallel` is left out: it changes memory use, not results."""
    es = dataclasses.asdict(config)
    es.pop("max_parallel")
    return {"command": "evolve", "task": task.name, "task_info": task.info, "es": es, **(extra or {})}
