"""The algorithms `purerl train --algo` knows, and what each brings: a static config class, a
traced hyperparameter class, presets, and a builder of its train function.

The list is open: `register(Algorithm(...))` adds one written outside purerl, which then trains, resumes and
evaluates through `purerl.train`, `purerl.load` and the command line like the built-in ones. A package offers its
algorithms under the entry-point group `purerl.algorithms` (name = "module:ALGORITHM"); a script's module named in
PURERL_PLUGINS (comma-separated, importable) is imported before the command line builds its flags, so that its
`register` calls reach `purerl train --algo NAME` too.

Every algorithm has the same contract (`init`, `run(state, hp, meta_params, start, stop)`,
`__call__`, `act`, a `config` with `batch_size` env steps per update and `num_updates`, and
metrics with one row per update including `episode_return`), so the population runner,
checkpoints, run directory, plots and CLI serve them all unchanged.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from purerl.algos import dqn, memory, offpolicy, ppo, pqn, replay, sac, td3
from purerl.algos.objectives import clipped_l2, ppo_clip
from purerl.algos.ppo_config import PRESETS as PPO_PRESETS
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.algos.settings import Preset, default_preset
from purerl.checks import ConfigError

NETWORKS = ("mlp", "gru")
_WIDTHS = dict(cpu=(1, 8, 64), gpu=(1, 32, 256, 2048))  # `purerl bench`'s agents per run, per --preset
_FEW_WIDTHS = dict(cpu=(1, 8), gpu=(1, 32, 256))  # for tasks whose runs take minutes each
LR_RANGE = (1e-5, 1e-2)  # every preset's learning rates lie well inside it
# PPO's defaults on a GPU (`_ppo_on_gpu`): each cut the GPU proxy's modelled time at every width it compares
GPU_LEVERS = {"update_kernel": "fused", "rollout_unroll": 16, "minibatch_gather": True}
# and, where the env's observations fit a narrower dtype exactly (MinAtar's, int8) and are not normalised, this one
GPU_COMPACT_OBS = {"compact_obs": True}
# and, where an observation is wider than the MLP's first hidden layer (MinAtar's 400 values against 64), the
# bootstrap values from the rollout: storing such observations costs more than the values do (CartPole's 4 the
# other way round: the proxy makes it slower there)
GPU_WIDE_OBS = {"rollout_bootstrap": True}


@dataclass(frozen=True)
class Algorithm:
    name: str
    title: str
    config: type
    hyperparams: type
    presets: dict[str, Preset]
    default_preset: Callable[[str, bool], str]
    networks: tuple[str, ...]  # the values of --network it accepts
    # loss metrics that are finite in every row once learning starts, so that one turning non-finite means the run
    # diverged (not SAC's and TD3's actor_loss, NaN in a row without an actor step, nor DQN's td_loss, NaN in a row
    # without a gradient step when train_interval does not divide a row: their parameters tell)
    losses: tuple[str, ...]
    builder: Callable  # (config, network, objective, value_loss) -> its train function (the hooks are PPO's)
    check_memory: Callable | None = None  # (config, env, members): one line before any compile if it cannot fit
    # `purerl train --pbt`'s ranges when --pbt-explore names none: (name, low, high), wide around the presets
    pbt_explore: tuple[tuple[str, float, float], ...] = ()
    # `purerl bench --task NAME`: the settings its speed is timed at, beside its peers' ({name: env, preset,
    # overrides, widths: the agents per run for each --preset (cpu, gpu), discrete=False for a continuous env, and
    # in_all=False for a task too slow for --task all)
    bench_tasks: dict[str, dict] = field(default_factory=dict)
    # (config, env, network, objective, value_loss) -> the settings it takes where JAX runs on a GPU and the user
    # named none (`trainspec.make_spec`); a CPU's programs never change
    gpu_defaults: Callable | None = None
    # the class `builder` makes: `purerl.train` records a train function of another class (a subclass overriding
    # `loss`) as Python no record can rebuild, so that `--config` and `--resume` refuse it (None: not checked)
    train_class: type | None = None


def _ppo(config, network, objective, value_loss):
    from purerl import envs
    from purerl.algos.ppo import PPO
    from purerl.nets.gru import GRUActorCritic

    env = envs.make(config.env)
    memory = GRUActorCritic(env.action_space, config.hidden_sizes[0]) if network == "gru" else None
    return PPO(config, env=env, objective=objective, value_loss=value_loss, network=memory)


def _ppo_on_gpu(config, env, network: str, objective: str, value_loss: str) -> dict:
    """PPO's settings where JAX runs on a GPU and the user named none: the levers the GPU proxy models as faster
    at every width it compares (docs/benchmarks.md, "GPU proxy"). The fused gradient step only where it computes
    the run's own network, losses and shapes; elsewhere XLA's step, unrolled. Compact observations only where the
    env's fit a narrower dtype exactly and are not normalised; bootstrap values from the rollout only where an
    observation is wider than the MLP's first hidden layer."""
    from purerl.envs import narrower_observations
    from purerl.kernels.ppo_update import check_shapes

    levers = dict(GPU_LEVERS)
    fused = network == "mlp" and env.action_space.discrete and objective == "ppo" and value_loss == "clipped_l2"
    try:
        check_shapes(env.observation_shape, config.minibatch_size)
    except ConfigError:
        fused = False
    if not fused:
        levers.pop("update_kernel")
    if narrower_observations(env) and not config.normalize_obs:
        levers.update(GPU_COMPACT_OBS)
    if network == "mlp" and math.prod(env.observation_shape) > config.hidden_sizes[0]:
        levers.update(GPU_WIDE_OBS)
    return levers


