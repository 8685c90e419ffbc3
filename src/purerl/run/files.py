"""How purerl writes a file: whole or not at all, and, outside run directories, marked as its own.

Every write goes to a temporary name beside its target (`temporary`) and is renamed into place, so a reader, or
a run killed mid-write, sees the old file or the new one, never half of one. Outputs outside a run directory
(`plot --out`, `eval --gif`, drift maps) carry a mark that says purerl wrote them, so that a later command
replaces its own file and never a user's: a PNG a tEXt chunk, a GIF a comment block, each just before the
file's end. `bench` and `--report` decide the same way from their records.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from purerl.config import ConfigError

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


def check_replaceable(path: Path, flag: str, own=written_by_purerl) -> None:
    """Refuse, before anything runs, to replace a file purerl did not write (`own` says which it did)."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not (path.is_file() and own(path))):
        raise ConfigError(f"refusing to replace {path}: purerl did not write it; choose another {flag}, or move it "
                          "away first")
