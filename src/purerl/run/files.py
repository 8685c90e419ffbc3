"""How purerl writes a file: whole or not at all, and, outside run directories, marked as its own.

Every write goes to a temporary name beside its target (`temporary`) and is renamed into place, so a reader, or
a run killed mid-write, sees the old file or the new one, never half of one. Outputs outside a run directory
(`plot --out`, `eval --gif`, drift maps) carry a mark that says purerl wrote them, so that a later command
replaces its own file and never a user's: a PNG a tEXt chunk, a GIF a comment block, each just before the
file's end. `bench` and `--report` decide the same way from their records.

Every JSON file purerl reads back (a record, a summary, a lock, a `--config`) goes through `read_json`, so that
whatever is in it, hand-edited, damaged or hostile, it is the data or one line naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from purerl.checks import ConfigError

_PNG_TEXT = b"Software\x00purerl"
_GIF_COMMENT = b"\x21\xfe\x06purerl\x00"


def slug(env: str) -> str:
    """An env id as a file or folder name (`brax:hopper` is `brax-hopper`): a study's per-env records and plots."""
    return env.replace(":", "-").replace("/", "-")


def temporary_name(name: str) -> str:
    """The name a write of `name` goes to first (it keeps the suffix, which image writers read the format from)."""
    return f".{name}.tmp{Path(name).suffix}"


@contextlib.contextmanager
def temporary(path: Path) -> Iterator[Path]:
    """Yield the temporary path to write `path` through; renamed into place when the block succeeds, removed
    when it fails."""
    path = Path(path)
    tmp = path.with_name(temporary_name(path.name))
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` whole or not at all."""
    with temporary(path) as tmp, open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def save_figure(figure, path: Path, **options) -> Path:
    """Write a matplotlib `figure` to `path` whole or not at all (`options` go to `savefig`), and close it."""
    import matplotlib.pyplot as plt

    try:
        with temporary(path) as tmp:
            figure.savefig(tmp, **options)
    finally:
        plt.close(figure)
    return Path(path)


def mark_written(path: Path) -> None:
    """Mark the PNG or GIF at `path` as purerl's (`write_atomic`: a cut-short write leaves the unmarked file)."""
    import zlib

    path = Path(path)
    data = path.read_bytes()
    if path.suffix.lower() == ".png" and data.endswith(b"IEND\xaeB`\x82"):
        chunk = len(_PNG_TEXT).to_bytes(4, "big") + b"tEXt" + _PNG_TEXT
        chunk += zlib.crc32(b"tEXt" + _PNG_TEXT).to_bytes(4, "big")
        data = data[:-12] + chunk + data[-12:]
    elif path.suffix.lower() == ".gif" and data.endswith(b"\x3b"):
        data = data[:-1] + _GIF_COMMENT + b"\x3b"
    else:
        return
    write_atomic(path, data)


def written_by_purerl(path: Path) -> bool:
    """`path` carries the mark of `mark_written`."""
    try:
        with open(path, "rb") as file:
            file.seek(max(0, os.path.getsize(path) - 64))
            tail = file.read()
    except OSError:
        return False
    return _PNG_TEXT in tail or tail.endswith(_GIF_COMMENT + b"\x3b")


