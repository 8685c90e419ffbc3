"""Bad input, property-tested: any flag value either passes validation or is one line on stderr, exit 2,
no traceback and nothing written. Plus the specific defects: labels, duplicates, NaN, divergence, --gif."""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from purerl import evolve, experiment, results
from purerl.cli import main
from purerl.config import HyperParams
from purerl.population import make_members

SMALL = ["--num-envs", "4", "--num-steps", "32", "--total-timesteps", "1024", "--update-epochs", "1",
         "--num-minibatches", "1", "--no-progress"]
TRAIN_FLAGS = ["--total-timesteps", "--seeds", "--seed", "--num-envs", "--num-steps", "--update-epochs",
               "--num-minibatches", "--hidden-sizes", "--checkpoint-every", *(f"--{n.replace('_', '-')}" for n in
                                                                               HyperParams._fields)]
EVOLVE_FLAGS = ["--population-size", "--generations", "--rollouts", "--es-lr", "--es-lr-final", "--std",
                "--std-final", "--seed", "--max-parallel", "--total-timesteps", "--memory-budget-mb"]
NASTY = ["inf", "-inf", "nan", "1e400", "-1e400", "4294967296", "1e-3,1e-3", "1e-3,0.001000001", "", " ", "x",
         "0x10", "1_000", "1,2,3", "-0", "3.5", "1e6", "2147483648", "9" * 40]
VALUES = st.one_of(
    st.sampled_from(NASTY),
    st.integers(-10**30, 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet="0123456789.,-+eEinfa x", max_size=10),
)


class ReachedTraining(Exception):
    """Validation passed: the command would now compile and train."""


def reached(*args, **kwargs):
    raise ReachedTraining


def outcome(capsys, argv) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    except ReachedTraining:
        code = 0
    return code, capsys.readouterr().err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["train", "evolve"]), data=st.data())
def test_any_flag_value_is_accepted_or_one_line_exit_2_and_nothing_written(capsys, monkeypatch, command, data):
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    monkeypatch.setattr(evolve, "Evolution", reached)
    flags = TRAIN_FLAGS if command == "train" else EVOLVE_FLAGS
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(flags), VALUES), min_size=1, max_size=3))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        argv = [command] + (["value-loss"] if command == "evolve" else []) + ["--out", str(out)]
        for flag, value in pairs:
            argv += [f"{flag}={value}"]  # `=`: a value starting with '-' is still this flag's value
        code, err = outcome(capsys, argv)
        assert code in (0, 2), (argv, err)
        if code == 2:
            assert err.count("\n") == 1 and err.startswith("purerl: error: "), (argv, err)
            assert "Traceback" not in err
            assert not out.exists(), argv


@pytest.mark.parametrize("argv, message", [
    (["--lr", "1e-3,1e-3"], "duplicate value 0.001"),
    (["--lr", "1e-3,1.00000001e-3"], "equal to 0.001 in float32"),
    (["--lr", "inf"], "expected a finite number, got 'inf'"),
    (["--total-timesteps", "inf"], "expected a finite number"),
    (["--seeds", "1e400"], "expected a finite number"),
    (["--seed", "4294967296"], "seeds must lie in [0, 4294967295]"),
    (["--seeds", "4294967296"], "--seeds must be at most 1,048,576"),  # found by the property test
    (["--seeds", "1024", "--lr", ",".join(str(i * 1e-4) for i in range(1, 1100))], "is more than 1,048,576"),
    (["--checkpoint-every", "-1"], "expected a positive number"),
    (["--num-env", "8"], "unrecognized arguments: --num-env"),
    (["--num-envs", "1e9"], "num-envs must be at most"),
    (["--cpu-group", "-1"], "cpu-group must be an integer in [0,"),
])
def test_specific_bad_inputs(capsys, tmp_path, argv, message):
    code, err = outcome(capsys, ["train", "--out", str(tmp_path / "run"), *argv])
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_eval_refuses_what_it_cannot_evaluate(capsys, tmp_path):
    run = tmp_path / "evolve-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"command": "evolve"}))
    code, err = outcome(capsys, ["eval", str(run)])
    assert code == 2 and "is a purerl evolve run; this needs a run of purerl train" in err
    for episodes in ("-3", "0"):
        code, err = outcome(capsys, ["eval", str(run), "--episodes", episodes])
        assert code == 2 and "expected a positive number" in err


