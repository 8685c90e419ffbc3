"""Random search as a PBT mode (same priors and draws, never a round) and the PBT study end to end at a tiny
budget: its document through provenance, a resume after a cut, one-line refusals, and its registered commands."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_run import run_cli
from purerl.cli import main
from purerl.algos import registry
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl_lab.publish import catalog, fingerprint, provenance, replication
from purerl_lab.studies.pbt import report
from purerl.run import pbt, stopping
from purerl.run.pbt_config import PBTConfig, parse_explore
from purerl.run.population import Placement, make_members

# The settings of test_pbt's CLI run: the study's PBT and random-search runs load the programs it compiles.
CONFIG = PPOConfig(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 12, update_epochs=1, num_minibatches=2)
EXPLORE_FLAG = "lr=1e-4:1e-2,ent_coef=0:0.1"
EXPLORE = parse_explore(EXPLORE_FLAG)
TINY = ["--env", "CartPole-v1", "--seeds", "4", "--repetitions", "2", "--num-envs", "4", "--num-steps", "16",
        "--total-timesteps", "768", "--update-epochs", "1", "--num-minibatches", "2", "--episodes", "2",
        "--pbt-interval", "4", "--pbt-explore", EXPLORE_FLAG, "--no-progress"]


def test_random_search_samples_pbts_priors_once_and_never_copies_or_changes_them():
    train = registry.build("ppo", CONFIG)
    search = PBTConfig(interval=4, fraction=0.0, explore=EXPLORE)
    members = make_members(list(range(4)), HyperParams())
    placement = Placement.for_members(4)
    first = {name: placement.get(pbt.start(train, placement, members, config), 4)
             for name, config in (("search", search), ("pbt", PBTConfig(interval=4, explore=EXPLORE)))}
    np.testing.assert_array_equal(first["search"].explored[:, 0], first["pbt"].explored[:, 0])  # the same draws
    population = pbt.train_population(train, HyperParams(), range(4), search)
    assert population.parents.shape == (4, 0) and population.scores.shape == (4, 0)
    assert population.explored.shape == (4, 1, 2)
    np.testing.assert_array_equal(population.explored[:, 0], first["pbt"].explored[:, 0])
    np.testing.assert_array_equal(np.stack([population.hp.lr, population.hp.ent_coef], -1), population.explored[:, 0])
    lr = population.train.metrics["learning_rate"]  # each member trains at its own draw, annealed, to the end
    steps = np.arange(CONFIG.num_updates) / CONFIG.num_updates
    np.testing.assert_allclose(lr, population.explored[:, 0, :1] * (1 - steps), rtol=1e-6)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The study on CartPole-v1 at a tiny budget, cut after its first chunk and resumed, then its replication."""
    root = tmp_path_factory.mktemp("pbt-study")
    argv = [str(a) for a in ("pbt-study", *TINY, "--runs-dir", root / "runs", "--report", root / "results" / "pbt.md")]
    with stopping.cut_after(1):
        cut = main(argv)
    resumed = main([*argv, "--resume"])
    before = (root / "results" / "pbt.md").read_text()
    return root, cut, resumed, before, main([*argv, "--fresh-seeds"])


def test_the_study_writes_its_document_through_provenance_after_a_cut_and_resume(study):
    root, cut, resumed, _, _ = study
    assert cut == 0 and resumed == 0
    runs = root / "runs" / "CartPole-v1"
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == [
        f"{m}-rep{r}" for m in ("default", "pbt", "random") for r in (0, 1)]
    assert json.loads((runs / "pbt-rep0" / "summary.json").read_text())["resumed_from_update"] > 0
    assert len(json.loads((runs / "sessions.json").read_text())) == 2
    text = (root / "results" / "pbt.md").read_text()
    assert text.startswith("# Population-based training") and "do not edit by hand" in text
    assert "- **CartPole-v1**: `purerl pbt-study --env CartPole-v1" in text
    assert "| PBT |" in text and "| random search |" in text and "| preset defaults |" in text
    assert text.index(replication.START) < text.index("Design.") < text.index("## Provenance")
    assert "| PBT against random search on CartPole-v1? |" in text and "(n=2, no CI)" in text
    assert "| not resolved |" in text and "**yes" not in text  # 2 repetitions give no CI, so no verdict
    part = json.loads((root / "results" / "manifest.json").read_text())["pbt.md"]["parts"]["CartPole-v1"]
    assert part["budget"]["population"] == 4 and part["budget"]["seeds"] == list(range(8)) and part["repetitions"] == 2
    record = json.loads((root / "results" / "pbt" / "CartPole-v1.json").read_text())
    assert (root / "results" / "pbt" / "CartPole-v1.png").is_file()
    for method in ("pbt", "random", "default"):
        reps = record["methods"][method]["repetitions"]
        assert [r["seed"] // 4 for r in reps] == [0, 1]  # each repetition's best member is one of its own seeds
        assert [r["run_dir"] for r in reps] == [f"CartPole-v1/{method}-rep{r}" for r in (0, 1)]  # no machine path
    default = record["methods"]["default"]["repetitions"][0]["hyperparams"]
    assert default["lr"] == pytest.approx(record["defaults"]["lr"])


@pytest.mark.parametrize("extra, message", [
    (["--repetitions", "0"], "--repetitions must be a positive integer"),
    (["--episodes", "0"], "--episodes must be a positive integer"),
    (["--pbt-fraction", "0"], "--pbt-fraction 0 is random search, which the study runs beside PBT"),
    (["--pbt-explore", "gamma=0:2"], "gamma"),
    (["--lr", "1e-3,1e-4"], "give single values"),
    (["--resume", "--overwrite"], "--resume and --overwrite exclude each other"),
    (["--repetitions", "1000000000"], "3,000,000,000 runs' records, held at once as the study starts, need at least"),
    (["--episodes", "1000000000"], "1,000,000,000 episodes of up to 500 steps need at least"),  # was a MemoryError
    (["--fresh-seeds", "--seed", "3"], "--fresh-seeds chooses the seeds"),
])
def test_bad_study_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, extra, message):
    code, _, err = run_cli(capsys, "pbt-study", *TINY, *extra, "--runs-dir", tmp_path / "runs",
                           "--report", tmp_path / "pbt.md")
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "pbt.md").exists()


