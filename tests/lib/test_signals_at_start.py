"""A signal in the command's first second, while JAX imports, is heard (issue 84): the `purerl` command keeps the
first and stops before any run begins, with its exit status 128 + N and one line; a second exits at once. Before,
Ctrl-C there was lost (the run trained to the end, exit 0) and SIGTERM killed with no word."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

COMMAND = Path(sys.executable).with_name("purerl")  # the console script: `purerl.launch:main`
TRAIN = ["train", "--seeds", "1", "--num-envs", "4", "--num-steps", "32", "--total-timesteps", "1024", "--no-progress"]


def _signalled(tmp_path, signals: list[tuple[float, int]]):
    process = subprocess.Popen([str(COMMAND), *TRAIN, "--out", str(tmp_path / "run")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "PURERL_NO_COMPILE_CACHE": "1"})
    started = time.monotonic()
    for at, number in signals:
        time.sleep(max(0.0, at - (time.monotonic() - started)))
        process.send_signal(number)
    out, err = process.communicate(timeout=180)
    return process.returncode, out, err


@pytest.mark.skipif(not COMMAND.is_file(), reason="the purerl console script is not installed")
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_jax_imports_stops_before_training_with_128_plus_n(tmp_path, number):
    code, _, err = _signalled(tmp_path, [(0.3, number)])
    assert code == 128 + number, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert f"{signal.Signals(number).name} received while starting" in err
    assert not (tmp_path / "run" / "summary.json").exists()  # it did not train to the end


@pytest.mark.skipif(not COMMAND.is_file(), reason="the purerl console script is not installed")
def test_a_second_signal_while_starting_exits_at_once(tmp_path):
    code, _, err = _signalled(tmp_path, [(0.3, signal.SIGINT), (0.5, signal.SIGINT)])
    assert code == 130 and "again; stopping at once" in err and "Traceback" not in err, err
