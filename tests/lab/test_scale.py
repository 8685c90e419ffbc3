"""Populations sharded over host devices and processes give the one-device numbers."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROBE = Path(__file__).with_name("scale_probe.py")


def probe(tmp_path, devices: int, max_parallel: int = 0) -> dict:
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    proc = subprocess.run([sys.executable, str(PROBE), str(tmp_path / f"d{devices}"), str(max_parallel)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def match_one_device(tmp_path, device_counts):
    one = probe(tmp_path, 1)
    assert one["devices"] == 1
    for devices in device_counts:
        many = probe(tmp_path, devices, max_parallel=4)  # 6 candidates in chunks of 4 and 2
        assert many["devices"] == devices
        assert many["summary_devices"] == min(devices, 10)  # training never uses more devices than members
        # Same programs per member; only the float reduction order inside a device's batch may differ.
        np.testing.assert_allclose(many["metrics"], one["metrics"], rtol=1e-4, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(many["fitness"], one["fitness"], rtol=1e-4)
    assert len(set(one["fitness"])) > 1  # candidates differ, so the comparison means something


@pytest.mark.timeout(1200)
def test_results_match_one_device_on_8_host_devices(tmp_path):
    """10 members: uneven over 8 devices; the ES chunks of 4 and 2 candidates: more devices than members."""
    match_one_device(tmp_path, (8,))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_results_match_one_device_on_2_and_4_host_devices(tmp_path):
    """An even split (5 members a device) and an uneven one over 4; slow only because each device count costs
    a subprocess."""
    match_one_device(tmp_path, (2, 4))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def purerl(*args):
    # One host device per process: two processes share this machine's cores.
    env = {**os.environ, "PURERL_HOST_DEVICES": "1"}
    return subprocess.Popen([str(Path(sys.executable).with_name("purerl")), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


TRAIN = ["train", "--seeds", "3", "--num-envs", "4", "--num-steps", "32", "--total-timesteps", "1024",
         "--update-epochs", "2", "--num-minibatches", "2", "--no-progress"]
EVOLVE = ["evolve", "value-loss", "--population-size", "4", "--generations", "2", "--total-timesteps", "2048",
          "--no-progress"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("command", [TRAIN, EVOLVE], ids=["train", "evolve"])
def test_two_processes_on_localhost_match_one_process(tmp_path, command):
    single = purerl(*command, "--out", str(tmp_path / "one"))
    assert single.wait() == 0, single.stderr.read()[-2000:]
    port = free_port()
    procs = [purerl(*command, "--out", str(tmp_path / "two"), "--coordinator", f"127.0.0.1:{port}",
                    "--num-processes", "2", "--process-id", str(i)) for i in range(2)]
    for proc in procs:
        assert proc.wait(timeout=900) == 0, proc.stderr.read()[-2000:]
    if command[0] == "train":
        one = json.loads((tmp_path / "one" / "summary.json").read_text())
        two = json.loads((tmp_path / "two" / "summary.json").read_text())
        assert two["processes"] == 2 and two["devices"] == 2
        assert two["final_return_by_member"] == pytest.approx(one["final_return_by_member"], rel=1e-4)
    else:
        one = np.genfromtxt(tmp_path / "one" / "generations.csv", delimiter=",", skip_header=1)[:, 1:5]
        two = np.genfromtxt(tmp_path / "two" / "generations.csv", delimiter=",", skip_header=1)[:, 1:5]
        assert (one[:, 2] > 0).all()  # candidates differ, so the comparison means something
        np.testing.assert_allclose(two, one, rtol=1e-4)
    assert not list((tmp_path / "two").glob("*.tmp*"))  # process 1 wrote nothing half-finished
