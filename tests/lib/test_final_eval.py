"""The evaluation at the end of training (issue 86): a replay learner's run plays every member's greedy policy on
fresh full-length episodes when it ends, and summary.json and the table show it beside the training window's
return, whose episodes are still early learning's in a short run. `--final-eval-episodes` (`final_eval_episodes`
from Python) sets it, 0 turns it off, and an on-policy run is evaluated only when asked."""

import contextlib
import io
import json
from pathlib import Path

import jax
import numpy as np
import pytest

import purerl
from cli_run import SMALL, run_cli
from purerl.algos.sac import SAC, SACConfig
from purerl.cli import main
from purerl.run import experiment, final_eval
from purerl.run.trainspec import TrainSpec
from resume_check import assert_cut_and_resumed_run_equals_whole

# test_offpolicy's SAC run on Pendulum-v1 (4 members, the programs its resume and grid tests compile): learning
# begins at env step 200 of 1,200, so the window of the last 10 updates is early learning's
FLAGS = ["--algo", "sac", "--env", "Pendulum-v1", "--seeds", "4", "--num-envs", "2", "--num-steps", "100",
         "--total-timesteps", "1200", "--buffer-size", "512", "--buffer-batch-size", "16", "--learning-starts", "200",
         "--hidden-sizes", "16", "--no-progress"]
CONFIG = SACConfig(num_envs=2, num_steps=100, total_timesteps=1200, buffer_size=512, buffer_batch_size=16,
                   learning_starts=200, hidden_sizes=(16,))


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory):
    """A finished short SAC run with the default evaluation, and what `purerl train` printed (its words joined by
    single spaces: the table wraps them)."""
    out = tmp_path_factory.mktemp("final_eval") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["train", *FLAGS, "--out", str(out)]) == 0
    return out, " ".join(printed.getvalue().split())


def test_a_short_sac_run_reports_its_greedy_evaluation_beside_the_training_window(sac_run):
    out, printed = sac_run
    summary = json.loads((out / "summary.json").read_text())
    evaluated = summary["final_eval"]
    assert {k: evaluated[k] for k in ("policy", "episodes", "time_limit", "after_env_steps", "seed")} == {
        "policy": "greedy", "episodes": final_eval.EPISODES, "time_limit": 200, "after_env_steps": 1200,
        "seed": final_eval.SEED}
    returns = list(evaluated["return_by_member"].values())
    assert list(evaluated["return_by_member"]) == list(summary["final_return_by_member"]) and len(returns) == 4
    assert all(-200 * 16.3 <= r <= 0 for r in returns)  # Pendulum's reward per step lies in [-16.3, 0]
    assert evaluated["return"]["values"] == returns and evaluated["return"]["n"] == 4
    assert evaluated["return_by_setting"]["default"]["iqm"] == evaluated["return"]["iqm"]
    assert f"{evaluated['return']['mean']:.1f}" in printed and f"{summary['final_return']['mean']:.1f}" in printed
    assert ("greedy eval: each agent's policy after its 1,200 env steps, 10 fresh episodes each (to their end or the "
            "time limit of 200 steps)") in printed
    assert "the eval columns play the trained policy" in printed  # the early-learning note points to them

    # the rollout `purerl eval` and `Policy.evaluate` play, from the member's own evaluation key
    policy = purerl.load(out, member=1)
    alone = policy.evaluate(final_eval.keys([1])[0], episodes=final_eval.EPISODES).mean()
    np.testing.assert_allclose(alone, returns[1], rtol=1e-4)


def test_the_evaluation_keys_are_apart_from_every_training_seeds_keys():
    seeds = [0, 1, 2, final_eval.SEED]
    evaluation = {tuple(np.asarray(k).tolist()) for k in final_eval.keys(seeds)}
    assert len(evaluation) == len(seeds)
    for seed in seeds:  # a training run's key and the first keys split from it
        root = jax.random.PRNGKey(seed)
        assert tuple(np.asarray(root).tolist()) not in evaluation
        assert not evaluation & {tuple(k) for k in np.asarray(jax.random.split(root, 4)).tolist()}
    np.testing.assert_array_equal(final_eval.keys([3, 3])[0], final_eval.keys([3])[0])  # one seed, same episodes


def test_resuming_the_finished_run_leaves_its_summary_byte_identical(sac_run, capsys):
    out, _ = sac_run
    before = (out / "summary.json").read_bytes()
    code, printed, _ = run_cli(capsys, "train", "--out", out, "--resume")
    assert code == 0 and "greedy eval: each agent's policy" in " ".join(printed.split())
    code, _, err = run_cli(capsys, "train", "--out", out, "--resume", "--final-eval-episodes", "3")
    assert code == 0 and "its summary stands (10 final evaluation episodes per member)" in err
    assert (out / "summary.json").read_bytes() == before


