"""Run directories: one set of rules for where a command may write, resume or replace.

`train`, `evolve`, `mfos` and `act` all go through `prepare` (before anything compiles)
and `start` (before anything is written), so they share the same guarantees:

- purerl marks every run directory it creates with `MARKER`;
- `--resume` needs a directory that holds a run with the same settings, and never starts
  a fresh one silently;
- `--overwrite` only ever deletes a directory that carries the marker and holds nothing
  but what purerl writes, and deletes it file by file, each one checked (`inventory`); `.`,
  the home directory and `/` are never deleted;
- an unwritable destination is refused up front, not found out by a traceback.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from purerl.checks import ConfigError
from purerl.run.inventory import CHECKPOINT  # noqa: F401  (re-exported: callers name it rundir.CHECKPOINT)
from purerl.run.inventory import check_only_own, delete_own, is_temporary, own_name, register_files
from purerl.run.runlock import LOCK
from purerl.run import records, runlock
from purerl.run.files import read_json, write_atomic

MARKER = ".purerl-run"
CONFIG = "config.json"
PROVENANCE = "provenance.json"
register_files(MARKER, CONFIG, PROVENANCE)


def owns(path: Path) -> bool:
    """`path` is one of a run directory's own files (`register_files`) inside a purerl run."""
    path = Path(path)
    return own_name(path.name) and marked(path.parent)


def read_config(out: Path) -> dict:
    """The run's config.json as purerl wrote it, or a one-line error: when it cannot be read as one, or when it was
    edited since (the marker keeps the record `start` wrote, so that no resume, evaluation or load follows an edited
    record while claiming it for the whole run)."""
    out = Path(out)
    config = read_json(out / CONFIG, "a run's settings")
    written = _written_config(out)
    if written is not None and _canonical(written) != _canonical(config):  # exact: true is not 1, nor 1.0 1
        raise ConfigError(f"{out / CONFIG} was edited after purerl wrote it (differs in: "
                          f"{records.differences(written, config, ('written', 'now'))}); a run continues only as it "
                          "was recorded: restore the file, or train a new run with --config")
    return config


def _canonical(record) -> str:
    return json.dumps(record, sort_keys=True)


