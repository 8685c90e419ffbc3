"""PQN: Q(lambda) targets against a hand computation, with truncation apart from termination."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos import td
from purerl.algos.pqn import PQN, PQNConfig, PQNHyperParams


def hand_q_lambda(rewards, next_values, terminated, done, gamma, lam):
    returns, following = [], next_values[-1]
    for t in reversed(range(len(rewards))):
        if terminated[t]:
            g = rewards[t]
        elif done[t] or t == len(rewards) - 1:  # truncated or last step: bootstrap from the next value alone
            g = rewards[t] + gamma * next_values[t]
        else:
            g = rewards[t] + gamma * ((1 - lam) * next_values[t] + lam * following)
        returns.append(g)
        following = g
    return returns[::-1]


@pytest.mark.parametrize("ending", ["none", "terminated", "truncated"])
def test_q_lambda_targets_match_hand_computation(ending):
    rewards = np.array([1.0, 0.0, 2.0, 0.5])
    next_values = np.array([3.0, 4.0, 5.0, 6.0])
    terminated = np.array([False, ending == "terminated", False, False])
    done = np.array([False, ending != "none", False, False])
    got = td.q_lambda_targets(jnp.array(rewards), jnp.array(next_values), jnp.array(terminated), jnp.array(done),
                              0.9, 0.7)
    np.testing.assert_allclose(got, hand_q_lambda(rewards, next_values, terminated, done, 0.9, 0.7), rtol=1e-6)


def test_lambda_zero_is_one_step_q_learning_and_one_is_the_discounted_return():
    rewards, next_values = jnp.array([1.0, 2.0, 3.0]), jnp.array([10.0, 20.0, 30.0])
    flags = jnp.zeros(3, bool)
    np.testing.assert_allclose(td.q_lambda_targets(rewards, next_values, flags, flags, 0.5, 0.0),
                               rewards + 0.5 * next_values)
    np.testing.assert_allclose(td.q_lambda_targets(rewards, next_values, flags, flags, 0.5, 1.0),
                               [1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 30, 2 + 0.5 * 3 + 0.25 * 30, 3 + 0.5 * 30])


def test_pqn_targets_bootstrap_from_the_final_observation_of_a_truncated_episode():
    """The target of a truncated step uses max_a Q(final obs); a terminated step's is its reward alone."""
    config = PQNConfig(num_envs=1, num_steps=3, total_timesteps=3, update_epochs=1, num_minibatches=1,
                       hidden_sizes=(8,))
    train = PQN(config)
    hp = PQNHyperParams(td_lambda=0.0).as_arrays()
    params = train.network.init(jax.random.PRNGKey(0), jnp.zeros(4))
    final_obs = jnp.array([[[0.1, 0.2, 0.3, 0.4]], [[1.0, -1.0, 0.5, 0.0]], [[0.0, 0.0, 0.0, 0.0]]])
    from purerl.algos.pqn import Transition

    ones = jnp.ones((3, 1))
    trajectory = Transition(obs=final_obs, action=jnp.zeros((3, 1), jnp.int32), reward=ones,
                            terminated=jnp.array([[False], [True], [False]]), done=jnp.array([[True], [True], [False]]),
                            next_obs=final_obs, episode_done=ones, episode_return=ones, episode_length=ones)
    values = np.asarray(jnp.max(train.network.apply(params, final_obs), axis=-1))
    targets = np.asarray(train.targets(params, trajectory, hp))
    np.testing.assert_allclose(targets[:, 0], [1 + 0.99 * values[0, 0], 1.0, 1 + 0.99 * values[2, 0]], rtol=1e-5)
