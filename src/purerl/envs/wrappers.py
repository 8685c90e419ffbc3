"""Wrappers: per-environment ones wrap an `Env`; normalisers live in the agent state.

Observation and reward normalisation need statistics shared by every parallel
environment of one agent, so they are not env wrappers but small pure state
machines (`init`, `update`, `normalize`) whose state PPO carries and checkpoints
with the parameters. Their statistics are shaped like one observation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.envs.core import ActionSpace, Env, Timestep


class Wrapper(Env):
    """Forwards everything to the wrapped env unless overridden. A wrapper that changes observation values sets
    its own `observation_dtype` (float32 unless it knows a narrower one holds them exactly)."""

    def __init__(self, env: Env):
        self.env = env
        self.name = env.name
        self.observation_shape = env.observation_shape
        self.observation_dtype = env.observation_dtype
        self.action_space = env.action_space
        self.max_episode_steps = env.max_episode_steps

    @property
    def raw_observation_shape(self) -> tuple[int, ...]:
        return self.env.raw_observation_shape

    def reset(self, key):
        return self.env.reset(key)

    def step(self, key, state, action):
        return self.env.step(key, state, action)

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not yet set: avoid infinite recursion while unpickling
            raise AttributeError(name)
        return getattr(self.env, name)


class EpisodeStatsState(NamedTuple):
    env_state: Any
    episode_return: jax.Array
    episode_length: jax.Array


class EpisodeStats(Wrapper):
    """Adds `episode_done`, `episode_return`, `episode_length` to `info`.

    The return and length are those of the episode that ended at this step (valid
    where `episode_done`); they use the raw, unnormalised reward.
    """

    def reset(self, key):
        obs, env_state = self.env.reset(key)
        return obs, EpisodeStatsState(env_state, jnp.float32(0.0), jnp.int32(0))

    def step(self, key, state, action):
        return self._track(state, *self.env.step(key, state.env_state, action))

    # Elementwise, so it also wraps an env whose instances step together.
    def reset_batch(self, keys):
        obs, env_state = self.env.reset_batch(keys)
        return obs, EpisodeStatsState(env_state, jnp.zeros(keys.shape[0]), jnp.zeros(keys.shape[0], jnp.int32))

    def step_batch(self, keys, states, actions):
        return self._track(states, *self.env.step_batch(keys, states.env_state, actions))

    def _track(self, state, env_state, ts):
        episode_return = state.episode_return + ts.reward
        episode_length = state.episode_length + 1
        done = ts.done
        info = {
            **ts.info,
            "episode_done": done,
            "episode_return": episode_return,
            "episode_length": episode_length,
        }
        new_state = EpisodeStatsState(
            env_state,
            jnp.where(done, 0.0, episode_return),
            jnp.where(done, 0, episode_length),
        )
        return new_state, ts._replace(info=info)


class FlattenObservation(Wrapper):
    """Flattens observations (MinAtar grids, bsuite boards) to vectors for an MLP."""

    def __init__(self, env: Env):
        super().__init__(env)
        size = 1
        for dim in env.observation_shape:
            size *= dim
        self.observation_shape = (size,)

    def reset(self, key):
        obs, state = self.env.reset(key)
        return self._flat(obs), state

    def step(self, key, state, action):
        state, ts = self.env.step(key, state, action)
        return state, ts._replace(obs=self._flat(ts.obs), final_obs=self._flat(ts.final_obs))

    def _flat(self, obs):
        return jnp.reshape(jnp.asarray(obs, jnp.float32), self.observation_shape)


class ClipAction(Wrapper):
    """Clips continuous actions to the box; the agent keeps its unclipped sample for log-probs."""

    def __init__(self, env: Env):
        if env.action_space.discrete:
            raise ValueError(f"ClipAction needs a continuous action space; {env.name} is discrete")
        super().__init__(env)

    def step(self, key, state, action):
        space: ActionSpace = self.action_space
        low, high = jnp.asarray(space.low), jnp.asarray(space.high)
        return self.env.step(key, state, jnp.clip(action, low, high))


class RunningStats(NamedTuple):
    """Running mean and variance (Chan et al. parallel update) of a batch of samples."""

    count: jax.Array
    mean: jax.Array
    var: jax.Array


def init_stats(shape: tuple[int, ...]) -> RunningStats:
    # A tiny prior count avoids dividing by zero before the first update.
    return RunningStats(jnp.float32(1e-4), jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32))


def update_stats(stats: RunningStats, batch: jax.Array) -> RunningStats:
    """Merge a batch whose leading axis holds samples."""
    batch_count = batch.shape[0]
    batch_mean = jnp.mean(batch, axis=0)
    batch_var = jnp.var(batch, axis=0)
    delta = batch_mean - stats.mean
    total = stats.count + batch_count
    mean = stats.mean + delta * batch_count / total
    m2 = stats.var * stats.count + batch_var * batch_count + delta**2 * stats.count * batch_count / total
    return RunningStats(total, mean, m2 / total)


class ObsNormalizer:
    """Observation normalisation with statistics shaped like one observation."""

    def __init__(self, observation_shape: tuple[int, ...], clip: float = 10.0, eps: float = 1e-8):
        self.observation_shape = observation_shape
        self.clip = clip
        self.eps = eps

    def init(self) -> RunningStats:
        return init_stats(self.observation_shape)

    def update(self, stats: RunningStats, batch_obs: jax.Array) -> RunningStats:
        return update_stats(stats, batch_obs)

    def normalize(self, stats: RunningStats, obs: jax.Array) -> jax.Array:
        return jnp.clip((obs - stats.mean) / jnp.sqrt(stats.var + self.eps), -self.clip, self.clip)


class IdentityObs:
    """Stands in for `ObsNormalizer` when normalisation is off; carries no statistics."""

    def init(self) -> None:
        return None

    def update(self, stats, batch_obs):
        return stats

    def normalize(self, stats, obs):
        return obs


class RewardNormState(NamedTuple):
    discounted_return: jax.Array  # one per parallel env
    stats: RunningStats  # scalar statistics of the discounted return


class RewardNormalizer:
    """Scales rewards by the running std of the discounted return (as in SB3 / PureJaxRL)."""

    def __init__(self, num_envs: int, clip: float = 10.0, eps: float = 1e-8):
        self.num_envs = num_envs
        self.clip = clip
        self.eps = eps

    def init(self) -> RewardNormState:
        return RewardNormState(jnp.zeros(self.num_envs, jnp.float32), init_stats(()))

    def update_and_normalize(self, state: RewardNormState, ts: Timestep, gamma: jax.Array):
        discounted = state.discounted_return * gamma + ts.reward
        stats = update_stats(state.stats, discounted)
        reward = jnp.clip(ts.reward / jnp.sqrt(stats.var + self.eps), -self.clip, self.clip)
        new_state = RewardNormState(jnp.where(ts.done, 0.0, discounted), stats)
        return new_state, reward


class IdentityReward:
    """Stands in for `RewardNormalizer` when normalisation is off."""

    def init(self) -> None:
        return None

    def update_and_normalize(self, state, ts: Timestep, gamma):
        return state, ts.reward
