"""Orbax checkpoints of a whole runner state, so that a run resumes bit-for-bit.

The state pytree (parameters, optimiser, environment, normalisers, RNG keys and
the metric buffer) is saved with the index of the next update to run. Orbax
writes to a temporary directory and renames it on success, so a killed save
leaves the previous checkpoint intact.

A disk can still damage a finished checkpoint, or a user edit it, and orbax may then restore different
numbers without a word. So each checkpoint's progress item carries a sha256 of what it holds (the arrays and
the progress itself), and `restore` checks it: a damaged checkpoint is never resumed from. A checkpoint without
one is damaged too: no format of purerl's lacks it (none records a format version to tell an older one by), so
deleting the key must not turn the check off. Two are kept, so that there is an intact one to fall back to (at
twice the disk).

A checkpoint folder is deleted (by rotation, or by `--overwrite`) only file by file, and only the files it was
saved with: each step folder carries `INVENTORY`, the relative paths that orbax wrote for it, recorded right after
the save committed. A file a user put there (notes beside a step, a folder of theirs with a digit name) is in no
inventory, so it stops `--overwrite` and rotation keeps its step, saying so once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from purerl.checks import ConfigError
from purerl.run.files import files_under, read_json, write_atomic
from purerl.run.stopping import tell

DIGEST = "sha256"  # the progress key of the checksum, which every checkpoint must carry
INVENTORY = ".purerl-files.json"  # in each step folder: the relative paths orbax wrote for that step
# What orbax writes into the temporary folder of a save (left behind when one is killed), relative to it: the
# metadata and commit markers of the step and of its two items, and the OCDBT store of the arrays. A save cut
# short records no inventory, so these paths are what recognises its folder as orbax's.
_ORBAX_LAYOUT = re.compile(r"((state|progress)/)?(_CHECKPOINT_METADATA|commit_success\.txt|metadata|_METADATA|"
                           r"_sharding|manifest\.ocdbt|(ocdbt\.process_\d+/)?(manifest\.ocdbt|d/[0-9a-f]{32})|"
                           r"array_metadatas/process_\d+)")


def _files(folder: Path) -> list[str]:
    return [path.relative_to(folder).as_posix() for path in files_under(folder)]


def record_inventory(step_folder: Path) -> None:
    """Write the step folder's INVENTORY: every file orbax committed there, which alone may later be deleted."""
    write_atomic(step_folder / INVENTORY, json.dumps([f for f in _files(step_folder) if f != INVENTORY]) + "\n")


def _inventory(step_folder: Path) -> set[str] | None:
    """The paths INVENTORY lists, or None when it is missing or not a list of paths (then nothing is purerl's)."""
    try:
        listed = read_json(step_folder / INVENTORY, "a checkpoint's inventory", list)
    except ConfigError:
        return None
    return set(listed) if all(isinstance(f, str) for f in listed) else None


def foreign_in_step(step_folder: Path) -> list[str]:
    """Paths in a checkpoint step folder (or an orbax temporary one) that purerl did not write there: those its
    INVENTORY does not list (a temporary folder has none: what orbax's layout does not name), and any link."""
    own = _inventory(step_folder)
    if own is not None:
        own.add(INVENTORY)
    temporary = ".orbax-checkpoint-tmp" in step_folder.name
    return [f for f in _files(step_folder) if (step_folder / f).is_symlink()
            or not (f in (own or ()) or temporary and _ORBAX_LAYOUT.fullmatch(f))]


def delete_inventory(step_folder: Path) -> None:
    """Delete what a step folder's INVENTORY lists, the INVENTORY, then the folders left empty: never a file that
    is not listed, even one put there since it was checked."""
    for name in _inventory(step_folder) or ():
        (step_folder / name).unlink(missing_ok=True)
    (step_folder / INVENTORY).unlink(missing_ok=True)
    for root, _, _ in sorted(os.walk(step_folder), key=lambda entry: -len(entry[0])):
        with contextlib.suppress(OSError):  # not empty: a user's file is there
            os.rmdir(root)


class CheckpointDamaged(ConfigError):
    """No intact checkpoint is left to restore: one line and exit 2, never a resume from damaged state."""


