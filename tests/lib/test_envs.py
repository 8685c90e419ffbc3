import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.checks import ConfigError
from purerl.envs.pomdp import MASKED
from purerl.envs.wrappers import ObsNormalizer, RewardNormalizer, init_stats, update_stats

DOWNLOADS = {"MNISTBandit-bsuite"}  # builds by downloading MNIST; no network here


@pytest.mark.parametrize("name", [n for n in gymnax.registered_envs if n not in DOWNLOADS] + list(MASKED))
def test_every_gymnax_id_resets_and_steps(name):
    env = envs.make(name)
    space = env.action_space
    action = jnp.int32(0) if space.discrete else jnp.zeros(space.shape)

    def reset_then_step(key):  # one program: gymnax's own jitted reset and step would compile apart
        obs, state = env.reset(key)
        return obs, env.step(jax.random.PRNGKey(1), state, action)

    obs, (state, ts) = jax.jit(reset_then_step)(jax.random.PRNGKey(0))
    assert obs.shape == env.observation_shape and obs.dtype == jnp.float32
    assert ts.obs.shape == ts.final_obs.shape == env.observation_shape
    assert ts.terminated.dtype == ts.truncated.dtype == jnp.bool_
    assert {"episode_done", "episode_return", "episode_length"} <= set(ts.info)


def test_unknown_id_names_close_matches():
    with pytest.raises(envs.UnknownEnvError, match=r"unknown environment 'CartPole-v2'; did you mean CartPole-v1"):
        envs.make("CartPole-v2")
    with pytest.raises(envs.UnknownEnvError, match="Breakout-MinAtar"):
        envs.check_name("breakout-minatar")


def test_truncation_is_kept_apart_from_termination_with_final_obs():
    env = envs.make("CartPole-v1", )
    env = envs.EpisodeStats(envs.FlattenObservation(envs.GymnaxEnv(
        "CartPole-v1", env.gymnax_env, env.params.replace(max_steps_in_episode=5))))
    obs, state = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    for t in range(5):
        previous = state
        state, ts = step(jax.random.PRNGKey(t), state, jnp.int32(t % 2))  # alternate: pole stays up
    assert bool(ts.truncated) and not bool(ts.terminated)
    assert int(ts.info["episode_length"]) == 5 and float(ts.info["episode_return"]) == 5.0
    # The final observation is the state the 5th step reached; obs is already the reset one.
    assert not np.allclose(ts.final_obs, ts.obs)
    inner = previous.env_state
    expected, *_ = env.gymnax_env.step_env(jax.random.PRNGKey(4), inner, jnp.int32(0), env.params)
    np.testing.assert_allclose(ts.final_obs, expected, rtol=1e-6)


def test_obs_normalizer_statistics_have_one_observation_shape_and_match_numpy():
    norm = ObsNormalizer((3,))
    stats = norm.init()
    rng = np.random.default_rng(0)
    batches = [rng.normal(2.0, 3.0, size=(8, 3)).astype(np.float32) for _ in range(5)]
    for batch in batches:
        stats = norm.update(stats, jnp.asarray(batch))
    assert stats.mean.shape == stats.var.shape == (3,)
    data = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-4)
    np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-3)
    z = norm.normalize(stats, jnp.asarray(data))
    np.testing.assert_allclose(np.asarray(z).mean(0), 0.0, atol=1e-3)


def test_reward_normalizer_scales_by_discounted_return_std():
    norm = RewardNormalizer(num_envs=2)
    state = norm.init()
    ts = envs.Timestep(obs=None, reward=jnp.array([1.0, 1.0]), terminated=jnp.array([False, False]),
                       truncated=jnp.array([False, False]), final_obs=None, info={})
    returns = []
    acc = np.zeros(2)
    for _ in range(10):
        state, reward = norm.update_and_normalize(state, ts, 0.9)
        acc = acc * 0.9 + 1.0
        returns.append(acc.copy())
    expected = update_stats(init_stats(()), jnp.asarray(np.concatenate(returns)))
    np.testing.assert_allclose(reward, 1.0 / np.sqrt(float(expected.var) + 1e-8), rtol=1e-3)


