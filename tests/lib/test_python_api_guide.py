"""docs/python_api.md runs as written: its code blocks, in order, in one namespace, in a temporary directory."""

import json
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "python_api.md"


@pytest.mark.timeout(600)
def test_python_api_guide_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) == 6
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for block in blocks:
        exec(compile(block, str(GUIDE), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "4 0.001" in printed and "unknown setting 'lrr'; did you mean lr?" in printed
    assert "lr=0.001,seed=0" in printed and "lr=0.00025,seed=1" in printed
    start, end = map(float, re.search(r"return (-?[\d.]+) -> (-?[\d.]+)", printed).groups())
    assert end > start and end > 0.5  # PPO learns to walk the custom corridor (the best return is 0.8)
    for run in ("huber", "lr-grid", "corridor"):
        assert (tmp_path / "runs" / run / "summary.json").exists(), run
    assert json.loads((tmp_path / "runs/huber/config.json").read_text())["python"] == {"value_loss": "__main__.huber"}
    assert json.loads((tmp_path / "runs/corridor/config.json").read_text())["python"] == {"env": "__main__.Corridor"}
