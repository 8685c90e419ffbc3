"""The environment contract every purerl algorithm is written against.

gymnax 1.x already separates `terminated` from `truncated` and returns the
pre-reset observation. We keep both in one `Timestep` so that PPO can bootstrap
from the final observation on a time limit and not on a real terminal state.
Environment parameters are bound at construction, so `reset`/`step` take only
keys, states and actions and vmap cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

try:  # the two lowerings jax ships for threefry; private, so a newer jax may move them (then nothing changes)
    from jax._src.random.threefry2x32 import _threefry2x32_cpu_lowering_rule as _ROLLED
    from jax._src.random.threefry2x32 import _threefry2x32_lowering_rule as _UNROLLED
except ImportError:
    _ROLLED = _UNROLLED = None


def unroll_threefry_on_cpu(unrolled: bool = True) -> None:
    """Lower threefry on CPU as straight-line code (jax's GPU/TPU lowering) instead of jax's CPU default,
    a rolled five-iteration loop of tiny kernels.

    Same bits, so every result is unchanged; only faster. Dispatch-bound loops pay per kernel, and one
    rollout step hashes five times (its key split, the action, the per-env keys, and inside gymnax's
    `step` its own split and the reset draw for auto-reset): three times faster per draw on a 2-core CPU
    (benchmarks/README.md). `purerl.configure_jax` calls it, for every program of the process lowered afterwards.
    """
    rule = _UNROLLED if unrolled else _ROLLED
    if rule is not None:
        mlir.register_lowering(threefry2x32_p, rule, platform="cpu")



class Timestep(NamedTuple):
    """What one environment step returns, after the automatic reset.

    obs: the observation to act on next (the reset observation if the episode ended).
    final_obs: the observation the step reached, before any reset. It equals `obs`
        unless the episode ended; a truncated episode bootstraps from it.
    """

    obs: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array
    info: dict[str, jax.Array]

    @property
    def done(self) -> jax.Array:
        return jnp.logical_or(self.terminated, self.truncated)


@dataclass(frozen=True)
class ActionSpace:
    """Discrete (`num_actions`) or continuous box (`shape`, `low`, `high`)."""

    discrete: bool
    num_actions: int = 0
    shape: tuple[int, ...] = ()
    low: float | tuple = -1.0
    high: float | tuple = 1.0


class Env:
    """Base class: a single environment instance with automatic reset inside `step`.

    `observation_dtype` is the narrowest dtype that holds every observation the env can emit exactly (its
    observations themselves stay float32): float32 unless the env knows better, int8 for MinAtar's 0/1 grids.
    PPO's `compact_obs` stores and carries observations in it.
    """

    name: str
    observation_shape: tuple[int, ...]
    action_space: ActionSpace
    max_episode_steps: int
    observation_dtype: np.dtype = np.dtype(np.float32)

    @property
    def raw_observation_shape(self) -> tuple[int, ...]:
        """The shape of one observation as the task defines it, before a wrapper flattens it for an MLP
        (what a trained `Policy` accepts)."""
        return self.observation_shape

    def reset(self, key: jax.Array) -> tuple[jax.Array, Any]:
        raise NotImplementedError

    def step(self, key: jax.Array, state: Any, action: jax.Array) -> tuple[Any, Timestep]:
        raise NotImplementedError

    # A learner steps all its environments at once through these two. They vmap the
    # single-env methods; an env whose instances interact (an opponent that learns
    # from every board at once) overrides them instead.
    def reset_batch(self, keys: jax.Array) -> tuple[jax.Array, Any]:
        return jax.vmap(self.reset)(keys)

    def step_batch(self, keys: jax.Array, states: Any, actions: jax.Array) -> tuple[Any, Timestep]:
        return jax.vmap(self.step)(keys, states, actions)


# gymnax envs whose every observation value is exactly 0 or 1, as read in gymnax's `get_obs` of each (a bool or 0/1
# int32 grid cast to float32; Seaquest's float32 grid takes only 1, a bool gauge or the max of 0/1 entity masks), so
# that float32(int8(obs)) == obs: every MinAtar game gymnax registers. int8, not uint8 (as exact): XLA:GPU fuses an
# int8 (or bf16) operand's convert into a Triton matmul and reads a byte a value, but materialises a uint8 one's as
# float32 first (the GPU proxy: a float32 copy of every minibatch's observations)
BINARY_OBSERVATIONS = ("Asterix-MinAtar", "Breakout-MinAtar", "Freeway-MinAtar", "Seaquest-MinAtar",
                       "SpaceInvaders-MinAtar")


class GymnaxEnv(Env):
    """Adapter from a gymnax 1.x environment (six-value `step`) to `Env`."""

    def __init__(self, name: str, gymnax_env: Any, params: Any):
        self.name = name
        self.gymnax_env = gymnax_env
        self.params = params
        self.observation_dtype = np.dtype(np.int8 if name in BINARY_OBSERVATIONS else np.float32)
        self.observation_shape = tuple(gymnax_env.observation_space(params).shape)
        self.action_space = _action_space(gymnax_env.action_space(params))
        self.max_episode_steps = int(params.max_steps_in_episode)

    def reset(self, key):
        return self.gymnax_env.reset(key, self.params)

    def step(self, key, state, action):
        obs, state, reward, terminated, truncated, info = self.gymnax_env.step(
            key, state, action, self.params
        )
        # A step that both terminates and hits the time limit is a real terminal.
        truncated = jnp.logical_and(truncated, jnp.logical_not(terminated))
        final_obs = info.pop("final_observation")
        for flag in ("terminated", "truncated", "discount"):
            info.pop(flag, None)
        timestep = Timestep(
            obs=obs,
            reward=jnp.asarray(reward, jnp.float32),
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.asarray(truncated, bool),
            final_obs=final_obs,
            info=info,
        )
        return state, timestep


def narrower_observations(env: Env) -> bool:
    """Whether `env`'s observations fit exactly in a dtype narrower than float32 (`Env.observation_dtype`)."""
    return np.dtype(env.observation_dtype).itemsize < np.dtype(np.float32).itemsize


def _action_space(space: Any) -> ActionSpace:
    if hasattr(space, "n"):
        return ActionSpace(discrete=True, num_actions=int(space.n))
    return ActionSpace(
        discrete=False,
        shape=tuple(space.shape),
        low=_as_bound(space.low),
        high=_as_bound(space.high),
    )


def _as_bound(value: Any) -> float | tuple:
    array = jnp.asarray(value)
    return float(array) if array.ndim == 0 else tuple(float(v) for v in array.ravel())
