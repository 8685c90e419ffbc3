"""The algorithms `purerl train --algo` knows, and what each brings: a static config class, a
traced hyperparameter class, presets, and a builder of its train function.

Every algorithm has the same contract (`init`, `run(state, hp, meta_params, start, stop)`,
`__call__`, `act`, a `config` with `batch_size` env steps per update and `num_updates`, and
metrics with one row per update including `episode_return`), so the population runner,
checkpoints, run directory, plots and CLI serve them all unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from purerl.algos import dqn, offpolicy, pqn, replay, sac, td3
from purerl.algos.objectives import clipped_l2, ppo_clip
from purerl.config import PRESETS as PPO_PRESETS
from purerl.config import ConfigError, HyperParams, PPOConfig, Preset, default_preset

NETWORKS = ("mlp", "gru")
LR_RANGE = (1e-5, 1e-2)  # every preset's learning rates lie well inside it


@dataclass(frozen=True)
class Algorithm:
    name: str
    title: str
    config: type
    hyperparams: type
    presets: dict[str, Preset]
    default_preset: Callable[[str, bool], str]
    networks: tuple[str, ...]  # the values of --network it accepts
    losses: tuple[str, ...]  # loss metrics: not finite means the run diverged
    builder: Callable  # (config, network, objective, value_loss) -> its train function (the hooks are PPO's)
    check_memory: Callable | None = None  # (config, env, members): one line before any compile if it cannot fit
    # `purerl train --pbt`'s ranges when --pbt-explore names none: (name, low, high), wide around the presets
    pbt_explore: tuple[tuple[str, float, float], ...] = ()


def _ppo(config, network, objective, value_loss):
    from purerl import envs
    from purerl.algos.ppo import PPO
    from purerl.nets.gru import GRUActorCritic

    env = envs.make(config.env)
    memory = GRUActorCritic(env.action_space, config.hidden_sizes[0]) if network == "gru" else None
    return PPO(config, env=env, objective=objective, value_loss=value_loss, network=memory)


def _plain(train_class):
    """A builder for an algorithm without PPO's hooks (TrainSpec refuses them for it before building)."""
    return lambda config, network, objective, value_loss: train_class(config)


ALGORITHMS = {
    "ppo": Algorithm("ppo", "PPO", PPOConfig, HyperParams, PPO_PRESETS, default_preset, NETWORKS,
                     ("policy_loss", "value_loss"), _ppo,
                     pbt_explore=(("lr", *LR_RANGE), ("ent_coef", 1e-4, 0.1))),
    "dqn": Algorithm("dqn", "DQN", dqn.DQNConfig, dqn.DQNHyperParams, dqn.PRESETS, dqn.default_preset, ("mlp",),
                     ("td_loss",), _plain(dqn.DQN), replay.check_fits, pbt_explore=(("lr", *LR_RANGE),)),
    "pqn": Algorithm("pqn", "PQN", pqn.PQNConfig, pqn.PQNHyperParams, pqn.PRESETS, pqn.default_preset, ("mlp",),
                     ("td_loss",), _plain(pqn.PQN),
                     pbt_explore=(("lr", *LR_RANGE), ("td_lambda", 0.0, 1.0))),
    "sac": Algorithm("sac", "SAC", sac.SACConfig, sac.SACHyperParams, sac.PRESETS, offpolicy.default_preset,
                     ("mlp",), ("critic_loss", "actor_loss"), _plain(sac.SAC), replay.check_fits,
                     pbt_explore=(("lr", *LR_RANGE), ("q_lr", *LR_RANGE))),
    "td3": Algorithm("td3", "TD3", td3.TD3Config, td3.TD3HyperParams, td3.PRESETS, offpolicy.default_preset,
                     ("mlp",), ("critic_loss", "actor_loss"), _plain(td3.TD3), replay.check_fits,
                     pbt_explore=(("lr", *LR_RANGE), ("q_lr", *LR_RANGE))),
}


def get(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm '{name}'; choose from {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def config_fields() -> dict[str, type]:
    """Every static config field of any algorithm (but `env`), with its type: the CLI's flags."""
    fields = {}
    for algorithm in ALGORITHMS.values():
        for name, spec in algorithm.config.__dataclass_fields__.items():
            if name != "env":
                fields.setdefault(name, type(spec.default))
    return fields


def hyperparam_fields() -> list[str]:
    """Every traced hyperparameter of any algorithm, in a stable order."""
    return list(dict.fromkeys(name for a in ALGORITHMS.values() for name in a.hyperparams._fields))


def build(algo: str, config, network: str = "mlp", objective=ppo_clip, value_loss=clipped_l2):
    """The train function of `algo` for a static config; `objective` and `value_loss` are PPO's hooks."""
    return get(algo).builder(config, network, objective, value_loss)
