"""The GPU report and its records, checked on the CPU with a recorded GPU machine; and the harness's own process
never starts JAX (on a GPU that would take 75% of the device's memory from the runs it starts)."""

import json
import subprocess
import sys

from purerl_lab.bench import gpu, harness
from cli_run import run_cli

GPU = {"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "driver": "580.159.04", "count": 1}
MACHINE = {"cpu": "x86", "cores": 16, "memory_gib": 125.0, "python": "3.12.3", "platform": "linux", "gpu": GPU}


def _run(seeds, run_s, steps_per_s):
    return {"seeds": seeds, "devices": 1, "total_timesteps": 500_224, "compile_s": 20.0, "run_s": run_s,
            "env_steps_per_s": steps_per_s, "agents_per_hour": 3600.0, "final_return": 500.0, "peak_rss_mb": 1.0}


def _width_record(machine):
    rows = [{"seeds": 2048, "purerl": _run(2048, 25.0, 4e7), "purejaxrl": _run(2048, 50.0, 2e7)}]
    return {"task": "cartpole", "command": "purerl bench --preset gpu", "repeats": 1, "rows": rows,
            "machine": machine, "versions": {"purerl": "0.1.0"},
            "peers": {"purejaxrl": {"description": "PureJaxRL", "requirements": [], "mismatches": ["x"]}}}


def test_gpu_records_get_their_own_section_and_keep_the_cpu_ones(tmp_path):
    cpu_record = _width_record({**MACHINE, "gpu": None})
    gpu_record = _width_record(MACHINE)
    presets = {"task": "paper-presets", "command": "python -m purerl_lab.bench.gpu paper-presets", "machine": MACHINE,
               "versions": {}, "presets": [
                   gpu._evolve_row("purerl evolve value-loss --preset paper", [100.0, 30.0, 32.0], 512, 256,
                                   500_000, "stopped at its 240 s limit"),
                   gpu._coin_row("purerl mfos --game coin --preset paper", "(compile 40.0 s, run 18.0 s)",
                                 {"num_boards": 512, "meta_episodes": 1000, "seeds": 3}, 6, None),
                   gpu._evolve_row("purerl act train-time --preset paper", [90.0], 256, 1024, 32_768, None)]}
    records = gpu.merge([cpu_record, {**gpu_record, "command": "old"}], [gpu_record, presets])
    assert [r.get("command") for r in records] == ["purerl bench --preset gpu"] * 2 + [presets["command"]]
    report = gpu.write_report(records, tmp_path / "benchmarks.md").read_text()
    assert report.index("## cartpole") < report.index("## On a GPU: NVIDIA H100 80GB HBM3")
    assert "### cartpole on the NVIDIA H100 80GB HBM3" in report
    assert "**2048 CartPole agents x 500,224 steps: 25.0 s" in report and "target at most 30 s: met.**" in report
    assert "PureJaxRL's own ppo.py, same run and GPU: 50.0 s (2.00x" in report
    value_loss = presets["presets"][0]
    assert value_loss["error"] is None and value_loss["steady_s"] == 31.0  # the first generation holds the compile
    assert abs(value_loss["projected_full_h"] - (100 + 511 * 31) / 3600) < 1e-9
    assert "| 3 generations | 100.0 | 31.00 |" in report
    assert presets["presets"][1]["steady_s"] == 1.0  # 18 s for 6 meta-episodes x 3 seeds
    assert "could not run: it ended after 1 generation(s); first generation 90 s" in report
    assert (tmp_path / "benchmarks" / "agents_per_hour_nvidia_h100_80gb_hbm3.png").exists()


def test_the_harness_process_never_starts_jax():
    code = ("from purerl import cli; from purerl_lab.bench import gpu, harness; harness.machine(); harness.versions(); "
            "harness.gpu_count(); gpu.preset_numbers(); from jax._src import xla_bridge as xb; "
            "import json; print(json.dumps(sorted(xb._backends)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_on_a_gpu_purejaxrl_runs_the_same_script_in_this_python(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(harness, "gpu_count", lambda: 1)
    monkeypatch.setattr(harness, "run_worker", lambda *a, **k: {"error": "not measured here"})
    monkeypatch.setattr(harness.peer_runner, "run_peer", lambda name, *a, **k: calls.append((name, k)) or {})
    record = harness.bench("cartpole", [1], 1, [], 512, progress=lambda _: None, purejaxrl=tmp_path)
    assert [(name, k["python"]) for name, k in calls] == [("purejaxrl", sys.executable)]
    assert "purerl's own Python" in record["peers"]["purejaxrl"]["install"]
    calls.clear()
    assert harness.bench("dqn", [1], 1, [], 512, progress=lambda _: None, purejaxrl=tmp_path)["peers"] == {}
    assert calls == []  # PureJaxRL has no DQN: the checkout does not put it on a task it cannot run


def test_bench_refuses_a_path_that_is_no_purejaxrl_checkout(tmp_path, capsys):
    code, _, err = run_cli(capsys, "bench", "--purejaxrl", tmp_path, "--out", tmp_path / "b.md")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "not a checkout of luchris429/purejaxrl" in err and not list(tmp_path.iterdir())


def test_a_pinned_record_gets_its_own_section_beside_the_unpinned_one(tmp_path):
    cpu = {**MACHINE, "gpu": None}
    unpinned, pinned = _width_record(cpu), {**_width_record(cpu), "cores": 1, "command": "purerl bench --cores 1"}
    records = gpu.merge([unpinned], [pinned])
    assert records == [unpinned, pinned]
    assert gpu.merge(records, [{**pinned, "command": "again"}])[-1]["command"] == "again"  # replaces its own kind
    report = gpu.write_report(records, tmp_path / "benchmarks.md").read_text()
    assert "## cartpole\n" in report and "## cartpole, every process pinned to 1 core\n" in report


def test_bench_refuses_more_cores_than_it_may_use(tmp_path, capsys):
    code, _, err = run_cli(capsys, "bench", "--cores", "4096", "--out", tmp_path / "b.md")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--cores 4096: this process may use only" in err and not list(tmp_path.iterdir())
