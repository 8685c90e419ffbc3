"""Bad input, property-tested: any flag value either passes validation or is one line on stderr, exit 2,
no traceback and nothing written. Plus the specific defects: labels, duplicates, NaN, divergence, --gif."""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from cli_run import GRU, SMALL

from purerl.meta import evolve
from purerl.run import experiment, results
from purerl.cli import main
from purerl.algos.ppo_config import HyperParams
from purerl.run.population import make_members

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
    (["--seeds=--"], "argument --seeds: expected one argument"),  # found by the PBT property test
    (["--update-kernel=--"], "argument --update-kernel: expected one argument"),
    (["--algo", "dqn", "--total-timesteps", "2048"], "learning-starts=10,000 is not below the run's 2,500 env steps"),
    (["--algo", "sac", "--env", "Pendulum-v1", "--learning-starts", "20000"],
     "learning-starts=20,000 is not below the run's 20,000"),
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


def test_a_name_with_a_line_break_is_quoted_in_the_one_line(capsys, tmp_path):
    for argv in (["eval", str(tmp_path / "no\nsuch")], ["train", "--out", str(tmp_path / "r"), "--config",
                                                         str(tmp_path / "a\nb.json")]):
        code, err = outcome(capsys, argv)
        assert code == 2 and err.count("\n") == 1 and ("no\\nsuch" in err or "a\\nb.json" in err), err


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
    # MountainCar's 200-step episodes end only at the goal or the time limit; each env runs 128 steps
    code = main(["train", "--env", "MountainCar-v0", "--out", str(out), *SMALL, "--total-timesteps", "512"])
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


# The masked task trains test_eval's recurrent run (its programs): its GIF unwraps the masked state.
@pytest.mark.parametrize("env, flags", [("CartPole-v1", ["--seeds", "1", *SMALL]),
                                        ("Breakout-MinAtar", ["--seeds", "1", *SMALL]),
                                        ("CartPole-NoVel-v1", [*GRU, "--preset", "pomdp"])],
                         ids=["CartPole", "MinAtar", "NoVel-GRU"])
def test_eval_gif_renders_a_whole_episode(capsys, monkeypatch, tmp_path, env, flags):
    out = tmp_path / "run"
    assert main(["train", "--env", env, "--out", str(out), *flags]) == 0
    with monkeypatch.context() as without_pygame:
        without_pygame.setitem(sys.modules, "pygame", None)
        code, err = outcome(capsys, ["eval", str(out), "--episodes", "1", "--gif"])
    if env == "Breakout-MinAtar":  # drawn by gymnax's matplotlib visualiser: pygame draws classic control only
        assert code == 0, err
    else:
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


# --- every subcommand, and corrupted inputs ----------------------------------------------------------------

