"""`purerl train --config RUN/config.json`: rerun an experiment exactly from its record.

A run's config.json is its whole `TrainSpec`, so the spec rebuilt from it compiles the same
program with the same keys, and the rerun's metrics are bit-identical to the original's.
Flags given on the command line replace single fields of the record; flags left out keep the
recorded value (never the flag's default: a rerun without `--seeds` keeps the recorded seeds).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

from purerl.algos import registry
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import ConfigError, seed_range
from purerl.run import records, rundir
from purerl.run.pbt_config import PBTConfig
from purerl.run.files import read_json
from purerl.run.trainspec import TrainSpec, check_types


def given_flags(argv: list[str]) -> set[str]:
    """The field named by every option written in `argv` (`--lr 1e-3`, `--lr=1e-3`, `--no-anneal-lr`)."""
    names = set()
    for token in argv:
        if token.startswith("--"):
            name = token[2:].split("=", 1)[0].replace("-", "_")
            names.add(name.removeprefix("no_") if name.startswith("no_") and name != "no_progress" else name)
    return names


def load_spec(path: Path, flag: str = "--config"):
    """The `TrainSpec` recorded in `path`, or a one-line `ConfigError` saying what is wrong with the file."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:  # any JSON: what it records is checked below; a run resumed as recorded only as purerl wrote it
        data = rundir.read_config(path.parent) if flag == "--resume" else read_json(path, "a training record", object)
    except ConfigError as error:
        raise ConfigError(f"{flag}: {error}") from None
    if not isinstance(data, dict) or data.get("command") != "train":
        kind = data.get("command") if isinstance(data, dict) else None
        raise ConfigError(f"{flag}: {path} records {'a ' + repr(kind) + ' run' if kind else 'no purerl run'}, "
                          "not a training run (purerl train writes RUN/config.json)")
    try:
        check_record(data, path)
        spec = spec_from_record(data, path.parent)
        check_types(spec)
        _check_words(spec)
    except ConfigError as error:  # its own line: a damaged summary.json beside the record (named), an unknown algo
        raise ConfigError(f"{flag}: {error}") from None
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise ConfigError(f"{flag}: {path} is not a valid training record ({type(error).__name__}: {error})") from None
    return spec


def check_record(data: dict, path: Path) -> None:
    """A training record is read whole, as the flags are: every field purerl records present (`pbt` and `python`
    only where it recorded them), no other, each grid name once, a preset of its algorithm, every number finite. A
    field left out would otherwise become its default, and the record of one experiment would train another."""
    _check_keys(data, set(TrainSpec(PPOConfig()).to_json()), ("pbt", "python"), "", path)
    if not isinstance(data["algo"], str):
        raise TypeError(f"algo must be a string, got {data['algo']!r}")
    algorithm = registry.get(data["algo"])
    _check_keys(data["config"], {f.name for f in dataclasses.fields(algorithm.config)}, (), "config.", path)
    _check_keys(data["hyperparams"], set(algorithm.hyperparams._fields), (), "hyperparams.", path)
    if "pbt" in data:
        _check_keys(data["pbt"], {f.name for f in dataclasses.fields(PBTConfig)}, (), "pbt.", path)
    names = [name for name, _ in records.grid_pairs(data)]
    twice = [name for i, name in enumerate(names) if name in names[:i]]
    if twice:
        raise ConfigError(f"{path} sweeps {twice[0]} twice in its grid: a grid gives each hyperparameter one list")
    if data["preset"] is not None and data["preset"] not in algorithm.presets:
        raise ConfigError(f"{path} records the preset {data['preset']!r}, which is not one of {algorithm.name}'s "
                          f"({', '.join(algorithm.presets)})")
    for where, number in _non_finite(data):
        raise ConfigError(f"{path} holds {number} at {where}: every number of a record is finite")


def _check_keys(part, expected: set[str], optional: tuple[str, ...], prefix: str, path: Path) -> None:
    """`part` of a record is an object with exactly the `expected` keys (and any of `optional`)."""
    if not isinstance(part, dict):
        raise TypeError(f"{prefix.rstrip('.') or 'the record'} must be an object, got {part!r}")
    missing = sorted(expected - set(part))
    if missing:
        raise ConfigError(f"{path} has no {prefix}{missing[0]}: a record is read whole, never filled in with defaults")
    unknown = sorted(set(part) - expected - set(optional))
    if unknown:
        raise ConfigError(f"{path} holds {prefix}{unknown[0]}, which is no field of a training record")


def _non_finite(value, where: str = ""):
    """(where, number) for every infinite or NaN number in a record (JSON's `Infinity` and `NaN` read as floats)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for item in value:
            yield from _non_finite(item, where)
    elif isinstance(value, float) and not math.isfinite(value):
        yield where, value


def _check_words(spec) -> None:
    """The record's words are strings, as `check_types` checks its config's fields and numbers: an objective of 3
    would otherwise be an AttributeError deep inside `TrainSpec.validate`."""
    for name in ("objective", "value_loss", "network", "preset"):
        value = getattr(spec, name)
        if not (isinstance(value, str) or (name == "preset" and value is None)):
            raise TypeError(f"{name} must be a string, got {value!r}")


def spec_from_record(data: dict, run_dir: Path):
    """The `TrainSpec` of a run's config.json, its grid in the order the run's members were trained in."""
    return TrainSpec.from_json({**data, "grid": dict(records.grid_pairs(data, run_dir))})


def in_recorded_order(spec, run_dir: Path):
    """`spec` with its grid in the member order of the run in RUN_DIR when it sweeps the same values, so that a
    resumed member keeps its settings whichever order the flags or the record list them in."""
    if not (Path(run_dir) / "config.json").is_file():
        return spec
    recorded = rundir.read_config(run_dir)
    try:
        order = dict(records.grid_pairs(recorded, run_dir)) if recorded.get("command") == "train" else None
    except (OSError, AttributeError, TypeError, ValueError):  # a damaged record: `rundir.prepare` says so
        return spec
    if order != {name: [float(x) for x in values] for name, values in spec.grid.items()}:
        return spec  # a different grid: `rundir.prepare` names the difference
    return dataclasses.replace(spec, grid={name: spec.grid[name] for name in order})


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
    for name in [field for field in type(spec.hyperparams)._fields if field in given]:  # a fixed order
        values = getattr(args, name)
        if not values:
            raise ConfigError(f"--{name.replace('_', '-')} needs a value")
        hyperparams = hyperparams._replace(**{name: values[0]})
        if len(values) > 1:
            grid[name] = values  # a recorded sweep keeps its place in the member order; a new one comes last
        else:
            grid.pop(name, None)
    seeds = spec.seeds
    if given & {"seed", "seeds"}:
        first = args.seed if "seed" in given else spec.seeds[0]
        count = args.seeds if "seeds" in given else len(spec.seeds)
        seeds = seed_range(first, count)
    objective = args.objective if "objective" in given else spec.objective
    return dataclasses.replace(spec, config=config, hyperparams=hyperparams, grid=grid, seeds=seeds,
                               objective=objective)
