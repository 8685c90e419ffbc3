"""A training experiment on disk: a population of PPO (or DQN, PQN) runs, chunked, checkpointed, resumable.

The compiled program runs `chunk` updates at a time; between chunks the host
updates the progress bar and saves an orbax checkpoint. Because every chunk is
the same compiled `run(state, hp, meta_params, start, stop)`, a resumed run computes exactly the
same numbers as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from purerl import __version__, envs, stats
from purerl.run import loggers, results, rundir
from purerl.algos import registry
from purerl.algos.objectives import OBJECTIVE_META_TEMPLATES, POLICY_OBJECTIVES, VALUE_LOSSES
from purerl.config import ConfigError, HyperParams, PPOConfig, apply_preset
from purerl.run.progress import TrainingBar
from purerl.run.population import Members, Placement, barrier, is_writer, make_members, run_chunks, vmapped


@dataclass
class TrainSpec:
    """Everything needed to rerun a training experiment; it is what config.json holds."""

    config: PPOConfig  # or the --algo's own config class (registry.ALGORITHMS)
    hyperparams: HyperParams = field(default_factory=HyperParams)
    seeds: list[int] = field(default_factory=lambda: [0])
    grid: dict[str, list[float]] = field(default_factory=dict)
    objective: str = "ppo"  # ppo, dpo, or lpo:PATH (meta-parameters saved by `purerl evolve lpo`)
    value_loss: str = "clipped_l2"
    preset: str | None = None
    algo: str = "ppo"
    network: str = "mlp"
    # What `purerl.train` was given that no name rebuilds: a hook, network or environment written in Python, by
    # role ("objective": "my_script.penalised"), and given meta-parameters by their hash. Recorded only when
    # present; such a run resumes from Python (the same train function), not from this record.
    python: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        config = dataclasses.asdict(self.config)
        config["hidden_sizes"] = list(config["hidden_sizes"])
        return {
            "command": "train",
            "config": config,
            "hyperparams": {k: float(v) for k, v in self.hyperparams._asdict().items()},
            "seeds": list(self.seeds),
            "grid": {k: [float(x) for x in v] for k, v in self.grid.items()},
            "objective": self.objective,
            "value_loss": self.value_loss,
            "preset": self.preset,
            "algo": self.algo,
            "network": self.network,
        } | ({"python": dict(self.python)} if self.python else {})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainSpec:
        config = dict(data["config"])
        config["hidden_sizes"] = tuple(config["hidden_sizes"])
        algorithm = registry.get(data.get("algo", "ppo"))
        return cls(
            config=algorithm.config(**config),
            hyperparams=algorithm.hyperparams(**data["hyperparams"]),
            seeds=list(data["seeds"]),
            grid={k: list(v) for k, v in rundir.grid_pairs(data)},
            objective=data["objective"],
            value_loss=data["value_loss"],
            preset=data.get("preset"),
            algo=algorithm.name,
            network=data.get("network", "mlp"),
            python=dict(data.get("python") or {}),
        )

    def validate(self, train=None) -> Members:
        """Every check that can fail on user input, before anything is traced.

        `train` is the function `purerl.train` was given: this spec only names its hooks, so they are not
        looked up, and its environment is the one the memory check sizes."""
        algorithm = registry.get(self.algo)
        if train is None:
            if self.python:
                made = ", ".join(f"{role} {name}" for role, name in self.python.items())
                raise ConfigError(f"this run was trained from Python with objects a record cannot rebuild ({made}); "
                                  "continue it from Python: purerl.train(train, RUN_DIR, resume=True)")
            envs.check_name(self.config.env)
            if self.network not in algorithm.networks:
                raise ConfigError(f"--network {self.network} is not available for --algo {self.algo}; "
                                  f"choose from {', '.join(algorithm.networks)}")
            if self.algo != "ppo" and (self.objective != "ppo" or self.value_loss != "clipped_l2"):
                raise ConfigError("--objective (and the value loss) belong to --algo ppo")
        self.config.validate()
        self.hyperparams.validate()
        if train is None:
            self.meta_params()  # checks the objective and loads its meta-parameters, if any
            if self.value_loss not in VALUE_LOSSES or self.value_loss == "learned":
                usable = [name for name in VALUE_LOSSES if name != "learned"]  # "learned" is evolved, see studies
                raise ConfigError(f"unknown value loss '{self.value_loss}'; choose from {', '.join(usable)}")
        members = make_members(self.seeds, self.hyperparams, self.grid)
        if algorithm.check_memory is not None:
            env = envs.make(self.config.env) if train is None else train.env
            algorithm.check_memory(self.config, env, len(members))
        return members

    def meta_params(self):
        """The objective's meta-parameters (loaded from `lpo:PATH`), or None."""
        if self.algo != "ppo":
            return None
        name, _, path = self.objective.partition(":")
        if name not in POLICY_OBJECTIVES:
            raise ConfigError(f"unknown objective '{name}'; choose from ppo, dpo, lpo:PATH")
        if name not in OBJECTIVE_META_TEMPLATES:
            if path:
                raise ConfigError(f"objective '{name}' takes no path")
            return None
        if not path:
            raise ConfigError(f"objective '{name}' needs its meta-parameters: --objective {name}:PATH")
        from purerl.meta.evolve_files import load_meta_params

        return load_meta_params(Path(path), OBJECTIVE_META_TEMPLATES[name]())

    def build(self):
        """The train function: PPO with this spec's objective and value loss, or the --algo's own."""
        return registry.build(self.algo, self.config, self.network,
                              objective=POLICY_OBJECTIVES[self.objective.partition(":")[0]],
                              value_loss=VALUE_LOSSES[self.value_loss])