def _plain(train_class):
    """A builder for an algorithm without PPO's hooks (TrainSpec refuses them for it before building)."""
    return lambda config, network, objective, value_loss: train_class(config)


ALGORITHMS = {
    "ppo": Algorithm("ppo", "PPO", PPOConfig, HyperParams, PPO_PRESETS, default_preset, NETWORKS,
                     ("policy_loss", "value_loss"), _ppo, memory.ppo_fits,
                     pbt_explore=(("lr", *LR_RANGE), ("ent_coef", 1e-4, 0.1)),
                     # CleanRL's CartPole defaults at 500k steps per agent; Breakout-MinAtar with PureJaxRL's
                     # MinAtar preset at a budget that fits a 2-core CPU
                     bench_tasks={"cartpole": dict(env="CartPole-v1", preset="classic", overrides={}, widths=_WIDTHS),
                                  "minatar": dict(env="Breakout-MinAtar", preset="minatar",
                                                  overrides=dict(total_timesteps=1_048_576),
                                                  widths=dict(cpu=(1, 8), gpu=(1, 16, 256)))},
                     gpu_defaults=_ppo_on_gpu, train_class=ppo.PPO),
    "dqn": Algorithm("dqn", "DQN", dqn.DQNConfig, dqn.DQNHyperParams, dqn.PRESETS, dqn.default_preset, ("mlp",),
                     (), _plain(dqn.DQN), replay.check_fits, pbt_explore=(("lr", *LR_RANGE),), train_class=dqn.DQN,
                     bench_tasks={"dqn": dict(env="CartPole-v1", preset="classic", overrides={}, widths=_WIDTHS)}),
    "pqn": Algorithm("pqn", "PQN", pqn.PQNConfig, pqn.PQNHyperParams, pqn.PRESETS, pqn.default_preset, ("mlp",),
                     ("td_loss",), _plain(pqn.PQN), train_class=pqn.PQN,
                     pbt_explore=(("lr", *LR_RANGE), ("td_lambda", 0.0, 1.0)),
                     bench_tasks={"pqn": dict(env="CartPole-v1", preset="classic", overrides={}, widths=_WIDTHS)}),
    "sac": Algorithm("sac", "SAC", sac.SACConfig, sac.SACHyperParams, sac.PRESETS, offpolicy.default_preset,
                     ("mlp",), ("critic_loss",), _plain(sac.SAC), replay.check_fits, train_class=sac.SAC,
                     pbt_explore=(("lr", *LR_RANGE), ("q_lr", *LR_RANGE)),
                     bench_tasks={"sac": dict(env="Pendulum-v1", preset="continuous", overrides={}, discrete=False,
                                             widths=_FEW_WIDTHS, in_all=False)}),
    "td3": Algorithm("td3", "TD3", td3.TD3Config, td3.TD3HyperParams, td3.PRESETS, offpolicy.default_preset,
                     ("mlp",), ("critic_loss",), _plain(td3.TD3), replay.check_fits, train_class=td3.TD3,
                     pbt_explore=(("lr", *LR_RANGE), ("q_lr", *LR_RANGE)),
                     bench_tasks={"td3": dict(env="Pendulum-v1", preset="continuous", overrides={}, discrete=False,
                                             widths=_FEW_WIDTHS, in_all=False)}),
}


