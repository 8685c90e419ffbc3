"""The Python API: `make_train(ENV_ID, **settings)` builds what `purerl train` builds, and `purerl.train` gives a
train function with Python hooks the command line's run directory, checkpoints and bit-exact resume."""

import json

import jax
import jax.numpy as jnp
import pytest
from resume_check import assert_cut_and_resumed_run_equals_whole

import purerl
from purerl import HyperParams, PPOConfig, make_train
from purerl.cli import build_parser, main, train_spec
from purerl.checks import ConfigError

SMALL = dict(num_envs=4, num_steps=32, total_timesteps=4 * 32 * 6, update_epochs=1, num_minibatches=2)
TINY = PPOConfig(env="CartPole-v1", **SMALL)


def huber(value, old_value, target, hp, meta_params):
    """A value loss written in a user's script: per-sample Huber, weighted by a meta-parameter if given."""
    error = jnp.abs(value - target)
    loss = jnp.where(error < 1.0, 0.5 * error**2, error - 0.5)
    return loss if meta_params is None else loss * meta_params["w"]


@pytest.fixture(scope="module")
def hooked_run(tmp_path_factory):
    """A PPO with a custom value loss, trained from Python whole and cut-then-resumed: the runs are equal."""
    tmp = tmp_path_factory.mktemp("hooked")
    train = make_train(TINY, value_loss=huber)
    full = assert_cut_and_resumed_run_equals_whole(
        lambda out, **session: purerl.train(train, out, seeds=3, progress=False, chunk_updates=2, **session), tmp, 3)
    return tmp / "full", full


def test_a_custom_hook_run_writes_the_run_directory_and_resumes_bit_exact(hooked_run):
    out, summary = hooked_run
    for name in ("config.json", "metrics.csv", "summary.json", "curves.png", "checkpoint"):
        assert (out / name).exists(), name
    record = json.loads((out / "config.json").read_text())
    assert record["value_loss"] == "python" and record["python"]["value_loss"].endswith(".huber")
    assert record["objective"] == "ppo" and record["network"] == "mlp" and record["seeds"] == [0, 1, 2]
    assert summary["members"] == 3


