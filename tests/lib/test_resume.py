"""Resume: a real SIGINT/SIGTERM to a real process saves a checkpoint, and resuming gives the bit-identical
result; resuming a finished run (or one killed before its outputs) completes it and changes nothing."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_run import SMALL
from purerl.cli import main
from purerl.run.stopping import StopRequested, graceful_stop

# ~2,400 updates: long enough to be stopped mid-run, a few seconds of compute.
LONG = ["train", "--seeds", "2", "--num-envs", "4", "--num-steps", "64", "--total-timesteps", "614400",
        "--update-epochs", "1", "--num-minibatches", "1", "--no-progress", "--checkpoint-every", "1e9"]
SHORT = ["train", "--seeds", "2", *SMALL]  # the small run test_eval, test_cli and others compile


def purerl(*args) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("purerl")
    return subprocess.Popen([str(exe), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until_training(proc: subprocess.Popen, out: Path) -> None:
    """Until the run's checkpoint directory appears (it is compiled and running), and a little longer."""
    deadline = time.time() + 300
    while not (out / "checkpoint").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    assert proc.poll() is None, "the run finished before it could be stopped"


def without_timing(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("compile_s", "run_s", "env_steps_per_s", "resumed_from_update")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "run"
    proc = purerl(*LONG, "--out", out)
    assert proc.wait() == 0, proc.stderr.read()
    return out


@pytest.mark.smoke
@pytest.mark.timeout(600)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_saves_a_checkpoint_and_resume_is_bit_identical(tmp_path, reference, sig):
    out = tmp_path / "run"
    proc = purerl(*LONG, "--out", out)
    wait_until_training(proc, out)
    proc.send_signal(sig)
    code = proc.wait(timeout=120)
    err = proc.stderr.read().strip().splitlines()
    assert code == 128 + sig.value, err
    assert f"stopped by {sig.name}; checkpoint saved at" in err[-1] and "--resume" in err[-1]
    assert not (out / "summary.json").exists()

    resumed = purerl(*LONG, "--out", out, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read()
    assert (out / "metrics.csv").read_bytes() == (reference / "metrics.csv").read_bytes()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from_update"] > 0
    assert without_timing(summary) == without_timing(json.loads((reference / "summary.json").read_text()))


def test_resuming_a_finished_run_changes_nothing_and_completes_missing_outputs(capsys, tmp_path):
    out = tmp_path / "run"
    assert main([*SHORT, "--out", str(out)]) == 0
    capsys.readouterr()
    summary, metrics = (out / "summary.json").read_bytes(), (out / "metrics.csv").read_bytes()

    assert main([*SHORT, "--out", str(out), "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "final return" in printed and "env steps/s" in printed
    assert (out / "summary.json").read_bytes() == summary and (out / "metrics.csv").read_bytes() == metrics

    # A kill between the final checkpoint and the outputs: resume writes them, from the saved timing.
    for name in ("summary.json", "metrics.csv", "curves.png"):
        (out / name).unlink()
    assert main([*SHORT, "--out", str(out), "--resume"]) == 0
    assert (out / "metrics.csv").read_bytes() == metrics and (out / "curves.png").exists()
    rewritten = json.loads((out / "summary.json").read_text())
    assert without_timing(rewritten) == without_timing(json.loads(summary))
    assert rewritten["run_s"] == json.loads(summary)["run_s"] and rewritten["env_steps_per_s"] > 0


@pytest.mark.timeout(600)
def test_a_signal_still_saves_a_checkpoint_when_stderr_is_a_closed_pipe(tmp_path):
    """`purerl train ... | tee log`, Ctrl-C'd: tee dies with it, and the run's messages meet a broken pipe."""
    out = tmp_path / "run"
    proc = purerl(*LONG, "--out", out)
    proc.stderr.close()  # the reader is gone before the run says anything on stderr
    wait_until_training(proc, out)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM.value
    assert [p.name for p in (out / "checkpoint").iterdir() if p.name.isdigit()], "no checkpoint saved at the stop"
    assert not (out / "summary.json").exists()


def wait_for_request(stop: graceful_stop) -> None:
    deadline = time.time() + 5  # the watcher thread records it as the signal arrives
    while stop.requested is None and time.time() < deadline:
        time.sleep(0.01)


def test_a_signal_in_a_run_that_then_finishes_stops_the_next_run_of_the_same_command():
    """`compare` trains its objectives one after another: a SIGTERM landing in the first run's last chunk must
    stop the second run, not end with the first (it did: a stopped compare went on to train DPO)."""
    previous = signal.getsignal(signal.SIGTERM)
    with graceful_stop() as finishing:
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for_request(finishing)
    assert finishing.requested == "SIGTERM" and signal.getsignal(signal.SIGTERM) == previous
    with pytest.raises(StopRequested), graceful_stop() as next_run:
        assert next_run.requested == "SIGTERM"  # it stops before it compiles (chunks.run_chunks)
        raise StopRequested(next_run.requested, 0, 10, saved=True)  # what that run raises: the request is honoured
    with graceful_stop() as later:
        assert later.requested is None
    assert signal.getsignal(signal.SIGTERM) == previous


@pytest.mark.timeout(600)
def test_a_request_left_by_an_earlier_run_stops_the_next_before_it_compiles(tmp_path, capsys, monkeypatch):
    """A compile can take minutes (Brax) and a chunk as long: a run that starts with a stop already asked for
    saves that time, and `--resume` then trains it from the start."""
    import jax

    with graceful_stop() as earlier:  # as when a signal lands in the last chunk of an earlier run of the command
        earlier._handle(signal.SIGTERM.value, None)
    compile_ = jax.stages.Lowered.compile
    monkeypatch.setattr(jax.stages.Lowered, "compile", lambda *a, **k: pytest.fail("compiled after the stop request"))
    out = tmp_path / "run"
    assert main([*SHORT, "--out", str(out)]) == 128 + signal.SIGTERM.value
    assert capsys.readouterr().err.endswith(
        "stopped by SIGTERM; before training began, continue with the same command and --resume\n")
    monkeypatch.setattr(jax.stages.Lowered, "compile", compile_)
    assert main([*SHORT, "--out", str(out), "--resume"]) == 0 and (out / "summary.json").exists()


# A compiled call that would run for minutes: Python cannot run a signal handler until it returns.
LONG_CALL = """
import sys, jax, jax.numpy as jnp
from purerl.run.stopping import graceful_stop
spin = jax.jit(lambda x: jax.lax.fori_loop(0, 2**31 - 1, lambda i, x: jnp.sin(x), x)).lower(jnp.ones(64)).compile()
if sys.argv[1] == "carried":  # a request from an earlier run of the command that then finished
    with graceful_stop() as earlier:
        earlier._handle(15, None)
with graceful_stop():
    print("running", flush=True)
    jax.block_until_ready(spin(jnp.ones(64)))
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("before", ["first-signal", "carried"])
def test_a_second_stop_request_ends_the_process_at_once_even_inside_a_long_compiled_call(before):
    """The promise of the message, "send it again to stop at once": a chunk is one compiled call, during which
    the Python handler cannot run (a halfcheetah chunk heard neither signal for 95 s)."""
    proc = subprocess.Popen([sys.executable, "-c", LONG_CALL, before], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "running\n", proc.stderr.read()
        time.sleep(0.5)
        if before == "first-signal":
            proc.send_signal(signal.SIGTERM)
            assert "SIGTERM received; stopping after this chunk" in proc.stderr.readline()  # said at once
            time.sleep(0.5)
            assert proc.poll() is None  # the first signal only asks
        tick = time.time()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM.value
        assert time.time() - tick < 5 and "stopping at once" in proc.stderr.read()
    finally:
        proc.kill()