def test_distinct_grid_values_get_distinct_labels():
    members = make_members([0], HyperParams(), grid={"lr": [1e-3, 0.001000001, 2.5e-4]})
    assert [members.label(i) for i in range(3)] == ["lr=0.001,seed=0", "lr=0.001000001,seed=0", "lr=0.00025,seed=0"]


def test_json_has_null_where_nothing_was_measured(tmp_path):
    summary = {"final_return": {"mean": float("nan"), "n": 2}, "values": [1.0, np.float32("inf")]}
    results.write_summary(tmp_path, summary)
    assert json.loads((tmp_path / results.SUMMARY).read_text()) == {"final_return": {"mean": None, "n": 2},
                                                                   "values": [1.0, None]}


def test_a_run_where_no_episode_ends_says_so_cleanly(capfd, tmp_path):
    out = tmp_path / "run"
    code = main(["train", "--env", "Freeway-MinAtar", "--out", str(out), *SMALL])
    captured = capfd.readouterr()
    assert code == 0 and "no episode ended" in captured.out
    assert captured.err == ""  # no RuntimeWarning leaks
    summary = json.loads((out / "summary.json").read_text())  # strict JSON: no bare NaN
    assert summary["final_return"]["mean"] is None


def test_diverged_members_are_marked_with_one_warning(capfd, tmp_path):
    out = tmp_path / "run"
    code = main(["train", "--out", str(out), "--seeds", "2", "--lr", "3e38,1e-3", "--max-grad-norm", "3e38", *SMALL])
    captured = capfd.readouterr()
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diverged"] == ["lr=3e+38,seed=0", "lr=3e+38,seed=1"]
    assert captured.err.count("\n") == 1 and "2 of 4 members diverged" in captured.err
    assert "2 (2 diverged)" in captured.out


@pytest.mark.parametrize("env", ["CartPole-v1", "Breakout-MinAtar", "CartPole-NoVel-v1"])
def test_eval_gif_renders_a_whole_episode(capsys, monkeypatch, tmp_path, env):
    out = tmp_path / "run"
    assert main(["train", "--env", env, "--out", str(out), "--seeds", "1", *SMALL]) == 0
    with monkeypatch.context() as without_pygame:
        without_pygame.setitem(sys.modules, "pygame", None)
        code, err = outcome(capsys, ["eval", str(out), "--episodes", "1", "--gif"])
    assert code == 2 and err == "purerl: error: --gif needs pygame; install it with pip install 'purerl[render]'\n"
    assert main(["eval", str(out), "--episodes", "1", "--gif"]) == 0
    from PIL import Image

    with Image.open(out / "episode.gif") as gif:
        assert gif.n_frames >= 2
    assert not list(out.glob(".*tmp*"))


def test_every_command_prints_its_help(capsys):
    """argparse %-formats help strings, so a bare '%' in one crashes `--help` with a traceback."""
    from purerl.cli import build_parser

    commands = [[]] + [[name] for name in build_parser()._subparsers._group_actions[0].choices]
    for command in commands:
        with pytest.raises(SystemExit) as exit_info:
            main([*command, "--help"])
        assert exit_info.value.code == 0, command
        assert "usage: purerl" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["evolve", "value-loss", "--total-timesteps", "0"], "expected a positive number"),
    (["bench", "--total-timesteps", "-5"], "expected a positive number"),
    (["bench", "--out", "notes.txt"], "--out must be the path of a markdown (.md) file"),
    (["bench", "--task", "evolve", "--seeds", "8"], "--seeds does not apply to --task evolve"),
])
def test_bad_counts_and_destinations_are_one_line_before_anything_runs(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.strip().count("\n") <= 1, err
    assert not any(tmp_path.iterdir())


def test_bench_refuses_to_replace_a_markdown_file_it_did_not_write(capsys, tmp_path):
    (tmp_path / "notes.md").write_text("mine")
    assert main(["bench", "--out", str(tmp_path / "notes.md")]) == 2
    assert "not a purerl benchmark report" in capsys.readouterr().err
    assert (tmp_path / "notes.md").read_text() == "mine"


def test_a_bad_destination_for_drift_maps_or_a_missing_results_folder_is_one_line(capsys, tmp_path):
    (tmp_path / "afile").write_text("mine")
    assert main(["analyze", "drift", "ppo", "--out", str(tmp_path / "afile")]) == 2
    assert "is a file" in capsys.readouterr().err and (tmp_path / "afile").read_text() == "mine"
    assert main(["results", "--check", "--results-dir", str(tmp_path / "nothere")]) == 2
    assert "is not a folder" in capsys.readouterr().err