def test_a_python_run_refuses_another_hook_or_meta_params_and_the_cli_says_how_to_continue(hooked_run, capsys):
    out, _ = hooked_run
    with pytest.raises(ConfigError, match=r"value_loss: \"python\" \(recorded\) vs \"clipped_l2\" \(this command\)"):
        purerl.train(make_train(TINY), out, seeds=3, resume=True)
    with pytest.raises(ConfigError, match=r"differs in: meta_params: absent \(recorded\) vs \"sha256:"):
        purerl.train(make_train(TINY, value_loss=huber), out, seeds=3, resume=True, meta_params={"w": 2.0})
    again = purerl.train(make_train(TINY, value_loss=huber), out, seeds=3, resume="auto", progress=False)
    assert again == json.loads((out / "summary.json").read_text())  # a finished run: nothing trains, nothing changes
    assert main(["train", "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "trained from Python" in err and "purerl.train(train, RUN_DIR, resume=True)" in err


def test_make_train_from_an_env_id_is_what_the_cli_trains():
    for env, flags, settings in [
        ("CartPole-v1", ["--lr", "1e-3", "--num-envs", "8"], dict(lr=1e-3, num_envs=8)),
        ("Pendulum-v1", ["--total-timesteps", "20000"], dict(total_timesteps=20_000)),  # the continuous preset
        ("Breakout-MinAtar", [], {}),  # the minatar preset, chosen by env family
        ("CartPole-v1", ["--algo", "dqn", "--buffer-size", "5000"], dict(algo="dqn", buffer_size=5000)),
    ]:
        spec = train_spec(build_parser().parse_args(["train", "--env", env, "--seeds", "1", *flags]))
        train = make_train(env, **settings)
        assert train.spec == spec, env
        assert train.config == spec.config and train.hyperparams == spec.hyperparams
    assert type(make_train("CartPole-v1", algo="pqn").algorithm) is purerl.PQN


def test_make_train_from_an_env_id_is_a_pure_train_function():
    train = make_train("CartPole-v1", total_timesteps=20_000, lr=1e-3)  # docs/python_api.md's: one compile for both
    result = jax.jit(train)(jax.random.PRNGKey(0))
    assert result.metrics["episode_return"].shape == (train.config.num_updates,)
    assert train.hyperparams.lr == 1e-3 and type(train.algorithm) is purerl.PPO


@pytest.mark.parametrize("settings, message", [
    (dict(lrr=1e-3), "unknown setting 'lrr'; did you mean lr?"),
    (dict(buffer_size=100), "buffer_size does not apply to algo 'ppo'"),
    (dict(lr=-1e-3), "lr must be > 0, got -0.001"),
    (dict(lr="fast"), "lr must be a number, got 'fast'"),
    (dict(num_envs=0), "num-envs must be a positive integer, got 0"),
    (dict(total_timesteps=1e5), "total_timesteps must be int, got 100000.0"),
    (dict(lr=[1e-3, 3e-4]), "a train function trains one setting; sweep a grid with purerl.train"),
    (dict(preset="minatar", algo="sac"), "preset minatar is not a preset of algo 'sac'"),
    (dict(algo="dqn", objective="dpo"), "objective and value_loss are PPO's hooks; algo 'dqn' has neither"),
    (dict(objective="lpo"), "objective 'lpo' needs its meta-parameters"),
    (dict(algo="a2c"), "unknown algorithm 'a2c'"),
])
def test_a_bad_setting_is_one_config_error_line(settings, message):
    with pytest.raises(ConfigError) as error:
        make_train("CartPole-v1", **settings)
    assert message in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="unknown environment 'CartPol-v1'; did you mean CartPole-v1"):
        make_train("CartPol-v1")


@pytest.mark.smoke
def test_a_grid_from_python_and_a_rerun_of_the_script_continues(tmp_path):
    train = make_train("CartPole-v1", total_timesteps=20_000)  # the population docs/python_api.md trains
    first = purerl.train(train, tmp_path / "grid", seeds=2, grid={"lr": [1e-3, 2.5e-4]}, resume="auto",
                         progress=False)
    assert list(first["final_return_by_setting"]) == ["lr=0.001", "lr=0.00025"]
    assert list(first["final_return_by_member"])[1] == "lr=0.001,seed=1"
    again = purerl.train(train, tmp_path / "grid", seeds=2, grid={"lr": [1e-3, 2.5e-4]}, resume="auto",
                         progress=False)
    assert again == first
    for bad, message in [(dict(seeds=[0, 0]), "seed 0 is given twice"), (dict(seeds=0), "^seeds must be positive"),
                         (dict(seeds=2**40), "^seeds must be at most 1,048,576"),
                         (dict(grid={"buffer_size": [1, 2]}), "cannot sweep 'buffer_size'"),
                         (dict(grid={"buffer_size": [1]}), "cannot sweep 'buffer_size'"),  # not dropped for one value
                         (dict(grid={"lr": [1e-3, -1.0]}), "lr must be > 0"),
                         (dict(hyperparams=purerl.DQNHyperParams()), "hyperparams must be HyperParams for PPO"),
                         (dict(resume="yes"), "resume must be True, False or 'auto'")]:
        with pytest.raises(ConfigError, match=message):
            purerl.train(train, tmp_path / "bad", **bad)
        assert not (tmp_path / "bad").exists()


def test_the_config_form_of_make_train_is_unchanged():
    assert type(make_train(TINY)) is purerl.PPO
    with pytest.raises(TypeError, match="lr belong to make_train\\(ENV_ID, ...\\)"):
        make_train(TINY, lr=1e-3)
    with pytest.raises(ConfigError, match="lr must be > 0"):
        HyperParams(lr=-1.0).as_arrays()


def _bench_env(algo: str) -> str:
    """An env the algorithm trains on: the one its `purerl bench` task times it on."""
    from purerl.algos import registry

    return next(iter(registry.get(algo).bench_tasks.values()))["env"]


def test_each_algorithm_module_builds_its_train_function_as_purejaxrl_does():
    """`algos.<name>.make_train(config)`, PureJaxRL's entry point, builds what the registry builds from it."""
    import importlib

    from purerl.algos import registry

    for algo, algorithm in registry.ALGORITHMS.items():
        config = algorithm.config(env=_bench_env(algo))
        train = importlib.import_module(f"purerl.algos.{algo}").make_train(config)
        assert type(train) is type(registry.build(algo, config)) and train.config == config, algo


def test_every_algorithms_record_reads_back(tmp_path):
    """`--config` and `--resume` read config.json through `trainspec.check_types`, which once refused PQN's float
    `epsilon_decay` as "must be int"."""
    from purerl.algos import registry
    from purerl.run.rerun import load_spec

    for algo in registry.ALGORITHMS:
        spec = make_train(_bench_env(algo), algo=algo).spec
        (tmp_path / "config.json").write_text(json.dumps(spec.to_json()))
        assert load_spec(tmp_path / "config.json") == spec, algo


class _LoggedPPO(__import__("purerl").PPO):
    """PureJaxRL's habit: a subclass whose loss adds a statistic."""

    metric_names = __import__("purerl").PPO.metric_names + ("mean_advantage",)

    def loss(self, params, batch, hp, meta_params):
        total, stats = super().loss(params, batch, hp, meta_params)
        return total, {**stats, "mean_advantage": batch.advantage.mean()}


class _UnnamedStatPPO(_LoggedPPO):
    metric_names = __import__("purerl").PPO.metric_names


def test_a_subclass_that_overrides_the_loss_is_recorded_and_its_statistic_reaches_the_metrics(tmp_path, capsys):
    """Issue 86: config.json names the class, so `--config` and `--resume` from the command line refuse it in one
    line instead of rerunning plain PPO; a statistic its loss adds is in metrics.csv, or refused, never dropped."""
    import purerl
    from cli_run import run_cli

    config = purerl.PPOConfig(env="CartPole-v1", num_envs=4, num_steps=32, total_timesteps=512, update_epochs=1,
                              num_minibatches=2)
    out = tmp_path / "run"
    purerl.train(_LoggedPPO(config), out, progress=False)
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["python"] == {"algorithm": f"{__name__}._LoggedPPO"}
    assert "mean_advantage" in (out / "metrics.csv").read_text().splitlines()[0]
    for argv in (["train", "--config", out / "config.json", "--out", tmp_path / "again"],
                 ["train", "--out", out, "--resume"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and f"{__name__}._LoggedPPO" in err, err
    assert not (tmp_path / "again").exists()
    with pytest.raises(purerl.ConfigError, match="no metric column holds \\(mean_advantage\\)"):
        purerl.train(_UnnamedStatPPO(config), tmp_path / "dropped", progress=False)
    assert not (tmp_path / "dropped").exists()  # refused before the run directory is written


def test_a_run_on_an_environment_of_ones_own_is_loaded_and_evaluated_from_python(tmp_path, capsys):
    """Issue 86: no record can rebuild a Python-defined environment, so `purerl.load` takes the train function the
    run was trained with; the command line's `eval` says how, in one line; a train function of another config is
    refused naming the field."""
    import numpy as np
    from cli_run import run_cli
    from test_ppo import Counter

    from purerl.envs.wrappers import EpisodeStats

    config = PPOConfig(env="Counter", num_envs=4, num_steps=8, total_timesteps=256, num_minibatches=2,
                       update_epochs=1)
    train = make_train(config, env=EpisodeStats(Counter(5)))
    out = tmp_path / "run"
    purerl.train(train, out, seeds=2, progress=False)
    code, _, err = run_cli(capsys, "eval", out, "--episodes", "2")
    assert code == 2 and err.count("\n") == 1 and "purerl.load(RUN_DIR, train=...)" in err, err
    with pytest.raises(ConfigError, match="train=..."):
        purerl.load(out)
    policy = purerl.load(out, member=1, train=train)
    assert policy(np.array([0.0, 1.0], np.float32)) in (0, 1)
    returns = policy.evaluate(jax.random.PRNGKey(0), episodes=3)
    assert returns.shape == (3,) and np.all(returns == 5.0)  # reward 1 a step, truncated after 5
    other = make_train(PPOConfig(**{**config.__dict__, "num_envs": 8}), env=EpisodeStats(Counter(5)))
    with pytest.raises(ConfigError, match="num_envs: 4 \\(recorded\\) vs 8 \\(given\\)"):
        purerl.load(out, train=other)