def rollout(env, key, actions):
    """Timesteps of `env` from a reset with `key`, one step per action (auto-resets included)."""
    obs, state = env.reset(key)

    def step(state, inputs):
        step_key, action = inputs
        state, ts = env.step(step_key, state, action)
        return state, ts

    keys = jax.random.split(jax.random.PRNGKey(1), actions.shape[0])
    return obs, jax.lax.scan(step, state, (keys, actions))[1]


def test_cartpole_without_velocities_shows_x_and_theta_of_the_full_task():
    """Same key and actions: every observation is the full task's (x, theta), and nothing else differs."""
    masked, full = envs.make("CartPole-NoVel-v1"), envs.make("CartPole-v1")
    assert "CartPole-NoVel-v1" in envs.available() and masked.name == "CartPole-NoVel-v1"
    assert masked.observation_shape == (2,) and masked.action_space == full.action_space
    assert masked.max_episode_steps == full.max_episode_steps == 500
    actions = jax.random.bernoulli(jax.random.PRNGKey(2), 0.5, (100,)).astype(jnp.int32)  # episodes end and reset
    obs, ts = jax.jit(rollout, static_argnums=0)(masked, jax.random.PRNGKey(0), actions)
    full_obs, full_ts = jax.jit(rollout, static_argnums=0)(full, jax.random.PRNGKey(0), actions)
    assert int(ts.terminated.sum()) >= 2
    np.testing.assert_array_equal(obs, full_obs[jnp.array([0, 2])])
    np.testing.assert_array_equal(ts.obs, full_ts.obs[:, jnp.array([0, 2])])
    np.testing.assert_array_equal(ts.final_obs, full_ts.final_obs[:, jnp.array([0, 2])])
    for field in ("reward", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(ts, field), getattr(full_ts, field))
    np.testing.assert_array_equal(ts.info["episode_return"], full_ts.info["episode_return"])


def test_cartpole_without_velocities_truncates_at_the_time_limit():
    env = envs.make("CartPole-NoVel-v1", max_episode_steps=5)
    full = envs.make("CartPole-v1", max_episode_steps=5)
    assert env.max_episode_steps == 5
    actions = jnp.arange(6, dtype=jnp.int32) % 2  # alternate: the pole stays up
    _, ts = rollout(env, jax.random.PRNGKey(0), actions)
    _, full_ts = rollout(full, jax.random.PRNGKey(0), actions)
    assert ts.truncated.tolist() == [False] * 4 + [True, False] and not ts.terminated.any()
    assert int(ts.info["episode_length"][4]) == 5 and float(ts.info["episode_return"][4]) == 5.0
    assert not np.allclose(ts.final_obs[4], ts.obs[4])  # the state reached, not the reset observation
    np.testing.assert_array_equal(ts.final_obs[4], full_ts.final_obs[4, jnp.array([0, 2])])


def test_cartpole_without_velocities_vmaps_over_keys():
    env = envs.make("CartPole-NoVel-v1")
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    obs, states = jax.jit(env.reset_batch)(keys)
    states, ts = jax.jit(env.step_batch)(keys, states, jnp.zeros(8, jnp.int32))
    assert obs.shape == ts.obs.shape == ts.final_obs.shape == (8, 2) and obs.dtype == jnp.float32
    assert ts.reward.shape == ts.truncated.shape == (8,) and len(set(obs[:, 0].tolist())) == 8
    np.testing.assert_array_equal(jax.vmap(env.reset)(keys)[0], obs)


def test_masked_ids_are_known_to_check_name_and_a_typo_is_one_line():
    envs.check_name("CartPole-NoVel-v1")
    with pytest.raises(envs.UnknownEnvError) as error:
        envs.make("CartPole-NoVel-v2")
    assert "\n" not in str(error.value)
    assert str(error.value).startswith("unknown environment 'CartPole-NoVel-v2'; did you mean CartPole-NoVel-v1")


def test_keep_observation_refuses_indices_outside_the_observation():
    flat = envs.make("CartPole-v1").env  # FlattenObservation(GymnaxEnv)
    for indices in [(), (0, 4), (1, 1), (-1,)]:
        with pytest.raises(ConfigError, match="observation indices must be distinct and in \\[0, 4\\)"):
            envs.KeepObservation(flat, indices)
