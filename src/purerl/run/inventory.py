"""Which files under a run directory are purerl's, file by file at any depth, and the deletion of those alone.

`--overwrite` replaces a run only when everything under it is purerl's: its own files at the top, by exact name
(each module that writes one registers it, `register_files`, where it defines it), and inside the folders that a
library writes (orbax's checkpoints, TensorBoard, W&B) what that library wrote. Anything else is the user's, and
`--overwrite` refuses while it is there: a user's file, an analysis another command wrote into the run (its notes
may sit beside it), a GIF under a name of the user's choosing. `delete_own` then deletes exactly the files this
module found purerl's, one by one, and the folders left empty: no deletion under a run can remove a file that was
not checked, even one put there after the check.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from purerl.checks import ConfigError
from purerl.run.files import files_under, temporary_name
from purerl.run.runlock import LOCK

CHECKPOINT = "checkpoint"
OWN_FOLDERS = (CHECKPOINT, "tensorboard", "wandb")
_OWN_FILES: set[str] = set()
# What the libraries write inside those folders, recognised file by file at every depth: orbax's step folders by
# the inventory each records (`checkpoint.foreign_in_step`), tensorboardX's event files (in folders per setting
# and seed), and W&B's run folders, logs and link to the latest run, by the names W&B gives them. Anything else
# there (a user's notes, a notebook, a folder of theirs with a digit name) is the user's.
_STEP = re.compile(r"\d+(\.orbax-checkpoint-tmp.*)?")
_WANDB_RUN = re.compile(r"(offline-)?run-\d{8}_\d{6}-\w+")
_WANDB_TOP = re.compile(r"debug(-internal|-cli\.[\w.-]+)?\.log")
_WANDB_IN_RUN = re.compile(r"run-\w+\.wandb(\.synced)?|logs/debug(-internal|-core)?\.log|files/(config\.yaml|"
                           r"output\.log|requirements\.txt|wandb-metadata\.json|wandb-summary\.json|"
                           r"conda-environment\.yaml|diff\.patch)")


def register_files(*names: str) -> None:
    """Declare file names that a writer puts at the top of run directories, so that `--overwrite` and `--resume`
    know them as purerl's."""
    _OWN_FILES.update(names)


def own_name(name: str) -> bool:
    """`name` is one that a writer registered for the top of a run directory."""
    return name in _OWN_FILES


def is_temporary(name: str) -> bool:
    """`name` is what a write of one of purerl's files, cut short, leaves behind: the temporary name
    `files.temporary` writes through (and those of releases before it: `.NAME.tmp`, `.STEM.tmp.png`)."""
    return any(name in (temporary_name(own), f".{own}.tmp", f".{Path(own).stem}.tmp.png") for own in _OWN_FILES)


def _in_checkpoints(folder: Path) -> tuple[list[Path], list[str]]:
    """(the files under checkpoint/ that orbax wrote, by each step folder's inventory; the paths it did not write:
    outside a step folder, or not in its inventory)."""
    from purerl.run.checkpoint import foreign_in_step  # here, not at the top: it imports orbax

    own, foreign = [], []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink() and _STEP.fullmatch(entry.name):
            alien = set(foreign_in_step(entry))
            for path in files_under(entry):
                name = path.relative_to(entry).as_posix()
                foreign.append(f"{CHECKPOINT}/{entry.name}/{name}") if name in alien else own.append(path)
        else:
            foreign.append(f"{CHECKPOINT}/{entry.name}")
    return own, foreign


def _wandb_own(path: Path, folder: Path) -> bool:
    """`path`, under wandb/, is a file W&B writes: its debug logs, the link to its latest run, its run's files."""
    parts = path.relative_to(folder).parts
    if len(parts) == 1:
        if parts[0] == "latest-run":  # W&B's is a link to one of its run folders, never a file
            return path.is_symlink() and bool(_WANDB_RUN.fullmatch(Path(os.readlink(path)).name))
        return bool(_WANDB_TOP.fullmatch(parts[0]))
    return (not path.is_symlink() or parts[-1] == "debug-core.log") and bool(_WANDB_RUN.fullmatch(parts[0])) \
        and bool(_WANDB_IN_RUN.fullmatch("/".join(parts[1:])))


def _inside(folder: Path) -> tuple[list[Path], list[str]]:
    """(the files under one of OWN_FOLDERS, at any depth, that a library of purerl's wrote there; the paths of the
    others). Empty folders hold nothing of anyone's."""
    if folder.name == CHECKPOINT:
        return _in_checkpoints(folder)
    if folder.name == "tensorboard":  # event files only, in folders named by setting and seed
        own = lambda p: not p.is_symlink() and p.name.startswith("events.out.tfevents.")  # noqa: E731
    else:
        own = lambda p: _wandb_own(p, folder)  # noqa: E731
    found = files_under(folder)
    return [p for p in found if own(p)], [str(p.relative_to(folder.parent)) for p in found if not own(p)]


def _sorted_out(out: Path) -> tuple[list[Path], list[str]]:
    """Everything under a run: (purerl's own files, at the top and inside OWN_FOLDERS; the paths of everything
    else). The lock is neither: its holder removes it."""
    own, foreign = [], []
    for entry in sorted(Path(out).iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            mine, others = _inside(entry) if entry.name in OWN_FOLDERS else ([], [entry.name])
            own, foreign = own + mine, foreign + others
        elif own_name(entry.name) or is_temporary(entry.name):
            own.append(entry)
        elif entry.name != LOCK:
            foreign.append(entry.name)
    return own, foreign


def foreign_entries(out: Path) -> list[str]:
    """Paths in `out` that `--overwrite` must not delete: everything but purerl's own."""
    return _sorted_out(out)[1]


def check_only_own(out: Path) -> list[Path]:
    """purerl's own files in the run `out`, or one line naming what else it holds, which `--overwrite` must keep."""
    own, foreign = _sorted_out(out)
    if foreign:
        raise ConfigError(f"refusing to overwrite {out}: it holds files purerl did not write or does not replace "
                          f"({', '.join(foreign[:3])}); move them out first")
    return own


def delete_own(out: Path) -> None:
    """Delete the run in `out` file by file, only the files `check_only_own` found purerl's, then the folders left
    empty (never `out`): a file put there since the check is kept, and so is its folder."""
    for path in check_only_own(out):
        path.unlink(missing_ok=True)
    for root, _, _ in sorted(os.walk(out), key=lambda entry: -len(entry[0]))[:-1]:  # deepest first, `out` last
        with contextlib.suppress(OSError):  # not empty: a file put there since the check
            os.rmdir(root)
