"""Run-directory locks: a run directory is written by one process at a time.

`lock` writes `LOCK` (the holder's pid and host) exclusively; a lock whose process is gone is stale and taken
over. The CLI holds what it writes for the whole command (`locking`); the library only refuses a directory
another live process holds, so a long-lived Python process leaves no lock behind.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from purerl.checks import ConfigError
from purerl.run.files import read_json

LOCK = ".purerl-lock"  # the pid and host of the process that writes the run now


def _holder(path: Path) -> dict | None:
    """The process that holds the lock at `path`, or None if nobody does (no lock, or its process is gone)."""
    import socket

    try:
        holder = read_json(path, "a lock")
        pid, host = holder["pid"], str(holder.get("host", ""))
    except ConfigError:  # none, or cut short as it was written (its process died there), or not purerl's
        return None
    if type(pid) is not int or not 0 < pid < 2**31:  # os.kill signals groups for pid <= 0, overflows past C's int
        return None
    if host != socket.gethostname():
        return holder  # another machine's process: it cannot be checked from here, so it holds
    if pid == os.getpid():
        return None  # this process: the lock is re-entrant (compare checks, then trains, each run)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # stale: its process is gone
    except PermissionError:
        pass
    return holder


_held: set[Path] = set()


def check_unlocked(out: Path) -> None:
    """Refuse a run directory that another live process is writing."""
    holder = _holder(Path(out) / LOCK)
    if holder is not None:
        raise ConfigError(f"{out} is being written by another purerl process (pid {holder['pid']} on "
                          f"{holder.get('host', '?')}); wait for it to finish, or stop it first")


def lock(out: Path) -> None:
    """Hold `out` for this process until `release_locks` (the CLI calls it as it exits, and atexit does):
    a second process that would write the same run directory is refused. A lock whose process is gone is stale
    and is taken over."""
    import atexit
    import socket

    out = Path(out)
    path = out / LOCK
    if out.resolve() in _held:
        return
    check_unlocked(out)
    text = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
    for _ in range(2):
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            check_unlocked(out)  # another process won the race, or a stale lock: take it over
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        if not _held:
            atexit.register(release_locks)
        _held.add(out.resolve())
        return
    check_unlocked(out)


_scopes: list[set[Path]] = []  # the open `locking` blocks, each with the locks taken inside it


@contextlib.contextmanager
def locking():
    """Within the block, `start` holds each run directory it starts (`lock`) until the block ends; the CLI opens
    one around every command. Outside one (the library's `experiment.run`, `evolve.run`), `start` only refuses a
    directory another live process holds, and leaves no lock behind in a long-lived process."""
    before = set(_held)
    _scopes.append(before)
    try:
        yield
    finally:
        _scopes.pop()
        release_locks(keep=before)


def release_locks(keep: set[Path] = frozenset()) -> None:
    """Give back every run directory this process holds (but those in `keep`)."""
    for out in list(_held - set(keep)):
        path = out / LOCK
        try:
            if read_json(path, "a lock").get("pid") == os.getpid():
                path.unlink()
        except (OSError, ConfigError):
            pass
        _held.discard(out)


def inside_block() -> bool:
    """Whether a `locking` block is open (a CLI command): then `rundir.start` holds what it starts."""
    return bool(_scopes)
