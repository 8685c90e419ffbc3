"""Which published parts are stale, and why: fingerprints against the recorded ones, the source-hash fallback,
the notices `purerl results --check --mark` writes into documents.

`provenance` records parts; this module judges them. It reads provenance's names through the module, so a test
that points provenance at a toy study or repository points this at it too.
"""

from __future__ import annotations

import importlib.util
import json
import platform
import re
from pathlib import Path

from purerl_lab.publish import differences, document, provenance
from purerl_lab.publish import catalog
from purerl_lab.publish.catalog import Study
from purerl.run.files import write_atomic
from purerl.runtime import hostinfo


def mark(results_dir: Path, stale: dict[str, list[tuple]],
         unchecked: dict[str, list[tuple]] | None = None) -> list[Path]:
    """Write `stale_parts`' verdict into the documents and manifests: each stale part's reason as `stale` in its
    manifest entry, and in its document a notice at the top (after the title) and document.STALE_MARK beside the part (its
    bullet in the provenance header, and table rows whose first cell is the part's name or `Study.row_titles`' title
    for it); a current part's
    notice and marks are removed, and the study's deliberate differences are written or refreshed below the notice.
    Documents that change are returned. Generated text, like the rest. A part in `unchecked` (`judged`: it could
    not be checked here) keeps whatever its manifest says: a check that could not judge it vouches for nothing."""
    changed = []
    for study in provenance.STUDIES.values():
        path = Path(results_dir) / study.document
        manifest = provenance.read_manifest(path.parent)
        entries = manifest.get(path.name)
        if entries is None or not path.exists():
            continue
        reasons = {part: why for part, why in stale.get(study.document, []) if part in entries["parts"]}
        kept = {part for part, _ in (unchecked or {}).get(study.document, [])}
        for name, entry in entries["parts"].items():
            if name in kept:
                continue
            entry.pop("stale", None)
            if name in reasons:
                entry["stale"] = reasons[name]
        write_atomic(path.parent / provenance.MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        if remark(path):
            changed.append(path)
    return changed


def remark(path: Path) -> bool:
    """Rewrite `path`'s stale notice and marks from what its manifest records (each part's `stale`, the parts
    not generated yet): after `mark`, or after a writer that knows nothing of them (`purerl results --render`).
    Whether the document changed."""
    entries = provenance.read_manifest(path.parent)[path.name]
    stale = {name: part["stale"] for name, part in entries["parts"].items() if part.get("stale")}
    old = path.read_text()
    text = marked(old, entries["study"], stale, document.missing_parts(entries["study"], entries["parts"]),
                  entries["parts"])
    if text != old:
        write_atomic(path, text)
    return text != old


def marked(text: str, study_name: str, stale: dict[str, str], missing: list[str] = (), parts: dict | None = None) -> str:
    """`text` with its stale notice and marks replaced by those of `stale` ({part: why}), its block of deliberate
    differences by the catalog's current one (`publish.differences`), and each part's provenance bullet, where the
    document has `document.provenance_lines`' (`- **part**: `command` ...`), by the words `document.describe` gives
    its manifest entry in `parts` now (a recorded command as it reruns from a clone, say): all generated text."""
    lines = differences.without_block(text.split("\n"), document.NOTICE_START, document.NOTICE_END)
    lines = [line.replace(document.STALE_MARK, "") for line in differences.refreshed(lines, study_name)]
    study = provenance.STUDIES.get(study_name)
    titles = dict(study.row_titles) if study else {}
    for i, line in enumerate(lines):
        name = next((n for n in parts or {} if line.startswith(f"- **{n}**: `")), None)
        if name is not None:  # the part's provenance bullet (`document.provenance_lines`'), in today's words
            lines[i] = f"- **{name}**: {document.describe(parts[name])}"
    for i, line in enumerate(lines):
        for name in stale:
            row = titles.get(name, name)
            if line.startswith(f"- **{name}**:"):
                lines[i] = line.replace(f"- **{name}**:", f"- **{name}**{document.STALE_MARK}:", 1)
            elif line.startswith(f"| {row} |"):
                lines[i] = line.replace(f"| {row} |", f"| {row}{document.STALE_MARK} |", 1)
    notice = document.stale_notice(study_name, stale, missing)
    if notice:
        at = differences.after_title(lines)
        lines[at:at] = notice
    return "\n".join(lines)


def check(results_dir: Path = provenance.RESULTS_DIR, workers: int = 2, cache: bool = False,
          refresh: bool = False) -> dict[str, list[str]]:
    """{document: [reasons it is stale]} for every registered study whose document is not current.

    A part with a recorded fingerprint (`purerl_lab.publish.fingerprint`) is stale when the computation its commands run
    changed: the reason names the programs, host numerics, inputs or versions that moved. A part without one
    (made before fingerprints) falls back to the source hash of its study's dependency files. Either way a part
    is stale when it ran on uncommitted source, was resumed across changes to its computation, or its command is
    no longer registered.

    A document's manifest is the one beside it, so a document outside docs/results/ (say "../benchmarks.md")
    is checked against docs/manifest.json.
    """
    return {page: [f"{part}: {why}" if part else why for part, why in reasons]
            for page, reasons in stale_parts(results_dir, workers, cache, refresh).items()}


def stale_parts(results_dir: Path = provenance.RESULTS_DIR, workers: int = 2, cache: bool = False,
                refresh: bool = False) -> dict[str, list[tuple]]:
    """`check`'s reasons as (part or None, reason) per document; `cache`: reuse fingerprints computed from the same
    source and store them (`fingerprint.many`), as `purerl results --check` does; `refresh`: store, not reuse."""
    return judged(results_dir, workers, cache, refresh)[0]


def judged(results_dir: Path = provenance.RESULTS_DIR, workers: int = 2, cache: bool = False,
           refresh: bool = False) -> tuple[dict[str, list[tuple]], dict[str, list[tuple]]]:
    """(`stale_parts`, {document: [(part, why it cannot be checked here)]}). A part whose fingerprint needs an
    optional package this install lacks (brax) is not judged at all: its source hash would call it stale for
    nothing but the missing package, so it is named as uncheckable instead, and left as its manifest records it."""
    from purerl_lab.publish import fingerprint

    documents = {}
    for study in provenance.STUDIES.values():
        path = Path(results_dir) / study.document
        documents[study.name] = (path, provenance.read_manifest(path.parent).get(path.name))
    fingerprinted = {(name, part): entry["fingerprint"] for name, (_, entries) in documents.items() if entries
                     for part, entry in entries["parts"].items()
                     if part in provenance.STUDIES[name].parts and "fingerprint" in entry
                     and _plainly_current(provenance.STUDIES[name], entry)}
    # a record whose stamp holds is what computing it would give: only the others are computed (all with refresh)
    environment = fingerprint.environment_key() if fingerprinted and not refresh else None
    current = {key: record for key, record in fingerprinted.items()
               if environment and fingerprint.stamp_holds(record, environment)}
    wanted = [key for key in fingerprinted if key not in current]
    current |= fingerprint.many(wanted, workers, cache, refresh) if wanted else {}
    stale, unchecked = {}, {}
    for study in provenance.STUDIES.values():
        reasons = []
        path, entries = documents[study.name]
        if not path.exists():
            reasons.append((None, "document missing"))
        if entries is None:
            reasons.append((None, "no manifest entry: not generated by the pipeline"))
        else:
            source = None
            for name in study.parts:
                part = entries["parts"].get(name)
                why = None
                if part is None:
                    why = None if catalog.pending_ok(name) else "never generated"
                elif not _plainly_current(study, part):
                    why = _plain_reason(study, part)
                elif "fingerprint" in part:
                    now = current[(study.name, name)]
                    if isinstance(now, str) and (needs := missing_package(now)):
                        unchecked.setdefault(study.document, []).append((name, needs))
                    elif isinstance(now, str):  # it failed otherwise: the source hash decides
                        source = source or provenance.source_hash(study)
                        if part["source_hash"] != source:
                            why = (f"source changed since {str(part['commit'])[:10]} (by source hash: its fingerprint "
                                   f"cannot be computed here, {now})" + _changed_files(study, part))
                    elif now["hash"] != part["fingerprint"]["hash"]:
                        words = fingerprint.changed(part["fingerprint"], now)  # empty: float rounding only
                        rounding = fingerprint.unverifiable_rounding(part["fingerprint"], now) if words else None
                        why = (f"computation changed since {str(part['commit'])[:10]}: " + ", ".join(words)
                               + (f" ({rounding})" if rounding else "")) if words else None
                else:
                    source = source or provenance.source_hash(study)
                    if part["source_hash"] != source:
                        why = (f"source changed since {str(part['commit'])[:10]} (by source hash: no fingerprint "
                               f"recorded)" + _changed_files(study, part))
                if why:
                    reasons.append((name, why))
        if reasons:
            stale[study.document] = reasons
    return stale, unchecked


EXTRAS = ("brax", "navix", "xminigrid", "craftax", "jumanji")  # optional packages, each its own purerl extra
_MISSING = (re.compile(r"No module named '(\w+)"), re.compile(r"needs (\w+): pip install"))


def missing_package(reason: str) -> str | None:
    """What a part whose fingerprint could not be computed (`reason`, as `fingerprint.many` gives it) needs, when
    that is a package not installed here ("needs brax: pip install 'purerl[brax]'"); None for any other failure,
    and for a package that is installed (the error then lies elsewhere, and the source hash judges the part)."""
    found = next((match for pattern in _MISSING if (match := pattern.search(reason))), None)
    package = found.group(1).lower() if found else None
    if package is None or importlib.util.find_spec(package) is not None:
        return None
    return f"needs {package}: pip install 'purerl[{package}]'" if package in EXTRAS else f"needs {package}"


def record_current(results_dir: Path = provenance.RESULTS_DIR) -> list[str]:
    """Bring the records of current parts up to date without changing what they say: a part current to the bit
    whose record lacks some sketches (made before sketches, or before programs' constants had them) gains them, so
    that a check on another CPU kind can tell rounding from change; a current part whose `loaded` stamp no longer
    holds (a refactor, a landed input of another part) gets this checkout's, so that the next check, here or on a
    fresh clone, trusts it without computing. Returns "document: part (what it gained)" for each part changed."""
    from purerl_lab.publish import fingerprint

    environment = fingerprint.environment_key()
    recorded, wanted = {}, []
    manifest = provenance.read_manifest(Path(results_dir))
    for study in provenance.STUDIES.values():
        entries = manifest.get(study.document)
        for part, entry in (entries or {}).get("parts", {}).items():
            if ("fingerprint" in entry and part in study.parts and _plainly_current(study, entry)
                    and not fingerprint.stamp_holds(entry["fingerprint"], environment)):
                recorded[(study.name, part)] = entry["fingerprint"]
                wanted.append((study.name, part))
    current = fingerprint.many(wanted, cache=True) if wanted else {}
    done = []
    for (name, part), now in current.items():
        old = recorded[(name, part)]
        if not isinstance(now, dict) or (now["hash"] != old["hash"] and fingerprint.changed(old, now)):
            continue  # stale, or not computable here: nothing to vouch for
        gained = {"loaded": now["loaded"]} if "loaded" in now else {}
        if now["hash"] == old["hash"] and set(now.get("sketches", {})) - set(old.get("sketches", {})):
            gained["sketches"] = now["sketches"]
        if gained:
            document = provenance.STUDIES[name].document
            provenance.update_fingerprint(Path(results_dir) / document, part, gained)
            done.append(f"{document}: {part} ({', '.join(sorted(gained))})")
    return done


def _plainly_current(study: Study, part: dict) -> bool:
    """Whether nothing but the computation could make `part` stale: clean, one source, a registered command."""
    return not (part.get("mixed_sources") or part["dirty"] or (study.commands and not provenance.listed(study, part["command"])))


def _plain_reason(study: Study, part: dict) -> str:
    if part.get("mixed_sources"):
        return "resumed across changes to its computation"
    if part["dirty"]:
        return "generated from uncommitted source"
    return f"made by a command the registry no longer lists ({part['command']})"


def _changed_files(study: Study, part: dict) -> str:
    """The dependency files whose code (not only comments) differs from the part's commit; else, if the part
    ran under another Python (whose `ast.unparse` the hash depends on), that."""
    commit = part["commit"]
    files = [str(p.relative_to(provenance.REPO)) for p in provenance.study_files(study)]
    changed = (hostinfo.git("diff", "--name-only", str(commit), "--", *files) or "").split() if commit else []
    changed = [f for f in changed if not (provenance.REPO / f).is_file() or _code_at(commit, f) != provenance._code(provenance.REPO / f)]
    if changed:
        return f" ({', '.join(changed)})"
    python = part.get("versions", {}).get("python")
    if python and python != platform.python_version():
        return f" (or only Python: the part hashed its source under {python}, this is {platform.python_version()})"
    return ""


def _code_at(commit: str, file: str) -> bytes | None:
    old = hostinfo.git("show", f"{commit}:{file}")
    if old is None:
        return None
    try:
        return provenance._code_text(old) if file.endswith(".py") else old.encode()
    except SyntaxError:
        return None

