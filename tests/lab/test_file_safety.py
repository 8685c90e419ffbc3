"""Issue 51: no user file is ever deleted or replaced, a run directory has one writer at a time, and a folder
purerl left half-made (only its marker, no config.json) is never one it then refuses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import SMALL, reached, run_cli

from purerl.run import experiment, files, inventory, rundir, runlock
from purerl.cli import main



def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def fake_run(folder: Path, config: dict) -> Path:
    rundir.start(folder, config, resumed=False)
    return folder


# --- --overwrite deletes only what purerl (or a library of its) wrote --------------------------------------------

@pytest.mark.parametrize("entry", ["checkpoint/my_notes.txt", "tensorboard/my_analysis.ipynb", "wandb/my_notes.md",
                                   "tensorboard/default/seed=0/notes.txt", "checkpoint/3.backup"])
def test_overwrite_refuses_a_user_file_inside_checkpoint_tensorboard_or_wandb(capsys, tmp_path, entry):
    run = fake_run(tmp_path / "run", {"command": "train"})
    (run / "checkpoint" / "3" / "state").mkdir(parents=True)
    (run / "tensorboard" / "default" / "seed=0").mkdir(parents=True)
    (run / "tensorboard" / "default" / "seed=0" / "events.out.tfevents.1.vm").write_text("events")
    (run / "wandb" / "offline-run-20250101_000000-abc").mkdir(parents=True)
    (run / entry).parent.mkdir(parents=True, exist_ok=True)
    (run / entry).write_text("mine")
    before = snapshot(run)
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, "--overwrite")
    assert code == 2 and entry in err and err.count("\n") == 1, err
    assert snapshot(run) == before


def test_what_the_libraries_write_is_purerls_own(tmp_path):
    """A checkpoint step's files by the inventory purerl records as it saves (`checkpoint.INVENTORY`), a killed
    save's temporary folder by orbax's own layout, the loggers' files by the names they give them."""
    from purerl.run import checkpoint

    run = fake_run(tmp_path / "run", {"command": "train"})
    for path in ("checkpoint/3/state/x", "checkpoint/4.orbax-checkpoint-tmp-17/state/_METADATA",
                 "tensorboard/lr=0.1/seed=0/events.out.tfevents.1700000000.vm.1",
                 "wandb/run-20250101_000000-abc/files/config.yaml", "wandb/debug.log", "wandb/debug-internal.log"):
        (run / path).parent.mkdir(parents=True, exist_ok=True)
        (run / path).write_text("x")
    (run / "checkpoint" / "3" / checkpoint.INVENTORY).write_text(json.dumps(["state/x"]))
    assert inventory.foreign_entries(run) == []
    (run / "checkpoint" / "3" / "state" / "y").write_text("mine")  # not in the step's inventory: the user's
    assert [str(p) for p in inventory.foreign_entries(run)] == ["checkpoint/3/state/y"]


# --- no output replaces a file purerl did not write ---------------------------------------------------------------

def test_plot_refuses_to_replace_a_png_it_did_not_write_and_replaces_its_own(capsys, tmp_path, trained):
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"\x89PNG my figure")
    code, _, err = run_cli(capsys, "plot", trained, "--out", mine)
    assert code == 2 and "refusing to replace" in err and err.count("\n") == 1
    assert mine.read_bytes() == b"\x89PNG my figure"
    ours = tmp_path / "ours.png"
    for _ in range(2):  # the second run replaces the first's plot
        code, _, err = run_cli(capsys, "plot", trained, "--out", ours)
        assert code == 0, err
    assert files.written_by_purerl(ours)
    from PIL import Image

    with Image.open(ours) as image:
        image.load()  # still a valid PNG with the mark


def test_eval_gif_refuses_to_replace_a_gif_it_did_not_write(capsys, tmp_path, trained):
    mine = tmp_path / "mine.gif"
    mine.write_bytes(b"GIF89a mine")
    code, _, err = run_cli(capsys, "eval", trained, "--episodes", "1", "--gif", mine)
    assert code == 2 and "refusing to replace" in err and err.count("\n") == 1
    assert mine.read_bytes() == b"GIF89a mine"


