"""Brax adapter (`pip install purerl[brax]`): `make("brax:hopper")`.

Brax envs neither reset nor stop at a time limit by themselves. Here `step`
adds both, the way purerl's contract wants them: `terminated` is Brax's own
`done` (the body fell), `truncated` is the time limit, `final_obs` is the
observation before the reset, and each new episode starts from a fresh random
reset (Brax's own AutoResetWrapper reuses one cached initial state).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.envs.core import ActionSpace, Env, Timestep

# Not swimmer: Brax runs it only on its generalized backend, which calls jnp.clip(a_min=...), gone from jax 0.10.
BRAX_ENVS = ("ant", "halfcheetah", "hopper", "humanoid", "walker2d", "humanoidstandup", "inverted_pendulum",
             "inverted_double_pendulum", "pusher", "reacher")


class BraxState(NamedTuple):
    brax_state: Any
    time: jax.Array


class BraxEnv(Env):
    def __init__(self, name: str, backend: str = "spring", episode_length: int = 1000, **env_kwargs):
        from brax import envs as brax_envs

        self.name = f"brax:{name}"
        self.brax_env = brax_envs.get_environment(name, backend=backend, **env_kwargs)
        self.observation_shape = (self.brax_env.observation_size,)
        self.action_space = ActionSpace(discrete=False, shape=(self.brax_env.action_size,), low=-1.0, high=1.0)
        self.max_episode_steps = episode_length

    def reset(self, key):
        state = self.brax_env.reset(key)
        return state.obs, BraxState(state, jnp.int32(0))

    def step(self, key, state: BraxState, action):
        stepped = self.brax_env.step(state.brax_state, action)
        time = state.time + 1
        terminated = stepped.done > 0.5
        truncated = (time >= self.max_episode_steps) & ~terminated
        done = terminated | truncated
        reset = self.brax_env.reset(key)
        brax_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), reset, stepped)
        timestep = Timestep(
            obs=brax_state.obs,
            reward=jnp.asarray(stepped.reward, jnp.float32),  # inverted_pendulum's is a Python float
            terminated=terminated,
            truncated=truncated,
            final_obs=stepped.obs,
            info={},
        )
        return BraxState(brax_state, jnp.where(done, 0, time)), timestep
