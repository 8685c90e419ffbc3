"""Which commands make a part, its fingerprint from them, and many parts at once (processes, cache)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from purerl.checks import ConfigError
from purerl_lab.publish import catalog
from purerl_lab.publish.fingerprint.core import REPO, SOURCE, Fingerprint, command_words
from purerl_lab.publish.fingerprint.values import digest


# ------------------------------------------------------------------------------------------------ parts
def covered(study_name: str) -> bool:
    """Whether a study's commands can be fingerprinted (its `Study.fingerprint`); the others fall back to their
    source hash."""
    return catalog.STUDIES[study_name].fingerprint is not None


def part_commands(study_name: str, part: str) -> list[str]:
    """The registered commands whose computation makes `part` of a study's document (`Study.commands_of`)."""
    return catalog.STUDIES[study_name].commands_of(part)


def components(study_name: str, part: str) -> dict:
    """The fingerprint record of one part of a registered study: {"hash", "components"}, from the commands that
    make it (`part_commands`), built without running them by the study's own `fingerprint`. The commands run from
    the repository's root, so their relative paths (committed meta-parameters, say) are read from there, wherever
    this is called."""
    from purerl.runtime.configure import configure_jax

    configure_jax()  # the programs as the commands lower them (threefry's CPU lowering among them)
    study = catalog.STUDIES[study_name]
    if study.fingerprint is None:
        raise ConfigError(f"the {study_name} study declares no fingerprint for its commands")
    commands = study.commands_of(part)
    fp = Fingerprint()
    fp.input("commands", [command_words(c) for c in commands])
    with contextlib.chdir(REPO):
        for command in commands:
            study.fingerprint(fp, command, part)
    fp.versions(*study.versions)
    return fp.record()


# ------------------------------------------------------------------------------------------------ many parts
def _unit(study_name: str, part: str) -> tuple:
    """Parts with the same unit have the same fingerprint (one command making several parts)."""
    return tuple(part_commands(study_name, part)), part if catalog.STUDIES[study_name].by_part else None


def _compute(study_name: str, part: str) -> dict | str:
    """`components`, or the reason it cannot be computed here (a missing optional package, say) as a string.
    The programs are the CPU's (they are lowered for it), so the settings a GPU would choose never enter them."""
    from purerl.runtime import backend

    try:
        with backend.programs_for("cpu"):
            return components(study_name, part)
    except Exception as error:  # noqa: BLE001  (reported per part by `purerl results --check`)
        return f"{type(error).__name__}: {error}".splitlines()[0]


def _compute_with_sources(study_name: str, part: str) -> tuple[dict | str, dict[str, str]]:
    """`_compute`, and the purerl source files loaded in this process once it is done, by content hash: the
    code the fingerprint can depend on (a module it never imported cannot change it)."""
    import sys

    found = _compute(study_name, part)
    return found, _loaded_sources(sys.modules.values())


def _loaded_sources(modules) -> dict[str, str]:
    sources = {}
    for module in list(modules):
        path = getattr(module, "__file__", None)
        if path and getattr(module, "__name__", "").split(".")[0] in ("purerl", "purerl_lab"):
            path = Path(path).resolve()
            if path.is_relative_to(SOURCE) and path.is_file():
                sources[path.relative_to(SOURCE).as_posix()] = digest(path.read_bytes())
    return dict(sorted(sources.items()))