def test_drift_refuses_to_replace_files_it_did_not_write(capsys, tmp_path):
    for name in ("drift.json", "drift.png"):
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        (out / name).write_text("mine")
        code, _, err = run_cli(capsys, "analyze", "drift", "ppo", "--out", out)
        assert code == 2 and f"refusing to replace {out / name}" in err and err.count("\n") == 1
        assert (out / name).read_text() == "mine"


def test_compare_refuses_to_replace_a_report_folder_or_sessions_it_did_not_write(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    (tmp_path / "X" / "report").mkdir(parents=True)
    (tmp_path / "X" / "report" / "CartPole-v1.json").write_text("mine")
    code, _, err = run_cli(capsys, "compare", *SMALL, "--seeds", "1", "--runs-dir", tmp_path / "D",
                           "--report", tmp_path / "X" / "report.md")
    assert code == 2 and "refusing to replace" in err and "CartPole-v1.json" in err, err
    (tmp_path / "D" / "CartPole-v1").mkdir(parents=True)
    (tmp_path / "D" / "CartPole-v1" / "sessions.json").write_text("my sessions")
    code, _, err = run_cli(capsys, "compare", *SMALL, "--seeds", "1", "--runs-dir", tmp_path / "D")
    assert code == 2 and "refusing to replace" in err and "sessions.json" in err, err
    assert (tmp_path / "D" / "CartPole-v1" / "sessions.json").read_text() == "my sessions"
    assert not (tmp_path / "D" / "report.md").exists()


def test_compare_refuses_to_replace_an_earlier_comparison_without_resume_or_overwrite(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    earlier = fake_run(tmp_path / "D" / "CartPole-v1" / "ppo", {"command": "train", "seeds": [0]})
    before = snapshot(earlier)
    code, _, err = run_cli(capsys, "compare", *SMALL, "--seeds", "2", "--runs-dir", tmp_path / "D")
    assert code == 2 and "already holds a run; pass --resume" in err and err.count("\n") == 1
    assert snapshot(earlier) == before
    code, _, err = run_cli(capsys, "compare", *SMALL, "--runs-dir", tmp_path / "D", "--resume", "--overwrite")
    assert code == 2 and "exclude each other" in err
    code, _, err = run_cli(capsys, "compare", *SMALL, "--seeds", "2", "--runs-dir", tmp_path / "D", "--overwrite")
    assert code == 0, err  # replaced on request (it reached training)


# --- one writer per run directory ---------------------------------------------------------------------------------

def test_a_run_directory_held_by_a_live_process_is_refused_and_a_stale_lock_is_taken_over(capsys, tmp_path):
    import socket

    run = fake_run(tmp_path / "run", {"command": "train"})
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run / runlock.LOCK).write_text(json.dumps({"pid": holder.pid, "host": socket.gethostname()}))
        before = snapshot(run)
        code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, "--overwrite")
        assert code == 2 and f"being written by another purerl process (pid {holder.pid}" in err
        assert snapshot(run) == before
    finally:
        holder.kill()
        holder.wait()
    with runlock.locking():  # as every CLI command holds what it writes
        rundir.start(run, {"command": "train"}, resumed=False)  # its process is gone: a stale lock is taken over
        assert json.loads((run / runlock.LOCK).read_text())["pid"] == os.getpid()
    assert not (run / runlock.LOCK).exists()  # given back when the command ends


# --- a folder purerl left half-made is a fresh start ----------------------------------------------------------------

@pytest.mark.parametrize("flags", [[], ["--resume"], ["--overwrite"]])
def test_a_folder_holding_only_purerls_marker_is_a_fresh_start(capsys, tmp_path, monkeypatch, flags):
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    run = tmp_path / "run"
    run.mkdir()
    (run / rundir.MARKER).write_text('{"purerl_run": true}\n')  # config.json was never written (a full disk)
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, *flags)
    assert code == 0, err
    assert json.loads((run / rundir.CONFIG).read_text())["command"] == "train"


def test_a_run_whose_config_json_is_missing_can_be_overwritten(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    run = fake_run(tmp_path / "run", {"command": "train"})
    (run / "metrics.csv").write_text("x")
    (run / rundir.CONFIG).unlink()
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run)
    assert code == 2 and "config.json is missing; pass --overwrite" in err
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, "--overwrite")
    assert code == 0, err
    assert not (run / "metrics.csv").exists()


# --- a full disk during a checkpoint is one line, exit 1 ------------------------------------------------------------

