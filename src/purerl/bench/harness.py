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

from purerl import results
from purerl.bench import gpu_info
from purerl.bench import peers as peer_runner
from purerl.compile_cache import cache_root

PRESETS = {
    "cpu": {"cartpole": [1, 8, 64], "minatar": [1, 8]},
    "gpu": {"cartpole": [1, 32, 256, 2048], "minatar": [1, 16, 256]},
}
TASK_STEPS = {"cartpole": 500_000, "minatar": 1_048_576}  # the worker's defaults (steps per agent)
PUREJAXRL_SKIPPED = "skipped: no checkout of luchris429/purejaxrl given (purerl bench --purejaxrl PATH)"
SB3_MEASURED_SEEDS = 1  # SB3 trains seeds one after another; more seeds are extrapolated linearly


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
    cmd = [sys.executable, "-m", "purerl.bench.worker", "--task", task, "--seeds", str(seeds),
           "--repeats", str(repeats)]
    cmd += ["--floor"] if floor else []
    cmd += ["--total-timesteps", str(total_timesteps)] if total_timesteps else []
    cmd += list(extra)
    tick = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"system": "purerl", "seeds": seeds, "error": f"timed out after {timeout_s:.0f} s"}
    wall = time.perf_counter() - tick
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"system": "purerl", "seeds": seeds, "error": f"exit {proc.returncode}: {last}"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def bench(task: str, widths: list[int], repeats: int, peer_names: list[str], total_timesteps: int | None,
          progress=print, purejaxrl: Path | None = None) -> dict[str, Any]:
    """Measure every width: purerl cold, purerl warm, then each peer; returns the full record.

    `purejaxrl` is a checkout of luchris429/purejaxrl for the purejaxrl peer (skipped, with its reason, without
    one). On a CPU it runs in its own venv like every peer; on a GPU, whose machine may have no network to
    build that venv, the same script runs in this Python.
    """
    rows, on_gpu = [], gpu_count() > 0
    own_python = sys.executable if on_gpu and purejaxrl is not None else None
    names = [name for name in peer_names if task in peer_runner.PEERS[name].tasks]
    if own_python and "purejaxrl" not in names:
        names.append("purejaxrl")
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
            steps = ours.get("total_timesteps") or total_timesteps or TASK_STEPS[task]
            row[name] = run_peer(name, task, width, steps, repeats + 1, purejaxrl,
                                 python=own_python if name == "purejaxrl" else None)
        rows.append(row)
    peers = {name: _peer_info(name, own_python if name == "purejaxrl" else None) for name in names}
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
    try:
        return peer_runner.run_peer(name, seeds, total_timesteps, cache_dir=cache_root(), peer_args=args,
                                    max_measured_seeds=SB3_MEASURED_SEEDS if name == "sb3" else None,
                                    python=python)
    except peer_runner.PeerError as error:  # install failures and the like: reported, never skipped
        return {"peer": name, "seeds": seeds, "error": str(error)}


def _peer_info(name: str, python: str | None = None) -> dict:
    peer = peer_runner.PEERS[name]
    info = {"description": peer.description, "requirements": peer.flat_requirements,
            "mismatches": list(peer.mismatches)}
    if python:
        info["install"] = f"Run in purerl's own Python ({python}), not a venv of its own: no network to build one."
    return info


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(memory_gb, 1),
            "python": platform.python_version(), "platform": platform.platform(), "gpu": gpu_info.describe()}


def versions() -> dict:
    from importlib.metadata import version

    return {pkg: version(pkg) for pkg in ("purerl", "jax", "jaxlib", "flax", "optax", "gymnax")}


# ------------------------------------------------------------------ reports
def ratio(ours: dict, theirs: dict, key: str) -> float | None:
    if ours.get("error") or theirs.get("error") or not ours.get(key) or not theirs.get(key):
        return None
    return ours[key] / theirs[key]


def write_report(records: list[dict], out_md: Path) -> Path:
    """docs/benchmarks.md and its plot, from the harness's records."""
    out_md = Path(out_md)
    plots = out_md.parent / "benchmarks"
    plots.mkdir(parents=True, exist_ok=True)
    width_records = [r for r in records if "rows" in r]
    first = (width_records or records)[0]
    m, v = first["machine"], first["versions"]
    lines = [
        "# Benchmarks",
        "",
        "Generated by `purerl bench`; never edited by hand. Each section below comes from one run of the harness "
        "on one machine (its command is given), with purerl and its peers measured interleaved, width by width.",
        "",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Python {m['python']}",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- run time is the median of {first['repeats'] + 1} runs of the compiled program "
        "(compile excluded); agents per hour include the compile.",
        "",
    ]
    for record in width_records:
        lines += _task_section(record)
    if width_records:
        lines += _floor_section(width_records)
        lines += _peer_notes(width_records[0]["peers"])
        plot = _plot(width_records, plots / "agents_per_hour.png")
        lines += ["", f"![agents per hour]({plots.name}/{plot.name})", ""]
    for record in records:
        if "device_rows" in record:
            lines += _devices_section(record)
        if "evolve" in record:
            lines += _evolve_section(record)
    results.write_atomic(out_md, "\n".join(lines))
    return out_md