def environment_key() -> str:
    """What every fingerprint depends on besides purerl's own code: the committed files studies read (evolved
    meta-parameters, evolutions), the registry's commands, Python and the installed packages' versions."""
    import platform

    from purerl.runtime import hostinfo

    digest_ = hashlib.sha256()
    results = REPO / "docs" / "results"
    for path in sorted(p for p in results.rglob("*") if p.is_file()
                       and (p.suffix == ".msgpack" or p.name in ("config.json", "generations.csv"))):
        digest_.update(path.relative_to(results).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    digest_.update(json.dumps([platform.python_version(), hostinfo.versions(
        ("jax", "jaxlib", "flax", "optax", "evosax", "gymnax", "brax", "numpy", "scipy", "distrax", "chex")),
        {name: study.commands for name, study in catalog.STUDIES.items()}], sort_keys=True).encode())
    return digest_.hexdigest()[:16]


def _cache_path() -> Path:
    import os

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "purerl" / "fingerprints.json"


def _sources_now(names) -> dict[str, str] | None:
    """The content hashes of these purerl source files as they are now; None if one is gone."""
    sources = {}
    for name in names:
        path = SOURCE / name
        if not path.is_file():
            return None
        sources[name] = digest(path.read_bytes())
    return sources


def _still_valid(entry: dict) -> bool:
    """Whether every purerl source file a cached fingerprint's computation had loaded is unchanged."""
    sources = entry.get("sources", {})
    return bool(sources) and _sources_now(sources) == sources


def many(parts: list[tuple[str, str]], workers: int = 2, cache: bool = True,
         refresh: bool = False) -> dict[tuple[str, str], dict | str]:
    """The fingerprint of each (study, part), each computed once per unit (parts one command makes together),
    `workers` processes at a time. With `cache` (PURERL_FINGERPRINT_CACHE=0 turns it off), a unit's fingerprint
    is reused from the last computation when the environment (`environment_key`) and every purerl source file
    that computation had loaded are unchanged: an edit to the CLI, checkpointing or another study's module
    recomputes nothing, an edit to PPO recomputes every unit that imported it. `refresh` recomputes every unit
    and stores the results."""
    import os

    cache = cache and os.environ.get("PURERL_FINGERPRINT_CACHE", "1") != "0"
    units: dict[tuple, list[tuple[str, str]]] = {}
    for study_name, part in parts:
        units.setdefault(_unit(study_name, part), []).append((study_name, part))
    names = {unit: digest(json.dumps(unit)) for unit in units}
    environment = environment_key()
    known = {}
    if cache:
        try:
            stored = json.loads(_cache_path().read_text())
        except (OSError, ValueError):
            stored = {}
        if isinstance(stored, dict) and stored.get("environment") == environment and not refresh:
            known = {name: entry for name, entry in stored.get("units", {}).items() if _still_valid(entry)}
    todo = [unit for unit in units if names[unit] not in known]
    for unit, (found, sources) in zip(todo, _run_all([units[unit][0] for unit in todo], workers)):
        known[names[unit]] = {"record": found, "sources": sources}
    out = {member: _stamped(known[names[unit]], environment) for unit, members in units.items() for member in members}
    if cache and todo:
        keep = {name: entry for name, entry in known.items() if isinstance(entry["record"], dict)}
        try:
            from purerl.run.files import write_atomic

            _cache_path().parent.mkdir(parents=True, exist_ok=True)
            write_atomic(_cache_path(), json.dumps({"environment": environment, "units": keep}, indent=1))
        except OSError:
            pass
    return out


def _stamped(entry: dict, environment: str) -> dict | str:
    """A computed record with its `loaded` stamp: the environment and the purerl source files its computation
    loaded (`stamp_holds`), so that a check elsewhere can trust the record while neither changed."""
    record = entry["record"]
    if not isinstance(record, dict):
        return record
    sources = entry["sources"]
    return record | {"loaded": {"environment": environment, "files": " ".join(sorted(sources)),
                                "sources": digest(json.dumps(sources, sort_keys=True))}}


def stamp_holds(record: dict, environment: str | None = None) -> bool:
    """Whether a fingerprint record's `loaded` stamp still holds here: the same environment (`environment_key`) and
    every purerl source file its computation loaded byte-identical. The fingerprint is a function of those, so
    the record is then what computing it again would give (up to float rounding on another CPU kind)."""
    loaded = record.get("loaded")
    if not loaded or loaded.get("environment") != (environment or environment_key()):
        return False
    sources = _sources_now(loaded["files"].split())
    return sources is not None and digest(json.dumps(sources, sort_keys=True)) == loaded["sources"]


def _run_all(todo: list[tuple[str, str]], workers: int) -> list[tuple[dict | str, dict]]:
    """`_compute_with_sources` of each (study, part): here, or in `workers` fresh processes (spawned: JAX does not
    fork), longest first."""
    if workers <= 1 or len(todo) <= 1:
        return [_compute_with_sources(*p) for p in todo]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(range(len(todo)), key=lambda i: -_cost(*todo[i]))
    with ProcessPoolExecutor(min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {i: pool.submit(_compute_with_sources, *todo[i]) for i in order}
        return [futures[i].result() for i in range(len(todo))]


def _cost(study_name: str, part: str) -> float:
    cost = catalog.STUDIES[study_name].cost
    return cost(part) if callable(cost) else cost
