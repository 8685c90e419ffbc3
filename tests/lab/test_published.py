"""Published tables re-evaluated from their committed parameters (slow), and the ACT CLI's --from-params input."""

import json
from pathlib import Path

import numpy as np
import pytest

from purerl_lab.publish import provenance
from purerl.cli import main

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
ACT = RESULTS / "act"


def test_act_from_params_without_parameters_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["act", "train-time", "--from-params", str(tmp_path), "--runs-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "holds no evolved train-time parameters" in err, err
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_act_train_time_table_is_reproduced_from_the_committed_adversaries(tmp_path):
    published = json.loads((ACT / "train_time.json").read_text())["mean_return_over_training"]
    code = main(["act", "train-time", "--from-params", str(ACT / "params"), "--runs-dir", str(tmp_path / "runs"),
                 "--report", str(tmp_path / "act.md"), "--no-progress"])
    assert code == 0
    again = json.loads((tmp_path / "act" / "train_time.json").read_text())["mean_return_over_training"]
    made_on = provenance.read_manifest(ACT.parent)["act.md"]["parts"]["train-time"]["machine"]["cpu"]
    same_kind = made_on == provenance.machine()["cpu"]
    for label, s in published.items():  # exact on the same kind of machine; float rounding elsewhere
        np.testing.assert_allclose(again[label]["values"], s["values"], rtol=0 if same_kind else 0.05)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_mfos_analysis_is_reproduced_from_the_committed_agents():
    """The M-FOS agents the table trained against NL, replayed against the same fresh NLs, give the table's
    analysis exactly on the kind of machine that made it (float rounding elsewhere)."""
    from purerl_lab.studies.mfos.runs import largest_difference, replay_table_agents

    record = json.loads((RESULTS / "mfos" / "table.json").read_text())
    machine = provenance.read_manifest(RESULTS)["mfos.md"]["parts"]["ipd"]["machine"]["cpu"]
    for game, entry in record["games"].items():
        again = replay_table_agents(record, RESULTS / "mfos", game)
        published = {"analysis": entry["analysis_vs_nl"], "analysis_greedy": entry["analysis_vs_nl_greedy"]}
        late = published["analysis"]["late_rewards"]
        np.testing.assert_allclose([again["analysis"]["late_rewards"][k] for k in late], list(late.values()),
                                   atol=0 if machine == provenance.machine()["cpu"] else 0.05)
        if machine == provenance.machine()["cpu"]:
            assert largest_difference(published, again) == 0, game