def test_a_run_resumed_after_a_cut_evaluates_as_the_uninterrupted_one(tmp_path):
    """Stopped mid-run and resumed, the run evaluates the same parameters on the same episodes: the same
    final_eval, number for number (test_offpolicy's resume programs, with the rule `purerl train` applies)."""
    spec = TrainSpec(config=CONFIG, hyperparams=SAC(CONFIG).hyperparams(), seeds=[0, 1, 2, 3], algo="sac")
    full = assert_cut_and_resumed_run_equals_whole(
        lambda out, **session: experiment.run(spec, out, progress=False, chunk_updates=2, final_eval_episodes=None,
                                              **session), tmp_path, 4)
    resumed = json.loads((tmp_path / "cut" / "summary.json").read_text())
    assert resumed["final_eval"] == full["final_eval"] and full["final_eval"]["episodes"] == final_eval.EPISODES


def test_zero_turns_it_off_and_n_sets_the_episodes(tmp_path, capsys):
    off, three = tmp_path / "off", tmp_path / "three"
    code, printed, err = run_cli(capsys, "train", *FLAGS, "--final-eval-episodes", "0", "--out", off)
    assert code == 0, err
    assert "final_eval" not in json.loads((off / "summary.json").read_text())
    printed = " ".join(printed.split())
    assert "greedy eval" not in printed and f"`purerl eval {off}` plays the trained policy" in printed  # the note
    summary = purerl.train(SAC(CONFIG), three, seeds=4, progress=False, final_eval_episodes=3)  # from Python
    assert summary["final_eval"]["episodes"] == 3 and len(summary["final_eval"]["return_by_member"]) == 4


@pytest.mark.parametrize("value, message", [
    ("-1", "expected 0 or a positive integer, got '-1'"), ("1.5", "expected an integer"),
    ("2e6", "expected at most 1,048,576"), ("ten", "expected an integer")])
def test_a_bad_flag_is_one_line_exit_2_and_writes_nothing(value, message, tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", *FLAGS, f"--final-eval-episodes={value}", "--out", out)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


@pytest.mark.parametrize("value", [-1, 2.0, True, 2**21, "10"])
def test_a_bad_python_argument_is_one_line_and_writes_nothing(value, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(purerl.ConfigError, match="final_eval_episodes must be 0 .no evaluation. or a number"):
        purerl.train(SAC(CONFIG), out, progress=False, final_eval_episodes=value)
    assert not out.exists()


def test_an_evaluation_that_cannot_fit_this_machine_is_one_line_before_anything_is_written(tmp_path, capsys,
                                                                                          monkeypatch):
    """As `purerl eval`'s (issue 84): the keys of 1,048,576 CartPole episodes are 7.8 GiB a member."""
    from purerl.algos import memory

    monkeypatch.setattr(memory, "physical_bytes", lambda: 4 * 2**30)
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--seeds", "1", *SMALL, "--final-eval-episodes", "1048576", "--out", out)
    assert code == 2 and err.count("\n") == 1 and "1,048,576 episodes of up to 500 steps need at least 7.8 GiB" in err
    assert not out.exists()


def test_a_ppo_run_is_evaluated_only_when_asked(trained, tmp_path, capsys):
    assert "final_eval" not in json.loads((trained / "summary.json").read_text())  # the default: none
    out = tmp_path / "asked"
    code, printed, err = run_cli(capsys, "train", "--seeds", "1", *SMALL, "--final-eval-episodes", "2", "--out", out)
    assert code == 0, err
    evaluated = json.loads((out / "summary.json").read_text())["final_eval"]
    assert evaluated["episodes"] == 2 and evaluated["time_limit"] == 500
    assert "2 fresh episodes each" in " ".join(printed.split())


def test_a_member_whose_evaluation_is_not_finite_is_named_in_the_table(capsys):
    """A diverged member's policy (non-finite parameters) plays non-finite returns: the eval cells say so, with
    each seed's value, as the training window's do."""
    from purerl import stats
    from purerl.cli.train import print_summary
    from purerl.run.results import json_safe

    window, evaluated = stats.summarize(np.array([-150.0, -160.0])), stats.summarize(np.array([-120.0, np.nan]))
    summary = json_safe({"env": "Pendulum-v1", "members": 2, "final_return_window_updates": 10,
                         "final_return_by_setting": {"default": window}, "env_steps_per_member": 1200,
                         "compile_s": 1.0, "run_s": 1.0, "env_steps_per_s": 1.0,
                         "final_eval": {"policy": "greedy", "episodes": 10, "time_limit": 200, "after_env_steps": 1200,
                                        "return_by_setting": {"default": evaluated}}})
    print_summary(Path("run"), summary)
    printed = " ".join(capsys.readouterr().out.split())
    assert "-155.0" in printed and "not finite" in printed and "-120.0, nan" in printed


def test_the_env_is_built_for_the_memory_check_only_where_there_is_an_evaluation():
    from purerl.algos.ppo_config import PPOConfig
    from purerl.envs import make

    def no_env():
        raise AssertionError("built an env for a run that plays no evaluation")

    final_eval.check(0, CONFIG, no_env, 4)  # asked for none
    final_eval.check(None, PPOConfig(), no_env, 4)  # none by the rule: an on-policy learner's run
    built = []
    final_eval.check(None, CONFIG, lambda: built.append(1) or make("Pendulum-v1"), 4)  # a replay learner's: sized
    assert built == [1]
