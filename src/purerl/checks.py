"""The checks every config and hyperparameter class runs on its fields, and the error they raise.

A setting reaches the library as a flag, a `--config` record or a Python argument. The flags are typed by
their parser (`cli/args.py`: finite numbers that fit float32, integers, True or False); a record or a Python
call may hold anything. These checks hold every way in to the flags' rules, so that whatever is wrong is one
`ConfigError` line naming the field before anything is compiled or written.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing

import numpy as np


class ConfigError(ValueError):
    """Bad user input, reported as one line before anything is compiled or written."""


TYPE_NAMES = {int: "an integer", float: "a number", bool: "True or False", str: "a string"}


def shown(value) -> str:
    """`repr(value)` on one line and cut short: an error names what it was given and stays one line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(value) -> bool:
    """A real number, never a bool: True is not a learning rate, though Python counts it as 1."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def as_float(value) -> float:
    """A real number as a float: an int beyond any float is an infinity of its sign, not an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def fits_float32(value) -> bool:
    """Finite, and still finite as the float32 the program computes with (what the flags' `floats` accepts)."""
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.float32(as_float(value))))


def number_text(value) -> str:
    """A number as `:g` writes it (0, 1e+39, nan), but an int beyond any float in full, cut short."""
    number = as_float(value)
    return shown(value) if isinstance(value, numbers.Integral) and not math.isfinite(number) else f"{number:g}"


def check_number(name: str, value, bounds: tuple[float, float, str]) -> None:
    """`value` is a number in (low, high] of `bounds` = (low, high, text) (NaN never is), finite in float32 (a
    high of inf bounds nothing, and is no value itself), and still in bounds as the float32 the program
    computes with (1e-50 is 0 there); else one ConfigError line naming `name`."""
    if not is_number(value):
        raise ConfigError(f"{name} must be a number, got {shown(value)}")
    low, high, text = bounds
    if not low < as_float(value) <= high:
        raise ConfigError(f"{name} must be {text}, got {number_text(value)}")
    if not fits_float32(value):
        raise ConfigError(f"{name} must be finite and fit float32 (at most about 3.4e38), got {number_text(value)}")
    single = float(np.float32(value))
    if not low < single <= high:
        raise ConfigError(f"{name} must be {text}, got {number_text(value)}, which is {single:g} in float32")


def numbers_in(name: str, value) -> list:
    """The numbers a hyperparameter holds: itself, or every element of its grid column (a list, or an array
    made by `make_members` or `as_arrays`); a non-numeric array is one ConfigError line."""
    if isinstance(value, (list, tuple)):
        return [number for element in value for number in numbers_in(name, element)]
    if is_number(value) or not hasattr(value, "__array__"):
        return [value]
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        raise ConfigError(f"{name} must hold numbers, got an array of {array.dtype}")
    return np.unique(array).tolist()  # a population's column repeats each grid value once per seed


def check_bounds(hp, bounds: dict[str, tuple[float, float, str]]) -> None:
    """Every field of the hyperparameters `hp` (scalars or grid columns) is numbers within its bounds in
    `bounds` (each field has one: a field added without bounds fails here at once, not in a user's run)."""
    for name in hp._fields:
        for value in numbers_in(name, getattr(hp, name)):
            check_number(name, value, bounds[name])


def check_field_types(config) -> None:
    """Every field of the config dataclass holds its declared type (a float field takes an int; no number
    field takes a bool; a tuple field holds its element type), and a float field is finite in float32."""
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        name, hint, value = field.name, hints[field.name], getattr(config, field.name)
        if typing.get_origin(hint) is tuple:
            element = typing.get_args(hint)[0]
            if not isinstance(value, tuple) or not all(_is_instance(v, element) for v in value):
                raise ConfigError(f"{name} must be a tuple of {element.__name__}s, got {shown(value)}")
        elif not _is_instance(value, hint):
            raise ConfigError(f"{name} must be {TYPE_NAMES.get(hint, hint)}, got {shown(value)}")
        elif hint is float and not fits_float32(value):
            raise ConfigError(f"{name} must be a finite number that fits float32, got {shown(value)}")


def _is_instance(value, hint) -> bool:
    """`isinstance`, but an int serves a float field and a bool serves only a bool one."""
    if isinstance(value, bool):
        return hint is bool
    return isinstance(value, (int, float) if hint is float else hint)


def check_count(name: str, value, limit: int) -> None:
    """`value` is an integer in [1, limit]: a size, or a count the program loops over."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {shown(value)}")
    if value > limit:
        raise ConfigError(f"{name} must be at most {limit:,}, got {value:,}")


def check_counts(obj, limits: dict[str, int]) -> None:
    """Each named field of `obj` is a count within its limit (`check_count`), named by its flag."""
    for name, limit in limits.items():
        check_count(name.replace("_", "-"), getattr(obj, name), limit)


def check_choice(obj, name: str, choices: tuple[str, ...]) -> None:
    """The named field of `obj` is one of `choices`, named by its flag."""
    value = getattr(obj, name)
    if value not in choices:
        raise ConfigError(f"{name.replace('_', '-')} must be one of {', '.join(choices)}, got {shown(value)}")


MAX_INT32 = 2**31 - 1  # loop counters and array sizes inside one XLA program
MAX_DIMENSION = 2**24  # no env count, rollout length or layer width beyond this is a real setting
MAX_MEMBERS = 2**20  # seeds x grid settings in one population: far beyond what fits one machine's memory
MAX_SEED = 2**32 - 1  # a seed is one uint32 PRNG key
MAX_EPISODES = 2**20  # episodes per member in one evaluation: beyond it only a memory error (or an abort)


# Bounds of a traced hyperparameter: (low, high, text), the value must lie in (low, high].
POSITIVE = (0.0, np.inf, "> 0")
NON_NEGATIVE = (np.nextafter(0.0, -1.0), np.inf, ">= 0")  # the largest negative float is excluded, 0 is not
UNIT = (np.nextafter(0.0, -1.0), 1.0, "in [0, 1]")  # a probability or lambda
DISCOUNT = (0.0, 1.0, "in (0, 1]")


def seed_range(first: int, count: int, name: str = "--seeds") -> list[int]:
    """Seeds first..first+count-1, checked before the list is built (a count of 2**40 is an error, not a
    MemoryError). NAME is the count's name in the caller's words (a flag, or a Python argument)."""
    if count <= 0:
        raise ConfigError(f"{name} must be positive, got {count}")
    if count > MAX_MEMBERS:
        raise ConfigError(f"{name} must be at most {MAX_MEMBERS:,}, got {count:,}")
    if first < 0 or first + count - 1 > MAX_SEED:
        raise ConfigError(f"seeds must lie in [0, {MAX_SEED}], got {first}..{first + count - 1}")
    return list(range(first, first + count))
