"""PPO's own settings: its static config (`PPOConfig`, what fixes the program's shapes, bound when `ppo.PPO` is
built), its traced hyperparameters (`HyperParams`, one compiled program vmaps over them) and its presets, beside
`ppo.py` as every other algorithm keeps its own in its module (PPO's, with nine env families, would push that
module past a reader's page)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

from purerl.algos.settings import Preset, RolloutShape, apply_preset, as_float_arrays, check_minibatches
from purerl.checks import DISCOUNT, NON_NEGATIVE, POSITIVE, UNIT, ConfigError, check_bounds, check_choice

MATMUL_DTYPES = ("float32", "bfloat16")
UPDATE_KERNELS = ("xla", "fused")
LEVERS = {"matmul_dtype": "float32", "update_kernel": "xla", "rollout_unroll": 1,  # PPOConfig's GPU levers
          "minibatch_gather": False, "compact_obs": False, "rollout_bootstrap": False}


def recorded(config) -> dict:
    """A config as a run records it: its fields, less the GPU levers left at their defaults, so that a record
    made before the levers existed still matches (a lever in use is recorded, and changes the program)."""
    return {k: v for k, v in dataclasses.asdict(config).items() if not (k in LEVERS and LEVERS[k] == v)}


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
    # steps; minibatch_gather gathers each minibatch from the batch by index instead of shuffling a copy of it;
    # compact_obs keeps observations in the env's `observation_dtype` (int8 for MinAtar: exactly its 0/1 values)
    # wherever PPO stores or carries them, and the network casts them to float32 as they enter it: the same numbers,
    # a quarter of the bytes. A no-op where the env's observations need float32 or an `observe` hook changes them;
    # refused with normalize_obs, whose observations are floats; rollout_bootstrap computes each step's
    # bootstrap value (the value of the next or the final observation) in the rollout, where that observation
    # already is, instead of storing it for a batched pass after the rollout: a value per sample instead of an
    # observation (the same values, computed a step at a time)
    matmul_dtype: str = "float32"
    update_kernel: str = "xla"
    rollout_unroll: int = 1
    minibatch_gather: bool = False
    compact_obs: bool = False
    rollout_bootstrap: bool = False

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> None:
        self.check(("total_timesteps",), ("num_envs", "num_steps", "update_epochs", "num_minibatches",
                                          "rollout_unroll"))
        check_minibatches(self)
        check_choice(self, "matmul_dtype", MATMUL_DTYPES)
        check_choice(self, "update_kernel", UPDATE_KERNELS)
        if self.compact_obs and self.normalize_obs:
            raise ConfigError("compact-obs keeps observations in the env's own narrow dtype, and normalize-obs makes "
                              "them floats: turn one of them off")


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


def preset(name: str, env_name: str, discrete: bool) -> tuple[PPOConfig, HyperParams]:
    """PPO's config and hyperparameters of preset `name` for `env_name` (`settings.apply_preset` with PPO's tables)."""
    return apply_preset(name, env_name, discrete, PRESETS, PPOConfig, HyperParams)
