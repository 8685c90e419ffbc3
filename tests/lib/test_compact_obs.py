"""PPO's `compact_obs`: observations stored and carried in the env's narrowest exact dtype (int8 for MinAtar's
0/1 grids) and cast to float32 as they enter the network, so the same numbers from a quarter of the bytes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.algos.ppo import make_train
from purerl.algos.ppo_config import HyperParams, PPOConfig, recorded
from purerl.checks import ConfigError
from purerl.envs.core import BINARY_OBSERVATIONS

from conftest import TINY

BREAKOUT = PPOConfig(env="Breakout-MinAtar", num_envs=8, num_steps=16, num_minibatches=2, update_epochs=2,
                     activation="relu", hidden_sizes=(32,), total_timesteps=8 * 16 * 3)


@pytest.mark.parametrize("name", [name if name == "Breakout-MinAtar" else pytest.param(name, marks=pytest.mark.slow)
                                  for name in BINARY_OBSERVATIONS])  # each game's step compiles for 15-60 s
def test_minatar_observations_are_exact_in_int8(name):
    """What `observation_dtype` claims, on the observations random play reaches (every game's `get_obs` in gymnax
    sets only 0 and 1): float32(int8(obs)) == obs, reset and final observations alike."""
    env = envs.make(name)
    assert env.observation_dtype == np.int8 and envs.narrower_observations(env)

    def play(key):
        obs, state = env.reset_batch(jax.random.split(key, 16))

        def step(state, key):
            action_key, step_key = jax.random.split(key)
            action = jax.random.randint(action_key, (16,), 0, env.action_space.num_actions)
            state, ts = env.step_batch(jax.random.split(step_key, 16), state, action)
            return state, (ts.obs, ts.final_obs)

        return obs, jax.lax.scan(step, state, jax.random.split(key, 200))[1]

    for obs in jax.tree.leaves(jax.jit(play)(jax.random.PRNGKey(0))):
        assert obs.dtype == jnp.float32
        np.testing.assert_array_equal(obs.astype(np.int8).astype(np.float32), obs)


def test_float_observations_keep_float32():
    assert envs.make("CartPole-v1").observation_dtype == np.float32
    assert not envs.narrower_observations(envs.make("CartPole-NoVel-v1"))


def test_compact_observations_learn_bit_for_bit_what_float32_ones_do():
    """Breakout-MinAtar: the same metrics, parameters and optimiser state to the bit, from int8 observations."""
    hp, key = HyperParams(lr=5e-3).as_arrays(), jax.random.PRNGKey(0)
    plain = jax.jit(make_train(BREAKOUT))(key, hp)
    compact_train = make_train(BREAKOUT.replace(compact_obs=True))
    compact = jax.jit(compact_train)(key, hp)
    assert compact_train.obs_dtype == jnp.int8 and compact.state.obs.dtype == jnp.int8
    np.testing.assert_array_equal(compact.state.obs, plain.state.obs)
    for a, b in zip(jax.tree.leaves(plain._replace(state=plain.state._replace(obs=None))),
                    jax.tree.leaves(compact._replace(state=compact.state._replace(obs=None)))):
        np.testing.assert_array_equal(a, b)


def test_the_trajectory_and_batch_hold_int8_observations():
    train = make_train(BREAKOUT.replace(compact_obs=True))
    hp = HyperParams().as_arrays()
    state = jax.eval_shape(train.init, jax.random.PRNGKey(0), hp)
    _, trajectory = jax.eval_shape(train.rollout, state, hp)
    batch = jax.eval_shape(train.batch, state.params, trajectory, (), hp)
    assert trajectory.obs.dtype == trajectory.bootstrap_obs.dtype == batch.obs.dtype == jnp.int8
    assert batch.obs.shape == (8 * 16, 400)


def test_acting_takes_float_or_compact_observations():
    train = make_train(BREAKOUT.replace(compact_obs=True))
    state = train.init(jax.random.PRNGKey(1), HyperParams().as_arrays())
    obs = state.obs.astype(jnp.float32)
    np.testing.assert_array_equal(train.act(state.params, None, obs), train.act(state.params, None, state.obs))
    key = jax.random.PRNGKey(2)
    np.testing.assert_array_equal(train.act(state.params, None, obs, key), train.act(state.params, None, state.obs, key))


def test_the_recurrent_network_takes_compact_observations():
    from purerl.algos import registry

    config = BREAKOUT.replace(hidden_sizes=(16,), total_timesteps=8 * 16)
    hp, key = HyperParams().as_arrays(), jax.random.PRNGKey(0)
    plain = jax.jit(registry.build("ppo", config, network="gru"))(key, hp)
    compact = jax.jit(registry.build("ppo", config.replace(compact_obs=True), network="gru"))(key, hp)
    for name, values in plain.metrics.items():
        np.testing.assert_array_equal(compact.metrics[name], values, err_msg=name)


def test_compact_obs_is_a_no_op_where_observations_need_float32():
    """CartPole's observations are floats: the same program, byte for byte."""
    hp, key = HyperParams().as_arrays(), jax.random.PRNGKey(0)
    compact = make_train(TINY.replace(compact_obs=True))
    assert compact.obs_dtype == jnp.float32
    assert jax.jit(compact).lower(key, hp).as_text() == jax.jit(make_train(TINY)).lower(key, hp).as_text()


