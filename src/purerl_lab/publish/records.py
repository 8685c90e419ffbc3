"""The record files a published document is rendered from, part by part, and the check that they are all there.

`purerl results --render` writes a document again from the records committed beside it. Each study's renderer
tables whatever records it finds, so a deleted or emptied record would silently lose its rows (dpo.md "on 3"
instead of "on 4") while the manifest still vouches for the part. So before anything is written, every part the
manifest lists must have its record: present, a JSON object with the keys its renderer reads, about the part it
is filed under, and, where the part's manifest entry records a `record_sha256` for the file, the same bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from purerl.checks import ConfigError
from purerl.run import files
from purerl_lab.publish.catalog import FRESH_PART

HASH = "record_sha256"  # a part's manifest entry: {record path relative to the results folder: sha256 of its bytes}


@dataclass(frozen=True)
class Record:
    """Where one part's record lies (relative to the results folder) and what its renderer reads from it."""

    path: str
    keys: tuple[tuple[str, ...], ...]  # key paths into the JSON object, each one the renderer indexes
    env: str | None = None  # the record's "env" must be this: a per-env record filed under its part's name
    fresh: bool | None = None  # the record's "fresh_seeds" (absent: false) must be this: a replication's record is
    # not the study's
    part: str | None = None  # the record's "part" must be this: a run's record filed under its own part's name


def _per_env(*keys: str):
    """dpo, pbt and offpolicy: one STEM/PART.json per env part (`files.slug` names it), tabled by its "env", and
    per env's replication one STEM/fresh_ENV.json, its record on fresh seeds (`publish.replication`)."""
    def layout(stem: str, part: str) -> Record:
        env = part.removeprefix(FRESH_PART)
        return Record(f"{stem}/{files.slug(part)}.json", tuple((k,) for k in ("env", *keys)), env, fresh=part != env)
    return layout


_ACT = {"train-time": ("train_time.json", "mean_return_over_training"),
        "train-time Pendulum-v1": ("train_time-Pendulum-v1.json", "mean_return_over_training"),
        "test-time": ("test_time.json", "goal_return")}
_ACT |= {f"{FRESH_PART}{part}": (f"{FRESH_PART}{name}", rows) for part, (name, rows) in _ACT.items()}
# value_loss.json holds every stage: a setting's tables, and the critic's own section.
_VALUE_LOSS = {"critic": (("critic_dynamics",),)}


def _act(stem: str, part: str) -> Record:
    name, rows = _ACT[part]
    return Record(f"{stem}/{name}", (("env",), ("seeds",), (rows,)))


def _value_loss(stem: str, part: str) -> Record:
    keys = _VALUE_LOSS.get(part, (("all_candidates", part),))
    return Record(f"{stem}.json", (("provenance",), ("held_out",), ("shape",), *keys))


def _mfos(stem: str, part: str) -> Record:
    """mfos: the study's games in table.json, its replication's (part fresh_GAME) in fresh_table.json."""
    game = part.removeprefix(FRESH_PART)
    table = f"{FRESH_PART if game != part else ''}table.json"
    return Record(f"{stem}/{table}", (("settings",), ("seeds",), ("games", game)))


def _mfos_run(*keys: str):
    """mfos_paper and mfos_coin: one STEM/PART.json per part, the record of the run that made it (a replication's,
    fresh_coin, beside its study's), which names its part."""
    def layout(stem: str, part: str) -> Record:
        return Record(f"{stem}/{part}.json", tuple((k,) for k in ("part", "seeds", "settings", *keys)), part=part)
    return layout


LAYOUT = {
    "dpo": _per_env("objectives", "env_steps_per_run", "seeds"),
    "pbt": _per_env("fresh_seeds", "methods", "pbt", "repetitions"),
    "offpolicy": _per_env("algorithms", "evaluation", "marks"),
    "act": _act,
    "value_loss": _value_loss,
    "mfos": _mfos,
    "mfos_paper": _mfos_run("game", "opponent", "final", "final_by_seed", "analysis"),
    "mfos_coin": _mfos_run("first_by_seed", "final_by_seed"),
}


def require_complete(results_dir: Path, document: str, entry: dict) -> None:
    """Refuse in one line, naming each, the parts of `document` (its manifest `entry`) whose record is missing,
    incomplete or not the one recorded; a study without a registered layout has nothing to check."""
    layout = LAYOUT.get(entry.get("study"))
    if layout is None:
        return
    stem = Path(document).stem
    problems = [why for part, facts in sorted(entry["parts"].items())
                if (why := _problem(Path(results_dir), part, layout(stem, part), facts.get(HASH, {})))]
    if problems:
        raise ConfigError(f"{document}: refusing to render from incomplete records (the manifest lists these "
                          f"parts): {'; '.join(problems)}")


def _problem(results_dir: Path, part: str, record: Record, hashes: dict) -> str | None:
    """What is wrong with one part's record, in words, or None if it is whole."""
    path = results_dir / record.path
    try:
        data = files.read_json(path, "a results record")
    except ConfigError as error:
        return f"part {part}: {str(error).replace(str(results_dir) + '/', '')}"
    absent = [".".join(keys) for keys in record.keys if not _has(data, keys)]
    if absent:
        return f"part {part}: {record.path} lacks {', '.join(absent)}"
    if record.env is not None and data["env"] != record.env:
        return f"part {part}: {record.path} is the record of {data['env']}"
    fresh = data.get("fresh_seeds", False)
    if record.part is not None and data["part"] != record.part:
        return f"part {part}: {record.path} is the record of part {data['part']}"
    if record.fresh is not None and fresh != record.fresh:
        return f"part {part}: {record.path} is the record of {'a replication' if fresh else 'the study'}"
    recorded = hashes.get(record.path)
    if recorded is not None and hashlib.sha256(path.read_bytes()).hexdigest() != recorded:
        return f"part {part}: {record.path} is not the record the manifest vouches for (its sha256 differs)"
    return None


def _has(data: dict, keys: tuple[str, ...]) -> bool:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return False
        data = data[key]
    return True
