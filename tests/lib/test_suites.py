"""navix, XLand-MiniGrid, Craftax and Jumanji ids under purerl's contract: shapes, truncation apart from
termination, `final_obs`, vmap; a missing suite names its extra; a short PPO run beats a random policy (slow)."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.checks import ConfigError
from purerl.envs.suites import SuiteEnv

TIME_LIMIT = 4
SUITES = {  # id, and the random policy's mean return measured by `random_return` below (for the slow test)
    "navix": "navix:Navix-Empty-5x5-v0",
    "xminigrid": "xminigrid:MiniGrid-Empty-5x5",
    "craftax": "craftax:Craftax-Classic-Symbolic-v1",
    "jumanji": "jumanji:Snake-v1",
}


def installed(suite):
    return pytest.mark.skipif(importlib.util.find_spec(suite) is None, reason=f"needs purerl[{suite}]")


def rollout(env, num_envs=8, steps=3 * TIME_LIMIT, seed=0):
    """Random actions in `num_envs` copies for `steps` steps, as one scanned, vmapped program."""
    keys = jax.random.split(jax.random.PRNGKey(seed), num_envs)
    obs, state = env.reset_batch(keys)

    def step(carry, key):
        state, _ = carry
        act_key, step_key = jax.random.split(key)
        actions = jax.random.randint(act_key, (num_envs,), 0, env.action_space.num_actions)
        state, ts = env.step_batch(jax.random.split(step_key, num_envs), state, actions)
        return (state, ts.obs), ts

    (_, _), timesteps = jax.jit(lambda s, o: jax.lax.scan(step, (s, o), jax.random.split(jax.random.PRNGKey(1), steps)))(
        state, obs)
    return obs, timesteps


@pytest.mark.parametrize("suite", [pytest.param(s, marks=installed(s)) for s in SUITES])
def test_reset_step_shapes_truncation_and_vmap(suite):
    env = envs.make(SUITES[suite], max_episode_steps=TIME_LIMIT)
    assert env.action_space.discrete and env.action_space.num_actions > 1
    obs, ts = rollout(env)
    assert obs.shape == (8, *env.observation_shape) and obs.dtype == jnp.float32
    assert ts.obs.shape == ts.final_obs.shape == (3 * TIME_LIMIT, 8, *env.observation_shape)
    assert ts.reward.shape == ts.terminated.shape == ts.truncated.shape == (3 * TIME_LIMIT, 8)
    terminated, truncated = np.asarray(ts.terminated), np.asarray(ts.truncated)
    assert not (terminated & truncated).any()
    age = np.zeros(8, int)  # steps since each env's last reset
    for t in range(3 * TIME_LIMIT):
        age += 1
        assert (truncated[t] == (age == TIME_LIMIT) & ~terminated[t]).all(), t  # the time limit, and only it
        age[terminated[t] | truncated[t]] = 0
    assert truncated.any()
    running = ~(terminated | truncated)
    np.testing.assert_array_equal(np.asarray(ts.obs)[running], np.asarray(ts.final_obs)[running])
    assert "episode_return" in ts.info


@installed("jumanji")
def test_jumanji_end_on_the_time_limits_step_is_a_termination():
    """Snake ends a time limit with discount 0, as a death: a snake that dies on the limit's step must still
    read as terminated, exactly as it does under a limit far away (same keys, same actions)."""
    near, far = (envs.make(SUITES["jumanji"], max_episode_steps=limit) for limit in (TIME_LIMIT, 1000))
    _, at_limit = rollout(near, num_envs=512, steps=TIME_LIMIT)
    _, unlimited = rollout(far, num_envs=512, steps=TIME_LIMIT)
    terminated = np.asarray(at_limit.terminated)
    np.testing.assert_array_equal(terminated, np.asarray(unlimited.terminated))
    assert terminated[-1].any()  # some snakes die on the limit's step (30 of 512 with these keys)
    np.testing.assert_array_equal(np.asarray(at_limit.truncated)[-1], ~terminated[-1] & ~terminated[:-1].any(0))
    assert envs.make(SUITES["jumanji"]).max_episode_steps == 4000  # Snake's own limit, kept by purerl


def test_each_suite_trains_with_its_own_preset_by_default():
    """No suite install needed: the preset comes from the id's prefix, and fits the suite's discrete actions."""
    from purerl.algos import ppo_config
    from purerl.algos.settings import default_preset

    chosen = {suite: default_preset(env_id, discrete=True) for suite, env_id in SUITES.items()}
    assert chosen == {"navix": "gridworld", "xminigrid": "gridworld", "craftax": "craftax", "jumanji": "jumanji"}
    for suite, preset in chosen.items():
        config, _ = ppo_config.preset(preset, SUITES[suite], discrete=True)
        assert config.env == SUITES[suite] and config.activation == "relu"
    with pytest.raises(ConfigError, match="is for discrete actions"):
        ppo_config.preset("gridworld", SUITES["navix"], discrete=False)


def test_missing_suite_names_its_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "navix" else real(name, *a))
    with pytest.raises(ConfigError, match=r"^navix:Navix-Empty-5x5-v0 needs navix: pip install 'purerl\[navix\]'$"):
        envs.check_name("navix:Navix-Empty-5x5-v0")


@installed("navix")
def test_unknown_task_of_an_installed_suite_suggests_close_ids():
    with pytest.raises(ConfigError, match="did you mean navix:Navix-Empty-5x5-v0"):
        envs.check_name("navix:Navix-Empty-5x5")


def random_return(env_id, episodes_envs=64, steps=2000):
    """Mean return of the episodes a uniformly random policy ends."""
    env = envs.make(env_id)
    _, ts = rollout(env, num_envs=episodes_envs, steps=steps)
    done = np.asarray(ts.done)
    return float(np.asarray(ts.info["episode_return"])[done].mean())


@pytest.mark.slow
@pytest.mark.parametrize("suite, budget", [
    pytest.param("navix", 100_000, marks=installed("navix")),
    pytest.param("xminigrid", 100_000, marks=installed("xminigrid")),
    pytest.param("jumanji", 200_000, marks=installed("jumanji")),
    pytest.param("craftax", 200_000, marks=installed("craftax")),  # about 4 minutes on 2 busy CPU cores
])
def test_short_ppo_run_beats_a_random_policy(tmp_path, suite, budget):
    from purerl.cli import main

    out = tmp_path / suite
    assert main(["train", "--env", SUITES[suite], "--seeds", "2", "--total-timesteps", str(budget), "--out", str(out),
                 "--no-progress"]) == 0
    import json

    summary = json.loads((out / "summary.json").read_text())
    random = random_return(SUITES[suite])
    learned = summary["final_return"]["min"]  # every seed, not only the mean
    assert learned > random + 0.5 * abs(random) + 0.1, (learned, random)


class StandIn(SuiteEnv):
    """A cheap stand-in suite: an episode starts from random numbers, adds each action, and ends on action 1."""

    name, max_episode_steps = "stand-in", 0

    def __init__(self, envs_per_reset):
        self.envs_per_reset = envs_per_reset
        self._init_spaces(2)

    def _reset(self, key):
        start = jax.random.uniform(key, (3,))
        return start, start

    def _step(self, key, inner, action):
        inner = inner + action
        return inner, inner, jnp.sum(inner), action == 1, jnp.asarray(False)


def test_pooled_resets_change_only_the_ended_envs_and_spread_them_over_the_pool():
    exact, pooled = StandIn(1), StandIn(4)  # 8 envs with a pool of 2 fresh states
    _, states = exact.reset_batch(jax.random.split(jax.random.PRNGKey(3), 8))
    keys = jax.random.split(jax.random.PRNGKey(4), 8)
    actions = jnp.array([1, 0, 1, 0, 1, 0, 0, 1])  # every env taking action 1 ends: 4 at once
    exact_ts = jax.jit(exact.step_batch)(keys, states, actions)[1]
    pooled_states, pooled_ts = jax.jit(pooled.step_batch)(keys, states, actions)
    done = np.asarray(pooled_ts.terminated)
    np.testing.assert_array_equal(done, actions == 1)
    np.testing.assert_array_equal(exact_ts.final_obs, pooled_ts.final_obs)
    np.testing.assert_array_equal(np.asarray(exact_ts.obs)[~done], np.asarray(pooled_ts.obs)[~done])
    np.testing.assert_array_equal(pooled_states, pooled_ts.obs)
    fresh = np.asarray(pooled_ts.obs)[done]  # ends 0, 1, 2, 3 take fresh states 0, 1, 0, 1
    np.testing.assert_array_equal(fresh[0], fresh[2])
    np.testing.assert_array_equal(fresh[1], fresh[3])
    assert not np.array_equal(fresh[0], fresh[1])
    np.testing.assert_array_equal(fresh[0], np.asarray(exact_ts.obs)[done][0])  # the pool draws env 0's reset key
    # Unbatched, the pooled env resets exactly.
    np.testing.assert_array_equal([pooled.step(keys[i], states[i], actions[i])[1].obs for i in range(8)], exact_ts.obs)
    # Under a population's outer vmap, each member pools only its own envs.
    flipped = keys[::-1], states[::-1], actions[::-1]
    population = jax.vmap(jax.vmap(pooled.step))(*(jnp.stack(pair) for pair in zip((keys, states, actions), flipped)))
    np.testing.assert_array_equal(population[1].obs[0], pooled_ts.obs)
    np.testing.assert_array_equal(population[1].obs[1], pooled.step_batch(*flipped)[1].obs)
