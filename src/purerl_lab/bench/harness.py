"""The benchmark harness: purerl against its peers, interleaved, in one run on one machine.

For each width (number of seeds) it measures purerl in fresh processes (a cold
compile with an empty persistent cache, then a new process with the warm
cache), then each peer in its own virtual environment, so that every ratio
compares runs taken minutes apart on the same machine. `docs/benchmarks.md`
is written from the results; it is never edited by hand.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from purerl.runtime import hostinfo
from purerl.runtime import gpu_info
from purerl_lab.bench import peers as peer_runner
from purerl.runtime.compile_cache import cache_root

PUREJAXRL_SKIPPED = "skipped: no checkout of luchris429/purejaxrl given (purerl bench --purejaxrl PATH)"
SB3_MEASURED_SEEDS = 1  # SB3 and sbx train seeds one after another; more seeds are extrapolated linearly


def task_steps(task: str) -> int:
    """A task's env steps per agent when none are given: its config's budget, as the worker runs it."""
    from purerl_lab.bench import worker

    return worker.task_config(task)[0].total_timesteps


def run_worker(task: str, seeds: int, repeats: int, cache_dir: Path | None, floor: bool = False,
               total_timesteps: int | None = None, devices: int | None = None, timeout_s: float = 3600,
               extra: tuple[str, ...] = ()) -> dict:
    """One purerl measurement in a fresh process (cache_dir None: no persistent cache at all)."""
    env = dict(os.environ)
    env.pop("PURERL_NO_COMPILE_CACHE", None)
    if cache_dir is None:
        env["PURERL_NO_COMPILE_CACHE"] = "1"
    else:
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir)
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    if devices and gpu_count() > 0:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(devices))
    elif devices:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    cmd = [sys.executable, "-m", "purerl_lab.bench.worker", "--task", task, "--seeds", str(seeds),
           "--repeats", str(repeats)]
    cmd += ["--floor"] if floor else []
    cmd += ["--total-timesteps", str(total_timesteps)] if total_timesteps else []
    cmd += list(extra)
    tick = time.perf_counter()
    stdout, error = run_process(cmd, timeout_s, env)
    if error:
        return {"system": "purerl", "seeds": seeds, "error": error}
    return {**json.loads(stdout.strip().splitlines()[-1]), "wall_s": time.perf_counter() - tick}


def run_process(cmd: list[str], timeout_s: float, env: dict | None = None) -> tuple[str, str | None]:
    """A child process's stdout, and None or a one-line reason it stopped. What it printed before a timeout comes
    back too: a stopped benchmark's finished rows still count."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else (stopped.stdout or "")
        return out, f"stopped at its {timeout_s:.0f} s limit"
    if proc.returncode != 0:
        return proc.stdout, f"exit {proc.returncode}: " + (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return proc.stdout, None


def bench(task: str, widths: list[int], repeats: int, peer_names: list[str], total_timesteps: int | None,
          progress=print, purejaxrl: Path | None = None) -> dict[str, Any]:
    """Measure every width: purerl cold, purerl warm, then each peer; returns the full record.

    `purejaxrl` is a checkout of luchris429/purejaxrl: given one, the purejaxrl peer runs on the tasks it has
    (named without one, it is skipped with its reason). On a CPU it runs in its own venv like every peer; on a
    GPU, whose machine may have no network to build that venv, the same script runs in this Python.
    """
    rows, on_gpu = [], gpu_count() > 0
    own_python = sys.executable if on_gpu and purejaxrl is not None else None
    wanted = [*peer_names, *(["purejaxrl"] if purejaxrl is not None and "purejaxrl" not in peer_names else [])]
    names = [name for name in wanted if task in peer_runner.PEERS[name].tasks]
    for width in widths:
        with tempfile.TemporaryDirectory(prefix="purerl-bench-cache-") as cache:
            progress(f"[{task} x{width}] purerl, cold compile (empty cache), {repeats} timed runs")
            floor = not on_gpu or width == max(widths)  # on a GPU its extra compiles cost more than they tell
            cold = run_worker(task, width, repeats, Path(cache), floor=floor, total_timesteps=total_timesteps)
            progress(f"[{task} x{width}] purerl, new process with a warm cache")
            warm = run_worker(task, width, 1, Path(cache), total_timesteps=total_timesteps)
        ours = dict(cold)
        if "error" not in cold and "error" not in warm:
            ours["warm_compile_s"] = warm["compile_s"]
            ours["warm_process_start_to_ready_s"] = warm["process_start_to_ready_s"]
            ours["run_s_all"] = cold["run_s_all"] + warm["run_s_all"]
            ours["run_s"] = statistics.median(ours["run_s_all"])
            steps = ours["total_timesteps"] * width
            ours["env_steps_per_s"] = steps / ours["run_s"]
            ours["agents_per_hour"] = width / (ours["compile_s"] + ours["run_s"]) * 3600
        row = {"seeds": width, "purerl": ours, "load_avg_1min": os.getloadavg()[0]}
        for name in names:
            progress(f"[{task} x{width}] peer {name}")
            steps = ours.get("total_timesteps") or total_timesteps or task_steps(task)
            row[name] = run_peer(name, task, width, steps, repeats + 1, purejaxrl,
                                 python=own_python if name == "purejaxrl" else None)
        rows.append(row)
    peers = {name: _peer_info(name, task, own_python if name == "purejaxrl" else None) for name in names}
    return {"task": task, "repeats": repeats, "rows": rows, "machine": machine(), "versions": versions(),
            "peers": peers}


def bench_evolve(preset: str, repeats: int, progress=print) -> dict[str, Any]:
    """Meta-evolution throughput (value-loss study) in a fresh process: `repeats` generations after the first."""
    progress(f"[evolve {preset}] value-loss evolution, {repeats} timed generations after the first")
    with tempfile.TemporaryDirectory(prefix="purerl-bench-cache-") as cache:
        result = run_worker("evolve", 1, repeats, Path(cache), extra=("--preset", preset))
    return {"task": "evolve", "preset": preset, "repeats": repeats, "evolve": result, "load_avg_1min": os.getloadavg()[0],
            "machine": machine(), "versions": versions()}


def gpu_count() -> int:
    return gpu_info.count()  # not jax.devices(): JAX in this process would take the GPU's memory from the workers


def bench_devices(task: str, widths: list[int], device_counts: list[int], repeats: int,
                  total_timesteps: int | None, progress=print) -> dict[str, Any]:
    """Agents per hour against the number of devices (host devices on a CPU, GPUs on a GPU machine)."""
    rows = []
    for width in widths:
        for devices in device_counts:
            progress(f"[{task} x{width}] purerl on {devices} device(s)")
            r = run_worker(task, width, repeats, None, total_timesteps=total_timesteps, devices=devices)
            rows.append({"seeds": width, "devices": devices, "purerl": r})
    return {"task": task, "repeats": repeats, "device_rows": rows, "machine": machine(), "versions": versions()}


def run_peer(name: str, task: str, seeds: int, total_timesteps: int, repeats: int, purejaxrl: Path | None,
             python: str | None = None) -> dict:
    """One peer measurement in its own venv (or in `python`); `repeats` timed runs where the script supports them."""
    args: list[str] = []
    if name == "purejaxrl":
        if purejaxrl is None:
            return {"peer": name, "seeds": seeds, "error": PUREJAXRL_SKIPPED}
        args = ["--checkout", str(purejaxrl), "--task", task, "--repeats", str(repeats)]
    measured = SB3_MEASURED_SEEDS if peer_runner.PEERS[name].sequential_seeds else None
    try:
        return peer_runner.run_peer(name, seeds, total_timesteps, cache_dir=cache_root(), peer_args=args,
                                    max_measured_seeds=measured, python=python, task=task)
    except peer_runner.PeerError as error:  # install failures and the like: reported, never skipped
        return {"peer": name, "seeds": seeds, "error": str(error)}


def _peer_info(name: str, task: str, python: str | None = None) -> dict:
    peer = peer_runner.PEERS[name]
    info = {"description": peer.description, "requirements": peer.flat_requirements,
            "mismatches": list(peer.mismatches_for(task))}
    if python:
        info["install"] = f"Run in purerl's own Python ({python}), not a venv of its own: no network to build one."
    return info


def measured_commit() -> str:
    """The commit a benchmark record names: HEAD, or, in a copy of a tree without its git history (a lent GPU
    machine), the commit PURERL_SOURCE_COMMIT names, said as such."""
    from purerl_lab.publish import provenance

    commit, dirty = provenance.git_state()
    copied = os.environ.get("PURERL_SOURCE_COMMIT") if commit is None else None
    if copied:
        return f"{copied[:10]} (a copy of that commit's tree without its history, as named by PURERL_SOURCE_COMMIT)"
    return f"{(commit or '?')[:10]}{' with uncommitted changes' if dirty else ''}"


def machine() -> dict:
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": hostinfo.cpu(), "cores": os.cpu_count(), "memory_gib": round(memory_gb, 1),
            "python": platform.python_version(), "platform": platform.platform(), "gpu": gpu_info.describe()}


def versions() -> dict:
    return hostinfo.versions(("purerl", "jax", "jaxlib", "flax", "optax", "gymnax"))
