"""The walkthrough (examples/walkthrough.py) runs as a reader runs it, at its toy budgets, and says what each step
trained; run again, its evolution continues from its checkpoint instead of starting over."""

import csv
import re
import runpy
from pathlib import Path

import pytest

WALKTHROUGH = Path(__file__).resolve().parents[2] / "examples" / "walkthrough.py"


@pytest.mark.smoke
@pytest.mark.timeout(600)
def test_walkthrough_goes_from_one_agent_to_a_population_to_an_evolved_hook(tmp_path, capsys):
    main = runpy.run_path(str(WALKTHROUGH))["main"]
    out = tmp_path / "scaled-l2"
    main(["--quick", "--out", str(out)])
    printed = capsys.readouterr().out
    assert re.search(r"^1\. one agent, 4,096 steps: final return [\d.]+$", printed, re.M)
    assert len(re.findall(r"^2\. lr [\d.e-]+: IQM final return [\d.]+ over 2 seeds$", printed, re.M)) == 3
    assert re.search(r"on the same seeds: [+-][\d.]+ \(n=2, no CI\)", printed)  # 2 seeds: no interval
    assert re.search(r"^3\. evolved value loss \(a=[+-][\d.]+, b=[+-][\d.]+\) minus plain L2, .*on 2 held-out seeds",
                     printed, re.M)
    rows = list(csv.DictReader((out / "generations.csv").open()))
    assert len(rows) == 2

    main(["--quick", "--out", str(out)])  # a finished evolution is read back, not run again
    assert list(csv.DictReader((out / "generations.csv").open())) == rows
