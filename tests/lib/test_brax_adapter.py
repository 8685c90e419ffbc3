"""The Brax adapter's time limit, termination and auto-reset, on a stand-in for a Brax env; and every Brax env the
adapter lists resets and steps (with purerl[brax]: the one that once failed here, all of them `slow`)."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.envs.brax import BraxEnv


class FakeBraxState(NamedTuple):
    obs: jax.Array
    reward: jax.Array
    done: jax.Array


class FakeBrax:
    """Position x moves by the action; 'falls' (done) when x > 2.5; reset draws x in [0, 0.1)."""

    observation_size, action_size = 1, 1

    def reset(self, key):
        return FakeBraxState(jax.random.uniform(key, (1,), maxval=0.1), jnp.float32(0), jnp.float32(0))

    def step(self, state, action):
        x = state.obs + action
        return FakeBraxState(x, jnp.float32(1.0), (x[0] > 2.5).astype(jnp.float32))


def fake_env(episode_length):
    env = BraxEnv.__new__(BraxEnv)
    env.name, env.brax_env, env.max_episode_steps = "brax:fake", FakeBrax(), episode_length
    env.observation_shape, env.action_space = (1,), envs.ActionSpace(False, shape=(1,))
    return env


def test_time_limit_truncates_and_falling_terminates_with_final_obs():
    env = fake_env(episode_length=3)
    obs, state = env.reset(jax.random.PRNGKey(0))
    flags = []
    for t, action in enumerate([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]):
        before = state.brax_state.obs
        state, ts = env.step(jax.random.PRNGKey(t + 1), state, jnp.array([action]))
        flags.append((bool(ts.terminated), bool(ts.truncated)))
        np.testing.assert_allclose(ts.final_obs, before + action)
        if ts.terminated or ts.truncated:
            assert float(ts.obs[0]) < 0.1 and int(state.time) == 0  # a fresh reset
    # steps 1-3 hit the time limit; then x climbs by 1 per step and falls past 2.5 on the third step
    assert flags == [(False, False), (False, False), (False, True), (False, False), (False, False), (True, False)]


def test_brax_ids_are_known_and_need_the_extra():
    assert "brax:hopper" in envs.available()
    with pytest.raises(envs.UnknownEnvError, match="did you mean brax:hopper"):
        envs.check_name("brax:hoper")


def _resets_and_steps(name: str) -> None:
    """Traced, not compiled: each env's reset and one step give the contract's shapes and dtypes."""
    env = envs.make(f"brax:{name}")
    obs, state = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    _, ts = jax.eval_shape(env.step, jax.random.PRNGKey(1), state, jnp.zeros(env.action_space.shape))
    assert obs.shape == ts.obs.shape == ts.final_obs.shape == env.observation_shape
    assert ts.reward.dtype == jnp.float32 and ts.reward.shape == () and ts.terminated.dtype == jnp.bool_


def test_inverted_pendulum_whose_reward_is_a_python_float_resets_and_steps():
    pytest.importorskip("brax")
    _resets_and_steps("inverted_pendulum")


@pytest.mark.slow
def test_every_listed_brax_env_resets_and_steps():
    pytest.importorskip("brax")
    from purerl.envs.brax import BRAX_ENVS

    for name in BRAX_ENVS:
        _resets_and_steps(name)

