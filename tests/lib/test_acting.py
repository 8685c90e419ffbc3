"""The one rollout (`algos/acting.py`): its keys, its actions and its loop, and that no other library module steps
envs itself."""

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.algos import acting

pytestmark = pytest.mark.smoke  # the smoke suite on the newest jax (README, "On a GPU")

LIBRARY = Path(__file__).resolve().parents[2] / "src" / "purerl"
NUM_ENVS = 3


def _random_policy(env):
    def act(key):
        return jax.random.randint(key, (NUM_ENVS,), 0, env.action_space.num_actions), None
    return act


def test_actor_step_is_the_envs_stepped_one_by_one_with_split_keys():
    env = envs.make("CartPole-v1")
    _, env_state = env.reset_batch(jax.random.split(jax.random.PRNGKey(0), NUM_ENVS))
    act_key, step_key = jax.random.split(jax.random.PRNGKey(1))
    step = acting.actor_step(env, env_state, _random_policy(env), act_key, step_key, NUM_ENVS)

    action = _random_policy(env)(act_key)[0]
    np.testing.assert_array_equal(step.action, action)
    for i, key in enumerate(jax.random.split(step_key, NUM_ENVS)):  # env i steps with key i of the split
        one_state = jax.tree.map(lambda x: x[i], env_state)
        _, timestep = env.step(key, one_state, action[i])
        np.testing.assert_array_equal(step.timestep.obs[i], timestep.obs)
        np.testing.assert_array_equal(step.timestep.reward[i], timestep.reward)


def test_actor_step_with_keys_already_split_uses_them_as_given():
    env = envs.make("CartPole-v1")
    _, env_state = env.reset_batch(jax.random.split(jax.random.PRNGKey(0), NUM_ENVS))
    act_key, step_key = jax.random.split(jax.random.PRNGKey(1))
    split = acting.actor_step(env, env_state, _random_policy(env), act_key, step_key, NUM_ENVS)
    given = acting.actor_step(env, env_state, _random_policy(env), act_key, jax.random.split(step_key, NUM_ENVS))
    for a, b in zip(jax.tree.leaves(split), jax.tree.leaves(given)):
        np.testing.assert_array_equal(a, b)


def test_to_env_maps_the_envs_action_and_the_step_keeps_the_agents():
    env = envs.make("Pendulum-v1")
    _, env_state = env.reset_batch(jax.random.split(jax.random.PRNGKey(0), NUM_ENVS))
    agent_action = jnp.full((NUM_ENVS, 1), 0.5)
    act = lambda key: (agent_action, "extras")  # noqa: E731
    step = acting.actor_step(env, env_state, act, None, jax.random.PRNGKey(2), NUM_ENVS, to_env=lambda a: 4 * a)
    direct = env.step_batch(jax.random.split(jax.random.PRNGKey(2), NUM_ENVS), env_state, 4 * agent_action)[1]
    np.testing.assert_array_equal(step.action, agent_action)
    assert step.extras == "extras"
    np.testing.assert_array_equal(step.timestep.reward, direct.reward)  # the torque 2.0, not 0.5, was applied


def test_unroll_stacks_records_time_major_and_unrolling_changes_no_number():
    env = envs.make("CartPole-v1")
    obs, env_state = env.reset_batch(jax.random.split(jax.random.PRNGKey(0), NUM_ENVS))

    def step(carry, _):
        env_state, key = carry
        key, act_key, step_key = jax.random.split(key, 3)
        s = acting.actor_step(env, env_state, _random_policy(env), act_key, step_key, NUM_ENVS)
        return (s.env_state, key), (s.action, s.timestep.reward, s.timestep.done)

    rolled = jax.jit(lambda c: acting.unroll(step, c, 20))((env_state, jax.random.PRNGKey(3)))
    unrolled = jax.jit(lambda c: acting.unroll(step, c, 20, unroll=8))((env_state, jax.random.PRNGKey(3)))
    assert rolled[1][0].shape == (20, NUM_ENVS)
    for a, b in zip(jax.tree.leaves(rolled), jax.tree.leaves(unrolled)):
        np.testing.assert_array_equal(a, b)

    carry, records = (env_state, jax.random.PRNGKey(3)), []
    for _ in range(20):  # the same steps in a Python loop
        carry, record = step(carry, None)
        records.append(record)
    np.testing.assert_array_equal(rolled[1][1], np.stack([r[1] for r in records]))


def test_no_library_module_but_the_acting_one_steps_a_batch_of_envs():
    """The rollout is written once: the algorithms and evaluation step their envs through `acting.actor_step`."""
    stepping = set()
    for path in LIBRARY.rglob("*.py"):
        if path.parent.name == "envs":  # the envs define step_batch (and their wrappers call the inner env's)
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "step_batch" and isinstance(node.ctx, ast.Load):
                stepping.add(path.relative_to(LIBRARY).as_posix())
    assert stepping == {"algos/acting.py"}