# What each config field and hyperparameter means, by name (a name means one thing in every algorithm, see
# `test_algorithm_flags_never_collide`): the flags' --help and the API reference's tables read it.
DESCRIPTIONS = {
    "env": "environment id (`purerl.envs.make`)",
    "num_envs": "parallel environments per agent",
    "num_steps": "steps of every environment per update (one metric row)",
    "total_timesteps": "env steps per agent, rounded up to whole updates",
    "update_epochs": "epochs over each update's batch",
    "num_minibatches": "minibatches per epoch",
    "hidden_sizes": "hidden layer widths",
    "activation": "hidden activation: tanh or relu",
    "anneal_lr": "anneal the learning rate linearly to 0",
    "normalize_obs": "normalise observations by running mean and variance",
    "normalize_reward": "scale rewards by the running std of the discounted return",
    "normalize_advantages": "normalise advantages per minibatch",
    "cpu_group": "members one CPU device trains at a time (0: all at once; a GPU ignores it)",
    "matmul_dtype": "the networks' matmul dtype: float32, or bfloat16 with float32 weights and Adam state",
    "update_kernel": "the minibatch gradient step: xla, or fused (one Pallas kernel per agent; for a GPU)",
    "rollout_unroll": "steps the rollout's and GAE's loops unroll per iteration (a GPU lever)",
    "minibatch_gather": "gather each minibatch from the batch by index, not from a shuffled copy (a GPU lever)",
    "rollout_bootstrap": "compute each step's bootstrap value in the rollout, not from stored observations after "
                         "it (a GPU lever)",
    "compact_obs": "store observations in the env's narrowest exact dtype (int8 for MinAtar), float32 only inside "
                   "the network: the same numbers, fewer bytes (a GPU lever; no-op for float observations; not "
                   "with normalize-obs)",
    "buffer_size": "replay buffer capacity, in transitions",
    "buffer_batch_size": "transitions per gradient step",
    "learning_starts": "env steps, over all envs, before learning starts",
    "train_interval": "env steps, over all envs, between gradient steps",
    "target_update_interval": "env steps, over all envs, between target network updates",
    "epsilon_anneal_time": "env steps, over all envs, over which epsilon decays",
    "double_dqn": "double DQN: the online network picks the next action",
    "epsilon_decay": "fraction of the updates over which epsilon decays",
    "gradient_steps": "gradient steps per vectorised env step",
    "policy_frequency": "gradient steps per actor (and target) update",
    "autotune": "learn the entropy temperature towards entropy -|A|",
    "lr": "learning rate (SAC and TD3: the actor's)",
    "gamma": "discount",
    "gae_lambda": "GAE lambda",
    "clip_eps": "PPO's clip range of the probability ratio",
    "ent_coef": "entropy bonus coefficient",
    "vf_coef": "value loss coefficient",
    "max_grad_norm": "gradient clipping by global norm",
    "tau": "target network update: target <- tau x online + (1 - tau) x target",
    "epsilon_start": "exploration epsilon at the start",
    "epsilon_finish": "exploration epsilon at the end of its decay",
    "td_lambda": "lambda of the Q(lambda) targets",
    "reward_scale": "reward multiplier",
    "q_lr": "the critics' learning rate",
    "alpha": "entropy temperature when autotune is off",
    "exploration_noise": "std of the Gaussian noise on actions while acting",
    "policy_noise": "std of the target policy smoothing noise",
    "noise_clip": "clip of the target policy smoothing noise",
}


