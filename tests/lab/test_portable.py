"""Published records hold no path of the machine that made them (`publish/portable.py`, `provenance.record_path`):
old records are rewritten to the form the writers now give, nothing else in them changes."""

import json
import re
from pathlib import Path

from purerl_lab.publish import portable, provenance

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
RUNNER = re.compile(r"/(root|home)/")


def test_no_published_file_holds_a_runners_path():
    found = [str(p.relative_to(RESULTS)) for p in RESULTS.rglob("*") if p.suffix in (".md", ".json")
             and RUNNER.search(p.read_text())]
    assert not found


def test_old_records_are_rewritten_once_relative_to_the_commands_that_made_them(tmp_path):
    runs = "/root/purerl-runs/s41/act"
    manifest = {"act.md": {"study": "act", "parts": {"train-time": {
        "command": f"purerl act train-time --from-params {runs}/CartPole-v1 --runs-dir {runs} --report act.md",
        "params_from": f"{runs}/CartPole-v1", "wall_s": 1.5}}}}
    (tmp_path / provenance.MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (tmp_path / "act").mkdir()
    record = {"env": "CartPole-v1", "values": [1.0, float("nan")], "runs": {"anti": f"{runs}/CartPole-v1/anti-es0"},
              "made_by": [{"command": "purerl evolve lpo --out /home/u/lpo/es0", "commit": "abc"}]}
    (tmp_path / "act" / "train_time.json").write_text(json.dumps(record, indent=2))
    untouched = tmp_path / "act" / "other.json"
    untouched.write_text('{"a": 1}')
    assert portable.rewrite(tmp_path) == [tmp_path / "act" / "train_time.json", tmp_path / provenance.MANIFEST]
    part = json.loads((tmp_path / provenance.MANIFEST).read_text())["act.md"]["parts"]["train-time"]
    assert part == {"command": "purerl act train-time --from-params RUNS/act/CartPole-v1 --runs-dir RUNS/act "
                               "--report act.md", "params_from": "RUNS/act/CartPole-v1", "wall_s": 1.5}
    text = (tmp_path / "act" / "train_time.json").read_text()
    again = json.loads(text)
    assert again["runs"] == {"anti": "CartPole-v1/anti-es0"}  # as the writers record it: relative to --runs-dir
    assert again["made_by"][0] == {"command": "purerl evolve lpo --out RUNS/es0", "commit": "abc"}
    assert again["values"][0] == 1.0 and "NaN" in text and not text.endswith("\n")  # the rest as it was
    assert portable.rewrite(tmp_path) == [] and untouched.read_text() == '{"a": 1}'
