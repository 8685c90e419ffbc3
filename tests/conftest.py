"""Shared small configs and compiled functions: jit compiles dominate a 2-core test run."""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import pytest  # noqa: E402

import purerl  # noqa: E402
from purerl.algos.ppo_config import HyperParams, PPOConfig  # noqa: E402

purerl.configure_jax()  # the suite runs as the command line does: a CPU device per core, the compile cache

# 4 envs x 32 steps, 8 updates: compiles in seconds, still exercises every code path.
TINY = PPOConfig(env="CartPole-v1", num_envs=4, num_steps=32, total_timesteps=4 * 32 * 8,
                 update_epochs=2, num_minibatches=2)
# One minibatch (128 samples), 2 epochs: the one-update learning step that test_gpu_levers checks its levers
# against and test_ppo its full-batch claim with, as one program.
FULL_BATCH = dict(env="CartPole-v1", num_envs=4, num_steps=32, num_minibatches=1, update_epochs=2,
                  total_timesteps=256)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One small finished CartPole run (one seed, `cli_run.SMALL`), shared by a module's tests that read one."""
    from cli_run import SMALL

    from purerl.cli import main

    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["train", "--out", str(out), "--seeds", "1", *SMALL]) == 0
    return out


@pytest.fixture(scope="session")
def tiny_train():
    from purerl.algos.ppo import make_train

    return make_train(TINY)


@pytest.fixture(scope="session")
def tiny_jit(tiny_train):
    """jit(train) for one seed, compiled once."""
    return jax.jit(tiny_train)


@pytest.fixture(scope="session")
def hp():
    return HyperParams().as_arrays()