def test_a_full_disk_during_a_checkpoint_is_one_line_and_exit_1(capfd, tmp_path, monkeypatch):
    import orbax.checkpoint as ocp

    def full(self, *args, **kwargs):
        raise ValueError('OUT_OF_RANGE: Error writing "params/0.0": Failed to write 10453 bytes: No space left on '
                         "device [os_error_code='28']\n[tensorstore_spec=...]\n...")

    monkeypatch.setattr(ocp.CheckpointManager, "save", full)
    code = main(["train", "--out", str(tmp_path / "run"), "--seeds", "1", *SMALL])
    err = capfd.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("purerl: error: cannot save a checkpoint in ") and "No space left on device" in err


# --- bad inputs: one line, exit 2, nothing written ---------------------------------------------------

def _copy(run: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run, to, symlinks=True)
    return to


def _damage(case: str, trained: Path, tmp: Path) -> list[str]:
    """Make the inputs of one case under `tmp` (the current folder); returns the command's argv."""
    if case == "config hidden_sizes abc":
        config = json.loads((trained / "config.json").read_text())
        config["config"]["hidden_sizes"] = "abc"
        (tmp / "c.json").write_text(json.dumps(config))
        return ["train", "--config", "c.json", "--out", "o"]
    if case == "config duplicate grid value":
        config = json.loads((trained / "config.json").read_text())
        config["grid"] = [["lr", [1e-3, 1e-3]]]
        (tmp / "c.json").write_text(json.dumps(config))
        return ["train", "--config", "c.json", "--out", "o"]
    if case == "eval a config.json of {command: train}":
        (tmp / "r").mkdir()
        (tmp / "r" / "config.json").write_text('{"command":"train"}')
        return ["eval", "r"]
    if case == "eval a run with no checkpoint":
        run = _copy(trained, tmp / "r")
        import shutil

        shutil.rmtree(run / "checkpoint")
        return ["eval", "r"]
    if case == "eval a truncated checkpoint":
        run = _copy(trained, tmp / "r")
        for path in (run / "checkpoint").rglob("*"):
            if path.is_file() and path.stat().st_size > 64:
                path.write_bytes(path.read_bytes()[:64])
        return ["eval", "r", "--episodes", "1"]
    if case in ("plot garbage metrics", "plot truncated metrics"):
        run = _copy(trained, tmp / "r")
        text = (run / "metrics.csv").read_text()
        (run / "metrics.csv").write_text("garbage\x00,,\n" if case == "plot garbage metrics" else text[:300])
        return ["plot", "r", "--out", "p.png"]
    if case in ("summary garbage", "summary {}", "summary wrong types"):
        run = _copy(trained, tmp / "r")
        summary = json.loads((run / "summary.json").read_text())
        summary["final_return_by_setting"] = {"default": {"n": "x", "iqm": []}}
        (run / "summary.json").write_text({"summary garbage": "garbage", "summary {}": "{}",
                                           "summary wrong types": json.dumps(summary)}[case])
        return ["summary", "r"]
    if case == "resume a finished run whose summary.json links to a text file":
        run = _copy(trained, tmp / "r")
        (tmp / "text.txt").write_text("hello")
        (run / "summary.json").unlink()
        (run / "summary.json").symlink_to(tmp / "text.txt")
        return ["train", "--out", "r", "--resume"]
    if case == "act --from-params garbage":
        (tmp / "p" / "anti-es0").mkdir(parents=True)
        for name in ("mean_meta_params.msgpack", "config.json", "generations.csv"):
            (tmp / "p" / "anti-es0" / name).write_text("garbage")
        return ["act", "train-time", "--from-params", "p", "--report", "rep/act.md", "--no-progress"]
    if case == "analyze value-loss --seeds 1e12":
        (tmp / "evo").mkdir()
        (tmp / "evo" / "config.json").write_text('{"command": "evolve"}')
        return ["analyze", "value-loss", "evo", "--seeds", "1e12"]
    raise AssertionError(case)


DAMAGED = ["config hidden_sizes abc", "config duplicate grid value", "eval a config.json of {command: train}",
           "eval a run with no checkpoint", "eval a truncated checkpoint", "plot garbage metrics",
           "plot truncated metrics", "summary garbage", "summary {}", "summary wrong types",
           "resume a finished run whose summary.json links to a text file", "act --from-params garbage",
           "analyze value-loss --seeds 1e12"]
