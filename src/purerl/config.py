"""Static config, traced hyperparameters, presets, and validation before any trace.

Everything that fixes an array shape lives in `PPOConfig` and is bound when the
train function is built. The scalars in `HyperParams` are traced, so one compiled
program vmaps over seeds and over a hyperparameter grid at once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from purerl.checks import ConfigError, check_bounds, check_choice, check_counts, check_field_types


MAX_INT32 = 2**31 - 1  # loop counters and array sizes inside one XLA program
MAX_DIMENSION = 2**24  # no env count, rollout length or layer width beyond this is a real setting
MAX_MEMBERS = 2**20  # seeds x grid settings in one population: far beyond what fits one machine's memory
MAX_SEED = 2**32 - 1  # a seed is one uint32 PRNG key


# Bounds of a traced hyperparameter: (low, high, text), the value must lie in (low, high].
POSITIVE = (0.0, np.inf, "> 0")
NON_NEGATIVE = (np.nextafter(0.0, -1.0), np.inf, ">= 0")  # the largest negative float is excluded, 0 is not
UNIT = (np.nextafter(0.0, -1.0), 1.0, "in [0, 1]")  # a probability or lambda
DISCOUNT = (0.0, 1.0, "in (0, 1]")


def seed_range(first: int, count: int, name: str = "--seeds") -> list[int]:
    """Seeds first..first+count-1, checked before the list is built (a count of 2**40 is an error, not a
    MemoryError). NAME is the count's name in the caller's words (a flag, or a Python argument)."""
    if count <= 0:
        raise ConfigError(f"{name} must be positive, got {count}")
    if count > MAX_MEMBERS:
        raise ConfigError(f"{name} must be at most {MAX_MEMBERS:,}, got {count:,}")
    if first < 0 or first + count - 1 > MAX_SEED:
        raise ConfigError(f"seeds must lie in [0, {MAX_SEED}], got {first}..{first + count - 1}")
    return list(range(first, first + count))


MATMUL_DTYPES = ("float32", "bfloat16")
UPDATE_KERNELS = ("xla", "fused")
LEVERS = {"matmul_dtype": "float32", "update_kernel": "xla", "rollout_unroll": 1,  # PPOConfig's GPU levers
          "minibatch_gather": False}


def recorded(config) -> dict:
    """A config as a run records it: its fields, less the GPU levers left at their defaults, so that a record
    made before the levers existed still matches (a lever in use is recorded, and changes the program)."""
    return {k: v for k, v in dataclasses.asdict(config).items() if not (k in LEVERS and LEVERS[k] == v)}


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


class HyperParams(NamedTuple):
    """Traced training scalars (defaults: CleanRL / PureJaxRL CartPole)."""

    lr: Any = 2.5e-4
    gamma: Any = 0.99
    gae_lambda: Any = 0.95
    clip_eps: Any = 0.2
    ent_coef: Any = 0.01
    vf_coef: Any = 0.5
    max_grad_norm: Any = 0.5

    def as_arrays(self) -> HyperParams:
        return as_float_arrays(self)

    def validate(self) -> None:
        check_bounds(self, {"lr": POSITIVE, "gamma": DISCOUNT, "gae_lambda": UNIT, "clip_eps": POSITIVE,
                            "ent_coef": NON_NEGATIVE, "vf_coef": NON_NEGATIVE, "max_grad_norm": POSITIVE})


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
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got '{self.activation}'")
        if not 0 <= self.cpu_group <= MAX_DIMENSION:
            raise ConfigError(f"cpu-group must be an integer in [0, {MAX_DIMENSION:,}] (0: all members at once), "
                              f"got {self.cpu_group}")


@dataclass(frozen=True)
class PPOConfig(RolloutShape):
    """Shape-fixing settings of a PPO run (static under jit)."""

    env: str = "CartPole-v1"
    num_envs: int = 4
    num_steps: int = 128
    total_timesteps: int = 500_000
    update_epochs: int = 4
    num_minibatches: int = 4
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    anneal_lr: bool = True
    normalize_obs: bool = False
    normalize_reward: bool = False
    normalize_advantages: bool = True
    # Members one CPU device trains at a time (population.batched); 0: all at once. Measured best for these
    # defaults (CartPole); presets of another shape set their own or 0 (benchmarks/README.md).
    cpu_group: int = 8
    # Levers for a GPU (`purerl bench --task gpu-levers` measures each, bench/levers.py): "bfloat16" runs the
    # networks' matmuls in bf16 with float32 weights and Adam state; "fused" runs each minibatch gradient step
    # as one Pallas kernel per agent (kernels/ppo_update.py); rollout_unroll unrolls the rollout loop that many
    # steps; minibatch_gather gathers each minibatch from the batch by index instead of shuffling a copy of it
    matmul_dtype: str = "float32"
    update_kernel: str = "xla"
    rollout_unroll: int = 1
    minibatch_gather: bool = False

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> None:
        self.check(("total_timesteps",), ("num_envs", "num_steps", "update_epochs", "num_minibatches",
                                          "rollout_unroll"))
        check_minibatches(self)
        check_choice(self, "matmul_dtype", MATMUL_DTYPES)
        check_choice(self, "update_kernel", UPDATE_KERNELS)


@dataclass(frozen=True)
class Preset:
    """Reference settings for one env family; `action` restricts which envs it fits."""

    description: str
    action: str | None  # "discrete", "continuous", or None for either
    config: dict = field(default_factory=dict)
    hyperparams: dict = field(default_factory=dict)


PRESETS: dict[str, Preset] = {
    "classic": Preset(
        "CleanRL / PureJaxRL CartPole defaults: 4 envs x 128 steps, 5e5 steps, annealed lr 2.5e-4",
        action="discrete",
    ),
    "minatar": Preset(
        "PureJaxRL MinAtar: 64 envs x 128 steps, 1e7 steps, 4 epochs x 8 minibatches, relu, lr 5e-3",
        action="discrete",
        config=dict(num_envs=64, num_steps=128, total_timesteps=10_000_000, num_minibatches=8, activation="relu",
                    cpu_group=1),
        hyperparams=dict(lr=5e-3),
    ),
    "memory": Preset(
        "bsuite memory tasks (MemoryChain-bsuite), for --network gru: PureJaxRL PPO-RNN's 128-unit GRU, "
        "4 epochs x 4 minibatches of whole sequences and annealed lr 2.5e-4, on 16 envs x 32 steps "
        "(short episodes: shorter sequences, 4x less sequential work) for 2e5 steps",
        action="discrete",
        config=dict(cpu_group=0, num_envs=16, num_steps=32, total_timesteps=200_000, hidden_sizes=(128,)),
    ),
    "pomdp": Preset(
        "masked gymnax tasks (CartPole-NoVel-v1, envs/pomdp.py), for --network gru: the memory preset's "
        "128-unit GRU and 4 epochs x 4 minibatches on 16 envs x 128 steps, lr 1e-3 annealed, for 1e6 steps "
        "(a CPU budget; at lr 2.5e-4 the GRU had reached only about 120 by then)",
        action="discrete",
        config=dict(cpu_group=0, num_envs=16, num_steps=128, total_timesteps=1_000_000, hidden_sizes=(128,)),
        hyperparams=dict(lr=1e-3),
    ),
    "brax": Preset(
        "Brax continuous: 2048 envs x 10 steps, 5e7 steps, 4 x 32 minibatches, 256-256 tanh, "
        "obs and reward normalisation, constant lr 3e-4, no entropy bonus",
        action="continuous",
        config=dict(cpu_group=0, num_envs=2048, num_steps=10, total_timesteps=50_000_000, num_minibatches=32,
                    hidden_sizes=(256, 256), anneal_lr=False, normalize_obs=True, normalize_reward=True),
        hyperparams=dict(lr=3e-4, ent_coef=0.0),
    ),
    "continuous": Preset(
        "gymnax continuous control (Pendulum-v1 and friends) on a CPU budget: 16 envs x 128 steps, "
        "1e6 steps, 10 epochs x 32 minibatches, obs and reward normalisation, lr 1e-3, gamma 0.95",
        action="continuous",
        config=dict(cpu_group=0, num_envs=16, num_steps=128, total_timesteps=1_000_000, update_epochs=10,
                    num_minibatches=32, normalize_obs=True, normalize_reward=True),
        hyperparams=dict(lr=1e-3, gamma=0.95, ent_coef=0.0),
    ),
    # Suites from optional extras (envs/suites.py); budgets sized for a 2-core CPU, not taken from papers.
    "gridworld": Preset(
        "navix and XLand-MiniGrid MiniGrid tasks on a CPU budget: 16 envs x 128 steps, 1e6 steps, "
        "4 epochs x 8 minibatches, relu",
        action="discrete",
        config=dict(cpu_group=0, num_envs=16, num_steps=128, total_timesteps=1_000_000, num_minibatches=8,
                    activation="relu"),
    ),
    "craftax": Preset(
        "Craftax (symbolic) on a CPU budget: 32 envs x 64 steps, 1e6 steps, 4 epochs x 8 minibatches, "
        "256-256 relu, lr 2e-4",
        action="discrete",
        config=dict(cpu_group=0, num_envs=32, num_steps=64, total_timesteps=1_000_000, num_minibatches=8,
                    hidden_sizes=(256, 256), activation="relu"),
        hyperparams=dict(lr=2e-4),
    ),
    "jumanji": Preset(
        "Jumanji tasks (flattened observation arrays) on a CPU budget: 16 envs x 128 steps, 1e6 steps, "
        "4 epochs x 8 minibatches, relu, observation normalisation, lr 3e-4",
        action="discrete",
        config=dict(cpu_group=0, num_envs=16, num_steps=128, total_timesteps=1_000_000, num_minibatches=8,
                    activation="relu", normalize_obs=True),
        hyperparams=dict(lr=3e-4),
    ),
}

SUITE_PRESETS = {"navix": "gridworld", "xminigrid": "gridworld", "craftax": "craftax", "jumanji": "jumanji"}


def default_preset(env_name: str, discrete: bool) -> str:
    if env_name.partition(":")[0] in SUITE_PRESETS:
        return SUITE_PRESETS[env_name.partition(":")[0]]
    if env_name.endswith("-MinAtar"):
        return "minatar"
    if env_name.startswith("brax:"):
        return "brax"
    return "classic" if discrete else "continuous"


def apply_preset(name: str, env_name: str, discrete: bool, presets: dict[str, Preset] | None = None,
                 config_class: type = PPOConfig, hyperparams_class: type = HyperParams):
    """The preset's config and hyperparameters for `env_name`, after checking it fits the env.

    PPO's presets by default; another algorithm passes its own presets and classes."""
    presets = PRESETS if presets is None else presets
    if name not in presets:
        raise ConfigError(f"unknown preset '{name}'; choose from {', '.join(presets)}")
    preset = presets[name]
    kind = "discrete" if discrete else "continuous"
    if preset.action is not None and preset.action != kind:
        raise ConfigError(f"preset '{name}' is for {preset.action} actions, but {env_name} has {kind} actions")
    return config_class(env=env_name, **preset.config), hyperparams_class(**preset.hyperparams)
