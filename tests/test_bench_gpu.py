"""The GPU report and its records, checked on the CPU with a recorded GPU machine; and the harness's own process
never starts JAX (on a GPU that would take 75% of the device's memory from the runs it starts)."""

import json
import subprocess
import sys

from purerl.bench import gpu

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
    presets = {"task": "paper-presets", "command": "python -m purerl.bench.gpu paper-presets", "machine": MACHINE,
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
    code = ("from purerl import cli; from purerl.bench import gpu, harness; harness.machine(); harness.versions(); "
            "harness.gpu_count(); gpu.preset_numbers(); from jax._src import xla_bridge as xb; "
            "import json; print(json.dumps(sorted(xb._backends)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_purejaxrl_patches_only_the_lines_it_names(tmp_path):
    from purerl.bench import purejaxrl

    source = tmp_path / "checkout" / "purejaxrl"
    source.mkdir(parents=True)
    (source / "ppo.py").write_text("from wrappers import LogWrapper\n")
    step = "        obs, state, reward, done, info = self._env.step(key, state, action, params)\n"
    imports = "from brax import envs\nfrom brax.envs.wrappers.training import EpisodeWrapper, AutoResetWrapper\n"
    (source / "wrappers.py").write_text(imports + "import navix as nx\nimport jax\n" + step)
    out = tmp_path / "patched"
    out.mkdir()
    wrappers = (purejaxrl.patched_copy(tmp_path / "checkout", out) / "wrappers.py").read_text()
    assert "brax" not in wrappers and "navix" not in wrappers and "import jax\n" in wrappers
    assert "terminated, truncated, info = self._env.step" in wrappers and "final_observation" in wrappers
    assert (out / "ppo.py").read_text() == "from wrappers import LogWrapper\n"
    (source / "wrappers.py").write_text("import jax\n")
    try:
        purejaxrl.patched_copy(tmp_path / "checkout", out)
    except purejaxrl.PatchError as error:
        assert "not the expected PureJaxRL" in str(error)
    else:
        raise AssertionError("a checkout without the expected lines must be refused")


def test_bench_refuses_a_path_that_is_no_purejaxrl_checkout(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "purerl.cli", "bench", "--purejaxrl", str(tmp_path),
                           "--out", str(tmp_path / "b.md")], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "not a checkout of luchris429/purejaxrl" in proc.stderr and not list(tmp_path.iterdir())
