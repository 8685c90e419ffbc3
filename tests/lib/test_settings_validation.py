"""Bad settings from Python are what bad flags are: one `ConfigError` line naming the field, before
anything is compiled or written. Every config and hyperparameter class checks every field's type, and every
number is finite, fits float32 and lies in the bounds the command line holds flags to."""

import argparse
import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import purerl
from cli_run import run_cli
from purerl import HyperParams, PPOConfig
from purerl.algos import registry
from purerl.cli import args
from purerl.checks import ConfigError
from purerl.run import experiment
from purerl.run.pbt_config import Bound, PBTConfig

SMALL = dict(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 4, update_epochs=1, num_minibatches=2)
SMALL_FLAGS = ["--num-envs", "4", "--num-steps", "16", "--total-timesteps", "768", "--update-epochs", "1",
               "--num-minibatches", "2", "--no-progress"]
BELOW_ZERO = np.nextafter(0.0, -1.0)  # (BELOW_ZERO, high] is [0, high], -0.0 included
# (low, high]: HyperParams' bounds, written out here rather than read from config.py.
PPO_BOUNDS = {"lr": (0, math.inf), "gamma": (0, 1), "gae_lambda": (BELOW_ZERO, 1), "clip_eps": (0, math.inf),
              "ent_coef": (BELOW_ZERO, math.inf), "vf_coef": (BELOW_ZERO, math.inf), "max_grad_norm": (0, math.inf)}


class ReachedTraining(Exception):
    """Validation passed: the run would now be placed on devices, compiled and trained."""


@pytest.fixture
def no_training(monkeypatch):
    """`purerl.train` stops where training would begin, so a test of its checks never compiles."""
    def reached(*_, **__):
        raise ReachedTraining

    monkeypatch.setattr(experiment.Placement, "for_members", reached)


@pytest.fixture(scope="module")
def tiny():
    return purerl.make_train("CartPole-v1", **SMALL)


def one_line_naming(error: ConfigError, name: str) -> bool:
    text = str(error)
    return "\n" not in text and (name in text or name.replace("_", "-") in text)


@pytest.mark.parametrize("hp, name", [(HyperParams(lr=1e39), "lr"), (HyperParams(clip_eps=float("inf")), "clip_eps"),
                                      (HyperParams(lr=True), "lr"), (HyperParams(gamma="0.9"), "gamma"),
                                      (HyperParams(vf_coef=[0.5, float("nan")]), "vf_coef"),
                                      (HyperParams(lr=np.array([True, False])), "lr"),
                                      (HyperParams(lr=1e-50), "lr")])  # 0 in float32
def test_bad_hyperparams_are_one_config_error_line(hp, name):
    with pytest.raises(ConfigError) as error:
        hp.validate()
    assert one_line_naming(error.value, name), error.value


@pytest.mark.parametrize("config, name", [(PPOConfig(env=5), "env"), (PPOConfig(normalize_obs="yes"), "normalize_obs"),
                                          (PPOConfig(num_envs=True), "num_envs"),
                                          (PPOConfig(hidden_sizes=(64, True)), "hidden_sizes"),
                                          (PPOConfig(cpu_group=2.0), "cpu_group")])
def test_bad_ppo_config_fields_are_one_config_error_line(config, name):
    with pytest.raises(ConfigError) as error:
        config.validate()
    assert one_line_naming(error.value, name), error.value


def wrong_values(default):
    """Values of the wrong type for a field whose default is `default`, and non-finite ones for a number."""
    if isinstance(default, bool):
        return ["yes", 1, None]
    if isinstance(default, str):
        return [5, None, b"x"]
    if isinstance(default, tuple):
        return [list(default), (True,), (2.5,)]
    if isinstance(default, int):
        return [True, 2.5, "4", None]
    return [True, "x", float("nan"), float("inf"), 1e39]


@pytest.mark.parametrize("algo", list(registry.ALGORITHMS))
def test_every_algorithms_classes_check_every_field(algo):
    """The checks are the classes' shared ones, so no field of any algorithm is left out."""
    algorithm = registry.ALGORITHMS[algo]
    for field in dataclasses.fields(algorithm.config):
        for value in wrong_values(field.default):
            with pytest.raises(ConfigError) as error:
                algorithm.config(**{field.name: value}).validate()
            assert one_line_naming(error.value, field.name), (field.name, value, error.value)
    for name in algorithm.hyperparams._fields:
        for value in (True, "x", None, float("nan"), float("-inf"), 1e39, -1e39, 10**400):
            with pytest.raises(ConfigError) as error:
                algorithm.hyperparams(**{name: value}).validate()
            assert one_line_naming(error.value, name), (name, value, error.value)
        algorithm.hyperparams().as_arrays().validate()  # float32 arrays, as a population holds them


VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**45, 10**45), st.booleans(),
                   st.sampled_from([1e39, -1e39, 3.4e38, 3.5e38, 1e-50, 5e-324, 0.0, -0.0, 1, 0.5]),
                   st.text(max_size=4), st.none(), st.lists(st.floats(), max_size=2))


def cli_accepts(value, bounds) -> bool:
    """What `--NAME VALUE` gets past: the parser's finite numbers that fit float32, then the bounds (low, high]
    both as given and as float32."""
    try:
        (parsed,) = args.floats(repr(value))
    except (argparse.ArgumentTypeError, ValueError):
        return False
    low, high = bounds
    return low < parsed <= high and low < float(np.float32(parsed)) <= high


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(HyperParams._fields), value=VALUES)
def test_any_hyperparameter_value_is_accepted_within_the_cli_bounds_or_one_config_error_line(name, value):
    try:
        HyperParams(**{name: value}).validate()
    except ConfigError as error:
        assert one_line_naming(error, name), error
        accepted = False
    else:
        accepted = True
    if isinstance(value, list):
        assert accepted == all(cli_accepts(v, PPO_BOUNDS[name]) for v in value), value
    else:
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        assert accepted == (is_number and cli_accepts(value, PPO_BOUNDS[name])), value


def has_declared_type(value, default) -> bool:
    """What a flag of this field's kind parses to: True or False, a string, a tuple of integers, an integer."""
    if isinstance(default, (bool, str)):
        return type(value) is type(default)
    if isinstance(default, tuple):
        return isinstance(value, tuple) and all(type(h) is int for h in value)
    return type(value) is int


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(dataclasses.fields(PPOConfig)),
       value=st.one_of(VALUES, st.tuples(st.integers(-2, 2**25)), st.sampled_from(["relu", "xla", "bfloat16"])))
def test_any_ppo_config_value_is_accepted_with_its_type_or_one_config_error_line(field, value):
    """A value of the wrong type names its field; one of the right type may still clash with another field's
    (a batch smaller than one rollout), which is one line too."""
    typed = has_declared_type(value, field.default)
    try:
        PPOConfig(**{field.name: value}).validate()
    except ConfigError as error:
        assert "\n" not in str(error) and (typed or one_line_naming(error, field.name)), error
    else:
        assert typed, value


def test_make_train_refuses_an_infinite_learning_rate():
    with pytest.raises(ConfigError, match="lr must be finite and fit float32"):
        purerl.make_train("CartPole-v1", lr=float("inf"), **SMALL)


@pytest.mark.parametrize("session, message", [
    (dict(chunk_updates=-5), "chunk_updates must be a positive integer, got -5"),
    (dict(chunk_updates=0), "chunk_updates must be a positive integer, got 0"),
    (dict(chunk_updates=2.5), "chunk_updates must be a positive integer, got 2.5"),
    (dict(chunk_updates=True), "chunk_updates must be a positive integer, got True"),
    (dict(checkpoint_every_s=-1), "checkpoint_every_s must be a positive number of seconds, got -1"),
    (dict(checkpoint_every_s=float("nan")), "checkpoint_every_s must be a positive number of seconds, got nan"),
    (dict(grid={"lr": [1e39, 1e-3]}), "lr must be finite and fit float32 (at most about 3.4e38), got 1e+39"),
])
def test_purerl_train_refuses_bad_arguments_before_writing_or_compiling(tiny, no_training, tmp_path, session, message):
    out = tmp_path / "run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ConfigError) as error:
            purerl.train(tiny, out, progress=False, **session)
    assert message in str(error.value) and "\n" not in str(error.value), error.value
    assert not caught, [str(w.message) for w in caught]
    assert not out.exists()


def test_purerl_train_still_reaches_training_with_good_arguments(tiny, no_training, tmp_path):
    with pytest.raises(ReachedTraining):
        purerl.train(tiny, tmp_path / "run", progress=False, chunk_updates=2, checkpoint_every_s=1,
                     grid={"lr": [1e-3, 2e-3]})


