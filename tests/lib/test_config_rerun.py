"""`purerl train --config RUN/config.json` reruns a recorded experiment bit for bit; flags replace single fields."""

import json

import pytest

from cli_run import SMALL, run_cli
from purerl.cli import main



@pytest.fixture(scope="module")
def original(tmp_path_factory):
    out = tmp_path_factory.mktemp("rerun") / "original"
    assert main(["train", "--out", str(out), "--seeds", "2", "--seed", "3", "--lr", "1e-3,3e-3", *SMALL]) == 0
    return out


def _metrics_without_timing(run):
    return (run / "metrics.csv").read_bytes()


def test_rerun_from_config_is_bit_identical(capsys, tmp_path, original):
    rerun = tmp_path / "rerun"
    code, _, err = run_cli(capsys, "train", "--config", original / "config.json", "--out", rerun, "--no-progress")
    assert code == 0, err
    assert (rerun / "config.json").read_text() == (original / "config.json").read_text()
    assert _metrics_without_timing(rerun) == _metrics_without_timing(original)
    before, after = (json.loads((r / "summary.json").read_text()) for r in (original, rerun))
    assert after["final_return_by_member"] == before["final_return_by_member"]


def test_flags_replace_single_fields_and_keep_the_rest(capsys, tmp_path, original):
    rerun = tmp_path / "rerun"
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", rerun, "--seeds", "1", "--gamma", "0.9",
                           "--lr", "2e-3", "--no-anneal-lr", "--no-progress")
    assert code == 0, err
    before, after = (json.loads((r / "config.json").read_text()) for r in (original, rerun))
    assert after["seeds"] == [3]  # the recorded first seed, one of them
    assert after["hyperparams"]["gamma"] == 0.9 and after["hyperparams"]["lr"] == 2e-3
    assert after["grid"] == []  # a single --lr replaces the recorded lr sweep
    assert after["config"]["anneal_lr"] is False
    changed = {k for k in before["config"] if before["config"][k] != after["config"][k]}
    assert changed == {"anneal_lr"}
    assert {k for k in before["hyperparams"] if before["hyperparams"][k] != after["hyperparams"][k]} == {"gamma", "lr"}


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("content, extra, message", [
    (None, [], "does not exist"),
    ("{not json", [], "cannot be read as a training record: it is not JSON"),
    ('{"command": "evolve"}', [], "records a 'evolve' run, not a training run"),
    ('[1, 2]', [], "records no purerl run"),
    ('{"command": "train", "config": {}}', [], "is not a valid training record"),
    ("ORIGINAL:num_envs=\"8\"", [], "num_envs must be int"),
    ("ORIGINAL", ["--preset", "classic"], "--preset cannot be combined with --config"),
    ("ORIGINAL", ["--seeds", "0"], "--seeds must be positive"),
    ("ORIGINAL", ["--seeds", "4294967296"], "--seeds must be at most 1,048,576"),  # found by the property test
    ("ORIGINAL", ["--num-minibatches", "7"], "not divisible by num-minibatches=7"),
])
def test_bad_config_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, original, content, extra, message):
    path = tmp_path / "config.json"
    if content is not None and content.startswith("ORIGINAL"):
        data = json.loads((original / "config.json").read_text())
        if ":" in content:
            field, value = content.split(":", 1)[1].split("=")
            data["config"][field] = json.loads(value)
        content = json.dumps(data)
    if content is not None:
        path.write_text(content)
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--config", path, "--out", out, *extra)
    assert code == 2
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_dqn_record_reruns_bit_identically(capsys, tmp_path):
    original, rerun = tmp_path / "dqn", tmp_path / "rerun"
    # test_value_based's tiny DQN on its three seeds: the programs its resume test compiles
    tiny = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "192", "--buffer-size", "64",
            "--buffer-batch-size", "16", "--learning-starts", "32", "--train-interval", "4",
            "--target-update-interval", "32", "--epsilon-anneal-time", "100", "--hidden-sizes", "16", "--seeds", "3"]
    assert main(["train", "--algo", "dqn", "--out", str(original), *tiny, "--no-progress"]) == 0
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", rerun, "--no-progress")
    assert code == 0, err
    assert (rerun / "metrics.csv").read_bytes() == (original / "metrics.csv").read_bytes()
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", tmp_path / "other", "--clip-eps", "0.1")
    assert code == 2 and "--clip-eps is not a setting of the recorded dqn run" in err


@pytest.mark.parametrize("flags, message", [
    (["--algo", "dqn"], "--algo dqn cannot replace the record's ppo"),
    (["--network", "gru"], "--network gru cannot replace the record's mlp"),
])
def test_a_rerun_keeps_its_algorithm_and_network(capsys, tmp_path, original, flags, message):
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", tmp_path / "rerun", *flags)
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "rerun").exists()