def check_replaceable(path: Path, flag: str | None, own=written_by_purerl) -> None:
    """Refuse, before anything runs, to replace a file purerl did not write (`own` says which it did). `flag` names
    the option that chose `path`; None where no option does (`eval`'s RUN/eval.json)."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not (path.is_file() and own(path))):
        instead = f"choose another {flag}, or " if flag else ""
        raise ConfigError(f"refusing to replace {path}: purerl did not write it; {instead}move it away first")


def files_under(folder: Path) -> list[Path]:
    """Everything under `folder` that is not a directory (links included, never followed): what a user may have
    put there, which a deletion must know before it deletes."""
    found = []
    for root, dirs, names in os.walk(folder):
        found += [Path(root, name) for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]]
    return sorted(found)


MAX_DEPTH = 64  # levels of nesting in a JSON file: purerl's own nest a handful; Python's parser recurses per level
MAX_DIGITS = 40  # digits of a JSON integer: purerl's own are below 2**64 (20); int() of long ones is quadratic
MAX_BYTES = 2**28  # a JSON file purerl reads whole: its own are kilobytes; beyond this, a wrong path (/dev/zero)
# A JSON string (to its closing quote, or the end of a file cut short inside one) or a bracket. Possessive, so that
# the scan is linear whatever the text: brackets inside strings do not nest.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.?)*+(?:"|\Z)|[\[\]{}]', re.S)
_NESTS = {"[": 1, "{": 1, "]": -1, "}": -1}


class MissingKey(ConfigError, KeyError):
    """A key that a JSON file read by `read_json` lacks, asked for by purerl: one line naming the file and the key.
    A KeyError too, so that code which handles an absent key still does."""

    __str__ = ValueError.__str__  # KeyError's would quote the message


class Record(dict):
    """A JSON object `read_json` read: indexing a key it lacks is a `MissingKey` naming its file, where a plain
    dict's KeyError would be a traceback far from the read (a `summary.json` of `{}` resumed)."""

    def __init__(self, path: Path, pairs=()):
        super().__init__(pairs)
        self.path = path

    def __missing__(self, key):
        raise MissingKey(f"{self.path} has no {key!r}: it is damaged, or purerl did not write it")

    def require(self, *keys: str) -> Record:
        """This record, checked up front for keys purerl will index later: a `MissingKey` for the first it lacks."""
        for key in keys:
            if key not in self:
                self.__missing__(key)
        return self


def read_json(path: Path, what: str, kind: type = dict):
    """The JSON in `path`, which must hold a `kind` (its objects `Record`s), or a one-line `ConfigError` naming the
    file and saying what is wrong: missing, unreadable, not UTF-8 JSON, nested deeper than MAX_DEPTH, an integer
    longer than MAX_DIGITS, a key given twice in one object, or another kind. `what` names what the file should
    hold ("a run's settings")."""
    path = Path(path)
    try:
        data = json.loads(_text(path), parse_int=_integer,
                          object_pairs_hook=lambda pairs: Record(path, _once(pairs)))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path} cannot be read as {what}: it is not JSON ({error})") from None
    except ValueError as error:  # _text's, _once's and _integer's own, each one line
        raise ConfigError(f"{path} cannot be read as {what}: {error}") from None
    if not isinstance(data, kind):
        raise ConfigError(f"{path} cannot be read as {what}: it holds {_json_kind(data)}, not {_json_kind(kind())}")
    return data


def _text(path: Path) -> str:
    """The file as UTF-8 text, nested at most MAX_DEPTH deep; a ValueError saying why not."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ValueError("it does not exist") from None
    except IsADirectoryError:
        raise ValueError("it is a folder") from None
    except OSError as error:
        raise ValueError(f"it cannot be opened ({error.strerror or type(error).__name__})") from None
    if len(data) > MAX_BYTES:
        raise ValueError(f"it is larger than {MAX_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"it is not UTF-8 text ({error.reason} at byte {error.start})") from None
    _check_depth(text)
    return text


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before parsing: Python's parser recurses once per level, so a file of
    200,000 '[' would be a RecursionError; counted over brackets outside strings."""
    depth = 0
    for token in _TOKEN.finditer(text):
        depth += _NESTS.get(token.group(), 0)  # a string token counts 0
        if depth > MAX_DEPTH:
            raise ValueError(f"it nests deeper than {MAX_DEPTH} levels")


def _once(pairs: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """An object's pairs, each key once: Python's parser would keep the last of two (a grid naming `lr` twice would
    sweep only its second values), which purerl never writes and a reader cannot tell from the file."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"it names {key!r} twice in one object")
        seen.add(key)
    return pairs


def _integer(digits: str) -> int:
    """A JSON integer of at most MAX_DIGITS digits (Python's own limit, 4300, raises from inside the parser)."""
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"it holds an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_DIGITS})")
    return int(digits)


def _json_kind(value) -> str:
    """What JSON calls the kind of `value`, for a message."""
    for types, name in ((dict, "an object"), (list, "an array"), (str, "a string"), (bool, "true or false"),
                        ((int, float), "a number")):
        if isinstance(value, types):
            return name
    return "null"