@pytest.mark.parametrize("member", [True, 1.5, "0", None])
def test_load_refuses_a_member_that_is_no_integer_before_loading(tmp_path, member):
    with pytest.raises(ConfigError, match="member must be an integer index, got "):
        purerl.load(tmp_path / "no-run", member=member)


@pytest.mark.parametrize("flags, message", [
    (["--pbt-perturb", "-5"], "pbt-perturb must be a finite factor > 1, got -5"),
    (["--pbt-window", "-3"], "pbt-window must be an integer in [0, pbt-interval=4]"),
    (["--pbt-resample", "2"], "pbt-resample must be a probability in [0, 1]"),
])
def test_random_search_checks_every_pbt_setting(capsys, no_training, tmp_path, flags, message):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--pbt", "--pbt-fraction", "0", "--pbt-interval", "4", "--seeds", "2",
                           *SMALL_FLAGS, *flags, "--out", out)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_a_pbt_range_beyond_float32_is_one_line_without_a_numpy_warning(capsys, no_training, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_cli(capsys, "train", "--pbt", "--seeds", "4", "--pbt-interval", "4", *SMALL_FLAGS,
                               "--pbt-explore", "lr=1e-5:1e39", "--out", tmp_path / "run")
    assert code == 2 and err.count("\n") == 1 and "the range needs finite numbers LOW < HIGH" in err, err
    assert not caught, [str(w.message) for w in caught]


EXPLORE = (Bound("lr", 1e-4, 1e-2),)


@pytest.mark.parametrize("pbt, name", [
    (PBTConfig(interval=2, fraction=True, explore=EXPLORE), "pbt-fraction"),
    (PBTConfig(fraction=0, perturb=float("inf"), explore=EXPLORE), "pbt-perturb"),
    (PBTConfig(fraction=0, window=True, explore=EXPLORE), "pbt-window"),
    (PBTConfig(fraction=0, interval=2.0, explore=EXPLORE), "pbt-interval"),
    (PBTConfig(interval=2, explore=(Bound("lr", "0", 1.0),)), "pbt-explore lr"),
    (PBTConfig(interval=2, explore=(Bound("lr", 1e-5, 10**400),)), "pbt-explore lr"),
])
def test_pbt_settings_from_python_are_one_config_error_line(pbt, name):
    with pytest.raises(ConfigError) as error:
        pbt.validate(HyperParams(), PPOConfig(**SMALL), 4)
    assert "\n" not in str(error.value) and str(error.value).startswith(name), error.value


@pytest.mark.parametrize("flags", [
    ["--num-envs", "100000", "--num-steps", "1000", "--total-timesteps", "1000000000"],
    ["--hidden-sizes", "100000,100000"],
    ["--seeds", "1048576"],
])
def test_a_run_that_cannot_fit_this_machine_is_one_line_before_anything_is_written(flags, tmp_path, capsys):
    """Issue 84: sizes inside the caps whose memory no machine here has are refused with the estimate, exit 2,
    before the run directory is written (as the replay buffers' check does)."""
    from cli_run import run_cli

    code, _, err = run_cli(capsys, "train", *flags, "--out", tmp_path / "run", "--no-progress")
    assert code == 2 and err.count("\n") == 1 and "GiB, more than this machine's" in err, err
    assert not (tmp_path / "run").exists()


def test_the_memory_bound_is_a_lower_bound_that_a_small_run_passes():
    from purerl import envs
    from purerl.algos import memory

    env = envs.make("CartPole-v1")
    memory.ppo_fits(PPOConfig(), env, 64)  # the README's 64 seeds
    with pytest.raises(ConfigError, match="need at least 0.0 GiB"):
        memory.ppo_fits(PPOConfig(), env, 1, available=1.0)
    pendulum = envs.make("Pendulum-v1")  # a continuous policy: a mean and a log-std per action dimension
    config = PPOConfig(env="Pendulum-v1", hidden_sizes=(64, 64), num_envs=1, num_steps=1)
    parameters = memory.mlp_parameters(3, (64, 64), 2) + memory.mlp_parameters(3, (64, 64), 1)
    with pytest.raises(ConfigError, match=f"1 PPO members of {parameters:,} parameters and 1 steps an update"):
        memory.ppo_fits(config, pendulum, 1, available=1.0)
    assert memory.mlp_parameters(4, (8,), 2) == 4 * 8 + 8 + 8 * 2 + 2
