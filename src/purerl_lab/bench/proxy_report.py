"""The GPU proxy's section of `docs/benchmarks.md`, rendered from a `gpu-proxy` record (`bench/gpu_proxy.py`)."""

from __future__ import annotations


def _key(program: dict) -> tuple:
    return program["system"], program["task"], program["seeds"], program.get("variant", "default")


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def section(record: dict, command: str) -> list[str]:
    """`command`: the record's, as a reader can run it (`report.portable`)."""
    programs = {_key(p): p for p in record["programs"]}
    device, model = record["target_device"], record["model"]
    on_gpu = record.get("gpu_defaults", "default")
    m, versions = record["machine"], record["versions"]
    lines = [f"## GPU proxy: the PPO programs compiled for an {device}, counted and modelled (no GPU ran)", "",
             f"`{command}` at commit `{record.get('commit', '?')}`; "
             f"{m['cpu']}, {m['cores']} cores, Python {m['python']}; "
             + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".", "",
             f"XLA compiled each whole training program for the {device} on this CPU-only machine (target config "
             f"`bench/gpu_targets/{record['target']}`); the times are the cost model's, fitted to the H100 times "
             "measured below (its fit errors are in the last table). purerl on a GPU is the variant "
             f"`{on_gpu}`, which purerl picks by default when it runs on a GPU.", "",
             f"| task | agents | PureJaxRL modelled s | purerl default modelled s | purerl on a GPU ({on_gpu}) "
             "modelled s | PureJaxRL / purerl on a GPU | goal |", "|---|---|---|---|---|---|---|"]
    goals = {(task, seeds): goal for task, seeds, goal in record.get("goals", [])}
    verdicts = []
    for task, widths in record["tasks"].items():
        for seeds in widths:
            peer = programs.get(("purejaxrl", task, seeds, "default"), {})
            plain = programs.get(("purerl", task, seeds, "default"), {})
            ours = programs.get(("purerl", task, seeds, on_gpu), {})
            ratio = (peer["modelled_s"] / ours["modelled_s"]) if peer.get("modelled_s") and ours.get("modelled_s") \
                else None
            goal = goals.get((task, seeds))
            met = "-" if goal is None else f"{goal:.1f}x: " + ("met" if ratio and ratio >= goal else "not met")
            if goal is not None:
                best = _best(programs, task, seeds, peer)
                verdicts.append(f"{task} at {seeds} agents {ratio:.2f}x (goal {goal:.1f}x{best})" if ratio else
                                f"{task} at {seeds} agents: not counted")
            lines.append(f"| {task} | {seeds} | {_seconds(peer.get('modelled_s'))} | "
                         f"{_seconds(plain.get('modelled_s'))} | {_seconds(ours.get('modelled_s'))} | "
                         f"{'-' if ratio is None else f'{ratio:.2f}x'} | {met} |")
    lines += ["", "By the model, purerl on a GPU against PureJaxRL's own ppo.py: " + "; ".join(verdicts) + ".", ""]
    lines += _programs_table(record)
    lines += _fit_table(record, model)
    return lines


def _best(programs: dict, task: str, seeds: int, peer: dict) -> str:
    """The fastest modelled variant of purerl at a width, as ", best VARIANT N.NNx", where a lever not taken by
    default would do more."""
    ours = [p for (system, t, n, _), p in programs.items() if (system, t, n) == ("purerl", task, seeds)
            and p.get("modelled_s")]
    if not ours or not peer.get("modelled_s"):
        return ""
    best = min(ours, key=lambda p: p["modelled_s"])
    return f"; fastest variant {best['variant']}, {peer['modelled_s'] / best['modelled_s']:.2f}x"


