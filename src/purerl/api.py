"""The Python front door: a train function from an env id, and the experiment runner of `purerl train`.

`make_train("CartPole-v1", lr=1e-3)` builds what `purerl train --env CartPole-v1 --lr 1e-3` trains (the same
preset, the same overrides, `trainspec.make_spec`), as a pure `train(key)`. `purerl.train(train, out)` gives
any train function, hooks written in Python included, what the command line gives its runs: the run
directory, chunked checkpoints, bit-exact resume, loggers and the summary (`experiment.run`, the function the
CLI calls).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from purerl.algos import registry
from purerl.algos.objectives import POLICY_OBJECTIVES, VALUE_LOSSES, clipped_l2, ppo_clip
from purerl.checks import MAX_INT32, ConfigError, as_float, check_count, is_number, seed_range, shown

NAMED_VALUE_LOSSES = {name: loss for name, loss in VALUE_LOSSES.items() if name != "learned"}  # as the CLI's


class Train:
    """A train function made from an env id, holding the hyperparameters it was made with.

    `train(key)` trains one agent with them; `train(key, hp, meta_params)` is the algorithm's own call, so
    `jax.vmap(train, in_axes=(0, None))(keys, train.hyperparams.as_arrays())` trains many seeds. `init`,
    `run`, `act`, `config` and `env` are the algorithm's; `spec` is what `purerl.train` records in config.json.
    """

    def __init__(self, algorithm, spec, meta_params=None):
        self.algorithm = algorithm
        self.spec = spec
        self.hyperparams = spec.hyperparams
        self.meta_params = meta_params

    def __call__(self, key, hp=None, meta_params=None):
        hp = self.hyperparams.as_arrays() if hp is None else hp
        return self.algorithm(key, hp, self.meta_params if meta_params is None else meta_params)

    def __getattr__(self, name: str) -> Any:
        if name == "algorithm":  # not yet set: no recursion
            raise AttributeError(name)
        return getattr(self.algorithm, name)


def make_train(config, env=None, objective=ppo_clip, value_loss=clipped_l2, observe=None, network=None, *,
               algo: str = "ppo", preset: str | None = None, **settings):
    """A pure train function, `train(key, hp, meta_params=None) -> TrainResult`, in one of two forms.

    `make_train(PPOConfig(...), env=None, objective=..., value_loss=..., observe=None, network=None)`:
    PPO for a static config, with any hook (`purerl.algos.ppo.make_train`; returns a `PPO`).

    `make_train("CartPole-v1", algo="ppo", preset=None, **settings)`: what `purerl train --env CartPole-v1`
    trains. The algorithm's preset for the env (chosen by env family, as the CLI chooses it, unless named),
    then each setting by its field name: any field of the algorithm's config or hyperparameters
    (`total_timesteps=100_000, num_envs=8, lr=1e-3`). PPO also takes `objective` ("ppo", "dpo", "lpo:PATH"
    or a function), `value_loss` ("clipped_l2", "l2" or a function) and `network` ("mlp" or "gru"). Returns a
    `Train`: `train(key)` trains with the preset's hyperparameters and the settings'. A bad setting raises
    one `ConfigError` line before anything is built.
    """
    if not isinstance(config, str):
        if algo != "ppo" or preset is not None or settings:
            given = [*(["algo"] if algo != "ppo" else []), *(["preset"] if preset is not None else []), *settings]
            raise TypeError(f"make_train(config, ...) takes its settings in the config object; {', '.join(given)} "
                            "belong to make_train(ENV_ID, ...)")
        from purerl.algos.ppo import make_train as make_ppo

        return make_ppo(config, env=env, objective=objective, value_loss=value_loss, observe=observe, network=network)
    return _from_env_id(config, env, objective, value_loss, observe, network, algo, preset, settings)


def _from_env_id(env_id, env, objective, value_loss, observe, network, algo, preset, settings) -> Train:
    from purerl.run.trainspec import make_spec

    if env is not None or observe is not None or not (network is None or isinstance(network, str)):
        raise ConfigError("make_train(ENV_ID, ...) builds its environment and network from names; give an Env, "
                          "an observe hook or a network object to make_train(PPOConfig(env=...), ...)")
    swept = [name for name, value in settings.items() if isinstance(value, (list, tuple)) and name != "hidden_sizes"]
    if swept:
        raise ConfigError(f"{swept[0]}={settings[swept[0]]!r}: a train function trains one setting; sweep a grid "
                          f"with purerl.train(train, out, grid={{'{swept[0]}': [...]}})")
    hooks = {"objective": (objective, POLICY_OBJECTIVES, "ppo"), "value_loss": (value_loss, NAMED_VALUE_LOSSES,
                                                                                "clipped_l2")}
    names = {role: hook if isinstance(hook, str) else _lookup(hook, table) or default
             for role, (hook, table, default) in hooks.items()}
    if algo != "ppo" and (names["objective"] != "ppo" or names["value_loss"] != "clipped_l2"):
        raise ConfigError(f"objective and value_loss are PPO's hooks; algo '{algo}' has neither")
    custom = [role for role, (hook, table, _) in hooks.items() if not isinstance(hook, str) and not _lookup(hook, table)]
    if custom and algo == "ppo" and "update_kernel" not in settings:  # a Python hook is not the named one the
        settings = {**settings, "update_kernel": "xla"}  # GPU default's fused kernel would compute: keep XLA's step
    spec = make_spec(env_id, algo, preset, settings, network=network or "mlp", **names)
    spec.validate()  # the names: env, preset, settings, objective (and its meta-parameters' file)
    meta_params = spec.meta_params()
    functions = {role: table[names[role].partition(":")[0]] if isinstance(hook, str) else hook
                 for role, (hook, table, _) in hooks.items()}
    algorithm = registry.build(spec.algo, spec.config, spec.network, **functions)
    return Train(algorithm, _spec_of(algorithm, spec, spec.hyperparams, spec.seeds, {}, None), meta_params)


def train(train, out: str | Path, *, seeds: int | Sequence[int] = 1, grid: dict[str, Sequence[float]] | None = None,
        hyperparams=None, meta_params=None, resume: bool | str = False, overwrite: bool = False,
        log: Sequence[str] = (), progress: bool = True, checkpoint_every_s: float = 60.0,
        chunk_updates: int | None = None, final_eval_episodes: int | None = None) -> dict[str, Any] | None:
    """Train `train` on every seed x grid setting, writing the run directory `out` as `purerl train` does.

    `train` is any train function of a registered algorithm (`PPO`, `DQN`, ... or what `make_train` returns),
    with hooks, a network or an environment written in Python. `seeds`: a count (seeds 0..N-1) or a list;
    `grid`: {hyperparameter: values}, each setting with every seed; `hyperparams`: the base setting (default:
    the one `train` was made with, else the algorithm's defaults); `meta_params`: what the hooks receive.

    The run directory, the chunked checkpoints (every `checkpoint_every_s`, at the end, on SIGINT/SIGTERM),
    `resume` (`True`: continue the run in `out`; `"auto"`: continue it if there is one, else start, so that
    rerunning a script continues it) and `log` ("tensorboard", "wandb") follow the command line's rules, in the
    same function. config.json names what it cannot hold (a Python hook by its module and name, given
    meta-parameters by their hash), so a resume with another hook or other meta-parameters is refused; a hook
    edited under the same name is not noticed. `final_eval_episodes` is `--final-eval-episodes`: when training
    ends, every member's greedy policy plays that many fresh full-length episodes, recorded as the summary's
    `final_eval` (0: none; None: a replay learner's run, DQN's, SAC's or TD3's, is evaluated on 10, another's not).
    Returns the summary (None if stopped early).
    """
    from purerl.run import experiment
    from purerl.run.trainspec import check_types
    from purerl.runtime.configure import configure_jax

    configure_jax()  # as the command line runs: a CPU device per core where JAX has not started, the compile cache
    _check_session(chunk_updates, checkpoint_every_s)
    base = train.spec if isinstance(train, Train) else None
    algorithm = train.algorithm if isinstance(train, Train) else train
    if not all(hasattr(algorithm, name) for name in ("config", "init", "run", "env")):
        raise TypeError(f"purerl.train needs a train function (make_train, PPO, DQN, ...), got {type(train).__name__}")
    entry = registry.for_config(algorithm.config)
    if hyperparams is None:
        hyperparams = base.hyperparams if base is not None else entry.hyperparams()
    if type(hyperparams) is not entry.hyperparams:
        raise ConfigError(f"hyperparams must be {entry.hyperparams.__name__} for {entry.title}, "
                          f"got {type(hyperparams).__name__}")
    hyperparams = type(hyperparams)(*map(_number, hyperparams))  # `HyperParams().as_arrays()` is recorded as numbers
    grid = {name: [_number(v) for v in (values if isinstance(values, (list, tuple, range)) else [values])]
            for name, values in (grid or {}).items()}
    for name, values in list(grid.items()):
        if len(values) == 1 and name in hyperparams._fields:  # one value sets the base; it sweeps nothing
            hyperparams = hyperparams._replace(**{name: values[0]})
            del grid[name]
    spec = _spec_of(algorithm, base, hyperparams, _seed_list(seeds), grid, meta_params)
    try:
        check_types(spec)
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None
    if meta_params is None and isinstance(train, Train):
        meta_params = train.meta_params
    return experiment.run(spec, Path(out), resume=resume, overwrite=overwrite, progress=progress,
                          chunk_updates=chunk_updates, checkpoint_every_s=checkpoint_every_s,
                          log=list(log), train=algorithm, meta_params=meta_params,
                          final_eval_episodes=final_eval_episodes)


def _check_session(chunk_updates, checkpoint_every_s) -> None:
    """The run's own arguments, before anything is compiled or written: a chunk of -5 updates would never end
    the run, and one of 2.5 would fail only once the program is compiled and the run directory written."""
    if chunk_updates is not None:
        check_count("chunk_updates", chunk_updates, MAX_INT32)
    if not (is_number(checkpoint_every_s) and math.isfinite(as_float(checkpoint_every_s)) and checkpoint_every_s > 0):
        raise ConfigError(f"checkpoint_every_s must be a positive number of seconds, got {shown(checkpoint_every_s)}")


def _number(value):
    """A scalar NumPy or JAX value as the Python number config.json records; anything else as it is."""
    return value.item() if isinstance(value, (np.generic, np.ndarray, jax.Array)) and np.ndim(value) == 0 else value


def _seed_list(seeds) -> list[int]:
    """A count (seeds 0..N-1) or an iterable of integers, as a list of Python ints."""
    if isinstance(seeds, (bool, str)) or not isinstance(seeds, (numbers.Integral, Iterable)):
        raise ConfigError(f"seeds must be a count or a list of integers, got {seeds!r}")
    if isinstance(seeds, numbers.Integral):
        return seed_range(0, int(seeds), name="seeds")
    return [int(s) if isinstance(s, numbers.Integral) and not isinstance(s, bool) else _number(s) for s in seeds]


def _spec_of(algorithm, base, hyperparams, seeds, grid, meta_params):
    """The `TrainSpec` that describes `algorithm` for config.json: its config, the names of its hooks where
    the library has them (`base`'s where it was made from names), and the Python objects it holds by name."""
    from purerl.run.trainspec import TrainSpec

    entry = registry.for_config(algorithm.config)
    python: dict[str, str] = {}
    if entry.train_class is not None and type(algorithm) is not entry.train_class:  # a subclass: its own loss, say
        python["algorithm"] = _qualified(type(algorithm))
    names = {"objective": "ppo", "value_loss": "clipped_l2", "network": "mlp"}
    if entry.name == "ppo":
        from purerl.algos.objectives import FullObservation

        names["objective"] = _named(algorithm.objective, POLICY_OBJECTIVES, "objective", python)
        if base is not None and names["objective"] == base.objective.partition(":")[0]:
            names["objective"] = base.objective  # lpo:PATH, whose meta-parameters come from that file
        names["value_loss"] = _named(algorithm.value_loss, NAMED_VALUE_LOSSES, "value_loss", python)
        names["network"] = _network(algorithm, python)
        if not isinstance(algorithm.observe, FullObservation):
            python["observe"] = _qualified(algorithm.observe)
    elif hasattr(algorithm, "td_loss"):
        from purerl.algos import td

        if algorithm.td_loss is not td.l2:
            python["td_loss"] = _qualified(algorithm.td_loss)
    if not _library_env(algorithm):
        python["env"] = _qualified(_innermost(algorithm.env))
    if meta_params is not None:
        from flax import serialization

        python["meta_params"] = "sha256:" + hashlib.sha256(serialization.to_bytes(meta_params)).hexdigest()
    return TrainSpec(config=algorithm.config, hyperparams=hyperparams, seeds=list(seeds), grid=dict(grid),
                     preset=base.preset if base is not None else None, algo=entry.name, python=python, **names)


def _lookup(hook, table: dict) -> str | None:
    return next((name for name, function in table.items() if function is hook), None)


def _named(hook, table: dict, role: str, python: dict) -> str:
    name = _lookup(hook, table)
    if name is None:
        python[role] = _qualified(hook)
        return "python"
    return name


def _network(algorithm, python: dict) -> str:
    """"mlp" or "gru" when `algorithm.network` is the one `--network` builds for its config, else "python"."""
    from purerl.nets.gru import GRUActorCritic
    from purerl.nets.actor_critic import ActorCritic

    cfg, space = algorithm.config, algorithm.env.action_space
    if algorithm.network == ActorCritic(space, tuple(cfg.hidden_sizes), cfg.activation):
        return "mlp"
    if algorithm.network == GRUActorCritic(space, cfg.hidden_sizes[0]):
        return "gru"
    python["network"] = _qualified(algorithm.network)
    return "python"


def _innermost(env):
    from purerl.envs.wrappers import Wrapper

    while isinstance(env, Wrapper):
        env = env.env
    return env


def _library_env(algorithm) -> bool:
    """The train function's environment is the one `envs.make(config.env)` builds (same wrappers, time limit)."""
    from purerl import envs

    try:
        envs.check_name(algorithm.config.env)
    except ConfigError:
        return False
    made, given = envs.make(algorithm.config.env), algorithm.env

    def chain(env):
        from purerl.envs.wrappers import Wrapper

        kinds = [type(env)]
        while isinstance(env, Wrapper):
            env = env.env
            kinds.append(type(env))
        return kinds, env.max_episode_steps, tuple(env.observation_shape)

    return chain(made) == chain(given)


def _qualified(obj) -> str:
    """`module.name` of a function or class, or of an object's class."""
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{getattr(named, '__module__', '?')}.{named.__qualname__}"
