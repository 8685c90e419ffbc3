"""The guide's example runs as written (in a temporary directory), and running it again continues it."""

import csv
import re
from pathlib import Path

import pytest

from purerl.run import stopping

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "meta_tasks.md"


@pytest.mark.timeout(600)
def test_meta_task_guide_example_runs_and_a_rerun_continues_it(tmp_path, monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    with stopping.cut_after(2):
        exec(compile(code, str(GUIDE), "exec"), {"__name__": "guide"})  # stopped after 2 of 4 generations, as a kill would
    log = Path("runs/penalised-objective/generations.csv")
    first = list(csv.DictReader(log.open()))
    assert len(first) == 2
    exec(compile(code, str(GUIDE), "exec"), {"__name__": "guide"})  # the same script again
    rows = list(csv.DictReader(log.open()))
    assert len(rows) == 4 and rows[:2] == first  # continued from generation 2, not started again
    found = re.search(r"on the same 10 seeds: ([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\]", capsys.readouterr().out)
    assert found and float(found.group(1)) > 0  # the evolved objective beats the one it started from


ROOT = GUIDE.parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs" / "api" / "index.md"]


def resolve(name: str):
    """The object a dotted name like `purerl.meta.evolve_files.load_meta_params` names: its longest importable module,
    then attributes."""
    import importlib

    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(name)


def test_every_purerl_name_the_documents_cite_exists():
    """A module that moves or a function that is renamed fails here, not in a reader's script."""
    cited = {(document.relative_to(ROOT), name) for document in DOCUMENTS
             for name in re.findall(r"\bpurerl(?:_lab)?(?:\.[A-Za-z_]\w*)+", document.read_text())}
    assert len(cited) > 50
    missing = []
    entry_point_groups = {"purerl.algorithms", "purerl.commands", "purerl.meta_tasks", "purerl_lab.studies"}
    for document, name in sorted(cited - {(d, n) for d, n in cited if n in entry_point_groups}):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(f"{document}: {name}")
    assert not missing, missing


@pytest.mark.timeout(600)
def test_pbt_guide_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", (GUIDE.parent / "pbt.md").read_text(), re.S).group(1)
    exec(compile(code, str(GUIDE.parent / "pbt.md"), "exec"), {"__name__": "guide"})
    assert re.search(r"best member \d+, lineage \[[\d, ]+\]\nits lr schedule: ", capsys.readouterr().out)