FLAGS = [
    ["analyze", "value-loss", ","],
    ["eval", "r", "--seed", "18446744073709551616"],
    ["eval", "r", "--seed", "-1"],
    ["eval", "r", "--episodes", "1e12"],
    ["bench", "--repeats", "1e12", "--out", "b.md"],
    ["bench", "--seeds", "99999999999", "--out", "b.md", "--peers", "none"],
    ["bench", "--total-timesteps", "1e18", "--out", "b.md", "--peers", "none"],
    ["train", "--out", "", *SMALL],
    ["train", "--out", "a" * 300, *SMALL],
    ["evolve", "value-loss", "--out", "", "--no-progress"],
    ["act", "train-time", "--resume", "--overwrite"],
    ["plot", "r", "--out", ""],
]


@pytest.mark.parametrize("case", DAMAGED + [" ".join(argv) for argv in FLAGS])
def test_each_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, monkeypatch, trained, case):
    monkeypatch.chdir(tmp_path)
    argv = _damage(case, trained, tmp_path) if case in DAMAGED else FLAGS[[" ".join(a) for a in FLAGS].index(case)]
    if case == "resume a finished run whose summary.json links to a text file":
        argv += ["--seeds", "1", *SMALL]
    before, folders = snapshot(tmp_path), sorted(tmp_path.rglob("*"))
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("purerl: error: "), (case, err)
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before and sorted(tmp_path.rglob("*")) == folders, case  # not even a folder


def test_the_library_checks_its_hyperparameters_and_config(tmp_path):
    from purerl import HyperParams, make_train
    from purerl.checks import ConfigError

    for lr in (-1e-3, float("nan")):
        with pytest.raises(ConfigError, match="lr must be > 0"):
            HyperParams(lr=lr).as_arrays()
    with pytest.raises(ConfigError, match="lr must be > 0"):
        make_train("CartPole-v1", lr=-1e-3)  # the env-id form checks its settings too
    with pytest.raises(TypeError, match=r"needs its config object \(such as PPOConfig\(env=...\)\), got dict"):
        make_train({"env": "CartPole-v1"})


# --- signals from the first line of a command on ---------------------------------------------------------------------

LONG = ["train", "--seeds", "2", "--num-envs", "4", "--num-steps", "64", "--total-timesteps", "614400",
        "--update-epochs", "1", "--num-minibatches", "1", "--no-progress", "--checkpoint-every", "1e9"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_during_the_first_compile_stops_the_run_with_its_message(tmp_path, sig):
    """Sent as config.json appears, while the run compiles: it was swallowed (SIGINT, inside a gc callback) or
    killed the process without a word (SIGTERM, exit -15)."""
    import signal
    import time

    out = tmp_path / "run"
    env = {**os.environ, "PURERL_NO_COMPILE_CACHE": "1"}  # a real compile, the window the signal lands in
    proc = subprocess.Popen([str(Path(sys.executable).with_name("purerl")), *LONG, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 120
        while not (out / "config.json").exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        proc.send_signal(getattr(signal, sig))
        code = proc.wait(timeout=120)
        err = proc.stderr.read()
        assert code == 128 + getattr(signal, sig).value, err
        assert f"stopped by {sig}" in err.strip().splitlines()[-1] and "Traceback" not in err, err
        assert "Exception ignored" not in err
    finally:
        proc.kill()


SECOND_AFTER_GRACEFUL = """
import os, signal, time
from purerl.run.stopping import StopRequested, graceful_stop
with graceful_stop():  # what `purerl train` opens around the whole command
    try:
        with graceful_stop() as run:  # the run's own, around its chunks
            os.kill(os.getpid(), signal.SIGTERM)
            while run.requested is None:
                time.sleep(0.01)
            raise StopRequested(run.requested, 1, 2, saved=True)
    except StopRequested:
        print("checkpointed", flush=True)
        time.sleep(60)  # the command finishing up (loggers, outputs)
"""


@pytest.mark.timeout(60)
def test_a_second_sigterm_after_the_graceful_checkpoint_exits_143():
    import signal

    proc = subprocess.Popen([sys.executable, "-c", SECOND_AFTER_GRACEFUL], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "checkpointed\n", proc.stderr.read()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM.value
        assert "stopping at once" in proc.stderr.read()
    finally:
        proc.kill()
