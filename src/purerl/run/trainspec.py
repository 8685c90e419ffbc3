"""What a training experiment is, as config.json records it: `TrainSpec` (the algorithm, its static config and
traced hyperparameters, seeds, grid, hooks by name, PBT), and `make_spec`, the env id, preset and settings to a
spec that `purerl train`'s flags and `purerl.make_train` both go through."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from purerl import envs
from purerl.algos import registry
from purerl.algos.objectives import OBJECTIVE_META_TEMPLATES, POLICY_OBJECTIVES, VALUE_LOSSES
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.algos.settings import apply_preset
from purerl.checks import ConfigError
from purerl.run import records
from purerl.run.pbt_config import PBTConfig
from purerl.run.population import Members, check_sweepable, make_members
from purerl.runtime import backend


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
    pbt: PBTConfig | None = None  # population-based training of the seeds' members (no grid)

    def __post_init__(self):
        if self.pbt is not None:  # ranges left out are the algorithm's, and config.json records them
            self.pbt = self.pbt.with_defaults(type(self.hyperparams))

    def to_json(self) -> dict[str, Any]:
        config = dataclasses.asdict(self.config)
        config["hidden_sizes"] = list(config["hidden_sizes"])
        pbt_record = {} if self.pbt is None else {"pbt": self.pbt.to_json()}  # records before PBT stay as they were
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
            **pbt_record,
        } | ({"python": dict(self.python)} if self.python else {})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainSpec:
        """The spec of a record that `rerun.check_record` read whole."""
        config = dict(data["config"])
        config["hidden_sizes"] = tuple(config["hidden_sizes"])
        algorithm = registry.get(data["algo"])
        return cls(
            config=algorithm.config(**config),
            hyperparams=algorithm.hyperparams(**data["hyperparams"]),
            seeds=list(data["seeds"]),
            grid={k: list(v) for k, v in records.grid_pairs(data)},
            objective=data["objective"],
            value_loss=data["value_loss"],
            preset=data["preset"],
            algo=algorithm.name,
            network=data["network"],
            python=dict(data.get("python") or {}),
            pbt=PBTConfig.from_json(data["pbt"]) if data.get("pbt") is not None else None,
        )

    def validate(self, train=None, instead: str = "continue it from Python: purerl.train(train, RUN_DIR, "
                 "resume=True)") -> Members:
        """Every check that can fail on user input, before anything is traced.

        `train` is the function `purerl.train` was given: this spec only names its hooks, so they are not
        looked up, and its environment is the one the memory check sizes. Without it, a spec that names Python
        objects is refused, saying what to do `instead`."""
        algorithm = registry.get(self.algo)
        if train is None:
            if self.python:
                made = ", ".join(f"{role} {name}" for role, name in self.python.items())
                raise ConfigError(f"this run was trained from Python with objects a record cannot rebuild ({made}); "
                                  f"{instead}")
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
        self._check_used()
        members = make_members(self.seeds, self.hyperparams, self.grid)
        if self.pbt is not None:
            if members.swept:
                raise ConfigError("--pbt explores the hyperparameters itself: give one value each (no grid)")
            self.pbt.validate(self.hyperparams, self.config, len(members))
        if algorithm.check_memory is not None:
            env = envs.make(self.config.env) if train is None else train.env
            algorithm.check_memory(self.config, env, len(members))
        return members

    def _check_used(self) -> None:
        """No value, sweep or PBT range for a hyperparameter that the config leaves unused."""
        explored = {bound.name for bound in self.pbt.explore} if self.pbt is not None else set()
        defaults = type(self.hyperparams)._field_defaults
        for name, instead in self.config.ignored_hyperparams().items():
            if name in self.grid or name in explored or float(getattr(self.hyperparams, name)) != defaults[name]:
                raise ConfigError(f"{name} is unused here: {instead}")

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
    if algorithm.gpu_defaults is not None and backend.will_use_gpu():  # the user's settings still win
        on_gpu = algorithm.gpu_defaults(config, envs.make(env), network, objective, value_loss)
        config = config.replace(**{name: value for name, value in on_gpu.items() if name not in settings})
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
        try:
            check_types(spec)
        except (TypeError, ValueError) as error:
            raise ConfigError(str(error)) from None
    return spec


def check_types(spec) -> None:
    """JSON can hold any type; the config fields must hold the ones the program is built from."""
    for config_field in dataclasses.fields(spec.config):  # the recorded algorithm's own config class
        value = getattr(spec.config, config_field.name)
        expected = type(config_field.default)  # str, tuple, bool, int, or float (PQN's epsilon_decay), which takes an int
        accepted = (int, float) if expected is float else expected
        if not isinstance(value, accepted) or (expected is not bool and isinstance(value, bool)):
            raise TypeError(f"{config_field.name} must be {expected.__name__}, got {value!r}")
        if config_field.name == "hidden_sizes" and not all(isinstance(h, int) and not isinstance(h, bool) for h in value):
            raise TypeError(f"hidden_sizes must be integers, got {list(value)!r}")
    for name, value in spec.hyperparams._asdict().items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {value!r}")
    check_sweepable(spec.grid, type(spec.hyperparams)._fields)
    for name, values in spec.grid.items():  # what the flag form (`args.floats`) refuses, the record may not hold
        if not isinstance(values, (list, tuple)) or not values:
            raise TypeError(f"grid {name} must be a list of numbers, got {values!r}")
        if len(values) == 1:  # purerl records one value as the setting itself; a grid entry would be ignored
            raise ValueError(f"grid {name} holds one value; a grid sweeps two or more, one value belongs in "
                             f"hyperparams.{name}")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise TypeError(f"grid {name} must hold numbers, got {values!r}")
        with np.errstate(over="ignore"):
            single = [float(np.float32(v)) for v in values]
        twice = [v for i, v in enumerate(values) if single[i] in single[:i]]
        if twice:
            raise ValueError(f"grid {name} holds the value {twice[0]:.9g} twice (equal in float32)")
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in spec.seeds):
        raise TypeError(f"seeds must be integers, got {spec.seeds!r}")
