"""The GRU actor-critic (`--network gru`): PPO's sequence contract, and a recurrent run from the CLI."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cli_run import GRU
from purerl import envs
from purerl.cli import main
from purerl.nets.gru import GRUActorCritic


def test_unroll_equals_stepping_and_reset_forgets():
    env = envs.make("MemoryChain-bsuite")
    net = GRUActorCritic(env.action_space, features=8)
    params = jax.jit(net.init)(jax.random.PRNGKey(0), jnp.zeros(env.observation_shape))
    obs = jax.random.normal(jax.random.PRNGKey(1), (5, 3) + env.observation_shape)  # [T, N, obs]
    resets = np.zeros((5, 3), bool)
    resets[0], resets[3, 1] = True, True
    # jitted: op by op, flax's layers would compile each small op on its own
    unroll, step = (jax.jit(functools.partial(net.apply, method=m)) for m in ("unroll", "step"))
    carries, pi, value = unroll(params, net.initial_carry(3), obs, resets)
    carry = net.initial_carry(3)
    for t in range(5):
        carry, step_pi = step(params, carry, obs[t], resets[t])
        np.testing.assert_allclose(carry, carries[t], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(step_pi.logits, pi.logits[t], rtol=1e-5, atol=1e-6)
    # env 1 restarted at t=3: from there it matches a fresh unroll of the same observations
    fresh, _, fresh_value = unroll(params, jnp.full((1, 8), 5.0), obs[3:, 1:2], resets[3:, 1:2])
    np.testing.assert_allclose(fresh[:, 0], carries[3:, 1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fresh_value[:, 0], value[3:, 1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("preset, env", [("memory", "MemoryChain-bsuite"), ("pomdp", "CartPole-NoVel-v1")])
def test_gru_ppo_trains_from_the_cli(tmp_path, preset, env):
    out = tmp_path / "run"
    assert main(["train", *GRU, "--preset", preset, "--env", env, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["members"] == 2 and np.isfinite(summary["final_return"]["mean"])
    config = json.loads((out / "config.json").read_text())
    assert config["network"] == "gru" and config["preset"] == preset
