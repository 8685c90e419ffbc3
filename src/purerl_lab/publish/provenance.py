"""Provenance of published results: which command, commit, source, machine and budget made each document.

Every document under docs/results/ is written by a command run with `--report PATH`. That command
records one *part* of the document in `manifest.json` beside it (a document such as dpo.md has one
part per env; act.md one per phase and train-time env). A part is stale when the computation that made it
changed (its fingerprint, `purerl_lab.publish.fingerprint`: the lowered programs, host numerics, inputs and versions of
the commands that make it; a part made before fingerprints falls back to the source hash of its study's dependency
files), when it ran on uncommitted source, or when the registry no longer lists the command that made it.
`purerl results --check` lists stale parts and what changed (`--mark` writes that into the documents);
`scripts/reproduce.sh` regenerates them.

A study registers itself: one `catalog.Study` beside its code, offered under the `purerl_lab.studies` entry points
(its document, the source files its numbers depend on, the parts it must have, the commands that regenerate it end
to end and how they fingerprint).
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import platform
import re
import shlex
from pathlib import Path

from purerl.runtime import hostinfo
from purerl.runtime.hostinfo import command_line, git_state, machine, run_facts
from purerl.checks import ConfigError
from purerl_lab.publish.catalog import STUDIES, Study
from purerl.run.files import write_atomic

SOURCE = Path(__file__).resolve().parents[2]  # src/, holding the library (purerl) and the lab (purerl_lab)
REPO = SOURCE.parent
RESULTS_DIR = REPO / "docs" / "results"
MANIFEST = "manifest.json"

VERSIONS = ("jax", "jaxlib", "flax", "optax", "evosax", "gymnax", "brax", "numpy")


RUNS = "RUNS"  # what a record shows for the folder of scratch run directories on the machine that ran a command
_FOLDER_FLAGS = ("--runs-dir", "--out")  # the flags whose folder is a command's scratch root's child


def portable_path(path: str | Path, runs_dir: str | Path | None = None) -> str:
    """A path as a record keeps it, so that it names the same thing in a clone: relative to the repository when
    inside it, else under `RUNS`, the scratch folder, keeping its place below the folder of `runs_dir` (the
    command's --runs-dir: `/root/purerl-runs/s41/act/CartPole-v1` beside `--runs-dir /root/purerl-runs/s41/act` is
    `RUNS/act/CartPole-v1`); a relative path as it is."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    if path.is_relative_to(REPO):
        return path.relative_to(REPO).as_posix()
    root = Path(runs_dir).parent if runs_dir is not None and path.is_relative_to(Path(runs_dir).parent) else path.parent
    return f"{RUNS}/{path.relative_to(root).as_posix()}"


def record_path(path: str | Path, runs_dir: str | Path | None = None) -> str:
    """A run folder as a record keeps it: relative to its command's --runs-dir (or --out) when under it, else as
    `portable_path` gives it."""
    if runs_dir is not None and Path(path).is_relative_to(runs_dir):
        return Path(path).relative_to(runs_dir).as_posix()
    return portable_path(path)


