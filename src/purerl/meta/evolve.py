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
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from purerl.algos import loop, memory
from purerl.meta.strategies import ESConfig, make_strategy
from purerl.run.checkpoint import Checkpointer
from purerl.checks import ConfigError
from purerl.meta.evolve_files import (BEST_PARAMS, MEAN_PARAMS, GenerationBar, fitness_row, plot_fitness, read_log,
                                 session_recorded, write_log)
from purerl.run.population import Placement, batched
from purerl.runtime.distributed import barrier, is_writer
from purerl.run.stopping import StopRequested, cut, graceful_stop, tell
from purerl.run import files, results, rundir

FITNESS_KINDS = ("final", "auc")


class MetaTask(NamedTuple):
    """What to evolve: a template of the meta-parameters, their initial mean, and a fitness to maximise."""

    name: str
    template: Any
    fitness: Callable[[jax.Array, Any], jax.Array]
    info: dict  # recorded in config.json (for example which fitness kind is used)
    cpu_group: int = 0  # inner training runs one CPU device runs at a time (its config's cpu_group)
    run_bytes: int = 0  # a lower bound of one fitness evaluation's memory (its inner training run); 0: unknown


def train_fitness(train, hp, kind: str, final_window: int = results.FINAL_WINDOW):
    """`fitness(key, meta_params)` from a `train` function: final return, or mean return over training (AUC).

    A run that diverged (`loop.diverged`) has no fitness (NaN), which `repair_fitness` ranks with the
    generation's worst: its returns from before it diverged, or a policy acting on NaN, would otherwise score."""
    if kind not in FITNESS_KINDS:
        raise ConfigError(f"unknown fitness '{kind}'; choose from {', '.join(FITNESS_KINDS)}")

    def fitness(key, meta_params):
        result = train(key, hp, meta_params)
        returns = result.metrics["episode_return"]
        window = returns[-final_window:] if kind == "final" else returns
        return jnp.where(loop.diverged(result.metrics, result.state.params), jnp.nan, jnp.nanmean(window))

    return fitness


def curve_fitness(returns: np.ndarray, kind: str, final_window: int = results.FINAL_WINDOW,
                  episodes: np.ndarray | None = None) -> np.ndarray:
    """`train_fitness` of each member of a finished run's returns [updates, members] (metrics.csv's): what an
    evolution maximised, measured on runs made outside it, such as the baselines it is compared with. With
    `episodes` (the metric, same shape), a member with an ended episode whose return is not finite has diverged
    and gets NaN, as in `train_fitness` (which also sees the parameters, which a curve does not)."""
    if kind not in FITNESS_KINDS:
        raise ConfigError(f"unknown fitness '{kind}'; choose from {', '.join(FITNESS_KINDS)}")
    window = returns[-final_window:] if kind == "final" else returns
    with warnings.catch_warnings():  # a member none of whose episodes ended has no fitness (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        fitness = np.nanmean(window, axis=0)
    if episodes is not None:
        curve = {"episode_return": np.asarray(returns, np.float32), "episodes": np.asarray(episodes, np.float32)}
        fitness = np.where(jax.vmap(lambda m: loop.diverged(m, None), in_axes=1)(curve), np.nan, fitness)
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
        self._check_memory()

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

    def _check_memory(self) -> None:
        """One line before anything is written when a generation cannot fit this machine's memory: its population,
        and the inner runs of the candidates evaluated at once (`chunk` x rollouts), at the task's `run_bytes`."""
        size, rollouts = self.config.population_size, self.config.rollouts
        numbers = sum(np.size(leaf) for leaf in jax.tree.leaves(self.task.template))
        runs = self.chunk * rollouts
        memory.refuse_beyond(runs * self.task.run_bytes + size * numbers * memory.BYTES,
                             f"a generation of {size:,} candidates, {runs:,} training runs of at least "
                             f"{self.task.run_bytes / 2**20:.2f} MiB at once, needs at least {{gib}}",
                             "lower --population-size or --rollouts, or evaluate fewer at once (--max-parallel)")

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
        ask_key, eval_key, tell_key = generation_keys(self.config.seed, index)
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


def generation_keys(seed: int, index: int) -> jax.Array:
    """The ask, evaluation and tell keys of generation `index` of the ES run with `seed`."""
    return jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), index), 3)


def training_keys(config: ESConfig) -> np.ndarray:
    """The keys of the training runs behind the fitness of every generation, generation by generation
    ([generations x rollouts, 2]): every candidate of a generation trained on its `rollouts` keys
    (`Evolution.evaluate`), so a baseline tuned on these saw what the evolved parameters saw, and no other seed."""
    return np.concatenate([np.asarray(jax.random.split(generation_keys(config.seed, index)[1], config.rollouts))
                           for index in range(config.generations)])


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
    session: dict | None = None,
) -> list[dict]:
    """Run (or, with `resume`, continue) the ES into `out`; returns the per-generation log.

    `resume="auto"` continues the run in `out` if there is one, else starts it: rerunning a script continues.

    Every generation is checkpointed; on SIGINT/SIGTERM the run stops after the current generation
    and raises `stopping.StopRequested`. The run-directory rules are `rundir.prepare`'s. `session`: this
    session's facts, appended to the run's provenance.json as it ends (`session_recorded`), once it holds `out`.
    """
    out = Path(out)
    resumed = rundir.prepare(out, config_json, resume, overwrite)
    writer = is_writer()
    barrier("purerl-evolve-prepared")  # every process has checked `out` before process 0 writes to it
    if writer:
        rundir.start(out, config_json, resumed)
    barrier("purerl-evolve-started")
    with session_recorded(out, session if writer else None):
        return _generations(evolution, out, resumed, progress, writer)


def _generations(evolution: Evolution, out: Path, resumed: bool, progress: bool, writer: bool) -> list[dict]:
    """`run`'s ES loop in a run directory it has started: from the last checkpoint when `resumed`."""
    cfg = evolution.config
    checkpointer = Checkpointer(out / rundir.CHECKPOINT)
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
            if cut(index + 1 - start):  # a test's `stopping.cut_after`: this session ends here, checkpointed
                break
    checkpointer.close()
    if writer and not np.isfinite(best_fitness):
        tell(f"purerl: no generation had a finite fitness; {BEST_PARAMS} holds the initial mean")
    if writer:
        files.write_atomic(out / MEAN_PARAMS, serialization.to_bytes(evolution.mean(state)))
        files.write_atomic(out / BEST_PARAMS, serialization.to_bytes(best_params))
        plot_fitness(out, log, evolution.task.name)
    return log


def config_json(task: MetaTask, config: ESConfig, extra: dict | None = None) -> dict:
    """What identifies an evolve run. `max_parallel` is left out: it changes memory use, not results."""
    es = dataclasses.asdict(config)
    es.pop("max_parallel")
    return {"command": "evolve", "task": task.name, "task_info": task.info, "es": es, **(extra or {})}
