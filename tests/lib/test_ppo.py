import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos.ppo import METRICS, make_train
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.envs import ActionSpace, Env, EpisodeStats, Timestep
from purerl.run.population import make_members

from conftest import FULL_BATCH, TINY


class Counter(Env):
    """obs = [t, 1]; reward 1 per step; truncated at `limit`; terminated at `terminate_at` (if set)."""

    def __init__(self, limit: int, terminate_at: int | None = None):
        self.name = "Counter"
        self.observation_shape = (2,)
        self.action_space = ActionSpace(discrete=True, num_actions=2)
        self.max_episode_steps = limit
        self.limit, self.terminate_at = limit, terminate_at

    def reset(self, key):
        return jnp.array([0.0, 1.0]), jnp.int32(0)

    def step(self, key, t, action):
        t = t + 1
        final_obs = jnp.array([t, 1.0], jnp.float32)
        terminated = jnp.bool_(False) if self.terminate_at is None else t == self.terminate_at
        truncated = (t >= self.limit) & ~terminated
        done = terminated | truncated
        obs = jnp.where(done, jnp.array([0.0, 1.0]), final_obs)
        return jnp.where(done, 0, t), Timestep(obs, jnp.float32(1.0), terminated, truncated, final_obs, {})


@pytest.mark.parametrize("terminate_at", [None, 2])
def test_advantage_targets_bootstrap_on_truncation_not_termination(terminate_at):
    """Rollout through a time limit; compare GAE targets with a hand computation."""
    limit, steps = 3, 7
    config = PPOConfig(num_envs=1, num_steps=steps, total_timesteps=steps, num_minibatches=1)
    train = make_train(config, env=EpisodeStats(Counter(limit, terminate_at)))
    hp = HyperParams(gamma=0.9, gae_lambda=0.8).as_arrays()
    state = train.init(jax.random.PRNGKey(0), hp)
    _, traj = train.rollout(state, hp)
    values, advantages, targets = train.advantages(state.params, traj, (), hp)

    V = lambda t: float(train.network.apply(state.params, jnp.array([t, 1.0]), method="value"))  # noqa: E731
    episode_len = terminate_at or limit
    t_in_episode = [i % episode_len for i in range(steps)]
    expected_adv, next_adv = np.zeros(steps), 0.0
    for i in reversed(range(steps)):
        t = t_in_episode[i]
        ended = t + 1 == episode_len
        if ended and terminate_at is not None:
            next_value = 0.0  # real terminal state: no bootstrap
        else:
            next_value = V(t + 1)  # truncated: value of the final observation [limit, 1]
        delta = 1.0 + 0.9 * next_value - V(t)
        expected_adv[i] = delta + (0.0 if ended else 0.9 * 0.8 * next_adv)
        next_adv = expected_adv[i]
    expected_targets = expected_adv + np.array([V(t) for t in t_in_episode])
    np.testing.assert_allclose(np.asarray(traj.obs[:, 0, 0]), t_in_episode)
    np.testing.assert_allclose(np.asarray(targets[:, 0]), expected_targets, rtol=1e-5, atol=1e-5)
    ended = np.asarray(traj.done[:, 0])
    # On the truncating step the bootstrap observation is the final one, [limit, 1], not the reset [0, 1].
    np.testing.assert_allclose(np.asarray(traj.bootstrap_obs[ended, 0, 0]), episode_len)


def test_metrics_are_one_row_per_update_even_for_1e9_steps():
    config = PPOConfig(num_envs=64, num_steps=128, total_timesteps=1_000_000_000, num_minibatches=8)
    train = make_train(config)
    out = jax.eval_shape(train, jax.random.PRNGKey(0), HyperParams().as_arrays())
    updates = config.num_updates
    assert set(out.metrics) == set(METRICS)
    assert all(m.shape == (updates,) for m in out.metrics.values())
    metric_bytes = sum(m.size * m.dtype.itemsize for m in out.metrics.values())
    assert metric_bytes == len(METRICS) * updates * 4  # O(updates): ~4 MB/metric for 1.2e5 updates
    state_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(out.state) if hasattr(x, "size"))
    assert state_bytes < 64 * 2**20  # nothing in the output scales with the 1e9 steps


def test_same_seed_twice_is_bit_identical(tiny_jit, hp):
    a = tiny_jit(jax.random.PRNGKey(3), hp)
    b = tiny_jit(jax.random.PRNGKey(3), hp)
    for name in METRICS:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name])
    jax.tree.map(np.testing.assert_array_equal, a.state.params, b.state.params)


@pytest.mark.timeout(600)
def test_a_seed_in_batches_of_any_size_starts_bit_identically_and_agrees_to_rounding_at_update_0(
        tiny_train, tiny_jit, hp):
    """Exactly what the README claims for seed i alone vs inside batches of 8 and 64: bit-identical initial
    parameters, and first-update losses equal to float rounding (1e-5 relative, or 1e-6 absolute for
    near-zero means of O(1) terms such as the policy loss). Later updates may drift apart (different
    batch sizes compile to different float reduction orders, and training amplifies them), so there is no
    whole-run claim. Also guards the jaxlib 0.10 CPU deadlock: 64 seeds init under vmap."""
    for size in (8, 64):  # 8: the grid test's batch, one program for both
        members = make_members(list(range(size)), HyperParams())
        keys, hps = members.keys(), members.hyperparams.as_arrays()
        initial = jax.jit(jax.vmap(tiny_train.init))(keys, hps)
        batched = jax.jit(jax.vmap(tiny_train))(keys, hps)
        for i in {0, 2, size - 1}:
            alone_initial = jax.jit(tiny_train.init)(jax.random.PRNGKey(i), hp)
            jax.tree.map(lambda b, a: np.testing.assert_array_equal(b[i], a), initial.params, alone_initial.params)
            alone = tiny_jit(jax.random.PRNGKey(i), hp)
            for name in ("policy_loss", "value_loss", "entropy", "approx_kl"):
                np.testing.assert_allclose(batched.metrics[name][i, 0], alone.metrics[name][0], rtol=1e-5, atol=1e-6)
    returns = np.asarray(batched.metrics["episode_return"])
    assert np.isfinite(returns[:, -1]).all() and len(np.unique(returns[:, 0])) > 1  # seeds differ


