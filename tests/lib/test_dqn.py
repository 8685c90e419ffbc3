"""DQN: the replay buffer, one-step and double-DQN targets against a hand computation, epsilon's schedule,
truncation in the real loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.algos import replay, td
from purerl.algos.dqn import DQN, DQNConfig, DQNHyperParams, Transition
from purerl.checks import ConfigError
from purerl.nets.layers import init_params


def test_buffer_wraps_around_and_samples_only_stored_transitions():
    buffer = replay.init({"x": jnp.float32(0)}, capacity=5)
    buffer = replay.add(buffer, {"x": jnp.array([1.0, 2.0, 3.0])})
    assert int(buffer.size) == 3 and int(buffer.position) == 3
    drawn = replay.sample(buffer, jax.random.PRNGKey(0), 200)["x"]
    assert set(np.unique(drawn)) == {1.0, 2.0, 3.0}  # never an empty slot
    buffer = replay.add(buffer, {"x": jnp.array([4.0, 5.0, 6.0])})  # 6 overwrites the oldest (1)
    assert int(buffer.size) == 5 and int(buffer.position) == 1
    np.testing.assert_array_equal(buffer.data["x"], [6.0, 2.0, 3.0, 4.0, 5.0])


def test_one_step_targets_match_hand_computation():
    reward = jnp.array([1.0, 0.5])
    terminated = jnp.array([False, True])
    online = jnp.array([[3.0, 1.0], [0.0, 9.0]])
    target = jnp.array([[2.0, 4.0], [7.0, 1.0]])
    # DQN: max of the target net. Double DQN: the target net's value of the online net's argmax.
    np.testing.assert_allclose(td.one_step_targets(reward, terminated, online, target, 0.9, double=False),
                               [1.0 + 0.9 * 4.0, 0.5])
    np.testing.assert_allclose(td.one_step_targets(reward, terminated, online, target, 0.9, double=True),
                               [1.0 + 0.9 * 2.0, 0.5])


def test_double_dqn_lets_the_online_network_choose_and_the_target_network_value():
    """The loss's targets come from the online network's argmax only with `double_dqn`; with one network in
    both roles the two rules agree."""
    config = DQNConfig(hidden_sizes=(8,))
    plain, double = DQN(config), DQN(config.replace(double_dqn=True))
    online, target = (init_params(plain.network, jax.random.PRNGKey(i), (4,)) for i in (0, 1))
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    obs, next_obs = jax.random.normal(keys[0], (2, 64, 4))
    batch = Transition(obs, jax.random.randint(keys[1], (64,), 0, 2), jnp.ones(64), next_obs,
                       jax.random.bernoulli(keys[2], 0.2, (64,)))
    hp = DQNHyperParams().as_arrays()
    q_taken = jnp.take_along_axis(plain.network.apply(online, obs), batch.action[:, None], axis=-1)[:, 0]
    choosers = {False: plain.network.apply(target, next_obs), True: plain.network.apply(online, next_obs)}
    for train, chooses in ((plain, False), (double, True)):
        targets = td.one_step_targets(batch.reward, batch.terminated, choosers[chooses],
                                      choosers[False], hp.gamma, double=chooses)
        loss, _ = train.loss(online, target, batch, hp, None)
        np.testing.assert_allclose(loss, td.l2(q_taken, targets, hp, None).mean(), rtol=1e-6)
    assert plain.loss(online, target, batch, hp, None)[0] != double.loss(online, target, batch, hp, None)[0]
    np.testing.assert_allclose(plain.loss(online, online, batch, hp, None)[0],
                               double.loss(online, online, batch, hp, None)[0], rtol=1e-6)


def test_epsilon_anneals_from_its_start_to_its_finish():
    train = DQN(DQNConfig(epsilon_anneal_time=100))
    hp = DQNHyperParams(epsilon_start=0.8, epsilon_finish=0.2).as_arrays()
    np.testing.assert_allclose([train.epsilon(hp, t) for t in (0, 50, 100, 400)], [0.8, 0.5, 0.2, 0.2], rtol=1e-6)


def test_epsilon_schedule_and_exploration():
    np.testing.assert_allclose(td.linear_decay(1.0, 0.05, jnp.array([0.0, 0.5, 1.0, 3.0])), [1.0, 0.525, 0.05, 0.05], rtol=1e-6)
    q = jnp.tile(jnp.array([0.0, 1.0, 0.0]), (4000, 1))
    greedy = td.epsilon_greedy(jax.random.PRNGKey(0), q, 0.0)
    assert np.all(greedy == 1)
    explored = np.asarray(td.epsilon_greedy(jax.random.PRNGKey(0), q, 0.3))
    assert abs((explored != 1).mean() - 0.3 * 2 / 3) < 0.03  # a random action is the greedy one 1/3 of the time


def test_truncated_transitions_store_the_final_observation_and_keep_their_bootstrap():
    """CartPole cut at 5 steps: a random policy never terminates that early, so every ended episode was truncated."""
    config = DQNConfig(num_envs=2, num_steps=10, total_timesteps=40, buffer_size=40, buffer_batch_size=8,
                       learning_starts=20, train_interval=2, target_update_interval=10, hidden_sizes=(8,))
    train = DQN(config, env=envs.make("CartPole-v1", max_episode_steps=5))
    state = jax.jit(train)(jax.random.PRNGKey(0), DQNHyperParams().as_arrays()).state
    data = jax.tree.map(np.asarray, state.buffer.data)
    assert int(state.buffer.size) == 40 and not data.terminated.any()
    obs, next_obs = data.obs.reshape(20, 2, 4), data.next_obs.reshape(20, 2, 4)  # [steps, envs, obs]
    continues = np.all(next_obs[:-1] == obs[1:], axis=-1)
    # Every env's episode ends after steps 5, 10 and 15: there the stored next obs is the final one, not the reset one.
    assert not continues[4::5].any() and continues.sum() == 19 * 2 - 3 * 2


def test_bad_dqn_config_is_a_config_error():
    with pytest.raises(ConfigError, match="train-interval=15 must be a multiple of num-envs=10"):
        DQNConfig(train_interval=15).validate()
    with pytest.raises(ConfigError, match="tau must be in"):
        DQNHyperParams(tau=0.0).validate()
