"""`eval` reads a run only while no other live process writes it: it refuses in one line (exit 2) a run
whose `.purerl-lock` a live process holds, so it neither writes into a live run nor reads (and calls damaged) its
rotating checkpoints; a stale lock, whose process is gone, does not stop it."""

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import run_cli

from purerl.run.runlock import LOCK



@pytest.fixture
def writer():
    """A live process other than this one, standing in for a `train` that holds the run."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process.pid
    process.kill()
    process.wait()


def locked_copy(trained: Path, to: Path, pid: int) -> Path:
    shutil.copytree(trained, to, symlinks=True)
    (to / LOCK).write_text(json.dumps({"pid": pid, "host": socket.gethostname()}))
    return to


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("gif", [[], ["--gif"]])
def test_eval_refuses_a_run_another_live_process_is_writing(capsys, tmp_path, trained, writer, gif):
    run = locked_copy(trained, tmp_path / "run", writer)
    before = snapshot(run)
    code, out, err = run_cli(capsys, "eval", run, "--episodes", "1", *gif)
    assert code == 2 and err.count("\n") == 1, err
    assert f"being written by another purerl process (pid {writer}" in err and "damaged" not in err
    assert out == "" and snapshot(run) == before  # no eval.json, no GIF, the writer's lock kept


def test_eval_takes_over_a_stale_lock_and_gives_it_back(capsys, tmp_path, trained):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = locked_copy(trained, tmp_path / "run", gone.pid)
    code, _, err = run_cli(capsys, "eval", run, "--episodes", "1")
    assert code == 0, err
    assert (run / "eval.json").is_file() and not (run / LOCK).exists()


def test_eval_holds_the_run_while_it_reads_it(capsys, tmp_path, trained, monkeypatch):
    """A writer that starts while eval reads is refused: eval holds the run's lock, as a writer does."""
    from purerl.run import policy

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    seen = []
    load_run = policy.load_run
    monkeypatch.setattr(policy, "load_run", lambda run_dir: (seen.append(json.loads((run / LOCK).read_text())),
                                                             load_run(run_dir))[1])
    code, _, err = run_cli(capsys, "eval", run, "--episodes", "1")
    assert code == 0, err
    assert seen and seen[0]["pid"] > 0
