"""One replication mechanism for every study (`publish/replication.py`): a study command with --fresh-seeds runs
its part again on seeds disjoint from the study's, into a part of its own, fresh_PART, which the document's
summary judges beside the study's; bad input is one line and exit 2 before anything is written."""

import importlib.util
import json
import shlex

import pytest

from cli_run import SMALL, run_cli
from purerl_lab.cli.compare import compare_spec
from purerl_lab.cli.analyze import MAX_VICTIMS
from purerl_lab.publish import catalog, document, provenance, records, replication
from purerl_lab.studies import act
from purerl_lab.studies.commands import parse_command
from purerl_lab.studies.mfos import cli as mfos_cli
from purerl_lab.studies.versus import cli as versus_cli

REPLICATED = ("dpo", "act", "mfos", "pbt", "offpolicy")  # the studies whose commands run their replication with --fresh-seeds


@pytest.mark.parametrize("name", REPLICATED)
def test_every_part_has_a_registered_replication_on_disjoint_seeds(name):
    study = catalog.STUDIES[name]
    for part in (p for p in study.parts if not replication.is_fresh(p)):
        assert replication.fresh_part(part) in study.parts
        (fresh,), ours = study.commands_of(replication.fresh_part(part)), study.commands_of(part)
        assert fresh.endswith(f" {replication.FLAG}") and fresh not in ours
        if name != "act":  # act's replication re-evaluates the committed adversaries: its --from-params differs
            assert fresh == f"{ours[-1]} {replication.FLAG}"
        shown = replication.fresh_command(study, part)
        assert "{runs}" not in shown and shown in replication.pending(study, [part])
        assert provenance.listed(study, fresh.format(runs="/anywhere") + " --resume")
        if "brax:" in part and importlib.util.find_spec("brax") is None:
            continue  # its spec cannot be built here
        before, after = (_seeds(name, c) for c in (ours[-1], fresh))
        assert after and not set(before) & set(after) and min(after) == replication.FRESH_SEED_START


def _seeds(name: str, command: str) -> list[int]:
    """The seeds a registered command trains (act: its evaluation's victims), read as its own parser reads it."""
    args = parse_command(command.format(runs="/r"))
    if name == "act":
        return act.fresh_seeds(args.env, args.victims, replication=args.fresh_seeds)
    if name == "mfos":
        return mfos_cli.seeds_of(args, 10)
    if name == "offpolicy":
        return versus_cli.design_of(args).seeds
    if name == "pbt":
        return [s + (replication.FRESH_SEED_START if args.fresh_seeds else 0) for s in range(args.seeds)]
    return compare_spec(args).seeds


def test_act_replication_victims_stay_clear_of_the_studys_at_the_most_victims_allowed():
    for env in act.VICTIMS:
        study = act.fresh_seeds(env, MAX_VICTIMS)
        assert max(study) < min(act.fresh_seeds(env, 1, replication=True)) == replication.FRESH_SEED_START


@pytest.mark.parametrize("argv, message", [
    (["compare", "--env", "CartPole-v1", "--seeds", "2", "--seed", "3", "--fresh-seeds"],
     "--fresh-seeds chooses the seeds"),
    (["versus", "--env", "Pendulum-v1", "--algos", "ppo,sac", "--seeds", "2", "--seed", "3", "--fresh-seeds"],
     "--fresh-seeds chooses the seeds"),
    (["act", "train-time", "--fresh-seeds"], "--fresh-seeds replicates a report's evaluation"),
    (["mfos", "table", "--preset", "tiny", "--fresh-seeds", "--out", "OUT"], "--fresh-seeds replicates a published"),
    (["mfos", "--game", "ipd", "--preset", "tiny", "--fresh-seeds", "--report", "REPORT"],
     "--fresh-seeds replicates a published"),
    (["mfos", "table", "--preset", "tiny", "--fresh-seeds", "--report", "REPORT"], "table.json does not exist"),
    (["mfos", "table", "--preset", "tiny", "--seed", "1", "--fresh-seeds", "--report", "REPORT"],
     "--fresh-seeds chooses the seeds"),
])
def test_bad_replication_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, argv, message):
    argv = [str(tmp_path / "x" / "r.md") if a == "REPORT" else str(tmp_path / "x") if a == "OUT" else a
            for a in argv]
    code, _, err = run_cli(capsys, *argv, "--runs-dir", tmp_path / "runs") if argv[0] != "mfos" else \
        run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not list(tmp_path.iterdir())


def test_a_comparison_replicates_into_its_own_part_and_the_summary_judges_both(capsys, tmp_path):
    report, runs = tmp_path / "docs" / "dpo.md", tmp_path / "runs"
    common = ["compare", "--env", "CartPole-v1", "--seeds", "2", *SMALL, "--runs-dir", runs, "--report", report]
    assert run_cli(capsys, *common)[0] == 0
    manifest = provenance.read_manifest(report.parent)["dpo.md"]["parts"]
    assert document.missing_parts("dpo", manifest) == [p for p in catalog.STUDIES["dpo"].parts
                                                       if p != "CartPole-v1" and not replication.is_fresh(p)]
    pending = report.read_text()
    assert "| not run yet |" in pending and "Replication pending for CartPole-v1" in pending
    assert run_cli(capsys, *common, "--fresh-seeds")[0] == 0
    assert sorted(p.name for p in runs.iterdir()) == ["CartPole-v1", "fresh-CartPole-v1"]
    record = json.loads((report.parent / "dpo" / "fresh_CartPole-v1.json").read_text())
    assert record["fresh_seeds"] and record["seeds"] == [70_000, 70_001]
    assert record["objectives"]["ppo"]["run_dir"] == "fresh-CartPole-v1/ppo"  # relative to --runs-dir
    entry = provenance.read_manifest(report.parent)["dpo.md"]
    assert set(entry["parts"]) == {"CartPole-v1", "fresh_CartPole-v1"}
    command = shlex.split(entry["parts"]["fresh_CartPole-v1"]["command"])
    assert command[command.index("--runs-dir") + 1] == f"{provenance.RUNS}/runs"  # no path of this machine
    records.require_complete(report.parent, "dpo.md", entry)  # each part's record is its own
    text = report.read_text()
    assert "| not run yet |" not in text and "Replication pending for CartPole-v1" not in text
    assert str(tmp_path) not in text + json.dumps(entry)


def test_a_replication_record_filed_under_the_studys_part_is_refused(tmp_path):
    layout = records.LAYOUT["dpo"]
    assert layout("dpo", "fresh_CartPole-v1").fresh and not layout("dpo", "CartPole-v1").fresh
    (tmp_path / "dpo").mkdir()
    (tmp_path / "dpo" / "CartPole-v1.json").write_text(json.dumps(
        {"env": "CartPole-v1", "fresh_seeds": True, "objectives": {}, "env_steps_per_run": 1, "seeds": [70_000]}))
    with pytest.raises(Exception, match="is the record of a replication"):
        records.require_complete(tmp_path, "dpo.md", {"study": "dpo", "parts": {"CartPole-v1": {}}})