def _programs_table(record: dict) -> list[str]:
    lines = ["### Kernels of each program", "",
             "Launches are the kernels of every scheduled computation, each loop body and condition counted once per "
             "iteration (XLA's `known_trip_count`); a conditional counts its branch with more launches (and its round trip is not priced). Bytes are what each "
             "kernel reads and writes by its operands' and result's shapes (a slice of a large operand counts as "
             "the slice; an in-place update as its update); FLOPs are the dots' and elementwise ops' by shape, and "
             "the fused PPO kernel's by its layers. The modelled seconds are split by what bounds each launch.", "",
             "| system | variant | task | agents | launches | per update | loop iterations | copies | GEMMs | "
             "custom calls | other kernels | GB moved | GFLOP | modelled s | launch / bytes / FLOPs / loops s | "
             "compile s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in record["programs"]:
        head = f"| {p['system']} | {p.get('variant', 'default')} | {p['task']} | {p['seeds']} |"
        if p.get("error"):
            lines.append(head + f" not compiled: {p['error']} |" + " |" * 11)
            continue
        kinds = p["by_kind"]
        other = p["launches"] - kinds.get("copy", 0) - kinds.get("gemm", 0) - kinds.get("custom-call", 0)
        t = p["terms_s"]
        lines.append(head + f" {p['launches']:,} | {p['launches'] / p['num_updates']:,.0f} | "
                     f"{p['loop_iterations']:,} | {kinds.get('copy', 0):,} | {kinds.get('gemm', 0):,} | "
                     f"{kinds.get('custom-call', 0):,} | {other:,} | {p['bytes'] / 1e9:,.0f} | "
                     f"{p['flops'] / 1e9:,.0f} | {p['modelled_s']:.2f} | {t['launch']:.2f} / {t['bytes']:.2f} / "
                     f"{t['flops']:.2f} / {t['loops']:.2f} | {p['compile_s']:.1f} |")
    return lines + [""]


def _fit_table(record: dict, model: dict) -> list[str]:
    params = model["params"]
    lines = ["### The cost model and its fit", "",
             f"Fitted constants: a launch costs at least {params['launch_us']:.2f} us; bytes move at "
             f"{params['bandwidth_tb_s']:.2f} TB/s and FLOPs run at {params['throughput_tflop_s']:.1f} TFLOP/s "
             f"(effective rates, not the datasheet's); "
             + (f"a loop iteration adds {params['iteration_us']:.2f} us. " if params["iteration_us"] >= 0.005 else
                "the fit finds no cost of a loop iteration beyond its kernels' launches. ")
             + f"Largest error {model['max_abs_error'] * 100:.1f}%, root-mean-square log error "
             f"{model['rms_log_error']:.3f}, over {len(model['points'])} measured points:", "",
             "| system | task | agents | measured s | modelled s | error | error, left out of the fit |",
             "|---|---|---|---|---|---|---|"]
    for point in model["points"]:
        modelled = point["measured_s"] * (1 + point["error"])
        lines.append(f"| {point['system']} | {point['task']} | {point['seeds']} | {point['measured_s']:.2f} | "
                     f"{modelled:.2f} | {point['error'] * 100:+.1f}% | {point['loo_error'] * 100:+.1f}% |")
    measured_jax = ", ".join(sorted({p.get("jax", "?") for p in model["points"]}))
    lines += ["", "Each error is in-sample (four constants fitted to these points); leave one out, the largest is "
              f"{model['max_abs_loo_error'] * 100:.1f}%. What the model cannot see: the measured points ran jax "
              f"{measured_jax} on the GPU machine, the programs here are compiled by jax "
              f"{record['versions'].get('jax', '?')} without autotuning (`--xla_gpu_autotune_level=0`: XLA's default "
              "GEMM tilings, not the ones an H100 would pick); launches that XLA's command buffers batch at run "
              "time are counted one by one, so the launch floor is an average over them; bf16 dots are priced at "
              "twice float32's rate (the datasheet's ratio; no measured point has them); and the fused PPO kernel "
              "has never run on a GPU: the model prices it at the rates fitted to XLA's kernels, which a "
              "measurement may contradict.", ""]
    return lines
