"""Adding an algorithm is its module and one `register` call, from outside the package: a toy REINFORCE
(tests/toy_algorithm.py) trains through the CLI and `purerl.train` on a seeds x grid population, resumes bit for
bit, and evaluates; from the command line its module is named in PURERL_PLUGINS (tests/toy_plugin.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from resume_check import assert_resume_is_bit_exact
from toy_algorithm import ENTRY

from purerl.algos import registry
from purerl.cli import build_parser, main, train_spec

FLAGS = ["--algo", "toy", "--env", "CartPole-v1", "--total-timesteps", "1024", "--no-progress"]


TESTS = Path(__file__).resolve().parents[1]  # the helpers shared by both folders (toy_plugin.py)


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setattr(registry, "ALGORITHMS", dict(registry.ALGORITHMS))  # given back after the test
    registry.register(ENTRY)  # the one line


def test_register_refuses_a_name_taken_and_a_field_that_means_another_thing(toy_registered):
    import dataclasses

    from purerl.checks import ConfigError

    registry.register(ENTRY)  # the same entry again: nothing changes
    with pytest.raises(ConfigError, match="'toy' is registered already"):
        registry.register(dataclasses.replace(ENTRY, title="another"))
    clash = dataclasses.make_dataclass("Clash", [("num_envs", str, "4")], bases=(ENTRY.config,), frozen=True)
    with pytest.raises(ConfigError, match="num_envs is a str"):
        registry.register(dataclasses.replace(ENTRY, name="clash", config=clash))
    with pytest.raises(ConfigError, match="takes a purerl.algos.registry.Algorithm"):
        registry.register("toy")


def _purerl(*argv, plugins: str | None = "toy_plugin"):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    env.pop("PURERL_PLUGINS", None)
    if plugins:
        env["PURERL_PLUGINS"] = plugins
    return subprocess.run([sys.executable, "-m", "purerl.cli", *map(str, argv)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_a_plugin_algorithm_trains_resumes_and_evaluates_from_the_command_line(tmp_path):
    out = tmp_path / "run"
    done = _purerl("train", *FLAGS, "--seeds", "2", "--lr", "0.01,0.03", "--num-envs", "8", "--out", out)
    assert done.returncode == 0, done.stderr
    assert len(json.loads((out / "summary.json").read_text())["final_return_by_member"]) == 4
    assert _purerl("train", "--out", out, "--resume").returncode == 0  # finished: continues nothing, changes nothing
    done = _purerl("eval", out, "--episodes", "2")
    assert done.returncode == 0 and json.loads((out / "eval.json").read_text())["episodes"] == 2, done.stderr
    alone = _purerl("train", "--out", out, "--resume", plugins=None)  # the plugin not named: one line, exit 2
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1 and "PURERL_PLUGINS" in alone.stderr
    missing = _purerl("train", *FLAGS, plugins="no_such_module")
    assert missing.returncode == 2 and "PURERL_PLUGINS: cannot import no_such_module" in missing.stderr


def test_a_registered_algorithm_trains_through_purerl_train_and_loads(toy_registered, tmp_path):
    import purerl
    from toy_algorithm import Toy, ToyConfig

    train = Toy(ToyConfig(env="CartPole-v1", num_envs=8, total_timesteps=1024))
    summary = purerl.train(train, tmp_path / "run", seeds=2, grid={"lr": [0.01, 0.03]}, progress=False)
    assert len(summary["final_return_by_member"]) == 4
    policy = purerl.load(tmp_path / "run", member=3)
    assert int(policy(np.zeros(4, np.float32))) in (0, 1)  # CartPole's two actions, greedy


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
