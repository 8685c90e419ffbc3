"""Adding an algorithm is its module and one registry line: a toy REINFORCE (tests/toy_algorithm.py) registered
with one line trains through the CLI on a seeds x grid population, resumes bit for bit, and evaluates."""

import json

import pytest
from resume_check import assert_resume_is_bit_exact
from toy_algorithm import ENTRY

from purerl.algos import registry
from purerl.cli import build_parser, main, train_spec

FLAGS = ["--algo", "toy", "--env", "CartPole-v1", "--total-timesteps", "1024", "--no-progress"]


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setitem(registry.ALGORITHMS, "toy", ENTRY)  # the one registry line


def test_a_toy_algorithm_trains_through_the_cli_with_a_grid(toy_registered, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *FLAGS, "--seeds", "2", "--lr", "0.01,0.03", "--num-envs", "8", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["final_return_by_member"]) == 4  # 2 seeds x 2 learning rates, one program
    assert "policy_loss" in (out / "metrics.csv").read_text().splitlines()[0]
    assert json.loads((out / "config.json").read_text())["algo"] == "toy"
    assert main(["eval", str(out), "--episodes", "2"]) == 0
    assert json.loads((out / "eval.json").read_text())["episodes"] == 2
    assert main(["train", *FLAGS, "--buffer-size", "10", "--out", str(tmp_path / "x")]) == 2  # DQN's field
    assert "buffer" in capsys.readouterr().err


def test_a_toy_algorithm_resumes_bit_exact(toy_registered, tmp_path):
    # 4 members (2 a device, 4 updates): the grid test's programs
    spec = train_spec(build_parser().parse_args(["train", *FLAGS, "--seeds", "4", "--num-envs", "8"]))
    assert_resume_is_bit_exact(spec, tmp_path)