def make_spec(env: str, algo: str = "ppo", preset: str | None = None, settings: dict[str, Any] | None = None, *,
              seeds: list[int] | tuple[int, ...] = (0,), network: str = "mlp", objective: str = "ppo",
              value_loss: str = "clipped_l2", cli: bool = False) -> TrainSpec:
    """The experiment on `env` as `purerl train` chooses it: the algorithm's preset (by env family unless
    named), then `settings` by field name. A config field takes one value; a hyperparameter one value or a
    list, whose values beyond one sweep a grid. Errors name flags (`--clip-eps`) when `cli`, else fields."""
    spell = (lambda name: f"--{name.replace('_', '-')}") if cli else (lambda name: name)  # noqa: E731
    algorithm = registry.get(algo)
    algo_named = f"--algo {algorithm.name}" if cli else f"algo '{algorithm.name}'"
    envs.check_name(env)
    discrete = envs.make(env).action_space.discrete
    preset = preset or algorithm.default_preset(env, discrete)
    if preset not in algorithm.presets:
        raise ConfigError(f"{spell('preset')} {preset} is not a preset of {algo_named}; "
                          f"choose from {', '.join(algorithm.presets)}")
    config, hp = apply_preset(preset, env, discrete, algorithm.presets, algorithm.config, algorithm.hyperparams)
    settings = dict(settings or {})
    own_config = [name for name in algorithm.config.__dataclass_fields__ if name != "env"]
    own = set(own_config) | set(algorithm.hyperparams._fields)
    for name in settings:  # the command line's parser knows only flags; Python may pass any name
        if name not in set(registry.config_fields()) | set(registry.hyperparam_fields()):
            close = difflib.get_close_matches(name, sorted(own), n=1)
            hint = f"did you mean {close[0]}?" if close else f"{algorithm.title}'s are {', '.join(sorted(own))}"
            raise ConfigError(f"unknown setting '{name}'; {hint}")
    for name in [*registry.config_fields(), *registry.hyperparam_fields()]:
        if name not in own and name in settings:
            raise ConfigError(f"{spell(name)} does not apply to {algo_named}")
    changes = {name: settings[name] for name in own_config if name in settings}
    if isinstance(changes.get("hidden_sizes"), list):
        changes["hidden_sizes"] = tuple(changes["hidden_sizes"])
    config = config.replace(**changes)
    grid = {}
    for name in algorithm.hyperparams._fields:
        if name not in settings:
            continue
        values = settings[name]
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        if not values:
            raise ConfigError(f"{spell(name)} needs a value")
        hp = hp._replace(**{name: values[0]})
        if len(values) > 1:
            grid[name] = values
    spec = TrainSpec(config=config, hyperparams=hp, seeds=list(seeds), grid=grid, preset=preset, objective=objective,
                     value_loss=value_loss, algo=algorithm.name, network=network)
    if not cli:  # the parser has typed every flag; Python's values may be anything
        from purerl.run.rerun import check_types

        try:
            check_types(spec)
        except (TypeError, ValueError) as error:
            raise ConfigError(str(error)) from None
    return spec


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
) -> dict[str, Any] | None:
    """Train every member, writing the run directory. Returns the summary (None if a test cut it short:
    `stopping.cut_after`).

    `purerl train` and `purerl.train` both run this. The command line builds the train function from the spec;
    `purerl.train` passes its own as `train` (with its `meta_params`), which the spec describes.
    `resume="auto"` continues a run in `out` if there is one, else starts it.
    `wandb_flags` holds `--log wandb`'s project, entity, group and tags (`loggers.wandb_settings`).
    """
    out = Path(out)
    members = spec.validate(train)
    loggers.check(log or [])
    wandb = loggers.wandb_settings(out, len(members), **(wandb_flags or {})) if "wandb" in (log or []) else None
    config_json = spec.to_json()
    resumed = rundir.prepare(out, config_json, resume, overwrite)
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
    keys, hps = placement.put(members.keys()), placement.put(members.hyperparams.as_arrays())
    steps_per_update = cfg.batch_size  # per member: the progress bar, like the plots, counts one agent's steps
    chunk_log = loggers.ChunkLogger(log if writer and log else [], out, [members.label(i) for i in range(n)],
                                    members.groups(), steps_per_update, config_json, wandb)
    clock: dict[str, float] = {}  # run_chunks' timing, kept current chunk by chunk: the loggers' speed series
    try:  # the logger is closed however training ends (a SIGINT's StopRequested included)
        with TrainingBar(progress and writer, cfg.num_updates * steps_per_update, n) as bar:
            compile_start = time.perf_counter()
            state = init_fn(keys, hps)
            init_s = time.perf_counter() - compile_start

            def advance_bar(start, stop, state):
                returns = placement.get(state.metrics["episode_return"][:, start:stop], n)
                bar.advance(steps_per_update * stop, returns)
                if log:  # every process joins the gather; only the writer's logger has backends
                    chunk_log.write(start, placement.get(jax.tree.map(lambda m: m[:, start:stop], state.metrics), n),
                                    clock)

            finished = run_chunks(run_fn, state, placement, n, cfg.num_updates, shared=(hps, meta_params),
                                  checkpoint_dir=out / rundir.CHECKPOINT, resume=resumed,
                                  chunk=chunk_updates or max(1, math.ceil(cfg.num_updates / 25)),
                                  checkpoint_every_s=checkpoint_every_s, on_chunk=advance_bar, clock=clock)
        chunk_log.close_in_background()  # W&B's finish overlaps the outputs below
        if finished is None:
            return None
        return _finish(spec, members, train, placement, out, finished, init_s, writer)
    finally:
        chunk_log.close()


