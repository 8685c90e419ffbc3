"""purerl: reinforcement learning as compiled JAX programs.

A training run is a pure function `train(key, hyperparams, meta_params)`; jit it
for one XLA program, vmap it for many seeds, hyperparameters or ES candidates.

Importing purerl changes no JAX setting: `configure_jax()` sets what the command line and `purerl.train` run
under (a CPU device per core, the compile cache, a faster threefry lowering).
"""

from purerl.version import __version__
from purerl.algos.dqn import DQN, DQNConfig, DQNHyperParams
from purerl.algos.loop import TrainResult
from purerl.algos.ppo import PPO
from purerl.algos.pqn import PQN, PQNConfig, PQNHyperParams
from purerl.algos.sac import SAC, SACConfig, SACHyperParams
from purerl.algos.td3 import TD3, TD3Config, TD3HyperParams
from purerl.config import ConfigError, HyperParams, PPOConfig
from purerl.api import Train, make_train, train
from purerl.run.pbt_config import Bound, PBTConfig
from purerl.run.policy import Policy, load
from purerl.run.population import make_members
from purerl.runtime.configure import configure_jax

__all__ = ["Bound", "ConfigError", "DQN", "DQNConfig", "DQNHyperParams", "HyperParams", "PBTConfig", "PPO", "PPOConfig", "PQN", "PQNConfig",
           "PQNHyperParams", "Policy", "SAC", "SACConfig", "SACHyperParams", "TD3", "TD3Config", "TD3HyperParams",
           "Train", "TrainResult", "configure_jax", "load", "make_members", "make_train", "train", "__version__"]