def systems(row: dict) -> list[str]:
    """The measured systems of a width's row (its other keys are the width and the load)."""
    return [key for key, value in row.items() if isinstance(value, dict)]


def per_device(result: dict) -> float | None:
    steps = result.get("env_steps_per_s")
    return None if steps is None else steps / result.get("devices", 1)


def _fmt(value, spec=",.0f"):
    return "-" if value is None else format(value, spec)


def _task_section(record: dict) -> list[str]:
    peer_names = [k for k in systems(record["rows"][0]) if k != "purerl"]
    lines = [
        f"## {record['task']}",
        "",
        f"`{record.get('command', 'purerl bench')}`",
        "",
        "Several cores: purerl shards the seeds over one JAX host device per core (a width below the device count "
        "uses fewer devices); every peer runs on one device. `env steps/s` is the whole machine's rate; "
        "`per device` divides it by the devices used, which is the like-for-like efficiency figure.",
        "",
        "| system | seeds | devices | cold compile s | warm-cache compile s | new process to training s | run s | "
        "env steps/s | per device | agents/hour | peak RSS MB | final return | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in record["rows"]:
        for system in ["purerl", *peer_names]:
            r = row[system]
            if r.get("error"):
                lines.append(f"| {system} | {row['seeds']} | could not run: {r['error']} ||||||||||| ")
                continue
            note = f" (extrapolated from {r['measured_seeds']})" if r.get("extrapolated") else ""
            lines.append(
                f"| {system}{note} | {row['seeds']} | {r.get('devices', 1)} | {_fmt(r.get('compile_s'), '.2f')} | "
                f"{_fmt(r.get('warm_compile_s'), '.2f')} | {_fmt(r.get('warm_process_start_to_ready_s'), '.2f')} | "
                f"{_fmt(r.get('run_s'), '.1f')} | {_fmt(r.get('env_steps_per_s'))} | {_fmt(per_device(r))} | "
                f"{_fmt(r.get('agents_per_hour'))} | {_fmt(r.get('peak_rss_mb'))} | {_fmt(r.get('final_return'), '.1f')} | "
                f"{_fmt(row.get('load_avg_1min'), '.1f')} |"
            )
    if peer_names:
        lines += ["", "Ratios, purerl / peer, at the same width, measured side by side in this run (steady-state env "
                  "steps/s of the machine and per device; agents/hour with compile):",
                  "", "| seeds | " + " | ".join(f"vs {p}: steps/s | vs {p}: per device | vs {p}: agents/h"
                                               for p in peer_names) + " |",
                  "|---|" + "---|---|---|" * len(peer_names)]
        for row in record["rows"]:
            cells = []
            for p in peer_names:
                ours, theirs = row["purerl"], row[p]
                device_ratio = (None if ratio(ours, theirs, "env_steps_per_s") is None
                                else per_device(ours) / per_device(theirs))
                cells += [_fmt(ratio(ours, theirs, "env_steps_per_s"), ".2f") + "x",
                          _fmt(device_ratio, ".2f") + "x",
                          _fmt(ratio(ours, theirs, "agents_per_hour"), ".1f") + "x"]
            lines.append(f"| {row['seeds']} | " + " | ".join(cells) + " |")
    ours = [row["purerl"] for row in record["rows"] if not row["purerl"].get("error")]
    if len(ours) > 1:
        base = ours[0]
        lines += ["", "Scaling of purerl with width (agents/hour relative to the narrowest):", ""]
        lines += [f"- {r['seeds']} seeds: {r['agents_per_hour'] / base['agents_per_hour']:.2f}x" for r in ours]
    return lines + [""]


def _devices_section(record: dict) -> list[str]:
    lines = [f"## {record['task']}: scaling with devices", "", f"`{record.get('command', 'purerl bench')}`", "",
             "Each row is a fresh process with the seed axis sharded over the devices (host devices on a CPU: "
             "`--xla_force_host_platform_device_count`). Cold compile, no persistent cache.", "",
             "| seeds | devices | compile s | run s | env steps/s | agents/hour | vs 1 device |", "|---|---|---|---|---|---|---|"]
    base = {row["seeds"]: row["purerl"] for row in record["device_rows"] if row["devices"] == 1}
    for row in record["device_rows"]:
        r = row["purerl"]
        if r.get("error"):
            lines.append(f"| {row['seeds']} | {row['devices']} | could not run: {r['error']} |||||")
            continue
        one = base.get(row["seeds"])
        rel = _fmt(r["agents_per_hour"] / one["agents_per_hour"], ".2f") + "x" if one and not one.get("error") else "-"
        lines.append(f"| {row['seeds']} | {row['devices']} | {r['compile_s']:.2f} | {r['run_s']:.1f} | "
                     f"{r['env_steps_per_s']:,.0f} | {r['agents_per_hour']:,.0f} | {rel} |")
    return lines + [""]


EVOLVE_PARTS = {"inner_training": "inner training (compiled PPO runs of the population)", "ask": "ES ask",
                "tell": "ES tell", "to_host": "population to host", "to_device": "population to devices",
                "from_device": "fitness to host", "checkpoint": "checkpoint (orbax save, waited for)"}


def _evolve_section(record: dict) -> list[str]:
    r = record["evolve"]
    lines = [f"## Meta-evolution throughput ({record['preset']} preset)", "", f"`{record.get('command', 'purerl bench')}`", ""]
    if r.get("error"):
        return lines + [f"Could not run: {r['error']}", ""]
    lines += [
        f"The value-loss study (`purerl evolve --task value-loss --preset {r['study_preset']}`): population "
        f"{r['population_size']} x {r['rollouts']} rollout(s), each a CartPole PPO run of {r['inner_total_timesteps']:,} "
        f"env steps, on {r['devices']} {r['backend']} device(s) (the candidates are sharded over them). "
        f"Median of {r['generations_measured']} generations after the first (which compiles: "
        f"{r['first_generation_s']:.1f} s). Load average (1 min) at the end: {record['load_avg_1min']:.1f}.", "",
        "| agents/hour (steady) | agents/hour (whole preset run, compile included) | env steps/s | s per generation "
        "(with checkpoint) | ES ask+tell share |", "|---|---|---|---|---|",
        f"| {r['agents_per_hour']:,.0f} | {r['agents_per_hour_with_compile']:,.0f} | {r['env_steps_per_s']:,.0f} | "
        f"{r['generation_s'] + r['parts_s']['checkpoint']:.2f} | {r['es_overhead_fraction']:.3%} |", "",
        "Where a generation's time goes (each part timed alone on the same inputs; the parts are measured "
        "separately, so they need not sum exactly to the whole):", "", "| part | s | share of a generation |",
        "|---|---|---|",
    ]
    lines += [f"| {label} | {r['parts_s'][name]:.4f} | {r['parts_fraction'][name]:.2%} |"
              for name, label in EVOLVE_PARTS.items()]
    lines += ["", "For scale: the published meta-evolution trained 512 agents x 1024 generations in about 9 hours on "
              "one A40, about 58k agents per hour (with 5e5-step inner runs; the CPU preset's are 1e5).", ""]
    return lines


def _floor_section(records: list[dict]) -> list[str]:
    lines = ["## How far from the hardware floor", "",
             "FLOPs per update are composed from XLA's cost analysis of loop-free pieces (one rollout step x "
             "steps, one gradient step x epochs x minibatches, the advantages), because XLA counts a loop body once "
             "whatever its trip count. The floor is a 2048x2048 float32 matmul timed in the same process (it uses "
             "every core). Rollout and learning time are per env "
             "step of one device's share of the seeds, timed alone; with several devices the shares run in parallel.",
             "", "| task | seeds | devices | FLOPs/update | achieved FLOP/s | matmul FLOP/s | fraction | rollout us/step | "
             "learn us/step |", "|---|---|---|---|---|---|---|---|---|"]
    for record in records:
        for row in record["rows"]:
            r = row["purerl"]
            if r.get("error") or "flops_per_update" not in r:
                continue
            lines.append(
                f"| {record['task']} | {row['seeds']} | {r.get('floor_devices', 1)} | {r['flops_per_update']:.3g} | "
                f"{r['achieved_flops_per_s']:.3g} | "
                f"{r['matmul_flops_per_s']:.3g} | {r['fraction_of_matmul_floor']:.2%} | "
                f"{r['rollout_us_per_env_step']:.3g} | {r['learn_us_per_env_step']:.3g} |")
    return lines + [""]


def _peer_notes(peers: dict) -> list[str]:
    lines = ["## Peers", ""]
    for name, info in peers.items():
        lines.append(f"- **{name}**: {info['description']}. " + info.get("install", "Installed in its own virtual "
                     f"environment: `{' '.join(info['requirements'])}`."))
        lines += [f"  - differs: {m}" for m in info["mismatches"]]
    return lines


def _plot(records: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(records), figsize=(6 * len(records), 4.2), squeeze=False)
    for ax, record in zip(axes[0], records):
        for system in systems(record["rows"][0]):
            points = [(row["seeds"], row[system]["agents_per_hour"]) for row in record["rows"]
                      if not row[system].get("error") and row[system].get("agents_per_hour")]
            if points:
                ax.plot(*zip(*points), marker="o", label=system)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("seeds trained at once")
        ax.set_ylabel("agents trained per hour (compile included)")
        ax.set_title(record["task"])
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
