"""The guide's example runs as written (in a temporary directory)."""

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "meta_tasks.md"


@pytest.mark.timeout(600)
def test_meta_task_guide_example_runs(tmp_path, monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(GUIDE), "exec"), {"__name__": "guide"})
    assert (tmp_path / "runs" / "penalised-objective" / "generations.csv").exists()
    assert re.search(r"fitness [\d.]+ -> [\d.]+", capsys.readouterr().out)


@pytest.mark.timeout(600)
def test_pbt_guide_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", (GUIDE.parent / "pbt.md").read_text(), re.S).group(1)
    exec(compile(code, str(GUIDE.parent / "pbt.md"), "exec"), {"__name__": "guide"})
    assert re.search(r"best member \d+, lineage \[[\d, ]+\]\nits lr schedule: ", capsys.readouterr().out)