def _finish(spec, members: Members, train, placement, out: Path, finished, init_s: float, writer: bool) -> dict:
    """The summary, and (on the writing process) metrics.csv, summary.json and curves.png of a finished run."""
    cfg, n = train.config, len(members)
    state, timing = finished
    metrics = {name: values.T for name, values in placement.get(state.metrics, n).items()}  # [updates, members]
    previous = out / results.SUMMARY
    if timing["first"] == cfg.num_updates and previous.exists():  # resuming a finished run: its summary stands
        summary = json.loads(previous.read_text())
    else:
        summary = _summary(spec, members, metrics, init_s + timing["compile_s"], timing["run_s"])
        summary["resumed_from_update"] = timing["first"]
        summary["devices"] = placement.num_devices
        summary["processes"] = jax.process_count()
        summary["diverged"] = _diverged(members, metrics, placement.get(state.params, n),
                                       registry.get(spec.algo).losses)
        summary = results.json_safe(summary)
    if writer:  # rewriting these from the checkpoint also completes a run killed before its outputs
        results.write_metrics_csv(out, metrics, cfg.batch_size, [members.label(i) for i in range(n)])
        results.write_summary(out, summary)
        results.plot_curves(out, metrics["episode_return"], cfg.batch_size, members.groups(),
                            f"{registry.get(spec.algo).title} on {cfg.env}")
    return summary


def _diverged(members: Members, metrics, params, loss_names: tuple[str, ...]) -> list[str]:
    """Members whose final parameters are not finite, or whose loss turned non-finite after being finite
    (a loss may be NaN before learning starts, as DQN's is until its buffer fills): a diverged run still
    "finishes", so it must be said."""
    losses = np.stack([metrics[name] for name in loss_names])  # [losses, updates, members]
    finite = np.isfinite(losses)
    bad = (~finite & np.maximum.accumulate(finite, axis=1)).any(axis=(0, 1))
    for leaf in jax.tree.leaves(params):
        bad |= ~np.isfinite(np.asarray(leaf).reshape(len(members), -1)).all(axis=1)
    return [members.label(i) for i in np.flatnonzero(bad)]


def _summary(spec, members: Members, metrics, compile_s, run_s) -> dict[str, Any]:
    final = results.final_returns(metrics["episode_return"])
    steps_per_member = spec.config.num_updates * spec.config.batch_size
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
        "compile_s": round(compile_s, 3),
        "run_s": round(run_s, 3),
        "env_steps_per_s": round(steps_per_member * len(members) / run_s, 1) if run_s > 0 else None,
        "env_steps_per_member": steps_per_member,
        "total_env_steps": steps_per_member * len(members),
        "backend": jax.default_backend(),
    }
