"""A training experiment on disk: a population of runs of any registered algorithm, chunked, checkpointed,
resumable, and with `TrainSpec.pbt` trained by population-based training (`pbt.py`). What is run is a
`trainspec.TrainSpec`.

The compiled program runs `chunk` updates at a time; between chunks the host
updates the progress bar and saves an orbax checkpoint. Because every chunk is
the same compiled `run(state, hp, meta_params, start, stop)`, a resumed run computes exactly the
same numbers as an uninterrupted one.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from purerl import envs, stats
from purerl.version import __version__
from purerl.algos import loop, registry
from purerl.run import final_eval, log_backends, loggers, pbt, pbt_files, results, rundir
from purerl.run.chunks import Checkpoints, run_chunks
from purerl.run.population import Members, Placement, vmapped
from purerl.runtime.distributed import barrier, is_writer
from purerl.run.progress import TrainingBar
from purerl.run.trainspec import TrainSpec



def _trace_one_update(train, members: Members, meta_params) -> None:
    """A subclass's init and one update traced (not compiled) before the run directory is written, so that what
    its own code refuses while tracing (a statistic its loss adds that no metric column holds) is refused first."""
    import jax.numpy as jnp

    hp = jax.tree.map(lambda x: x[0], members.hyperparams.as_arrays())
    state = jax.eval_shape(train.init, jax.ShapeDtypeStruct((2,), jnp.uint32), hp, meta_params)
    jax.eval_shape(lambda s: train.run(s, hp, meta_params, 0, 1), state)


def run(
    spec: TrainSpec,
    out: Path,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    chunk_updates: int | None = None,
    checkpoint_every_s: float = 60.0,
    log: list[str] | None = None,
    train=None,
    meta_params=None,
    wandb_flags: dict[str, str | None] | None = None,
    evaluate_at: tuple[int, ...] = (),
    on_evaluate=None,
    final_eval_episodes: int | None = 0,
) -> dict[str, Any] | None:
    """Train every member, writing the run directory. Returns the summary (None if a test cut it short:
    `stopping.cut_after`).

    `purerl train` and `purerl.train` both run this. The command line builds the train function from the spec;
    `purerl.train` passes its own as `train` (with its `meta_params`), which the spec describes.
    `resume="auto"` continues a run in `out` if there is one, else starts it.
    `wandb_flags` holds `--log wandb`'s project, entity, group and tags (`log_backends.wandb_settings`).
    After each update in `evaluate_at` a chunk ends and `on_evaluate(update, params, obs_stats, hyperparams)` gets
    every member's (on the host, leading axis the members) before that checkpoint is saved; a resumed run calls it
    again for the updates it computes again, with the same numbers.
    `final_eval_episodes`: the greedy evaluation of every member's final policy recorded in the summary
    (`final_eval.py`): 0 none (the studies, which score their own way), None by the rule `purerl train` and
    `purerl.train` apply (`final_eval.default_episodes`). A finished run resumed keeps its summary, evaluated or not.
    """
    out = Path(out)
    members = spec.validate(train)
    final_eval.check(final_eval_episodes, spec.config,
                     lambda: envs.make(spec.config.env) if train is None else train.env, len(members))
    num_updates = spec.config.num_updates
    chunk = (spec.pbt.chunk(num_updates, chunk_updates) if spec.pbt is not None
             else chunk_updates or max(1, math.ceil(num_updates / 25)))
    loggers.check(log or [])
    wandb = log_backends.wandb_settings(out, len(members), **(wandb_flags or {})) if "wandb" in (log or []) else None
    config_json = spec.to_json()
    resumed = rundir.prepare(out, config_json, resume, overwrite)
    if train is not None and "algorithm" in spec.python:
        _trace_one_update(train, members, meta_params)
    if resumed and (out / results.SUMMARY).exists():
        results.read_summary(out)  # a finished run's summary is kept: checked before anything compiles
    if train is None:
        train, meta_params = spec.build(), spec.meta_params()
    cfg = train.config
    writer = is_writer()
    barrier("purerl-train-prepared")  # every process has checked `out` before process 0 writes to it
    if writer:
        rundir.start(out, config_json, resumed)
    barrier("purerl-train-started")

    n = len(members)
    placement = Placement.for_members(n)
    init_fn, run_fn = vmapped(train, placement)
    if spec.pbt is None:
        hps = placement.put(members.hyperparams.as_arrays())
        program, shared = run_fn, (hps, meta_params)
        initial = lambda: init_fn(placement.put(members.keys()), hps)  # noqa: E731
    else:  # the hyperparameters travel with the population, and change
        program, shared = pbt.advance(run_fn, placement, spec.pbt, n, num_updates), (meta_params,)
        initial = lambda: pbt.start(train, placement, members, spec.pbt)  # noqa: E731
    steps_per_update = cfg.batch_size  # per member: the progress bar, like the plots, counts one agent's steps
    chunk_log = loggers.ChunkLogger(log if writer and log else [], out, [members.label(i) for i in range(n)],
                                    members.groups(), steps_per_update, config_json, wandb)
    try:  # the logger is closed however training ends (a SIGINT's StopRequested included)
        with TrainingBar(progress and writer, cfg.num_updates * steps_per_update, n) as bar:
            compile_start = time.perf_counter()
            state = initial()
            init_s = time.perf_counter() - compile_start

            rounds_written = []  # pbt.csv is rewritten when this session first reaches a round count

            def advance_bar(start, stop, state, clock):
                metrics = trained(state).metrics
                returns = placement.get(metrics["episode_return"][:, start:stop], n)
                bar.advance(steps_per_update * stop, returns)
                if log:  # every process joins the gather; only the writer's logger has backends
                    chunk_log.write(start, placement.get(jax.tree.map(lambda m: m[:, start:stop], metrics), n),
                                    clock)
                if on_evaluate is not None and stop in evaluate_at:
                    hp = placement.get(state.hp, n) if spec.pbt is not None else members.hyperparams.as_arrays()
                    on_evaluate(stop, *placement.get((trained(state).params, trained(state).obs_stats), n), hp)
                if spec.pbt is not None and stop // spec.pbt.interval not in rounds_written:
                    rounds_written.append(stop // spec.pbt.interval)  # from the state: never a row a resume replays
                    record = placement.get(pbt.record(state), n)
                    if writer:
                        pbt_files.write_csv(out, record, spec.pbt, members.seeds, steps_per_update, stop)

            finished = run_chunks(program, state, placement, n, cfg.num_updates, shared=shared, chunk=chunk,
                                  checkpoints=Checkpoints(out / rundir.CHECKPOINT, resumed, checkpoint_every_s),
                                  on_chunk=advance_bar, breaks=tuple(evaluate_at))
        chunk_log.close_in_background()  # W&B's finish overlaps the outputs below
        if finished is None:
            return None
        return _finish(spec, members, train, placement, out, finished, init_s, writer, final_eval_episodes)
    finally:
        chunk_log.close()


def trained(state):
    """The algorithm's runner state, inside a PBT population's or not."""
    return state.train if isinstance(state, pbt.PBTState) else state


def _finish(spec, members: Members, train, placement, out: Path, finished, init_s: float, writer: bool,
            episodes: int | None) -> dict:
    """The summary, with the greedy evaluation of `episodes` episodes per member (None: by the rule, 0: none), and
    (on the writing process) metrics.csv, summary.json and curves.png of a finished run (and a PBT run's pbt.csv and
    pbt.png)."""
    cfg, n = train.config, len(members)
    population, timing = finished
    state = trained(population)
    record = placement.get(pbt.record(population), n) if spec.pbt is not None else None
    metrics = {name: values.T for name, values in placement.get(state.metrics, n).items()}  # [updates, members]
    previous = out / results.SUMMARY
    if timing["first"] == cfg.num_updates and previous.exists():  # resuming a finished run: its summary stands
        summary = results.read_summary(out)
        evaluated = (summary.get("final_eval") or {}).get("episodes", 0)
        if writer and episodes is not None and episodes != evaluated:  # asked for another evaluation: say why not
            print(f"purerl: {out} had finished, so its summary stands ({evaluated or 'no'} final evaluation "
                  f"episodes per member); `purerl eval {out} --episodes N` evaluates its policies", file=sys.stderr)
    else:
        summary = _summary(spec, members, metrics, init_s + timing["compile_s"], timing["run_s"])
        summary["resumed_from_update"] = timing["first"]
        summary["devices"] = placement.num_devices
        summary["processes"] = jax.process_count()
        summary["diverged"] = _diverged(members, metrics, placement.get(state.params, n),
                                       registry.get(spec.algo).losses)
        if spec.pbt is not None:
            final = results.final_returns(metrics["episode_return"], metrics["episodes"])
            summary["pbt"] = pbt_files.summary(record, spec.pbt, members.seeds, final)
        if episodes is None:
            episodes = final_eval.default_episodes(cfg)
        if episodes:  # a PBT member acts with the hyperparameters it was last trained with
            hp = placement.get(population.hp, n) if spec.pbt is not None else members.hyperparams.as_arrays()
            summary["final_eval"] = final_eval.evaluate(train, members, *placement.get(
                (state.params, state.obs_stats), n), hp, episodes)
        summary = results.json_safe(summary)
    if writer:  # rewriting these from the checkpoint also completes a run killed before its outputs
        results.write_metrics_csv(out, metrics, cfg.batch_size, [members.label(i) for i in range(n)])
        results.write_summary(out, summary)
        results.plot_curves(out, metrics["episode_return"], cfg.batch_size, members.groups(),
                            f"{registry.get(spec.algo).title} on {cfg.env}")
    if writer and record is not None:
        pbt_files.write_csv(out, record, spec.pbt, members.seeds, cfg.batch_size, cfg.num_updates)
        pbt_files.plot(out, out / pbt_files.PLOT)
    return summary


def _diverged(members: Members, metrics, params, loss_names: tuple[str, ...]) -> list[str]:
    """The labels of the members that diverged (`loop.diverged`): a diverged run still "finishes", so it must
    be said. metrics are [updates, members], params have a leading member axis."""
    used = {name: metrics[name] for name in ("episodes", "episode_return", *loss_names)}
    bad = jax.vmap(lambda m, p: loop.diverged(m, p, loss_names), in_axes=(1, 0))(used, params)
    return [members.label(i) for i in np.flatnonzero(np.asarray(bad))]


def _summary(spec, members: Members, metrics, compile_s, run_s) -> dict[str, Any]:
    final = results.final_returns(metrics["episode_return"], metrics["episodes"])
    steps_per_member = spec.config.env_steps
    return {
        "purerl_version": __version__,
        "env": spec.config.env,
        "members": len(members),
        "final_return": stats.summarize(final),
        "final_return_by_setting": {
            label: stats.summarize(final[idx]) for label, idx in members.groups().items()
        },
        "final_return_by_member": {members.label(i): float(v) for i, v in enumerate(final)},
        "final_return_window_updates": results.FINAL_WINDOW,
        # the env steps of one member the window covers, and where a replay learner's learning began in them
        "final_return_window_env_steps": [max(0, spec.config.num_updates - results.FINAL_WINDOW) * spec.config.batch_size,
                                          spec.config.num_updates * spec.config.batch_size],
        **({"learning_starts": spec.config.learning_starts} if final_eval.replay_learner(spec.config) else {}),
        "compile_s": round(compile_s, 3),
        "run_s": round(run_s, 3),
        "env_steps_per_s": round(steps_per_member * len(members) / run_s, 1) if run_s > 0 else None,
        "env_steps_per_member": steps_per_member,
        "total_env_steps": steps_per_member * len(members),
        "backend": jax.default_backend(),
    }
