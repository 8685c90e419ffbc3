"""What every algorithm's settings share: the rollout shape a static config derives, traced hyperparameters as
float32 arrays, and presets (reference settings per env family) and how one applies.

Everything that fixes an array shape lives in an algorithm's frozen config (`ppo.PPOConfig`, `dqn.DQNConfig`, ...)
and is bound when its train function is built; its hyperparameters (`ppo.HyperParams`, ...) are traced, so one
compiled program vmaps over seeds and over a hyperparameter grid at once. Each algorithm keeps its own in its module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import jax.numpy as jnp

from purerl.checks import MAX_DIMENSION, MAX_INT32, ConfigError, check_counts, shown, check_field_types


def validate_concrete(hp) -> None:
    """`hp.validate()` when every value is known on the host; traced values (inside jit or vmap) pass as they are."""
    import jax

    if not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tuple(hp))):
        hp.validate()


def as_float_arrays(hp):
    """Traced hyperparameters as float32 arrays (a NamedTuple of the same type), checked first when known on the
    host: the library's way in, so a negative or NaN lr is one ConfigError, not a run."""
    validate_concrete(hp)
    return type(hp)(*(jnp.asarray(v, jnp.float32) for v in hp))


def check_minibatches(config) -> None:
    """The batch of an algorithm that learns in minibatches (PPO, PQN) splits into `num_minibatches` equal ones."""
    if config.batch_size % config.num_minibatches:
        raise ConfigError(f"batch of {config.num_envs} envs x {config.num_steps} steps = {config.batch_size} "
                          f"is not divisible by num-minibatches={config.num_minibatches}")


class RolloutShape:
    """What every on-line algorithm's config derives from num_envs, num_steps and total_timesteps."""

    @property
    def batch_size(self) -> int:
        """Env steps per update."""
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """Whole updates, rounded up: a run never does fewer env steps than asked for."""
        return -(-self.total_timesteps // self.batch_size)

    @property
    def env_steps(self) -> int:
        """Env steps a run takes: its whole updates, at least `total_timesteps`."""
        return self.num_updates * self.batch_size

    def replace(self, **changes):
        """A copy with some fields changed (the configs are frozen dataclasses)."""
        return dataclasses.replace(self, **changes)

    def ignored_hyperparams(self) -> dict[str, str]:
        """The hyperparameters this config leaves unused, each with what replaces it: a value, sweep or PBT
        range given for one is refused (`TrainSpec.validate`) rather than training members that differ in
        nothing but their label."""
        return {}

    def check_learning_starts(self) -> None:
        """A replay learner's steps before learning end before its run does: else it would never learn."""
        if not 0 <= self.learning_starts <= MAX_INT32:
            raise ConfigError(f"learning-starts must be in [0, {MAX_INT32:,}], got {self.learning_starts}")
        if self.learning_starts >= self.env_steps:
            raise ConfigError(f"learning-starts={self.learning_starts:,} is not below the run's "
                              f"{self.env_steps:,} env steps: it would never learn")

    def check(self, step_counts: tuple[str, ...], dimensions: tuple[str, ...]) -> None:
        """What every algorithm's config must satisfy before a trace, with its own fields named:

        `step_counts` are positive integers up to MAX_INT32 (loop counters), `dimensions` also
        size arrays and stop at MAX_DIMENSION; the updates and their batch fit one program's
        int32 indexing; `hidden_sizes` and `activation` describe a network. First, every field holds its
        declared type (`check_field_types`): a record or a Python call may hold anything.
        """
        from purerl.nets.layers import ACTIVATIONS

        check_field_types(self)
        check_counts(self, dict.fromkeys(step_counts, MAX_INT32) | dict.fromkeys(dimensions, MAX_DIMENSION))
        if self.batch_size > MAX_INT32 or self.num_updates > MAX_INT32:
            raise ConfigError(f"{self.total_timesteps:,} steps in batches of {self.batch_size:,} exceed what one "
                              f"program indexes (at most {MAX_INT32:,} updates of at most {MAX_INT32:,} steps)")
        if self.total_timesteps < self.batch_size:
            raise ConfigError(f"total-timesteps={self.total_timesteps} is smaller than one batch "
                              f"({self.num_envs} envs x {self.num_steps} steps = {self.batch_size})")
        if not self.hidden_sizes or any(not 0 < h <= MAX_DIMENSION for h in self.hidden_sizes):
            raise ConfigError(f"hidden-sizes must be integers in [1, {MAX_DIMENSION:,}], got {self.hidden_sizes}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got {shown(self.activation)}")
        if not 0 <= self.cpu_group <= MAX_DIMENSION:
            raise ConfigError(f"cpu-group must be an integer in [0, {MAX_DIMENSION:,}] (0: all members at once), "
                              f"got {self.cpu_group}")


@dataclass(frozen=True)
class Preset:
    """Reference settings for one env family; `action` restricts which envs it fits."""

    description: str
    action: str | None  # "discrete", "continuous", or None for either
    config: dict = field(default_factory=dict)
    hyperparams: dict = field(default_factory=dict)


SUITE_PRESETS = {"navix": "gridworld", "xminigrid": "gridworld", "craftax": "craftax", "jumanji": "jumanji"}


def default_preset(env_name: str, discrete: bool) -> str:
    if env_name.partition(":")[0] in SUITE_PRESETS:
        return SUITE_PRESETS[env_name.partition(":")[0]]
    if env_name.endswith("-MinAtar"):
        return "minatar"
    if env_name.startswith("brax:"):
        return "brax"
    return "classic" if discrete else "continuous"


def apply_preset(name: str, env_name: str, discrete: bool, presets: dict[str, Preset], config_class: type,
                 hyperparams_class: type):
    """The preset's config and hyperparameters for `env_name` from an algorithm's `presets` and classes, after
    checking it fits the env."""
    if name not in presets:
        raise ConfigError(f"unknown preset '{name}'; choose from {', '.join(presets)}")
    preset = presets[name]
    kind = "discrete" if discrete else "continuous"
    if preset.action is not None and preset.action != kind:
        raise ConfigError(f"preset '{name}' is for {preset.action} actions, but {env_name} has {kind} actions")
    return config_class(env=env_name, **preset.config), hyperparams_class(**preset.hyperparams)
