"""`purerl versus` (docs/results/offpolicy.md): algorithms side by side at the same env steps. End to end at a tiny
budget on Pendulum-v1 (the document with its evaluation and training tables at the env-step marks and the plot,
through provenance, after a cut past the first mark and a resume; the evaluation is of the policies trained there),
one-line refusals, the arithmetic of the marks and their censoring, and the registered command's fingerprint, which
a change to SAC moves in its SAC programs only."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from cli_run import run_cli
from purerl.cli import main
from purerl_lab.publish import catalog, fingerprint, provenance
from purerl.run import results, stopping
from purerl.checks import ConfigError
from purerl_lab.studies.versus import design as study, evaluation

# 2 envs x 50 steps per update for both (Pendulum's 200-step episodes end every 4 updates), 16 updates.
TINY = ["--env", "Pendulum-v1", "--seeds", "2", "--num-envs", "2", "--num-steps", "50", "--num-minibatches", "2",
        "--update-epochs", "1", "--learning-starts", "100", "--buffer-size", "2000", "--buffer-batch-size", "32",
        "--hidden-sizes", "32,32", "--total-timesteps", "1600", "--episodes", "3", "--no-progress"]


@pytest.fixture(scope="module")
def versus(tmp_path_factory):
    """The comparison cut after PPO's sixth update (its first mark, update 4, evaluated before the cut), then
    resumed."""
    root = tmp_path_factory.mktemp("versus")
    argv = [str(a) for a in ("versus", *TINY, "--runs-dir", root / "runs",
                             "--report", root / "results" / "offpolicy.md")]
    with stopping.cut_after(6):
        cut = main(argv)
    return root, cut, main([*argv, "--resume"])


def test_both_algorithms_train_and_the_document_reads_them_at_the_same_env_steps(versus):
    root, cut, resumed = versus
    assert cut == 0 and resumed == 0
    runs = root / "runs" / "Pendulum-v1"
    configs = {algo: json.loads((runs / algo / "config.json").read_text()) for algo in ("ppo", "sac")}
    assert {c["algo"] for c in configs.values()} == {"ppo", "sac"}
    assert all(c["seeds"] == [0, 1] for c in configs.values())
    assert configs["ppo"]["preset"] == configs["sac"]["preset"] == "continuous"
    assert json.loads((runs / "ppo" / "summary.json").read_text())["resumed_from_update"] > 0
    assert len(json.loads((runs / "sessions.json").read_text())) == 2
    text = (root / "results" / "offpolicy.md").read_text()
    assert text.startswith("# Off-policy beside on-policy") and "do not edit by hand" in text
    assert "- **Pendulum-v1**: `purerl versus --env Pendulum-v1" in text and "resumed over 2 sessions" in text
    header = ("| algorithm | 400 env steps (25%) | 800 env steps (50%) | 1,200 env steps (75%) | "
              "1,600 env steps (100%) |")
    assert text.count(header) == 3  # greedy, sampled, training
    assert "**Greedy evaluation return.**" in text and "**Sampled evaluation return.**" in text
    assert "| PPO | per seed " in text and "| SAC | per seed " in text and "(n=2, no CI)" in text
    assert "3 evaluation episodes per seed, mark and mode" in text and "time limit of 200 steps" in text
    for mode in ("greedy", "sampled"):
        assert f"- SAC against PPO at 1,600 env steps (100%), {mode}: not distinguishable at this budget (no CI" in text
    assert "censored" not in text.split("**Training return**")[1]  # 2 envs have taken 200 steps each by 400
    assert "| SAC | 100 | 16 | 0.5 | 16 |" in text  # 1 gradient step of 32 per vectorised step of 2 envs
    assert "![Pendulum-v1](offpolicy/Pendulum-v1.png)" in text
    assert (root / "results" / "offpolicy" / "Pendulum-v1.png").is_file()
    part = json.loads((root / "results" / "manifest.json").read_text())["offpolicy.md"]["parts"]["Pendulum-v1"]
    assert part["budget"]["env_steps_per_run"] == 1600 and part["budget"]["seeds"] == [0, 1]
    assert part["evaluation_episodes"] == 3
    assert part["algorithms"] == ["ppo", "sac"]
    record = json.loads((root / "results" / "offpolicy" / "Pendulum-v1.json").read_text())
    assert record["marks"] == [400, 800, 1200, 1600] and record["window_env_steps"] == 1000
    assert record["time_limit"] == 200 and record["evaluation"]["episodes"] == 3
    for algo in ("ppo", "sac"):  # at 100%, with updates of one size, a mark's return is the run's own final return
        final = json.loads((runs / algo / "summary.json").read_text())["final_return_by_member"]  # (metrics.csv
        np.testing.assert_allclose(record["algorithms"][algo]["marks"][-1]["return"]["values"], list(final.values()),
                                   rtol=1e-5)  # holds 6 significant digits)


def test_each_mark_evaluates_the_policy_trained_there_and_the_last_is_the_final_policy(versus):
    """Every mark's evaluation is in the run's evaluation.json, PPO's first from the session before the cut; the
    last is what the final checkpoint's policies score on the study's episodes, greedy and sampled."""
    from purerl.run.policy import load_run, members_evaluator

    root, _, _ = versus
    record = json.loads((root / "results" / "offpolicy" / "Pendulum-v1.json").read_text())
    for algo in ("ppo", "sac"):
        run = root / "runs" / "Pendulum-v1" / algo
        saved = json.loads((run / evaluation.FILE).read_text())
        assert saved["episodes"] == 3 and sorted(saved["updates"], key=int) == ["4", "8", "12", "16"]
        spec, members, train, state = load_run(run)
        keys = evaluation.episode_keys(spec.seeds)
        for mode in evaluation.MODES:
            direct = members_evaluator(train, 3, evaluation.MODES[mode])(state.params, state.obs_stats, keys,
                                                                    members.hyperparams.as_arrays())
            np.testing.assert_allclose(saved["updates"]["16"][mode], np.asarray(direct).mean(axis=1), rtol=1e-6)
            assert record["algorithms"][algo]["evaluated"][mode][-1]["return"]["values"] == saved["updates"]["16"][mode]
        assert saved["updates"]["4"]["greedy"] != saved["updates"]["16"]["greedy"]  # the policy there, not the last


def test_a_run_whose_evaluations_are_missing_or_of_other_episodes_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(ConfigError, match="has no evaluation of its 2 members at update 4"):
        evaluation.read(run, [4, 8], 2)
    (run / evaluation.FILE).write_text(json.dumps({"episodes": 3, "seed": evaluation.EVAL_SEED, "updates": {
        "4": {"greedy": [1.0, 2.0], "sampled": [1.0, 2.0]}}}))
    assert evaluation.read(run, [4], 2)["sampled"].tolist() == [[1.0, 2.0]]
    with pytest.raises(ConfigError, match="at update 8"):
        evaluation.read(run, [4, 8], 2)
    evaluation.check(run, 3)
    with pytest.raises(ConfigError, match="was evaluated on 3 episodes .* give --episodes 3 or --overwrite"):
        evaluation.check(run, 5)
    (run / evaluation.FILE).write_text("{")
    with pytest.raises(ConfigError, match="cannot be read"):
        evaluation.check(run, 3)


def test_a_training_return_is_censored_while_an_env_has_taken_fewer_steps_than_the_time_limit():
    """Hopper's 1,000-step limit: PPO's 2,048 envs have taken 400 steps each at 819,200 env steps, SAC's 16
    have taken 51,200."""
    assert study.censored_below(819_200, 2048, 1000) == 400
    assert study.censored_below(819_200, 16, 1000) is None
    assert study.censored_below(2_048_000, 2048, 1000) is None


def test_a_mark_averages_the_same_env_steps_for_updates_of_any_size():
    rng = np.random.default_rng(0)
    coarse = rng.normal(size=(20, 3))  # 20 updates of 1,000 env steps
    fine = np.repeat(coarse, 10, axis=0)  # the same returns as 200 updates of 100
    window = results.FINAL_WINDOW * 1000
    for mark in (5000, 12_000, 20_000):
        np.testing.assert_allclose(study.return_at(fine, 100, mark, window),
                                   study.return_at(coarse, 1000, mark, window))
    np.testing.assert_array_equal(study.return_at(coarse, 1000, 20_000, window), results.final_returns(coarse))
    late = np.full((20, 2), np.nan)
    late[15:, 1] = 7.0  # seed 1's first episode ends in update 16; seed 0's never
    at = study.return_at(late, 1000, 10_000, window)
    assert np.isnan(at).all() and study.return_at(late, 1000, 20_000, window)[1] == 7.0


@pytest.mark.parametrize("extra, message", [
    (["--algos", "ppo"], "--algos needs at least two algorithms"),
    (["--algos", "ppo,ppo"], "--algos names ppo twice"),
    (["--algos", "ppo,nope"], "unknown algorithm 'nope'"),
    (["--algos", "ppo,dqn"], "discrete"),
    (["--total-timesteps", "300"], "needs at least 4"),
    (["--policy-noise", "0.1"], "--policy-noise applies to none of ppo, sac"),
    (["--lr", "1e-3,1e-4"], "give single values"),
    (["--episodes", "0"], "--episodes must be a positive integer"),
    (["--total-timesteps", "1000"], "must end a whole update of each algorithm"),
    (["--resume", "--overwrite"], "--resume and --overwrite exclude each other"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, extra, message):
    code, _, err = run_cli(capsys, "versus", *TINY, *extra, "--runs-dir", tmp_path / "runs",
                           "--report", tmp_path / "offpolicy.md")
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "offpolicy.md").exists()


def test_budgets_that_round_to_different_env_steps_are_refused(capsys, tmp_path):
    """At their own presets PPO steps 2,048 env steps an update on Pendulum-v1 and SAC 200: 4,096 is 4,096 for
    PPO and 4,200 for SAC, so it names a budget both reach exactly at every mark."""
    code, _, err = run_cli(capsys, "versus", "--env", "Pendulum-v1", "--total-timesteps", "4096",
                           "--learning-starts", "1000", "--runs-dir", tmp_path / "runs", "--report", tmp_path / "offpolicy.md")
    assert code == 2 and err.count("\n") == 1 and "ppo 4,096, sac 4,200" in err and "multiple of 204,800" in err


def test_a_foreign_file_where_the_plot_goes_is_refused(capsys, tmp_path):
    (tmp_path / "offpolicy").mkdir()
    (tmp_path / "offpolicy" / "Pendulum-v1.png").write_bytes(b"mine")
    code, _, err = run_cli(capsys, "versus", *TINY, "--runs-dir", tmp_path / "runs",
                           "--report", tmp_path / "offpolicy.md")
    assert code == 2 and "refusing to replace" in err and not (tmp_path / "runs").exists()


def test_the_registered_command_resumes_and_a_change_to_sac_moves_only_its_sac_program(monkeypatch):
    from purerl.algos import sac
    from purerl_lab.studies.dpo.fingerprint import compare_part
    from purerl_lab.studies.versus.fingerprint import versus_part

    study_ = catalog.STUDIES["offpolicy"]
    assert fingerprint.covered("offpolicy")
    for part in study_.parts:
        (command,) = fingerprint.part_commands("offpolicy", part)
        assert study_.resume_rule(command) == "always" and provenance.listed(study_, command.format(runs="x"))
    # The registered command's settings on Pendulum-v1: the same fingerprint code, without tracing brax twice.
    (command,) = fingerprint.part_commands("offpolicy", study_.parts[0])
    command = command.replace(f"--env {study_.parts[0]}", "--env Pendulum-v1")
    assert "--env Pendulum-v1" in command
    other = catalog.STUDIES["dpo"].commands[2]  # a PPO study's part (Acrobot-v1)

    def prints():
        mine, theirs = fingerprint.Fingerprint(), fingerprint.Fingerprint()
        versus_part(mine, command)
        compare_part(theirs, other)
        return mine.components, theirs.components

    before, before_other = prints()
    assert {"program ppo init", "program ppo run", "program sac init", "program sac run", "host marks",
            "input design", "program sac greedy evaluation", "program ppo sampled evaluation"} <= before.keys()
    loss = sac.SAC.critic_loss
    monkeypatch.setattr(sac.SAC, "critic_loss", lambda self, *args: jax.tree.map(lambda x: 1.01 * x, loss(self, *args)))
    after, after_other = prints()
    assert {name for name in before if before[name] != after[name]} == {"program sac run"}
    assert after_other == before_other