def test_hyperparameter_grid_runs_in_one_program_and_matches_separate_runs(tiny_train, tiny_jit):
    members = make_members([0, 1], HyperParams(), grid={"lr": [1e-3, 2.5e-4], "clip_eps": [0.1, 0.3]})
    assert len(members) == 8 and members.swept == ("lr", "clip_eps")
    out = jax.jit(jax.vmap(tiny_train))(members.keys(), members.hyperparams.as_arrays())
    for i in (2, 5):
        hp_i = HyperParams(**{**HyperParams()._asdict(), **members.setting(i)}).as_arrays()
        alone = tiny_jit(jax.random.PRNGKey(members.seeds[i]), hp_i)
        np.testing.assert_allclose(out.metrics["policy_loss"][i], alone.metrics["policy_loss"], rtol=2e-4, atol=1e-5)
    lr_first = np.asarray(out.metrics["learning_rate"][:, 0])
    np.testing.assert_allclose(lr_first, members.hyperparams.lr, rtol=1e-6)


def test_learning_rate_anneals_linearly_to_zero(tiny_jit, hp):
    lr = np.asarray(tiny_jit(jax.random.PRNGKey(0), hp).metrics["learning_rate"])
    np.testing.assert_allclose(lr, 2.5e-4 * (1 - np.arange(TINY.num_updates) / TINY.num_updates), rtol=1e-5)


@pytest.mark.parametrize("env, obs_dims", [("Pendulum-v1", 3), ("MountainCarContinuous-v0", 2)])
def test_continuous_actions_train_with_finite_metrics(env, obs_dims):
    config = PPOConfig(env=env, num_envs=4, num_steps=32, total_timesteps=4 * 32 * 3,
                       num_minibatches=2, normalize_obs=True, normalize_reward=True)
    train = make_train(config)
    out = jax.jit(train)(jax.random.PRNGKey(0), HyperParams(ent_coef=0.0).as_arrays())
    assert out.state.obs_stats.mean.shape == (obs_dims,)  # one observation's shape, not one per env
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl"):
        assert np.isfinite(np.asarray(out.metrics[name])).all(), name
    assert "log_std" in out.state.params["params"]


def test_cartpole_learns_quickly(hp):
    """A short run must clearly beat a random policy (~22)."""
    config = PPOConfig(total_timesteps=60_000)
    out = jax.jit(make_train(config))(jax.random.PRNGKey(0), hp)
    returns = np.asarray(out.metrics["episode_return"])
    assert np.nanmean(returns[-10:]) > 100, np.nanmean(returns[-10:])


def test_a_full_batch_epoch_does_not_depend_on_sample_order():
    """With one minibatch PPO skips the shuffle: learning from the samples in any order gives the same
    parameters, to float rounding. (The rollout and learning programs are test_gpu_levers' `one_learn`.)"""
    ppo, hp = make_train(PPOConfig(**FULL_BATCH)), HyperParams(lr=1e-3).as_arrays()
    state, trajectory = jax.jit(lambda k, h: ppo.rollout(ppo.init(k, h), h))(jax.random.PRNGKey(0), hp)
    order = jax.random.permutation(jax.random.PRNGKey(1), FULL_BATCH["num_envs"])
    shuffled = jax.tree.map(lambda x: x[:, order], trajectory)
    learn = jax.jit(lambda s, t, h: ppo.learn_from(s, t, (), h, None))
    as_collected, reordered = (learn(state, t, hp)[0].params for t in (trajectory, shuffled))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), as_collected, reordered)
    moved = jax.tree.map(lambda a, b: float(np.abs(a - b).max()), as_collected, state.params)
    assert max(jax.tree.leaves(moved)) > 1e-3  # it did learn


def first_and_second_moment(ratio, log_ratio, advantage, hp, meta_params):
    """A policy objective that reads only the advantages: its mean is their mean plus their mean square."""
    return advantage + advantage**2


@pytest.mark.parametrize("normalize", [True, False], ids=["normalised", "raw"])
def test_advantages_are_normalised_per_minibatch_only_when_asked(normalize):
    """Normalised, the advantages the objective sees have mean 0 and mean square 1 in each minibatch; raw,
    they are GAE's. (The rollout program is test_a_full_batch_epoch_does_not_depend_on_sample_order's.)"""
    ppo = make_train(PPOConfig(**FULL_BATCH, normalize_advantages=normalize), objective=first_and_second_moment)
    hp = HyperParams(lr=1e-3).as_arrays()
    state, trajectory = jax.jit(lambda k, h: ppo.rollout(ppo.init(k, h), h))(jax.random.PRNGKey(0), hp)
    batch = ppo.batch(state.params, trajectory, (), hp)  # what learn_from learns from
    _, stats = jax.jit(ppo.loss)(state.params, batch, hp, None)
    raw = np.asarray(batch.advantage, np.float64)
    expected = 1.0 if normalize else raw.mean() + (raw**2).mean()
    assert abs(raw.mean()) > 0.5  # GAE's own mean is far from 0, so the two cases differ
    np.testing.assert_allclose(-stats["policy_loss"], expected, rtol=1e-5)