def _written_config(out: Path) -> dict | None:
    """The config.json record the marker keeps (None for a run marked before markers kept it)."""
    try:
        marker = json.loads((out / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker.get("config") if isinstance(marker, dict) and isinstance(marker.get("config"), dict) else None


def holds_run(out: Path) -> bool:
    return (out / MARKER).is_file() and (out / CONFIG).is_file()


def marked(out: Path) -> bool:
    """`out` carries purerl's marker: purerl created it (config.json may be missing, cut short by a full disk)."""
    return (Path(out) / MARKER).is_file()


def only_marker(out: Path) -> bool:
    """`out` holds nothing but purerl's marker (and a lock or temporary file): a run that never got its
    config.json written (a full disk, a kill), which starts afresh."""
    out = Path(out)
    names = {p.name for p in out.iterdir()} if out.is_dir() else set()
    return MARKER in names and all(name in (MARKER, LOCK) or is_temporary(name) for name in names)


def check_writable(out: Path) -> None:
    """Refuse a destination that cannot be created or written (a file in its path, no permission, read-only)."""
    ancestor = out
    while not ancestor.exists():
        if ancestor.is_symlink():  # a link to nothing: creating the folder would fail with "File exists"
            raise ConfigError(f"cannot create {out}: {ancestor} is a link to {os.readlink(ancestor)}, which does not "
                              "exist; remove the link or choose another path")
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"cannot create {out}: {ancestor} is a file, not a directory")
    try:  # the real test (permissions, read-only mounts, special file systems), leaving nothing behind
        os.rmdir(tempfile.mkdtemp(prefix=".purerl-probe-", dir=ancestor))
    except OSError as error:
        raise ConfigError(f"cannot write to {out}: {ancestor} is not writable ({error.strerror})") from None


def _protected(out: Path) -> bool:
    resolved = out.resolve()
    return resolved in {Path.cwd().resolve(), Path.home().resolve(), Path(resolved.anchor)}


def prepare(out: Path, config: dict[str, Any], resume: bool | str, overwrite: bool) -> bool:
    """Check `out` against `config` before anything is compiled or written. Returns True when resuming.

    `resume="auto"` (the Python API's way to make a rerun of a script continue) resumes when `out` holds a
    run, which must then be this one, and starts one otherwise."""
    out = Path(out)
    if resume == "auto":
        resume = holds_run(out)
    elif resume not in (True, False):
        raise ConfigError(f"resume must be True, False or 'auto', got {resume!r}")
    if resume and overwrite:
        raise ConfigError("--resume and --overwrite exclude each other")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output path {out} exists and is not a directory")
    from purerl.run.checkpoint import check_path  # here, not at the top: it imports orbax

    check_path(out)
    if out.is_dir():
        runlock.check_unlocked(out)
    if only_marker(out):  # config.json never written (a full disk, a kill): nothing to continue, a fresh start
        check_writable(out)
        return False
    if resume:
        if not (out / CONFIG).is_file():
            raise ConfigError(f"--resume: {out} holds no purerl run to continue")
        previous, config = records.comparable(read_config(out), out), records.comparable(config)
        if previous != config:
            raise ConfigError(f"--resume: {out} holds a different run (differs in: {records.differences(previous, config)})")
        _check_summary(out / "summary.json")
        check_writable(out)
        return True
    if out.is_dir() and any(out.iterdir()):
        if not marked(out):
            raise ConfigError(f"output directory {out} is not empty and is not a purerl run; choose a new or empty --out")
        if not overwrite and not (out / CONFIG).exists():
            raise ConfigError(f"{out} holds a purerl run whose config.json is missing; pass --overwrite to replace it")
        if not overwrite:
            previous, config = records.comparable(read_config(out), out), records.comparable(config)
            if previous == config:
                raise ConfigError(f"{out} already holds this run; pass --resume to continue it, or --overwrite to replace it")
            raise ConfigError(f"{out} already holds a different run (differs in: {records.differences(previous, config)}); "
                              "choose another --out, or --overwrite to replace it")
        if _protected(out):
            raise ConfigError(f"refusing to overwrite {out}: it is the current, home or root directory")
        check_only_own(out)
    check_writable(out)
    return False


def prepare_each(runs: dict[Path, dict[str, Any]], resume: bool, overwrite: bool, what: str) -> dict[Path, bool]:
    """`prepare` for each run of a command that trains several ({out: config}) before the first compiles: a run found
    is refused without --resume or --overwrite, continued with --resume. Returns which continue."""
    if resume and overwrite:
        raise ConfigError("--resume and --overwrite exclude each other")
    continued = {}
    for out, config in runs.items():
        if not (resume or overwrite) and marked(out) and not only_marker(out):
            raise ConfigError(f"{out} already holds a run; pass --resume to continue the {what}, or --overwrite to "
                              "replace it (or choose another --runs-dir)")
        continued[out] = resume and holds_run(out)
        prepare(out, config, resume=continued[out], overwrite=not continued[out])
    return continued


def _check_summary(path: Path) -> None:
    """A finished run's summary.json, which `--resume` reads back: a file of purerl's, a JSON object."""
    if path.is_symlink():
        raise ConfigError(f"--resume: {path} is a link, not the summary purerl wrote; move it away, or --overwrite")
    if not path.exists():
        return
    try:
        read_json(path, "a run's summary")
    except ConfigError as error:
        raise ConfigError(f"--resume: {error}; move it away, or --overwrite") from None


def record_session(out: Path, facts: dict) -> None:
    """Append one session's facts to provenance.json, so a run resumed across sessions, commits or machines says
    which of them produced it. evolve appends `hostinfo.run_facts` (command, commit, machine) when a session
    ends, so a SIGKILLed session leaves no record there; mfos appends `publish.sessions.facts` (commit, source
    hash) when a session starts, so every session that trained is counted."""
    out = Path(out)
    if (out / CONFIG).is_file():
        write_atomic(out / PROVENANCE, json.dumps([*sessions(out), facts], indent=2) + "\n")


def sessions(out: Path) -> list[dict]:
    """The facts `record_session` kept for each session that worked on the run in OUT, oldest first."""
    path = Path(out) / PROVENANCE
    return read_json(path, "a record of sessions", list) if path.exists() else []


def start(out: Path, config: dict[str, Any], resumed: bool) -> None:
    """Create the directory (replacing a run that `prepare` allowed to be overwritten), mark it, write config.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if runlock.inside_block():
        runlock.lock(out)  # before anything is deleted or written: a second writer of this directory is refused
    else:
        runlock.check_unlocked(out)
    if not resumed and marked(out) and not _protected(out):
        delete_own(out)
    recorded = json.loads(json.dumps(records.comparable(config)))  # as config.json reads back
    write_atomic(out / MARKER, json.dumps({"purerl_run": True, "config": recorded}) + "\n")
    write_atomic(out / CONFIG, json.dumps(recorded, indent=2, sort_keys=True))
