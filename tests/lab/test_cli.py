"""CLI: bad input is one line and exit code 2 before anything is compiled or written."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_run import SMALL, run_cli

import purerl
from purerl.run import experiment, stopping
from purerl.cli import build_parser, train_spec


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--num-envs", "4", "--num-steps", "30", "--num-minibatches", "7"], "120 is not divisible by num-minibatches=7"),
        (["--total-timesteps", "100"], "total-timesteps=100 is smaller than one batch"),
        (["--lr", "-1e-3"], "lr must be > 0, got -0.001"),
        (["--lr", "0"], "lr must be > 0, got 0"),
        (["--seeds", "0"], "--seeds must be positive, got 0"),
        (["--seeds", "-3"], "--seeds must be positive, got -3"),
        (["--preset", "brax"], "preset 'brax' is for continuous actions, but CartPole-v1 has discrete actions"),
        (["--env", "CartPol-v1"], "unknown environment 'CartPol-v1'; did you mean CartPole-v1"),
        (["--gamma", "1.5"], "gamma must be in (0, 1], got 1.5"),
        (["--num-envs", "x"], "expected an integer, got 'x'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, argv, message):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--out", str(out), *argv)
    assert code == 2
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_end_to_end_run_directory_eval_and_load(capsys, tmp_path):
    out = tmp_path / "run"
    code, stdout, _ = run_cli(capsys, "train", "--out", str(out), "--seeds", "2", *SMALL)
    assert code == 0, stdout
    for name in ("config.json", "metrics.csv", "summary.json", "curves.png", "checkpoint"):
        assert (out / name).exists(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["members"] == 2 and summary["final_return"]["n"] == 2
    assert {"iqm", "ci95_low", "ci95_high", "mean"} <= set(summary["final_return"])
    assert summary["compile_s"] > 0 and summary["env_steps_per_s"] > 0
    header = (out / "metrics.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["update", "env_steps"] and "episode_return[seed=1]" in header
    assert len((out / "metrics.csv").read_text().splitlines()) == 1 + 1024 // 128
    with open(out / "metrics.csv", newline="") as f:  # every metric per member too, its mean column unchanged
        rows = list(csv.DictReader(f))
    for name in ("value_loss", "policy_loss", "entropy", "approx_kl"):
        per_member = np.array([[float(row[f"{name}[seed={i}]"]) for i in range(2)] for row in rows])
        np.testing.assert_allclose(per_member.mean(axis=1), [float(row[f"{name}_mean"]) for row in rows], rtol=2e-5)

    # Re-running into the same directory needs --resume or --overwrite; a different run is refused.
    code, _, err = run_cli(capsys, "train", "--out", str(out), "--seeds", "2", *SMALL)
    assert code == 2 and "already holds this run; pass --resume" in err
    code, _, err = run_cli(capsys, "train", "--out", str(out), "--seeds", "3", *SMALL)
    assert code == 2 and "already holds a different run (differs in: seeds: [0, 1] (recorded) vs [0, 1, 2] (this command))" in err

    code, stdout, _ = run_cli(capsys, "eval", str(out), "--episodes", "5")
    assert code == 0 and "greedy return over 5 episodes x 2 members" in stdout
    report = json.loads((out / "eval.json").read_text())
    assert len(report["greedy_return_by_member"]) == 2

    policy = purerl.load(out, member=1)
    actions = policy(np.zeros((3, 4), np.float32))
    assert actions.shape == (3,) and set(actions.tolist()) <= {0, 1}


def test_resume_after_interruption_equals_uninterrupted_run(tmp_path):
    spec = train_spec(build_parser().parse_args(["train", "--seeds", "2", *SMALL]))
    full = experiment.run(spec, tmp_path / "full", progress=False, chunk_updates=3)
    with stopping.cut_after(1):
        assert experiment.run(spec, tmp_path / "cut", progress=False, chunk_updates=3, checkpoint_every_s=0) is None
    assert not (tmp_path / "cut" / "summary.json").exists()
    resumed = experiment.run(spec, tmp_path / "cut", resume=True, progress=False, chunk_updates=3)
    assert resumed["resumed_from_update"] == 3
    assert resumed["final_return_by_member"] == full["final_return_by_member"]
    full_csv = (tmp_path / "full" / "metrics.csv").read_text()
    assert (tmp_path / "cut" / "metrics.csv").read_text() == full_csv  # per-member losses too, each update once
    assert "value_loss[seed=1]" in full_csv.splitlines()[0] and len(full_csv.splitlines()) == 1 + 1024 // 128


def test_console_script_runs_in_a_fresh_process(tmp_path):
    out = tmp_path / "run"
    exe = Path(sys.executable).with_name("purerl")
    proc = subprocess.run([str(exe), "train", "--out", str(out), "--seeds", "1", *SMALL],
                          capture_output=True, text=True, timeout=300, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert "final return" in proc.stdout and (out / "summary.json").exists()
    bad = subprocess.run([str(exe), "train", "--lr", "-1"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == "purerl: error: lr must be > 0, got -1"
    env = {**os.environ, "PURERL_HOST_DEVICES": "two"}
    bad = subprocess.run([str(exe), "train", "--out", str(tmp_path / "never")], capture_output=True, text=True,
                         timeout=120, env=env)
    assert bad.returncode == 2 and not (tmp_path / "never").exists()
    assert bad.stderr.strip() == "purerl: error: PURERL_HOST_DEVICES must be a positive integer, got 'two'"


def test_one_host_device_per_core_by_default():
    import jax

    from purerl.runtime import host_devices

    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        pytest.skip("XLA_FLAGS chose the host device count")
    assert jax.device_count("cpu") == (host_devices.requested_count() or host_devices.cores())


ONE_CORE_PROBE = """
import json, os, sys
from purerl.runtime import host_devices
import jax, purerl
purerl.configure_jax()
before = os.sched_getaffinity(0)
did = host_devices.one_core_for_one_member(int(sys.argv[1]))
threads = {os.sched_getaffinity(int(t)) == before for t in os.listdir("/proc/self/task")}
print(json.dumps({"did": did, "devices": jax.device_count("cpu"), "all_restored": threads == {True}}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="one core")
def test_one_member_starts_jax_on_one_core_and_pins_no_thread():
    """One member: one CPU device (its client started under a one-core affinity), and afterwards every thread
    may run on every core again. Two members keep one device per core; a device count the user chose stays."""

    def probe(members, **env):
        env = {**{k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PURERL_HOST_DEVICES")}, **env}
        proc = subprocess.run([sys.executable, "-c", ONE_CORE_PROBE, str(members)], capture_output=True, text=True,
                              timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    cores = len(os.sched_getaffinity(0))
    assert probe(1) == {"did": True, "devices": 1, "all_restored": True}
    assert probe(2) == {"did": False, "devices": cores, "all_restored": True}
    chosen = probe(1, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    assert chosen == {"did": False, "devices": 2, "all_restored": True}
    assert probe(1, PURERL_HOST_DEVICES="2") == {"did": False, "devices": 2, "all_restored": True}


CACHE_PROBE = """
import jax, purerl
purerl.configure_jax()
jax.jit(lambda x: x * 3.0 + 1.0)(2.0).block_until_ready()
print(jax.config.jax_compilation_cache_dir)
"""


def test_compiled_programs_are_cached_where_purerl_cache_dir_says_and_not_at_all_when_turned_off(tmp_path):
    """`purerl.configure_jax` (as the command line runs) turns jax's persistent cache on under $PURERL_CACHE_DIR/jax; PURERL_NO_COMPILE_CACHE=1
    leaves it off, and a cache dir jax was given is kept."""

    def probe(**env):
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PURERL_", "JAX_COMPILATION"))}, **env}
        proc = subprocess.run([sys.executable, "-c", CACHE_PROBE], capture_output=True, text=True, timeout=120,
                              env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.strip().splitlines()[-1]

    assert probe(PURERL_CACHE_DIR=str(tmp_path / "ours")) == str(tmp_path / "ours" / "jax")
    assert any((tmp_path / "ours" / "jax").iterdir())  # the program is on disk
    assert probe(PURERL_CACHE_DIR=str(tmp_path / "off"), PURERL_NO_COMPILE_CACHE="1") == "None"
    assert not (tmp_path / "off").exists()
    kept = probe(PURERL_CACHE_DIR=str(tmp_path / "ours"), JAX_COMPILATION_CACHE_DIR=str(tmp_path / "theirs"))
    assert kept == str(tmp_path / "theirs")  # (what jax then writes there is jax's choice: its own thresholds)


def test_compare_trains_each_objective_on_the_same_seeds_and_writes_the_report(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # by default nothing is written outside --runs-dir (no docs/ in the current folder)
    code, stdout, err = run_cli(capsys, "compare", "--objectives", "ppo,dpo", "--seeds", "2", *SMALL,
                                "--runs-dir", "runs")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    results_dir, report = tmp_path / "runs" / "report", tmp_path / "runs" / "report.md"
    record = json.loads((results_dir / "CartPole-v1.json").read_text())
    assert set(record["objectives"]) == {"ppo", "dpo"} and record["seeds"] == [0, 1]
    ppo, dpo = (json.loads((tmp_path / "runs" / "CartPole-v1" / o / "config.json").read_text()) for o in ("ppo", "dpo"))
    assert ppo["seeds"] == dpo["seeds"] and ppo["hyperparams"] == dpo["hyperparams"]
    assert ppo["objective"] == "ppo" and dpo["objective"] == "dpo"
    text = report.read_text()
    assert "| CartPole-v1 | 1,024 | 2 |" in text and "(report/CartPole-v1.png)" in text
    assert "(n=2, no CI)" in text and "CartPole-v1: best: not distinguishable at this budget" in text
    part = json.loads((tmp_path / "runs" / "manifest.json").read_text())["report.md"]["parts"]["CartPole-v1"]
    assert part["command"].startswith("purerl compare --objectives ppo,dpo") and part["budget"]["seeds"] == [0, 1]
    assert part["budget"]["env_steps_per_run"] == 1024 and part["wall_s"] > 0 and "sessions" not in part
    # --resume reads finished runs back instead of retraining them, and the manifest lists both sessions
    checkpoints = sorted((tmp_path / "runs" / "CartPole-v1").glob("*/checkpoint/**/*"))
    stamps = [p.stat().st_mtime_ns for p in checkpoints]
    code, _, err = run_cli(capsys, "compare", "--objectives", "ppo,dpo", "--seeds", "2", *SMALL, "--runs-dir", "runs",
                           "--resume")
    assert code == 0, err
    assert [p.stat().st_mtime_ns for p in checkpoints] == stamps
    assert json.loads((results_dir / "CartPole-v1.json").read_text())["objectives"]["ppo"]["final_return"] == \
        record["objectives"]["ppo"]["final_return"]
    part = json.loads((tmp_path / "runs" / "manifest.json").read_text())["report.md"]["parts"]["CartPole-v1"]
    assert len(part["sessions"]) == 2 and part["mixed_sources"] is False
    # the part's wall-clock is the runs' training (checkpointed), not the seconds of a session that only reported
    trained = [json.loads((tmp_path / "runs" / "CartPole-v1" / o / "summary.json").read_text()) for o in ("ppo", "dpo")]
    assert trained[0]["run_s"] > 0 and part["wall_summed"] is True
    assert part["wall_s"] == round(sum(s["run_s"] + s["compile_s"] for s in trained), 1)
    assert "s wall-clock (training summed over every session" in report.read_text()
    code, _, err = run_cli(capsys, "compare", "--objectives", "ppo,dpo", "--seeds", "3", *SMALL, "--runs-dir", "runs",
                           "--resume")
    assert code == 2 and "holds a different run (differs in: seeds: [0, 1] (recorded) vs [0, 1, 2] (this command))" in err
    code, _, err = run_cli(capsys, "compare", "--objectives", "ppo,lpo", "--seeds", "2", *SMALL)
    assert code == 2 and "objective 'lpo' needs its meta-parameters" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--seeds", "1,x"], "--seeds must be comma-separated integers, got '1,x'"),
        (["bench", "--devices", "0,2"], "--devices must be positive, got 0"),
        (["bench", "--peers", "cleanrl"], "unknown peer 'cleanrl'; choose from sb3, rejax, sbx, purejaxrl or none"),
        (["bench", "--purejaxrl", "no/such/checkout"], "--purejaxrl no/such/checkout is not a checkout of luchris429"),
        (["evolve", "value-loss", "--population-size", "7"], "population-size must be even, got 7"),
        (["evolve", "value-loss", "--preset", "huge"], "unknown preset 'huge'; choose from cpu, paper"),
        (["evolve", "lpo", "--strategy", "open-es"], "unknown strategy 'open-es'"),
        (["act", "train-time", "--env", "Acrobot-v1"], "victims on CartPole-v1 and Pendulum-v1, not Acrobot-v1"),
        (["train", "--coordinator", "127.0.0.1:1234"], "--coordinator needs --num-processes and --process-id"),
        (["analyze", "drift", "no/such/run"], "drift 'no/such/run' is neither ppo, dpo nor an existing path"),
    ],
)
def test_other_commands_reject_bad_input_with_one_line_and_exit_2(capsys, tmp_path, argv, message):
    code, _, err = run_cli(capsys, *argv, *(["--out", str(tmp_path / "x")] if argv[0] in ("train", "evolve") else []))
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()
