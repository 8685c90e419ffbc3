"""The headline says what it averages: the final return's window in env steps, and, for a replay learner whose
learning began inside or just before it, that the returns are still early learning's (issue 86)."""

import json

import numpy as np

from purerl import stats
from purerl.cli.train import print_summary

SUMMARY = {"env": "Pendulum-v1", "members": 1, "final_return_window_updates": 10,
           "final_return_by_setting": {"default": stats.summarize(np.array([-893.0]))},
           "final_return_by_member": {"seed=0": -893.0}, "env_steps_per_member": 8192, "compile_s": 1.0,
           "run_s": 1.0, "env_steps_per_s": 8192.0}


def test_the_title_names_the_windows_env_steps_and_a_short_off_policy_run_says_so(tmp_path, capsys):
    print_summary(tmp_path, {**SUMMARY, "final_return_window_env_steps": [7168, 8192], "learning_starts": 5000})
    out = " ".join(capsys.readouterr().out.split())
    assert "mean of the last 10 updates, env steps 7,168-8,192 of each agent" in out
    assert "learning began at env step 5,000" in out and "purerl eval" in out
    print_summary(tmp_path, {**SUMMARY, "final_return_window_env_steps": [990_000, 1_000_000], "learning_starts": 5000})
    assert "learning began" not in capsys.readouterr().out  # long after learning began: no note


def test_a_runs_summary_records_its_window(trained):
    summary = json.loads((trained / "summary.json").read_text())
    assert summary["final_return_window_env_steps"] == [0, 1024] and "learning_starts" not in summary
