"""purerl: reinforcement learning as compiled JAX programs.

A training run is a pure function `train(key, hyperparams, meta_params)`; jit it
for one XLA program, vmap it for many seeds, hyperparameters or ES candidates.
"""

from purerl.version import __version__  # noqa: E402
from purerl.runtime import compile_cache, host_devices  # noqa: E402

host_devices.enable_default()
compile_cache.enable_default()

from purerl.algos.dqn import DQN, DQNConfig, DQNHyperParams  # noqa: E402
from purerl.algos.loop import TrainResult  # noqa: E402
from purerl.algos.ppo import PPO  # noqa: E402
from purerl.algos.pqn import PQN, PQNConfig, PQNHyperParams  # noqa: E402
from purerl.algos.sac import SAC, SACConfig, SACHyperParams  # noqa: E402
from purerl.algos.td3 import TD3, TD3Config, TD3HyperParams  # noqa: E402
from purerl.config import ConfigError, HyperParams, PPOConfig  # noqa: E402
from purerl.api import Train, make_train, train  # noqa: E402
from purerl.run.pbt_config import Bound, PBTConfig  # noqa: E402
from purerl.run.policy import Policy, load  # noqa: E402
from purerl.run.population import make_members  # noqa: E402

__all__ = ["Bound", "ConfigError", "DQN", "DQNConfig", "DQNHyperParams", "HyperParams", "PBTConfig", "PPO", "PPOConfig", "PQN", "PQNConfig",
           "PQNHyperParams", "Policy", "SAC", "SACConfig", "SACHyperParams", "TD3", "TD3Config", "TD3HyperParams",
           "Train", "TrainResult", "load", "make_members", "make_train", "train", "__version__"]
