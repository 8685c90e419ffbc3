"""Re-derive here a fingerprint record that the one-off migration to fingerprints computed on another CPU kind, and keep
this machine's record where the part's own code computes exactly what HEAD computes here.

Usage: python scripts/rederive_migrated.py DOCUMENT PART     (for example mfos_paper.md ipd-vs-nl)

Why: the migration (commit 20e6597) gave parts made before fingerprints existed a record computed by its
fingerprint module (src/purerl/fingerprint.py there) over the sources at the record's `computed_at`, on the machine
of that session, before records had sketches. Where that machine kind differs from this one, a host value's last
bits differ, and `purerl results --check` cannot tell rounding from a change ("only host floats differ, and the
record ... has no sketches"); `--mark` on that kind would settle it, but the kind may not come back.

What it does, at a clean checkout: in a temporary worktree at `computed_at`, with the migration's module copied
in, it computes the part's record as the migration did, here. It requires
- that record to differ from the recorded one in host components only (the CPU kind), and
- that record to equal HEAD's fingerprint here to the bit: the code that made the part and HEAD's compute the
  same here.
Then the part's record becomes HEAD's here (with its sketches and CPU kind) and the part's entry says how
(`rederived`). Otherwise it exits 1 and writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from purerl_lab.publish import provenance
from purerl_lab.publish.fingerprint import changed
from purerl_lab.publish.fingerprint.parts import components
from purerl.run.files import write_atomic

ROOT = Path(__file__).resolve().parents[1]
MIGRATION = "20e6597e3d1ccc1a7320f6fe7147aad4667efa6a"  # the commit whose fingerprint module made `computed_at` records
AS_MIGRATED = ("import json, sys\nfrom purerl.fingerprint import components\n"
               "print(json.dumps(components(sys.argv[1], sys.argv[2])))")


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def as_migrated(commit: str, study: str, part: str) -> dict:
    """The record the migration's module computes here over the sources at `commit`."""
    git("worktree", "prune")  # a worktree a killed run left registered
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        git("worktree", "add", "--detach", str(tree), commit)
        try:
            (tree / "src/purerl/fingerprint.py").write_text(git("show", f"{MIGRATION}:src/purerl/fingerprint.py"))
            out = subprocess.run([sys.executable, "-c", AS_MIGRATED, study, part], cwd=tree, check=True,
                                 capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree / "src")})
            return json.loads(out.stdout.strip().splitlines()[-1])
        finally:
            git("worktree", "remove", "--force", str(tree))
            git("worktree", "prune")


def main(document: str, part: str) -> int:
    commit, _ = provenance.git_state()
    if commit is None or git("status", "--porcelain").strip():  # the whole tree: the manifest and scripts too
        print("rederive_migrated: commit first: the manifest names the commit that re-derived a record",
              file=sys.stderr)
        return 2
    study = next((s for s in provenance.STUDIES.values() if s.document == document), None)
    results = ROOT / "docs" / "results"
    manifest = provenance.read_manifest(results)
    entry = manifest.get(document, {}).get("parts", {}).get(part)
    if study is None or entry is None or "computed_at" not in entry.get("fingerprint", {}):
        print(f"rederive_migrated: {document} has no part '{part}' with a migrated record (computed_at)",
              file=sys.stderr)
        return 2
    recorded = entry["fingerprint"]
    then = as_migrated(recorded["computed_at"], study.name, part)
    now = components(study.name, part)
    differ = changed(recorded, then)
    print(f"recorded {recorded['hash']}; as migrated, here {then['hash']} ({', '.join(differ) or 'same'}); "
          f"HEAD here {now['hash']}")
    host_values_only = all(word.startswith("host ") and word.endswith(" changed") for word in differ)
    if not host_values_only or then["hash"] != now["hash"]:
        print("rederive_migrated: not the same computation; regenerate the part", file=sys.stderr)
        return 1
    entry["fingerprint"] = now
    entry.pop("stale", None)  # the document's own notice goes with `purerl results --check --mark`, printed below
    entry["rederived"] = {"command": f"python scripts/rederive_migrated.py {document} {part}", "commit": commit,
                          "date": provenance.run_facts([])["date"], "from": recorded["computed_at"],
                          "replaced": recorded["hash"], "differed": differ, "cpu": now["cpu"]}
    write_atomic(results / provenance.MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"{document}: {part}: record re-derived on {now['cpu']}; next: purerl results --check --mark")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(next(line for line in __doc__.splitlines() if line.startswith("Usage:")), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
