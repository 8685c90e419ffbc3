"""purerl: reinforcement learning as compiled JAX programs.

A training run is a pure function `train(key, hyperparams, meta_params)`; jit it
for one XLA program, vmap it for many seeds, hyperparameters or ES candidates.

Importing purerl changes no JAX setting: `configure_jax()` sets what the command line and `purerl.train` run
under (a CPU device per core, the compile cache, a faster threefry lowering). Nor does it import JAX: each name
below is loaded from its module when first used (PEP 562), so that the `purerl` command can hear a signal from its
first line (`purerl.launch`).
"""

import importlib

from purerl.version import __version__

# name: the module that defines it
_EXPORTS = {
    **dict.fromkeys(("DQN", "DQNConfig", "DQNHyperParams"), "purerl.algos.dqn"),
    "TrainResult": "purerl.algos.loop",
    "PPO": "purerl.algos.ppo",
    **dict.fromkeys(("PQN", "PQNConfig", "PQNHyperParams"), "purerl.algos.pqn"),
    **dict.fromkeys(("SAC", "SACConfig", "SACHyperParams"), "purerl.algos.sac"),
    **dict.fromkeys(("TD3", "TD3Config", "TD3HyperParams"), "purerl.algos.td3"),
    "ConfigError": "purerl.checks",
    **dict.fromkeys(("HyperParams", "PPOConfig"), "purerl.algos.ppo_config"),
    **dict.fromkeys(("Train", "make_train", "train"), "purerl.api"),
    **dict.fromkeys(("Bound", "PBTConfig"), "purerl.run.pbt_config"),
    **dict.fromkeys(("Policy", "load"), "purerl.run.policy"),
    "make_members": "purerl.run.population",
    "configure_jax": "purerl.runtime.configure",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    """A public name from its module, or a submodule (`purerl.stats`), imported when first asked for."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        try:
            value = importlib.import_module(f"purerl.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"purerl.{name}":
                raise
            raise AttributeError(f"module 'purerl' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
