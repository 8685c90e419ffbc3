"""Published records without the paths of the machines that made them (`purerl results --check --mark`).

The writers now record commands as they rerun from a clone (`provenance.portable_command`) and run folders relative
to their command's --runs-dir (`provenance.record_path`). Records written before that hold the runners' absolute
paths (/root/purerl-runs/...), which mean nothing in a clone; `rewrite` gives every such path the form the writers
now give it, anchored at the --runs-dir or --out of the manifest commands that made them, and changes nothing else.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from purerl.run.files import write_atomic
from purerl_lab.publish import provenance

_FOLDER_FLAGS = ("--runs-dir", "--out")


def rewrite(results_dir: Path = provenance.RESULTS_DIR) -> list[Path]:
    """Every JSON file under `results_dir` (the manifest included) with its runners' paths made portable; returns
    the files changed."""
    results_dir = Path(results_dir)
    manifest = provenance.read_manifest(results_dir)
    roots = sorted({root for entry in manifest.values() for part in entry["parts"].values()
                    for root in _roots(part.get("command", ""))}, key=len, reverse=True)
    changed = []
    for path in sorted(results_dir.rglob("*.json")):
        text = path.read_text()
        if "/root/" not in text and "/home/" not in text:
            continue
        data = json.loads(text)
        portable = _part_facts(json.loads(text)) if path.name == provenance.MANIFEST else _walk(data, roots)
        if portable != data:
            write_atomic(path, json.dumps(portable, indent=2, sort_keys=path.name == provenance.MANIFEST)
                         + ("\n" if text.endswith("\n") else ""))
            changed.append(path)
    return changed


def _roots(command: str) -> list[str]:
    """The absolute folders a recorded command's --runs-dir and --out name."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word in _FOLDER_FLAGS and words[i + 1].startswith("/")]


def _part_facts(manifest: dict) -> dict:
    """The manifest with each part's command as it reruns from a clone, and act's `params_from` beside it."""
    for entry in manifest.values():
        for part in entry["parts"].values():
            roots = _roots(part["command"])
            if "params_from" in part:
                part["params_from"] = provenance.portable_path(part["params_from"], roots[0] if roots else None)
            part["command"] = provenance.portable_command(part["command"])
    return manifest


def _walk(data, roots: list[str], key: str | None = None):
    """A record with each "command" made portable and each other absolute path outside the repository made
    relative to the longest --runs-dir or --out that holds it (`provenance.record_path`)."""
    if isinstance(data, dict):
        return {k: _walk(v, roots, k) for k, v in data.items()}
    if isinstance(data, list):
        return [_walk(v, roots) for v in data]
    if isinstance(data, str) and key == "command":
        return provenance.portable_command(data)
    if not isinstance(data, str) or not data.startswith("/"):
        return data
    root = next((r for r in roots if Path(data).is_relative_to(r)), None)
    return provenance.record_path(data, root)