def digest(state: Any, progress: dict) -> str:
    """sha256 over every array's dtype, shape and bytes in tree order, then the progress as sorted JSON."""
    sha = hashlib.sha256()
    for leaf in jax.tree.leaves(state):
        leaf = np.asarray(leaf)
        sha.update(f"{leaf.dtype.str}{leaf.shape}".encode())
        sha.update(leaf.tobytes())
    sha.update(json.dumps({k: v for k, v in progress.items() if k != DIGEST}, sort_keys=True).encode())
    return sha.hexdigest()


def _reason(error: Exception) -> str:
    """The first line of an orbax/tensorstore error, without the tensorstore spec it appends."""
    text = str(error).strip().split("\n")[0].split(" [tensorstore_spec")[0] or type(error).__name__
    return f"orbax cannot read it: {text[:120]}{'...' if len(text) > 120 else ''}"


@contextlib.contextmanager
def _quiet_orbax_logs():
    """Orbax logs each metadata file it cannot read (as it lists and restores steps); `restore` reports the
    damage once, in one line, instead."""
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        absl.setLevel(level)


class _DropClosedLoopNoise:
    """An orbax restore that fails leaves tensorstore callbacks aimed at the event loop it closed, and each
    prints an 'Event loop is closed' traceback, long after `restore` reported the damage in one line. Those
    alone are dropped; every other unraisable exception goes to the hook that was there before."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, unraisable) -> None:
        if not (isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == "Event loop is closed"):
            self.previous(unraisable)


class _DropOrbaxErrors(logging.Filter):
    """A save that fails (a full disk) makes orbax log every failed write with its traceback from its background
    threads, hundreds of lines; `Checkpointer` raises the failure as one `OSError` line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR and "orbax" in record.pathname)


@contextlib.contextmanager
def _saving(directory: Path):
    """Whatever a save raises (orbax wraps a full disk in a ValueError) as one `OSError` line: exit 1."""
    try:
        yield
    except OSError as error:
        raise OSError(f"cannot save a checkpoint in {directory}: {_first_line(error)}") from None
    except Exception as error:  # noqa: BLE001  orbax and tensorstore raise ValueError, RuntimeError, ...
        raise OSError(f"cannot save a checkpoint in {directory}: {_first_line(error)}") from None


def _first_line(error: Exception) -> str:
    text = str(error).strip().split("\n")[0].split(" [tensorstore_spec")[0] or type(error).__name__
    return text[:300] + ("..." if len(text) > 300 else "")