def test_compact_obs_refuses_normalised_observations_in_one_line():
    with pytest.raises(ConfigError, match="normalize-obs") as error:
        make_train(BREAKOUT.replace(compact_obs=True, normalize_obs=True))
    assert "\n" not in str(error.value)


def test_compact_obs_off_is_not_recorded():
    assert "compact_obs" not in recorded(PPOConfig())
    assert recorded(PPOConfig(compact_obs=True))["compact_obs"] is True


def test_the_flag_parses():
    from purerl.cli import build_parser, train_spec

    spec = train_spec(build_parser().parse_args(["train", "--env", "Breakout-MinAtar", "--compact-obs"]))
    assert spec.config.compact_obs is True
    assert train_spec(build_parser().parse_args(["train", "--env", "Breakout-MinAtar"])).config.compact_obs is False


@pytest.mark.parametrize("env, settings, expected", [
    ("Breakout-MinAtar", {}, True), ("CartPole-v1", {}, False),
    ("Breakout-MinAtar", {"normalize_obs": True}, False), ("Breakout-MinAtar", {"compact_obs": False}, False)])
def test_on_a_gpu_ppo_compacts_observations_only_where_they_fit_narrower(monkeypatch, env, settings, expected):
    from purerl.run.trainspec import make_spec
    from purerl.runtime import backend

    assert make_spec(env, settings=settings).config.compact_obs is False  # a CPU's programs stay as they are
    monkeypatch.setattr(backend, "platforms_named", lambda: ["cuda"])
    assert make_spec(env, settings=settings).config.compact_obs is expected


@pytest.mark.slow  # the interpreted kernel compiles for about a minute
def test_the_fused_kernel_learns_the_same_from_compact_observations():
    """The fused kernel reads float32 observations, so a compact batch is cast once an update before it pads it:
    the same update, bit for bit (on a CPU, in Pallas's interpret mode)."""
    config = BREAKOUT.replace(update_kernel="fused", total_timesteps=8 * 16)
    hp, key = HyperParams(lr=5e-3).as_arrays(), jax.random.PRNGKey(0)
    plain = jax.jit(make_train(config))(key, hp)
    compact = jax.jit(make_train(config.replace(compact_obs=True)))(key, hp)
    for a, b in zip(jax.tree.leaves(plain.state.params), jax.tree.leaves(compact.state.params)):
        np.testing.assert_array_equal(a, b)


def test_compact_observations_lower_with_the_fused_kernel_for_a_gpu():
    """Triton's dots take operands of one element type: the compact batch reaches the kernel as float32."""
    train = make_train(BREAKOUT.replace(update_kernel="fused", compact_obs=True))
    train.update_rule.interpret = False
    h200 = jax.sharding.AbstractDevice(device_kind="NVIDIA H200", num_cores=None, platform="cuda")
    with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh(
            (1,), ("gpu",), axis_types=(jax.sharding.AxisType.Auto,), abstract_device=h200)):
        text = jax.jit(lambda k: train(k, HyperParams())).trace(jax.random.PRNGKey(0)).lower(
            lowering_platforms=("cuda",)).as_text()
    assert "__gpu$xla.gpu.triton" in text and "xi8>" in text
