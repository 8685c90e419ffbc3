"""The sessions that worked on one resumable published run, and whether they all ran one computation.

A study command that takes hours is stopped and resumed, often across commits. Each session's facts are kept in
the run's folder when it starts (so a killed session counts too), and `provenance.record` compares every one with
the session that finishes: by computation fingerprint where both have one, so that a refactor landed between
two sessions keeps the part current; by source hash otherwise, as before fingerprints.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from purerl_lab.publish import provenance
from purerl.run.files import check_replaceable, write_atomic

SESSIONS = "sessions.json"  # a resumable study command's list of the sessions that worked on it


def facts(study_name: str, part: str | None = None, argv: list[str] | None = None) -> dict:
    """This session's commit, source hash and tree state, and the fingerprint of PART's computation where ARGV
    is the command the registry lists for it (a lowering, seconds to a minute, once per session): its hash, and
    its record, whose sketches tell another CPU kind's rounding from another computation."""
    study = provenance.STUDIES[study_name]
    commit, dirty = provenance.git_state()
    record = {"commit": commit, "source_hash": provenance.source_hash(study), "dirty": dirty,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    found = (provenance.fingerprint_of(study, part, provenance.command_line(argv), cache=True)
             if part is not None and argv is not None else None)
    return {**record, "fingerprint": found["hash"], "fingerprint_record": found} if found else record


def add(folder: Path, study_name: str, resume: bool, part: str | None = None,
        argv: list[str] | None = None) -> list[dict]:
    """This session appended to the session list in FOLDER (a fresh start begins a new list), refused in one line
    where a file purerl did not write stands in its place."""
    path = Path(folder) / SESSIONS
    check_replaceable(path, "--runs-dir", own=is_record)
    earlier = json.loads(path.read_text()) if resume and path.is_file() else []
    listed = [*earlier, facts(study_name, part, argv)]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(listed, indent=2) + "\n")
    return listed


def is_record(path: Path) -> bool:
    """`path` is a sessions file a resumable study command wrote (a list of `facts`), so the command may
    replace it."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(record, list) and all(isinstance(s, dict) and {"commit", "date"} <= s.keys() for s in record)