@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A small finished CartPole run: the template every corrupted input is made from."""
    out = tmp_path_factory.mktemp("template") / "run"
    assert main(["train", "--out", str(out), "--seeds", "1", *SMALL]) == 0
    return out


def _stop_before_work(monkeypatch) -> None:
    """Every command's expensive step raises ReachedTraining: validation passed, the work would start now."""
    from purerl.run import policy
    from purerl_lab.bench import harness
    from purerl_lab.studies.dpo import lpo
    from purerl_lab.studies.act import cli as act_cli
    from purerl_lab.studies.value_loss import report as value_loss_report

    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    monkeypatch.setattr(evolve, "Evolution", reached)
    monkeypatch.setattr(act_cli, "Evolution", reached)
    monkeypatch.setattr(act_cli.act, "evaluate_train_time", reached)
    monkeypatch.setattr(act_cli.test_time, "evaluate_test_time", reached)
    monkeypatch.setattr(policy, "evaluate", reached)
    monkeypatch.setattr(lpo, "analyze_drift", reached)
    monkeypatch.setattr(value_loss_report, "analyze", reached)
    for name in ("bench", "bench_evolve", "bench_devices"):
        monkeypatch.setattr(harness, name, reached)


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder`, with a file's bytes (a link's target) and None for a folder."""
    return {str(p.relative_to(folder)): (str(p.readlink()).encode() if p.is_symlink() else
                                         p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def _check_outcome(argv, code, err, tmp: Path, before: dict) -> None:
    assert code in (0, 2), (argv, err)
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("purerl: error: "), (argv, err)
        assert _tree(tmp) == before, argv  # nothing written, nothing deleted
    after = _tree(tmp)
    for name, data in before.items():  # a user's file is never changed, whatever the outcome
        if name.endswith("notes.txt"):
            assert after.get(name) == data, (argv, name)


SUBCOMMAND_ARGS = {
    "eval": (["r"], {"--episodes": None, "--seed": None, "--gif": "gif"}),
    "plot": (["r"], {"--out": "png", "--metric": "word"}),
    "summary": (["r"], {}),
    "analyze": (["drift", "value-loss"], {"--out": "dir", "--report": "md", "--seeds": None,
                                          "--transfer-seeds": None, "--stages": "word"}),
    "compare": ([], {"--objectives": "word", "--runs-dir": "dir", "--report": "md", "--seeds": None,
                     "--seed": None, "--lr": None, "--total-timesteps": None}),
    "bench": ([], {"--task": "word", "--seeds": None, "--repeats": None, "--total-timesteps": None,
                   "--out": "md", "--peers": "word", "--cores": None, "--devices": None}),
    "act": (["train-time", "test-time"], {"--population-size": None, "--generations": None, "--seed": None,
                                          "--runs-dir": "dir", "--report": "md", "--from-params": "dir"}),
    "evolve": (["value-loss", "lpo"], {"--out": "dir", "--generations": None, "--population-size": None}),
    "train": ([], {"--out": "dir", "--config": "json", "--seeds": None, "--lr": None, "--hidden-sizes": None}),
}
PATHS = {  # destinations a user may name: fresh, the user's own files and folders, purerl's run, nonsense
    "dir": ["new", "r", "mine", "notes.txt", "", ".", "a" * 300, "r/checkpoint", "mine\nx"],
    "png": ["p.png", "mine/notes.txt", "mine.png", "r", "", "x.jpg"],
    "gif": ["g.gif", "mine.gif", "r/episode.gif", "mine", ""],
    "md": ["rep.md", "mine/notes.md", "notes.txt", "mine", ""],
    "json": ["r/config.json", "r", "notes.txt", "missing.json", ""],
    "word": ["ppo,dpo", "ppo", "episode_return", "cartpole", "none", "x", "", "training_budget", ",", "x\ny"],
}


def _workspace(tmp: Path, finished_run: Path) -> None:
    import shutil

    shutil.copytree(finished_run, tmp / "r")
    (tmp / "mine").mkdir()
    for name in ("notes.txt", "mine/notes.txt", "mine/notes.md", "r/notes.txt"):
        (tmp / name).write_text("the user's")
    (tmp / "mine.png").write_bytes(b"\x89PNG the user's")
    (tmp / "mine.gif").write_bytes(b"GIF89a the user's")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_subcommand_with_any_value_exits_0_or_one_line_2_and_keeps_user_files(capsys, monkeypatch,
                                                                                     finished_run, data):
    _stop_before_work(monkeypatch)
    command = data.draw(st.sampled_from(sorted(SUBCOMMAND_ARGS)))
    positional, flags = SUBCOMMAND_ARGS[command]
    argv = [command] + ([data.draw(st.sampled_from(positional))] if positional else [])
    if command == "analyze":
        argv.append(data.draw(st.sampled_from(["ppo", "r", ",", "mine", "ppo,r"])))
    for flag in data.draw(st.lists(st.sampled_from(sorted(flags)), max_size=3, unique=True)) if flags else []:
        kind = flags[flag]
        value = data.draw(VALUES if kind is None else st.sampled_from(PATHS[kind]))
        argv.append(f"{flag}={value}")
    if command in ("train", "compare"):
        argv += SMALL
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        _workspace(tmp, finished_run)
        monkeypatch.chdir(tmp)
        before = _tree(tmp)
        code, err = outcome(capsys, argv)
        event(f"{command}: exit {code}")
        _check_outcome(argv, code, err, tmp, before)


def _corrupt(path: Path, how: str, tmp: Path) -> None:
    if how == "delete":
        path.unlink()
    elif how == "link to a text file":
        path.unlink()
        path.symlink_to(tmp / "notes.txt")
    elif how.startswith("truncate"):
        data = path.read_bytes()
        path.write_bytes(data[:int(len(data) * float(how.split()[1]))])
    elif how == "binary junk":
        path.write_bytes(bytes(range(256)) * 3)
    elif how == "wrong types":
        try:
            record = json.loads(path.read_text())
        except ValueError:
            record = None
        if isinstance(record, dict):
            path.write_text(json.dumps({k: ("x" if not isinstance(v, str) else [v]) for k, v in record.items()}))
        else:
            path.write_text("update,env_steps\nx,y\n")
    else:
        path.write_text(how)


CORRUPTIONS = ["delete", "link to a text file", "truncate 0.5", "truncate 0.9", "truncate 0", "binary junk",
               "wrong types", "{}", "[]", "null", "garbage", '{"command": "train"}']
READERS = [["eval", "r", "--episodes", "1"], ["plot", "r", "--out", "p.png"], ["summary", "r"],
           ["train", "--out", "r", "--resume", "--seeds", "1", *SMALL], ["train", "--config", "r/config.json",
                                                                         "--out", "o", *SMALL],
           ["train", "--out", "r", "--overwrite", "--seeds", "1", *SMALL], ["compare", "--runs-dir", "r", *SMALL]]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(["config.json", "metrics.csv", "summary.json", "checkpoint"]),
       how=st.sampled_from(CORRUPTIONS), argv=st.sampled_from(READERS))
def test_a_corrupted_run_is_read_or_refused_in_one_line(capsys, monkeypatch, finished_run, target, how, argv):
    _stop_before_work(monkeypatch)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        _workspace(tmp, finished_run)
        (tmp / "r" / "notes.txt").unlink()  # the run as purerl left it, but for the damage
        if target == "checkpoint":
            files = sorted(p for p in (tmp / "r" / "checkpoint").rglob("*") if p.is_file())
            target = str(files[len(files) // 2].relative_to(tmp / "r"))
        _corrupt(tmp / "r" / target, how, tmp)
        monkeypatch.chdir(tmp)
        before = _tree(tmp)
        code, err = outcome(capsys, list(argv))
        event(f"{argv[0]}: exit {code}")
        _check_outcome(argv, code, err, tmp, before)
