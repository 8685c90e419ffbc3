"""What a run's config.json records, compared field by field: whether a command asks for the run a folder holds
(`comparable`, a training grid in member order), and, where it does not, which fields differ (`differences`)."""

from __future__ import annotations

import json
from pathlib import Path

from purerl.run.files import read_json


def grid_pairs(config: dict, out: Path | None = None) -> list[list]:
    """A training record's grid as [name, values] pairs in member order: the members are the product of the
    values in this order, each with every seed. config.json keeps this list, which `sort_keys` leaves alone.
    Older records kept a dict, which it sorted: their order is the one in the member labels of OUT's
    summary.json (what trained), or, before a run finished, the dict's order (what `--config` resumed)."""
    grid = config.get("grid") or []  # no grid (`[]`, or an older `{}`): no order to look up in summary.json
    if isinstance(grid, list):
        return [[name, list(values)] for name, values in grid]
    names = list(grid)
    summary = Path(out) / "summary.json" if out is not None else None
    if summary is not None and summary.is_file():
        labels = list(read_json(summary, "a run's summary").get("final_return_by_member") or [""])
        swept = [part.partition("=")[0] for part in labels[0].split(",")[:-1]]
        if sorted(swept) == sorted(name for name in names if len(grid[name]) > 1):
            names = swept + [name for name in names if name not in swept]
    return [[name, list(grid[name])] for name in names]


def comparable(config: dict, out: Path | None = None) -> dict:
    """`config` as config.json records it: a training run's grid as ordered pairs."""
    if config.get("command") != "train" or "grid" not in config:
        return config
    try:
        return {**config, "grid": grid_pairs(config, out)}
    except (OSError, AttributeError, TypeError, ValueError):  # a damaged record: compared, and shown, as it is
        return config


def flat_fields(config: dict, prefix: str = "") -> dict:
    """A nested record as {"a.b.c": value}, one entry per leaf."""
    leaves = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:  # an empty dict is a leaf: an edit to {} still shows
            leaves.update(flat_fields(value, f"{prefix}{key}."))
        else:
            leaves[f"{prefix}{key}"] = value
    return leaves


_ABSENT = object()


def _key(name) -> str:
    """A field's name as a one-line message shows it: as JSON where an edit gave it a line break or a non-string."""
    return name if isinstance(name, str) and name.isprintable() else json.dumps(name)


def _show(name: str, value) -> str:
    if value is _ABSENT:
        return "absent"
    if name == "grid" and isinstance(value, list) and all(
            isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], list) for pair in value):
        return " ".join(f"{_key(k)}={','.join(json.dumps(x) for x in v)}" for k, v in value) or "none"
    if (isinstance(value, list) and len(value) > 3 and all(type(x) is int for x in value)
            and value == list(range(value[0], value[0] + len(value)))):
        return f"[{value[0]}..{value[-1]}]"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _differs(a, b) -> bool:
    """As a record reads: JSON's true is not 1, and 1.0 is not 1, though Python's == says they are."""
    return a != b or type(a) is not type(b)


def differences(previous: dict, config: dict, labels: tuple[str, str] = ("recorded", "this command")) -> str:
    """Each differing field, by its own name (its path where the name alone is ambiguous), with both values, each
    followed by its label."""
    old, new = flat_fields(previous), flat_fields(config)
    paths = sorted(k for k in old.keys() | new.keys() if _differs(old.get(k, _ABSENT), new.get(k, _ABSENT)))
    short = [path.rpartition(".")[2] for path in old.keys() | new.keys()]
    parts = []
    for path in paths:
        name = path.rpartition(".")[2]
        name = name if short.count(name) == 1 else path
        parts.append(f"{_key(name)}: {_show(name, old.get(path, _ABSENT))} ({labels[0]}) vs "
                     f"{_show(name, new.get(path, _ABSENT))} ({labels[1]})")
    return "; ".join(parts)