def test_the_registered_commands_parse_resume_and_fingerprint_each_part():
    study = catalog.STUDIES["pbt"]
    assert fingerprint.covered("pbt") and set(study.parts) == {
        "Pendulum-v1", "Acrobot-v1", "fresh_Pendulum-v1", "fresh_Acrobot-v1"}
    for part in study.parts:
        (command,) = fingerprint.part_commands("pbt", part)
        assert command.endswith("--fresh-seeds") == part.startswith("fresh_") and part.endswith(
            command.split("--env ")[1].split()[0])
        assert study.resume_rule(command) == "always" and provenance.listed(study, command.format(runs="x"))
        record = fingerprint.components("pbt", part)
        assert {"program member run", "program pbt round", "program random start", "program greedy evaluation",
                "host selection"} <= record["components"].keys()


def test_the_replication_runs_on_fresh_seeds_and_episodes_into_its_own_part(study):
    root, _, _, before, fresh = study
    assert fresh == 0
    assert sorted(p.name for p in (root / "runs" / "fresh-CartPole-v1").iterdir() if p.is_dir()) == [
        f"{m}-rep{r}" for m in ("default", "pbt", "random") for r in (0, 1)]
    record = json.loads((root / "results" / "pbt" / "fresh_CartPole-v1.json").read_text())
    assert record["fresh_seeds"] and record["seeds"] == list(range(70_000, 70_008))
    first = json.loads((root / "results" / "pbt" / "CartPole-v1.json").read_text())
    assert not first["fresh_seeds"]
    assert (record["methods"]["default"]["repetitions"][0]["evaluated_return"]
            != first["methods"]["default"]["repetitions"][0]["evaluated_return"])
    parts = json.loads((root / "results" / "manifest.json").read_text())["pbt.md"]["parts"]
    assert set(parts) == {"CartPole-v1", "fresh_CartPole-v1"}
    text = (root / "results" / "pbt.md").read_text()
    assert "Fresh seeds (70000-70007):" in text and "Fresh seeds" not in before
    row = next(line for line in text.splitlines() if line.startswith("| PBT against random search on CartPole-v1?"))
    assert row.count("(n=2, no CI") == 2 and "(n=2, no CI; Holm p " in row  # both seed sets, paired by repetition
    assert (root / "results" / "pbt" / "fresh_CartPole-v1.png").is_file()


def _record(env, fresh, means, rng):
    return {"env": env, "fresh_seeds": fresh, "methods": {
        method: {"repetitions": [{"repetition": r, "evaluated_return": float(v)}
                                 for r, v in enumerate(rng.normal(mean, 5.0, 10))]}
        for method, mean in zip(("pbt", "random", "default"), means)}}


@pytest.mark.parametrize("fresh_means, verdict, answer", [
    ((-70.0, -80.0, -90.0), "better", "Yes on both seed sets: +"),
    ((-90.0, -90.0, -90.0), "not replicated", "Not on fresh seeds"),
    (None, "replication pending", "not replicated yet (its fresh seeds have not run)"),
])
def test_the_summary_makes_a_verdict_only_where_the_fresh_seeds_agree(fresh_means, verdict, answer):
    rng = np.random.default_rng(0)
    records = [_record("Acrobot-v1", False, (-70.0, -80.0, -90.0), rng),
               _record("Pendulum-v1", False, (-160.0, -160.0, -160.0), rng)]
    if fresh_means:
        records.append(_record("Acrobot-v1", True, fresh_means, rng))
    judged = report.comparisons(records)
    assert [c.key for c in judged][0] == report.PRIMARY and judged[0].primary  # the headline's question first
    assert judged[0].verdict == verdict and judged[0].adjusted_p is None
    assert all(c.adjusted_p is not None for c in judged[1:]) and len(judged) == 6  # the rest Holm-corrected
    unreplicated = [c for c in judged if c.key[0] == "Pendulum-v1"]  # no fresh record: never a verdict
    assert {c.verdict for c in unreplicated} <= {"not resolved", "replication pending"}
    assert not any(replication.bold(c) for c in unreplicated)
    assert answer in report.headline(judged)