def defaults(name: str, algorithms=None) -> dict[str, Any]:
    """The default of a config field or hyperparameter in each algorithm that has it (its class default,
    which the algorithm's preset for its default env keeps)."""
    found = {}
    for algorithm in algorithms or ALGORITHMS.values():
        fields = {f.name: f.default for f in dataclasses.fields(algorithm.config)}
        fields |= algorithm.hyperparams._field_defaults
        if name in fields:
            found[algorithm.name] = fields[name]
    return found


def show_default(value) -> str:
    """A default as its flag takes it: 64,64 for a tuple, on/off for a switch, 0.00025, 500000."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def bench_tasks() -> dict[str, dict]:
    """Every algorithm's `purerl bench` tasks by name, each with its algorithm's name (`algo`)."""
    return {name: {"algo": algorithm.name, **task} for algorithm in ALGORITHMS.values()
            for name, task in algorithm.bench_tasks.items()}


GROUP = "purerl.algorithms"  # the entry points of other packages' algorithms
PLUGINS = "PURERL_PLUGINS"  # modules a command imports first, so that what they register is there
_LOADED: set[str] = set()


def register(algorithm: Algorithm) -> Algorithm:
    """Add `algorithm` to `ALGORITHMS` (and so to `--algo`, its flags, `purerl.train`, resume and eval). A field it
    shares by name with another algorithm must have that field's type (a flag means one thing); a field without a
    `DESCRIPTIONS` entry gets a plain help text. Registering the same object again changes nothing."""
    if not isinstance(algorithm, Algorithm):
        raise ConfigError(f"register takes a purerl.algos.registry.Algorithm, got {type(algorithm).__name__}")
    if ALGORITHMS.get(algorithm.name, algorithm) is not algorithm:
        raise ConfigError(f"an algorithm named '{algorithm.name}' is registered already")
    known = config_fields()
    for name, kind in config_fields([algorithm]).items():
        if name in known and known[name] is not kind:
            raise ConfigError(f"{algorithm.name}'s config field {name} is a {kind.__name__}; other algorithms' "
                              f"{name} is a {known[name].__name__} (one flag means one thing)")
    ALGORITHMS[algorithm.name] = algorithm
    return algorithm


def load_plugins() -> None:
    """Register every `purerl.algorithms` entry point and import each module PURERL_PLUGINS names, once each."""
    from importlib import metadata

    for point in metadata.entry_points(group=GROUP):
        if f"entry:{point.value}" not in _LOADED:
            _LOADED.add(f"entry:{point.value}")
            register(point.load())
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS, "").split(","))):
        if module not in _LOADED:
            _LOADED.add(module)
            try:
                importlib.import_module(module)
            except ImportError as error:
                raise ConfigError(f"{PLUGINS}: cannot import {module} ({error})") from None


def get(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        load_plugins()
    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm '{name}'; choose from {', '.join(ALGORITHMS)} (an algorithm of "
                          f"your own: register it, or name its module in {PLUGINS})")
    return ALGORITHMS[name]


def for_config(config) -> Algorithm:
    """The algorithm whose static config `config` is (a train function's `config` says what it trains)."""
    for algorithm in ALGORITHMS.values():
        if type(config) is algorithm.config:
            return algorithm
    raise ConfigError(f"{type(config).__name__} is not the config of a registered algorithm "
                      f"({', '.join(a.config.__name__ for a in ALGORITHMS.values())})")


def config_fields(algorithms=None) -> dict[str, type]:
    """Every static config field of any algorithm (or of `algorithms`) but `env`, with its type: the CLI's flags."""
    fields = {}
    for algorithm in algorithms or ALGORITHMS.values():
        for name, spec in algorithm.config.__dataclass_fields__.items():
            if name != "env":
                fields.setdefault(name, type(spec.default))
    return fields


def hyperparam_fields(algorithms=None) -> list[str]:
    """Every traced hyperparameter of any algorithm (or of `algorithms`), in a stable order."""
    return list(dict.fromkeys(name for a in algorithms or ALGORITHMS.values() for name in a.hyperparams._fields))


def build(algo: str, config, network: str = "mlp", objective=ppo_clip, value_loss=clipped_l2):
    """The train function of `algo` for a static config; `objective` and `value_loss` are PPO's hooks."""
    return get(algo).builder(config, network, objective, value_loss)
