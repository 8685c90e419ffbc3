"""SAC and TD3 through the shared layers: targets that bootstrap on truncation and not on termination, many
seeds and a grid in one program, chunked checkpoints that resume bit-for-bit, eval, and the CLI."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos import offpolicy, replay
from purerl.algos.sac import SAC, SACConfig, SACHyperParams
from purerl.algos.td3 import TD3, TD3Config, TD3HyperParams
from purerl.cli import main
from purerl.checks import ConfigError
from purerl.run.trainspec import TrainSpec, make_spec
from resume_check import assert_resume_is_bit_exact

# Pendulum-v1's episodes last 200 steps: 6 updates of 2 envs x 100 steps end some in most updates.
SMALL = dict(num_envs=2, num_steps=100, total_timesteps=2 * 100 * 6, buffer_size=512, buffer_batch_size=16,
             learning_starts=200, hidden_sizes=(16,))
TINY = {"sac": (SACConfig(**SMALL), SACHyperParams()), "td3": (TD3Config(**SMALL), TD3HyperParams())}
FLAGS = ["--num-envs", "2", "--num-steps", "100", "--total-timesteps", "1200", "--buffer-size", "512",
         "--buffer-batch-size", "16", "--learning-starts", "200", "--hidden-sizes", "16", "--no-progress"]


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_resume_after_interruption_equals_uninterrupted_run_over_four_seeds(algo, tmp_path):
    config, hp = TINY[algo]
    spec = TrainSpec(config=config, hyperparams=hp, seeds=[0, 1, 2, 3], algo=algo)  # the grid test's programs
    full = assert_resume_is_bit_exact(spec, tmp_path)
    assert full["diverged"] == []
    assert "final_eval" not in full  # `experiment.run` as the studies call it: no evaluation unless asked
    header = (tmp_path / "full" / "metrics.csv").read_text().splitlines()[0]
    assert "critic_loss" in header and "actor_loss" in header


@pytest.mark.parametrize("cls, config", [(SAC, TINY["sac"][0]), (TD3, TINY["td3"][0])])
def test_a_truncation_bootstraps_and_a_termination_does_not(cls, config):
    train = cls(config)
    hp = train.hyperparams().as_arrays()
    state = jax.jit(train.init)(jax.random.PRNGKey(0), hp)
    obs = jnp.ones((4, 3))
    batch = offpolicy.Transition(obs, jnp.zeros((4, 1)), jnp.ones(4), obs, jnp.zeros(4, bool))
    far = batch._replace(next_obs=obs * 5.0)
    loss = jax.jit(lambda b: train.critic_loss(state.params["critic"], state, b, jax.random.PRNGKey(1), hp)[0])
    assert loss(batch) != loss(far)  # not terminated (a truncation): the target reads the final observation
    ended, ended_far = batch._replace(terminated=jnp.ones(4, bool)), far._replace(terminated=jnp.ones(4, bool))
    assert loss(ended) == loss(ended_far)  # terminated: no bootstrap, the next observation does not matter


def test_td3_smooths_its_target_action_with_noise_clipped_to_noise_clip():
    """Target policy smoothing: N(0, policy_noise) noise, clipped to [-noise_clip, noise_clip], on the target
    actor's action. Clipped to 0, the target is the same for every key; huge noise clipped tight stays near that
    noise-free target; clipped loosely, it moves the target."""
    train = TD3(TINY["td3"][0])
    hp = train.hyperparams()
    state = jax.jit(train.init)(jax.random.PRNGKey(0), hp.as_arrays())  # the truncation test's program
    obs = jax.random.normal(jax.random.PRNGKey(2), (64, 3))
    batch = offpolicy.Transition(obs, jnp.zeros((64, 1)), jnp.ones(64), obs[::-1], jnp.zeros(64, bool))
    loss = jax.jit(lambda key, hp: train.critic_loss(state.params["critic"], state, batch, key, hp)[0])

    def at(seed, policy_noise, noise_clip):
        return float(loss(jax.random.PRNGKey(seed), hp._replace(policy_noise=policy_noise,
                                                                 noise_clip=noise_clip).as_arrays()))

    free = at(1, 0.0, 0.0)
    assert at(1, 100.0, 0.0) == at(2, 100.0, 0.0) == free
    tight, loose = at(1, 100.0, 1e-4), at(1, 100.0, 100.0)
    assert abs(tight - free) < 1e-3 * abs(free) < abs(loose - free)


def test_pendulum_truncation_is_stored_as_not_terminal_with_its_final_observation():
    config = SACConfig(num_envs=1, num_steps=200, total_timesteps=400, buffer_size=256, buffer_batch_size=16,
                       learning_starts=200, hidden_sizes=(8,))  # the first update (200 steps) only collects
    train = SAC(config)
    hp = train.hyperparams().as_arrays()
    state = jax.jit(lambda k: train.run(train.init(k, hp), hp, None, 0, 1))(jax.random.PRNGKey(0))
    data = state.buffer.data
    assert not bool(data.terminated[:200].any())  # Pendulum-v1 only truncates, at 200 steps
    np.testing.assert_array_equal(data.obs[1:200], data.next_obs[:199])  # within the episode, s' is the next s
    assert not np.allclose(data.next_obs[199], state.obs[0])  # the last transition keeps the final obs, not the reset
    assert float(state.metrics["episodes"][0]) == 1.0


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_a_two_setting_grid_trains_in_one_program_and_evals(algo, tmp_path, capsys):
    """lr x tau (the optimiser's and the algorithm's own traced settings), one seed each: 4 members, 2 a device,
    the resume test's programs (which train 4 seeds in one program)."""
    out = tmp_path / "run"
    code = main(["train", "--algo", algo, "--env", "Pendulum-v1", "--lr", "3e-4,1e-3", "--tau", "0.005,0.01",
                 "--seeds", "1", *FLAGS, "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["members"] == 4 and len(summary["final_return_by_setting"]) == 4
    assert main(["eval", str(out), "--episodes", "2"]) == 0
    assert "Pendulum-v1" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--algo", "sac", "--env", "CartPole-v1"], "SAC and TD3 need continuous actions; CartPole-v1 has discrete ones"),
    (["--algo", "td3", "--env", "Pendulum-v1", "--clip-eps", "0.1"], "--clip-eps does not apply to --algo td3"),
    (["--algo", "sac", "--env", "Pendulum-v1", "--exploration-noise", "0.1"],
     "--exploration-noise does not apply to --algo sac"),
    (["--algo", "td3", "--env", "Pendulum-v1", "--policy-noise", "-1"], "policy_noise must be >= 0"),
    (["--algo", "sac", "--env", "Pendulum-v1", "--gradient-steps", "0"], "gradient-steps must be a positive integer"),
    (["--algo", "sac", "--env", "Pendulum-v1", "--network", "gru"], "--network gru is not available for --algo sac"),
    (["--algo", "td3", "--env", "Pendulum-v1", "--buffer-size", "16000000", "--seeds", "4096"],
     "replay buffers of 16,000,000 transitions need"),
    # a fixed temperature that autotune would replace: members that differ only in their label
    (["--algo", "sac", "--env", "Pendulum-v1", "--alpha", "0.1,0.2"],
     "alpha is unused here: autotune (on) learns the temperature"),
    (["--algo", "sac", "--env", "Pendulum-v1", "--alpha", "0.1"],
     "turn it off (--no-autotune) to fix the temperature at alpha"),
    (["--algo", "sac", "--env", "Pendulum-v1", "--pbt", "--seeds", "4", "--pbt-explore", "alpha=0.01:1"],
     "alpha is unused here"),
])
def test_bad_off_policy_flags_are_one_line_and_exit_2(argv, message, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_a_fixed_temperature_is_used_without_autotune():
    """--no-autotune makes --alpha the temperature (a sweep of it is then a real sweep), and the refusal is
    SAC's alone: the same values pass for every config that uses them."""
    spec = make_spec("Pendulum-v1", "sac", settings={"autotune": False, "alpha": 0.1, "total_timesteps": 6000})
    assert float(spec.validate().hyperparams.alpha[0]) == np.float32(0.1)
    with pytest.raises(ConfigError, match="alpha is unused here"):
        make_spec("Pendulum-v1", "sac", settings={"alpha": 0.1}).validate()


def test_the_buffer_memory_check_counts_members_and_the_peak_copies():
    train = TD3(TINY["td3"][0])
    replay.check_fits(train.config, train.env, members=1, available=2**30)
    with pytest.raises(ConfigError, match="10 replay buffers of 512 transitions need"):
        replay.check_fits(train.config, train.env, members=10, available=1000)
    obs, action = math.prod(train.env.observation_shape), math.prod(train.env.action_space.shape)
    once = 4 * (2 * obs + action + 2) * train.config.buffer_size * 10  # one copy fits in 80%, three do not
    with pytest.raises(ConfigError, match="at their peak"):
        replay.check_fits(train.config, train.env, members=10, available=2 * once)


def test_rows_without_an_actor_step_are_not_divergence(tmp_path):
    """One gradient step per row and an actor step every second one: actor_loss is NaN in every other row by
    design, which must not read as a loss that turned non-finite (TD3's actor_loss is NaN the same way)."""
    from purerl.algos import registry

    assert all("actor_loss" not in registry.get(name).losses for name in ("sac", "td3"))
    out = tmp_path / "run"
    flags = ["--num-envs", "2", "--num-steps", "1", "--total-timesteps", "300", "--buffer-size", "512",
             "--buffer-batch-size", "16", "--learning-starts", "100", "--hidden-sizes", "16", "--no-progress"]
    assert main(["train", "--algo", "sac", "--env", "Pendulum-v1", "--out", str(out), *flags]) == 0
    rows = (out / "metrics.csv").read_text().splitlines()[1:]
    assert len(rows) == 150 and json.loads((out / "summary.json").read_text())["diverged"] == []
