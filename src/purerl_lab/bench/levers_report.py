"""The GPU levers' section of `docs/benchmarks.md`, rendered from a `gpu-levers` record (`bench/levers.py`)."""

from __future__ import annotations


def _rate(row: dict) -> float | None:
    return None if row.get("error") or not row.get("env_steps_per_s") else row["env_steps_per_s"]


def _steady_peer(peer: dict) -> dict | None:
    """PureJaxRL's second call of its compiled program, as purerl's rows are (the first pays one-off costs)."""
    if not peer or peer.get("error") or not peer.get("run_s_all"):
        return None
    run_s = peer["run_s_all"][-1]
    return {"run_s": run_s, "total_timesteps": peer["total_timesteps"],
            "env_steps_per_s": peer["total_timesteps"] * peer["seeds"] / run_s, "compile_s": peer.get("compile_s"),
            "final_return": peer.get("final_return")}


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def section(record: dict, gpu_name: str, command: str) -> list[str]:
    lines = [f"### PPO's GPU levers on the {gpu_name}, beside PureJaxRL", "",
             f"`{command}` at commit {record.get('commit') or 'unknown'}, {record.get('wall_s', 0):.0f} s "
             "for the whole call.", "",
             "Each lever is a config option, so one process compiles and times every variant of a task in turn "
             "(`--matmul-dtype bfloat16`: bf16 matmuls, float32 weights and Adam state; `--update-kernel fused`: "
             "each minibatch gradient step as one Pallas kernel per agent; `--rollout-unroll 8`). XLA's options "
             "act on a whole process, so each runs the plain variant in a process of its own. Run time is the "
             "second call of the compiled program (the first pays one-off costs), compile excluded; PureJaxRL's "
             "own ppo.py is timed the same way, at the same width and budget, on the same GPU in the same call. "
             "The FLOP fraction divides the plain program's FLOPs (XLA's cost analysis of its loop-free pieces) "
             "per second of the row by the GPU's 4096x4096 matmul rate in the row's matmul dtype.", ""]
    checks = record.get("fused_check", {})
    if checks:
        cells = [f"{task}: " + (f"could not run ({c['error']})" if c.get("error") else
                                f"parameters {c['params_relative_error']:.1e}, statistics "
                                f"{c['stats_max_relative_error']:.1e}") for task, c in checks.items()]
        lines += ["The fused step against XLA's on this GPU (one update's learning at the task's shape, one seed; "
                  "relative error of the parameter change, largest relative error of a loss statistic): "
                  + "; ".join(cells) + ".", ""]
    for task, target in record["targets"].items():
        processes = [p for p in record["processes"] if p["task"] == task]
        if not processes:
            continue
        main = processes[0]
        peer = _steady_peer(record["purejaxrl"].get(task, {}))
        steps = main.get("total_timesteps") or (peer or {}).get("total_timesteps") or 0
        ceilings = main.get("matmul_flops_per_s", {})
        lines += [f"#### {task}: {main['seeds']:,} agents x {steps:,} steps", ""]
        if ceilings:
            lines += ["Matmul ceilings in this process: " + ", ".join(f"{dtype} {rate / 1e12:.1f} TFLOP/s"
                                                                      for dtype, rate in ceilings.items()) + ".", ""]
        kernels = main.get("kernels_per_gradient_step")
        if kernels:
            lines += [f"XLA's plain gradient step launches {sum(kernels.values())} kernels here ("
                      + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in kernels.items())
                      + "); the fused step is one.", ""]
        lines += ["| variant | XLA options | compile s | run s | env steps/s | vs plain | vs PureJaxRL | "
                  "FLOP fraction | final return |", "|---|---|---|---|---|---|---|---|---|"]
        plain = next((_rate(r) for r in main.get("variants", []) if r["variant"] == "xla" and not r["repeat"]), None)
        best = (None, 0.0)
        for process in processes:
            option = process.get("option") or "-"
            for row in process.get("variants", []):
                name = row["variant"] + (" (again, last)" if row["repeat"] else "")
                rate = _rate(row)
                if rate is None:
                    lines.append(f"| {name} | {option} | could not run: {row.get('error')} |||||||")
                    continue
                if rate > best[1] and not row["repeat"]:
                    best = (f"{row['variant']}" + (f" under {option}" if option != "-" else ""), rate)
                dtype = row["overrides"].get("matmul_dtype", "float32")
                flops = main.get("flops_per_update")
                fraction = (flops * main["num_updates"] / row["run_s"] / ceilings[dtype]
                            if flops and dtype in ceilings else None)
                lines.append(
                    f"| {name} | {option} | {_cell(row.get('compile_s'), '.1f')} | {row['run_s']:.2f} | "
                    f"{rate:,.0f} | {_cell(rate / plain if plain else None, '.2f')}x | "
                    f"{_cell(rate / peer['env_steps_per_s'] if peer else None, '.2f')}x | "
                    f"{'-' if fraction is None else f'{100 * fraction:.1f}%'} | "
                    f"{_cell(row.get('final_return'), '.1f')} |")
            if process.get("error"):
                lines.append(f"| (process) | {option} | {process['error']} |||||||")
        if peer:
            lines.append(f"| PureJaxRL ppo.py | - | {_cell(peer['compile_s'], '.1f')} | {peer['run_s']:.2f} | "
                         f"{peer['env_steps_per_s']:,.0f} | - | 1.00x | - | {_cell(peer['final_return'], '.1f')} |")
        else:
            lines.append(f"| PureJaxRL ppo.py | - | could not run: {record['purejaxrl'].get(task, {}).get('error')} "
                         "|||||||")
        if peer and best[0]:
            ratio = best[1] / peer["env_steps_per_s"]
            lines += ["", f"Fastest: **{best[0]}, {ratio:.2f}x PureJaxRL's env steps/s**; the target "
                          f"{target:.1f}x: {'met' if ratio >= target else 'missed'}."]
        lines.append("")
    return lines
