"""DQN and PQN through the shared layers: many seeds in one program, chunked checkpoints that resume
bit-for-bit, the run directory, and the CLI."""

import jax
import numpy as np
import pytest

from purerl.algos.dqn import DQNConfig, DQNHyperParams
from purerl.algos.pqn import PQNConfig, PQNHyperParams
from purerl.cli import build_parser, main
from purerl.run.trainspec import TrainSpec
from resume_check import assert_resume_is_bit_exact

TINY = {
    "dqn": (DQNConfig(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 6, buffer_size=64, buffer_batch_size=16,
                      learning_starts=32, train_interval=4, target_update_interval=32, epsilon_anneal_time=100,
                      hidden_sizes=(16,)), DQNHyperParams()),
    "pqn": (PQNConfig(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 6, update_epochs=2, num_minibatches=2,
                      hidden_sizes=(16,)), PQNHyperParams()),
}


@pytest.mark.parametrize("algo", ["dqn", "pqn"])
def test_resume_after_interruption_equals_uninterrupted_run_over_three_seeds(algo, tmp_path):
    config, hp = TINY[algo]
    assert_resume_is_bit_exact(TrainSpec(config=config, hyperparams=hp, seeds=[0, 1, 2], algo=algo),
                               tmp_path)


def test_pqn_epsilon_anneals_from_its_start_over_the_first_epsilon_decay_of_the_updates():
    config, _ = TINY["pqn"]  # 6 updates; epsilon_decay 0.5: the finish is reached at update 3
    train = TrainSpec(config=config.replace(epsilon_decay=0.5), hyperparams=PQNHyperParams(),
                      algo="pqn").build()
    hp = PQNHyperParams(epsilon_start=0.8, epsilon_finish=0.2).as_arrays()
    np.testing.assert_allclose([train.epsilon(hp, update) for update in (0, 1.5, 3, 5)], [0.8, 0.5, 0.2, 0.2],
                               rtol=1e-6)


def test_pqn_learns_from_scaled_rewards_and_reports_the_envs_returns():
    """`reward_scale` multiplies the rewards PQN's targets see, not the episode returns it reports; the
    scale is a traced hyperparameter, so both settings run the same program."""
    config, hp = TINY["pqn"]
    train = TrainSpec(config=config, hyperparams=hp, algo="pqn").build()
    rollout = jax.jit(lambda key, hp: train.rollout(train.init(key, hp), 0.5, hp)[1])
    key = jax.random.PRNGKey(0)
    plain, scaled = (rollout(key, hp._replace(reward_scale=scale).as_arrays()) for scale in (1.0, 0.25))
    np.testing.assert_array_equal(scaled.reward, 0.25 * plain.reward)  # a power of two: exact
    assert np.all(np.asarray(plain.reward) == 1.0)  # CartPole pays 1 a step
    for name in ("obs", "action", "episode_return", "episode_length", "episode_done"):
        np.testing.assert_array_equal(getattr(scaled, name), getattr(plain, name), err_msg=name)
    np.testing.assert_array_equal(scaled.episode_return[0], 1.0)  # after one step: one unscaled reward


@pytest.mark.slow  # two more compiles; the fast resume test already runs three seeds in one program
@pytest.mark.parametrize("algo", ["dqn", "pqn"])
def test_seed_alone_equals_seed_inside_a_batch(algo):
    config, hp = TINY[algo]
    train = TrainSpec(config=config, hyperparams=hp, algo=algo).build()
    hp = hp.as_arrays()
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(3, dtype=np.uint32))
    batch = jax.jit(jax.vmap(train, in_axes=(0, None)))(keys, hp).metrics
    alone = jax.jit(train)(keys[1], hp).metrics
    for name in alone:
        np.testing.assert_allclose(batch[name][1], alone[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("argv, message", [
    (["--algo", "dqn", "--clip-eps", "0.1"], "--clip-eps does not apply to --algo dqn"),
    (["--algo", "pqn", "--buffer-size", "100"], "--buffer-size does not apply to --algo pqn"),
    (["--algo", "dqn", "--network", "gru"], "--network gru is not available for --algo dqn"),
    (["--algo", "pqn", "--preset", "memory"], "--preset memory is not a preset of --algo pqn"),
    (["--algo", "dqn", "--objective", "dpo"], "--objective (and the value loss) belong to --algo ppo"),
    (["--algo", "dqn", "--train-interval", "15"], "train-interval=15 must be a multiple of num-envs=10"),
    (["--algo", "pqn", "--env", "Pendulum-v1"], "PQN needs discrete actions; Pendulum-v1 has continuous ones"),
    (["--algo", "dqn", "--env", "Pendulum-v1"], "DQN needs discrete actions; Pendulum-v1 has continuous ones"),
    (["--algo", "dqn", "--env", "Pendulum-v1", "--preset", "classic"], "preset 'classic' is for discrete actions"),
    (["--algo", "dqn", "--buffer-size", "1e12"], "buffer-size must be at most 16,777,216, got 1,000,000,000,000"),
    (["--algo", "dqn", "--epsilon-anneal-time", "1e10"], "epsilon-anneal-time must be at most 2,147,483,647"),
    (["--algo", "pqn", "--num-envs", "1e9"], "num-envs must be at most 16,777,216"),
    (["--algo", "pqn", "--hidden-sizes", "64,1e9"], "hidden-sizes must be integers in [1, 16,777,216]"),
])
def test_bad_algorithm_flags_are_one_line_and_exit_2(argv, message, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not out.exists()


def test_algorithm_flags_never_collide():
    """The CLI adds one flag per field name over every registered algorithm: a name that is a static config field
    in one algorithm and a traced hyperparameter in another (or two static fields of different types) would make
    one flag mean two things."""
    from purerl.algos import registry

    static, traced = {}, set()
    for algorithm in registry.ALGORITHMS.values():
        traced |= set(algorithm.hyperparams._fields)
        for name, spec in algorithm.config.__dataclass_fields__.items():
            assert static.setdefault(name, type(spec.default)) is type(spec.default), (algorithm.name, name)
    assert not set(static) & traced, set(static) & traced
    choices = next(a for a in build_parser()._subparsers._group_actions[0].choices["train"]._actions
                   if a.dest == "algo").choices
    assert list(choices) == list(registry.ALGORITHMS)  # --algo comes from the registry