def portable_command(command: str) -> str:
    """A recorded command as it reruns from a clone (`portable_path` of each absolute path outside the repository,
    placed below the folder of the command's `--runs-dir` or `--out`); paths inside the repository stay as given."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    outside = lambda word: word.startswith("/") and not Path(word).is_relative_to(REPO)  # noqa: E731
    roots = [words[i + 1] for i, word in enumerate(words[:-1]) if word in _FOLDER_FLAGS and outside(words[i + 1])]

    def shown(word: str) -> str:
        if not outside(word):
            return word
        return portable_path(word, next((r for r in roots if Path(word).is_relative_to(Path(r).parent)), None))

    portable = [shown(word) for word in words]
    return command if portable == words else shlex.join(portable)


def study_files(study: Study) -> list[Path]:
    files = {p for pattern in study.depends for p in SOURCE.glob(pattern) if p.is_file()}
    return sorted(files)


def source_hash(study: Study) -> str:
    """sha256 over the dependency files' paths (so a rename counts as a change) and their code: comments,
    docstrings and layout cannot move a number, so editing them does not stale a document."""
    digest = hashlib.sha256()
    for path in study_files(study):
        digest.update(path.relative_to(SOURCE).as_posix().encode() + b"\0" + _code(path) + b"\0")
    return digest.hexdigest()[:16]


def _code(path: Path) -> bytes:
    """A Python file's code without its comments, docstrings and formatting (ast.unparse); other files' bytes."""
    return _code_text(path.read_text()) if path.suffix == ".py" else path.read_bytes()


def _code_text(source: str) -> bytes:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree).encode()


def versions() -> dict:
    """The packages a number can depend on, and Python (its `ast.unparse` is part of the source hash)."""
    return {"python": platform.python_version(), **hostinfo.versions(VERSIONS)}


def training_seconds(summaries) -> float:
    """The seconds a part's runs trained over every session, plus each run's compile in the last one
    (`experiment.run` summaries' checkpointed `run_s` and `compile_s`): what a resumed study records as its
    wall-clock, so that re-reporting runs that had already finished records their training, not its own seconds."""
    return sum(s["run_s"] + s["compile_s"] for s in summaries)


def record(study_name: str, report: Path, part: str, argv: list[str], wall_s: float, budget: dict,
           extra: dict | None = None, sessions: list[dict] | None = None, wall_summed: bool = False) -> dict:
    """Write the manifest entry of one part of `report` (manifest.json beside it) and return it.

    budget: population, generations, env_steps_per_run, seeds (None where a field does not apply).
    sessions: for a run resumed across sessions, each session's `sessions.facts`. A session at uncommitted code
    makes the part dirty; a session that ran another computation (`_other_computation`) makes it `mixed_sources`
    (and dirty): its numbers then come from no single commit.
    wall_summed: wall_s is the training time summed over every session plus the last session's compile (a
    checkpointed timer), not the last session's wall clock; the header says which.
    """
    study = STUDIES[study_name]
    commit, dirty = git_state()
    current = source_hash(study)
    found = fingerprint_of(study, part, command_line(argv))
    mixed = any(_other_computation(s, current, found) for s in sessions or [])
    entry = {
        "command": portable_command(command_line(argv)),  # as it reruns from a clone: no path of this machine
        "commit": commit,
        "dirty": dirty or mixed or any(s["dirty"] for s in sessions or []),
        **({"sessions": sessions, "mixed_sources": mixed} if sessions else {}),
        **({"wall_summed": True} if wall_summed else {}),
        "source_hash": current,
        "machine": machine(),
        "versions": versions(),
        "wall_s": round(wall_s, 1),
        "budget": {k: budget.get(k) for k in ("population", "generations", "env_steps_per_run", "seeds")},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        **(extra or {}),
    }
    if found is not None:
        entry["fingerprint"] = found
    report = Path(report)
    manifest = read_manifest(report.parent)
    document = manifest.setdefault(report.name, {"study": study.name, "depends": list(study.depends), "parts": {}})
    document.update(study=study.name, depends=list(study.depends))
    document.pop("rendered", None)  # the command that records a part writes the whole document anew
    document["parts"][part] = entry
    report.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(report.parent / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return entry


def _other_computation(session: dict, current_source: str, fingerprint: dict | None) -> bool:
    """Whether an earlier session of a resumed run ran another computation than this one: by fingerprint where
    both have one (up to float rounding in host values, where the session kept its record), by source hash
    otherwise."""
    if fingerprint is not None and "fingerprint" in session:
        if session["fingerprint"] == fingerprint["hash"]:
            return False
        from purerl_lab.publish.fingerprint import changed

        return "fingerprint_record" not in session or bool(changed(session["fingerprint_record"], fingerprint))
    return session["source_hash"] != current_source


def fingerprint_of(study: Study, part: str, command: str, cache: bool = False) -> dict | None:
    """The fingerprint of a part made by a registered command (None for another command, or where it cannot be
    computed: the part then falls back to its source hash). Lowering takes seconds to a minute, after hours of
    training; `cache` reuses one computed for the same sources (`fingerprint.many`)."""
    from purerl_lab.publish import fingerprint

    if (study.fingerprint is None or part not in study.parts or not study.commands
            or not listed(study, command)):
        return None
    found = fingerprint.many([(study.name, part)], workers=1, cache=cache)[(study.name, part)]
    return found if isinstance(found, dict) else None


def listed(study: Study, command: str) -> bool:
    """Whether the registry lists `command`, up to `--resume`, `--stages S` (which of a command's parts one run
    measures, not what any of them computes) and the scratch folder `{runs}`: a budget or a seed count changed in
    the registry stales the parts an older command made."""
    words = shlex.split(command)
    words = [w for i, w in enumerate(words) if w != "--resume" and w != "--stages" and (i == 0 or words[i - 1] != "--stages")]
    command = " ".join(words)
    return any(re.fullmatch(re.escape(registered).replace(re.escape("{runs}"), r"\S+"), command)
               for registered in study.commands)


def record_render(report: Path, argv: list[str]) -> dict:
    """Note in the manifest that `report`'s words are being rendered again from its records (`purerl results
    --render`): the command, commit and date that `document.rendered_words` shows."""
    report = Path(report)
    facts = run_facts(argv)
    rendered = {key: facts[key] for key in ("command", "commit", "date")}
    manifest = read_manifest(report.parent)
    manifest[report.name]["rendered"] = rendered
    write_atomic(report.parent / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return rendered


def drop_render(report: Path) -> None:
    """Take back the manifest's note of a render (`record_render`), if any: a writer that names its own render in
    the document's words (`purerl mfos report`) leaves no older claim in the header beside it."""
    report = Path(report)
    manifest = read_manifest(report.parent)
    if manifest.get(report.name, {}).pop("rendered", None) is not None:
        write_atomic(report.parent / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def forget(report: Path, part: str) -> None:
    """Drop one part of `report` from its manifest, if there: a command about to replace that part's numbers
    calls this first, so that until it records the part again neither the document's header nor `check`
    vouches for numbers the document no longer shows."""
    report = Path(report)
    manifest = read_manifest(report.parent)
    parts = manifest.get(report.name, {}).get("parts", {})
    if part in parts:
        del parts[part]
        write_atomic(report.parent / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def update_fingerprint(report: Path, part: str, fields: dict) -> None:
    """A current part's fingerprint record gains `fields` (sketches, its `loaded` stamp); its hash and components,
    and the rest of the manifest, stay as they are."""
    manifest = read_manifest(report.parent)
    manifest[report.name]["parts"][part]["fingerprint"].update(fields)
    write_atomic(report.parent / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def read_manifest(results_dir: Path) -> dict:
    """The manifest.json in RESULTS_DIR ({} if none); one that is not purerl's is refused, never merged into."""
    path = Path(results_dir) / MANIFEST
    if not path.exists():
        return {}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or not all(isinstance(d, dict) and "parts" in d for d in manifest.values()):
        raise ConfigError(f"{path} is not a purerl results manifest; choose a --report in another folder")
    return manifest


def check_report(report: Path, study: str | None = None, data: tuple[str, ...] = ()) -> Path:
    """Refuse, before anything runs, a --report that purerl could not write or must not replace: not a .md path,
    a folder, a file purerl did not write (its manifest does not list it), another study's document (when
    `study` is given), a foreign manifest.json beside it, a file where its plots' folder (REPORT_STEM/) goes, or,
    for a new report (whose folder is not purerl's yet), a file there named as one of the command's `data`."""
    from purerl.run import rundir

    report = Path(report)
    if report.suffix != ".md" or report.is_dir():
        raise ConfigError(f"--report must be the path of a markdown (.md) file, got {report}")
    rundir.check_writable(report.parent)
    listed = read_manifest(report.parent).get(report.name)
    if report.exists() and not listed:
        raise ConfigError(f"refusing to replace {report}: purerl did not write it (its {MANIFEST} does not list it)")
    if study is not None and listed and listed.get("study") != study:
        raise ConfigError(f"refusing to replace {report}: it is the {listed.get('study')} study's document, "
                          f"and this command writes the {study} study's")
    folder = report.parent / report.stem
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file; the report's data and plots go in a folder of that name")
    for name in data if not listed else ():
        if (folder / name).exists() or (folder / name).is_symlink():
            raise ConfigError(f"refusing to replace {folder / name}: purerl did not write it (no {MANIFEST} beside "
                              f"{report} lists the report); choose another --report")
    return report