class Checkpointer:
    """Saves host (numpy) pytrees. In a multi-process run each process uses it on its own, with no
    barriers: process 0 alone saves, and every process may restore (from a shared filesystem)."""

    def __init__(self, directory: Path, max_to_keep: int = 2):
        solo = ocp.options.MultiprocessingOptions(primary_host=jax.process_index(),
                                                  active_processes={jax.process_index()})
        self.directory = Path(directory).absolute()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.passed_over: list[int] = []  # damaged steps that `restore` fell back past; the next save deletes them
        self.keep, self.kept = max_to_keep, set()  # `kept`: old steps rotation left for a user's file, said once
        absl = logging.getLogger("absl")
        if not any(isinstance(f, _DropOrbaxErrors) for f in absl.filters):
            absl.addFilter(_DropOrbaxErrors())
        if not isinstance(sys.unraisablehook, _DropClosedLoopNoise):  # a failed save leaves the same noise
            sys.unraisablehook = _DropClosedLoopNoise(sys.unraisablehook)
        with _quiet_orbax_logs():  # orbax deletes nothing itself (`_rotate` does), and a save has committed when
            self.manager = ocp.CheckpointManager(  # it returns, so that its inventory can be recorded then
                self.directory,
                options=ocp.CheckpointManagerOptions(max_to_keep=None, create=False, enable_async_checkpointing=False,
                                                     multiprocessing_options=solo),
            )

    def latest(self) -> int | None:
        return self.manager.latest_step()

    def save(self, step: int, state: Any, extra: dict | None = None) -> None:
        state = jax.tree.map(np.asarray, state)  # host copies: multi-process orbax refuses host-local jax.Arrays
        progress = {"step": int(step), **(extra or {})}
        progress[DIGEST] = digest(state, progress)
        self._delete_passed_over()
        with _saving(self.directory):
            self.manager.save(int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                                 progress=ocp.args.JsonSave(progress)))
            record_inventory(self._folder(int(step)))
            self._rotate()

    def _folder(self, step: int) -> Path:
        return self.directory / str(step)

    def _delete_passed_over(self) -> None:
        """Delete the damaged steps `restore` fell back past: orbax skips saves at or below them, and would keep them
        over intact ones. One holding a user's file stops the run in one line instead of being deleted."""
        for damaged in self.passed_over:
            foreign = foreign_in_step(self._folder(damaged))
            if foreign:
                raise ConfigError(f"the damaged checkpoint {self._folder(damaged)} holds files purerl did not write "
                                  f"({', '.join(foreign[:3])}); move them out, then resume again")
            delete_inventory(self._folder(damaged))
        if self.passed_over:
            self.manager.reload()
        self.passed_over = []

    def _rotate(self) -> None:
        """Keep the newest `keep` steps; delete each older one by its inventory, but keep (and say so once) one
        that holds a file purerl did not write, which is the user's."""
        old = sorted(self.manager.all_steps())[:-self.keep] if self.keep else []
        for step in old:
            foreign = foreign_in_step(self._folder(step))
            if not foreign:
                delete_inventory(self._folder(step))
            elif step not in self.kept:
                self.kept.add(step)
                tell(f"purerl: keeping the old checkpoint {self._folder(step)}: it holds files purerl did not write "
                     f"({', '.join(foreign[:3])})")
        if old:
            self.manager.reload()

    def restore(self, like: Any) -> tuple[Any, dict]:
        """The latest intact checkpoint, restored into the structure of `like` (arrays or ShapeDtypeStructs),
        saying on stderr which damaged ones it passed over. Returns (state, progress): progress holds "step"
        and whatever `extra` was saved with it. `CheckpointDamaged` when no checkpoint is intact."""
        target = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), like)
        damaged = []
        for step in sorted(self.manager.all_steps(), reverse=True):
            state, progress, problem = self._restore_checked(target, step)
            if problem is None:
                if damaged:
                    self.passed_over = [s for s, _ in damaged]
                    tell(f"purerl: {self._describe(damaged)}; falling back to the intact checkpoint at step {step}")
                return state, progress
            damaged.append((step, problem))
        if not damaged:
            raise CheckpointDamaged(f"{self.directory} holds no checkpoint")
        raise CheckpointDamaged(f"{self._describe(damaged)}, and no intact earlier checkpoint is left; "
                                "start the run again with --overwrite")

    def _restore_checked(self, target: Any, step: int) -> tuple[Any, dict, str | None]:
        """(state, progress, None) if checkpoint `step` reads back as it was saved, else (None, None, why not)."""
        try:
            with _quiet_orbax_logs():
                restored = self.manager.restore(
                    step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target),
                                                  progress=ocp.args.JsonRestore()))
            state, progress = restored.state, dict(restored.progress)
        except Exception as error:  # noqa: BLE001  whatever orbax raises on missing, cut or garbled files
            if not isinstance(sys.unraisablehook, _DropClosedLoopNoise):
                sys.unraisablehook = _DropClosedLoopNoise(sys.unraisablehook)
            return None, None, _reason(error)
        if progress.get("step") != step:
            return None, None, f"its progress says step {progress.get('step')!r}"
        if DIGEST not in progress:
            return None, None, "it has no checksum"
        if progress[DIGEST] != digest(state, progress):
            return None, None, "its checksum does not match what was saved"
        return state, progress, None

    def _describe(self, damaged: list[tuple[int, str]]) -> str:
        steps = " and ".join(f"step {step} ({problem})" for step, problem in damaged)
        many = len(damaged) > 1
        return f"the checkpoint{'s' if many else ''} at {steps} in {self.directory} {'are' if many else 'is'} damaged"

    def close(self) -> None:
        with _saving(self.directory):
            self.manager.wait_until_finished()
            self.manager.close()


def check_path(out: Path) -> None:
    """Refuse a run directory under which orbax could save but never restore: it globs the absolute path
    when it merges a checkpoint's files, so '[' or ']' there (or '*', '?') would be read as a pattern."""
    magic = [c for c in "[]*?" if c in str(Path(out).absolute())]
    if magic:
        raise ConfigError(f"cannot keep checkpoints under {out}: orbax reads {' and '.join(map(repr, magic))} in a "
                          "path as a pattern and could not restore them; choose a path without [ ] * ?")


def latest_step(directory: Path) -> int | None:
    """The step of the last checkpoint in `directory`, None if there is none; creates nothing."""
    if not Path(directory).is_dir():
        return None
    checkpointer = Checkpointer(directory)
    step = checkpointer.latest()
    checkpointer.close()
    return step
