"""`purerl train --config RUN/config.json`: rerun an experiment exactly from its record.

A run's config.json is its whole `TrainSpec`, so the spec rebuilt from it compiles the same
program with the same keys, and the rerun's metrics are bit-identical to the original's.
Flags given on the command line replace single fields of the record; flags left out keep the
recorded value (never the flag's default: a rerun without `--seeds` keeps the recorded seeds).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from purerl.config import ConfigError, HyperParams, PPOConfig

MAX_SEED = 2**32 - 1  # a seed is one uint32 PRNG key


def given_flags(argv: list[str]) -> set[str]:
    """The field named by every option written in `argv` (`--lr 1e-3`, `--lr=1e-3`, `--no-anneal-lr`)."""
    names = set()
    for token in argv:
        if token.startswith("--"):
            name = token[2:].split("=", 1)[0].replace("-", "_")
            names.add(name.removeprefix("no_") if name.startswith("no_") and name != "no_progress" else name)
    return names


def load_spec(path: Path):
    """The `TrainSpec` recorded in `path`, or a one-line `ConfigError` saying what is wrong with the file."""
    from purerl.experiment import TrainSpec

    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"--config: {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"--config: cannot read {path} as JSON ({error})") from None
    if not isinstance(data, dict) or data.get("command") != "train":
        kind = data.get("command") if isinstance(data, dict) else None
        raise ConfigError(f"--config: {path} records {'a ' + repr(kind) + ' run' if kind else 'no purerl run'}, "
                          "not a training run (purerl train writes RUN/config.json)")
    try:
        spec = TrainSpec.from_json(data)
        _check_types(spec)
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(f"--config: {path} is not a valid training record ({type(error).__name__}: {error})") from None
    return spec


def _check_types(spec) -> None:
    """JSON can hold any type; the config fields must hold the ones the program is built from."""
    for field in dataclasses.fields(spec.config):  # the recorded algorithm's own config class
        value = getattr(spec.config, field.name)
        expected = {"env": str, "activation": str, "hidden_sizes": tuple}.get(field.name)
        if expected is None:
            expected = bool if isinstance(field.default, bool) else int
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise TypeError(f"{field.name} must be {expected.__name__}, got {value!r}")
    for name, value in spec.hyperparams._asdict().items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {value!r}")
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in spec.seeds):
        raise TypeError(f"seeds must be integers, got {spec.seeds!r}")


def apply_flags(spec, args: argparse.Namespace, given: set[str]):
    """`spec` with every field named on the command line replaced by its flag's value."""
    if "preset" in given:
        raise ConfigError("--preset cannot be combined with --config: the record already holds its preset's "
                          "values; override single fields instead")
    for flag in ("algo", "network"):
        if flag in given and getattr(args, flag) != getattr(spec, flag):
            raise ConfigError(f"--{flag} {getattr(args, flag)} cannot replace the record's {getattr(spec, flag)}: a "
                              "rerun keeps its algorithm and network (train without --config for a new one)")
    config_fields = {f.name for f in dataclasses.fields(spec.config)}
    hyperparam_fields = set(type(spec.hyperparams)._fields)
    foreign = sorted(given & ({f.name for f in dataclasses.fields(PPOConfig)} | set(HyperParams._fields))
                     - config_fields - hyperparam_fields)
    if foreign:
        raise ConfigError(f"--{foreign[0].replace('_', '-')} is not a setting of the recorded {spec.algo} run")
    config = spec.config.replace(**{name: getattr(args, name) for name in given & config_fields})
    hyperparams, grid = spec.hyperparams, dict(spec.grid)
    for name in given & hyperparam_fields:
        values = getattr(args, name)
        if not values:
            raise ConfigError(f"--{name.replace('_', '-')} needs a value")
        hyperparams = hyperparams._replace(**{name: values[0]})
        grid.pop(name, None)
        if len(values) > 1:
            grid[name] = values
    seeds = spec.seeds
    if given & {"seed", "seeds"}:
        first = args.seed if "seed" in given else spec.seeds[0]
        count = args.seeds if "seeds" in given else len(spec.seeds)
        if count <= 0:
            raise ConfigError(f"--seeds must be positive, got {count}")
        if first < 0 or first + count - 1 > MAX_SEED:
            raise ConfigError(f"seeds must lie in [0, {MAX_SEED}], got {first}..{first + count - 1}")
        seeds = list(range(first, first + count))
    objective = args.objective if "objective" in given else spec.objective
    return dataclasses.replace(spec, config=config, hyperparams=hyperparams, grid=grid, seeds=seeds,
                               objective=objective)
