"""PPO's GPU levers and PureJaxRL's own ppo.py, side by side on one GPU in one call.

Each lever is a config option (`matmul_dtype`, `update_kernel`, `rollout_unroll`), so one worker process
compiles and times every variant of a task in turn; XLA's GPU options act on a whole process, so each runs the
plain variant in a process of its own. Then PureJaxRL's ppo.py runs at the same width and budget in this
Python. The record goes to `docs/benchmarks/records.json`, and `python -m purerl_lab.bench.gpu report` renders it.

    purerl bench --task gpu-levers --purejaxrl CHECKOUT      # on a GPU, about 6 minutes: adds the record and
                                                             # rewrites docs/benchmarks.md
    python -m purerl_lab.bench.levers run --sizes cartpole=8:4096  # any machine, any size: the record alone
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from purerl_lab.bench import harness

# task -> (agents, env steps per agent): the widths of the targets below, at budgets that fit one short GPU call
TASKS = {"cartpole": (2048, 131_072), "minatar": (256, 262_144)}
TARGETS = {"cartpole": 2.0, "minatar": 1.5}  # purerl's env steps/s over PureJaxRL's, the GPU work's targets
SLOW_RUN_S = 30.0  # a variant whose first run takes longer is timed once: the call's time is short
OUT_OF_TIME = "not run: the call's time budget was spent"
VARIANTS = {  # name -> config overrides
    "xla": {},
    "bf16": {"matmul_dtype": "bfloat16"},
    "fused": {"update_kernel": "fused"},
    "fused+bf16": {"update_kernel": "fused", "matmul_dtype": "bfloat16"},
    "unroll8": {"rollout_unroll": 8},
    "gather": {"minibatch_gather": True},
    "on-a-gpu": {},  # on top of what `purerl train` picks on a GPU for the task (`on_gpu`)
}
XLA_OPTIONS = {  # name -> XLA_FLAGS, each measured on the plain variant in a process of its own
    "command-buffers-off": "--xla_gpu_enable_command_buffer=",
    "command-buffers-loops": "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,WHILE,CONDITIONAL",
    "no-triton-gemm": "--xla_gpu_enable_triton_gemm=false",
}


# ------------------------------------------------------------------ one worker process
def matmul_rate(dtype: str, n: int) -> float:
    """FLOP/s of an n x n matmul at the default precision in `dtype`: the ceiling the fractions use."""
    import jax
    import jax.numpy as jnp

    from purerl_lab.bench.floor import timed

    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32).astype(dtype)
    return 2 * n**3 / timed(jax.jit(lambda x: x @ x), a, repeats=10)


def kernels_per_gradient_step(train, config, keys, hps) -> dict:
    """How many kernels XLA launches for one vmapped gradient step on this backend: the fusions and library calls
    (GEMMs) of its optimised entry computation; what a fused step would collapse into one."""
    import re

    import jax

    from purerl_lab.bench.floor import ppo_minibatch

    state, _, minibatch = ppo_minibatch(train, config, keys[0], jax.tree.map(lambda x: x[0], hps))
    batched = lambda tree: jax.tree.map(  # noqa: E731
        lambda x: jax.ShapeDtypeStruct((keys.shape[0],) + x.shape, x.dtype), tree)
    step = jax.vmap(lambda p, o, b, h: train.gradient_step(p, o, b, h, None)[:2])
    text = jax.jit(step).lower(batched(state.params), batched(state.opt_state), batched(minibatch),
                               hps).compile().as_text()
    entry = text[text.index("ENTRY"):]
    return {"fusions": len(re.findall(r"= \S+ fusion\(", entry)),
            "library_calls": len(re.findall(r"custom-call\(", entry)),
            "unfused_dots": len(re.findall(r"= \S+ dot\(", entry))}


def measure(task: str, seeds: int, total_timesteps: int, variants: list[str], matmul_size: int = 0, emit=print):
    """Compile each variant and time two runs (the second is the steady state), then the first variant once more
    (the drift over the process). Each variant's row is emitted as it is done: a process stopped at its time
    limit still reports the variants it finished."""
    import jax

    from purerl import envs
    from purerl.algos import registry
    from purerl_lab.bench.floor import ppo_update_flops
    from purerl_lab.bench.worker import task_config
    from purerl.run.population import Placement, batched, make_members
    from purerl.run.results import final_returns

    base, hp = task_config(task, total_timesteps)
    on_gpu = registry.get("ppo").gpu_defaults(base, envs.make(base.env), "mlp", "ppo", "clipped_l2")
    members = make_members(list(range(seeds)), hp)
    placement = Placement.for_members(seeds)
    keys, hps = placement.put(members.keys()), placement.put(members.hyperparams.as_arrays())
    steps = base.env_steps
    compiled = {}
    for name in [*variants, variants[0]]:
        overrides = {**(on_gpu if name == "on-a-gpu" else {}), **VARIANTS[name]}
        row = {"variant": name, "overrides": overrides, "repeat": name in compiled}
        try:
            if name not in compiled:
                config = base.replace(**overrides)
                program = batched(registry.build("ppo", config), placement, num_member_args=2,
                                  cpu_group=config.cpu_group)
                tick = time.perf_counter()
                compiled[name] = program.lower(keys, hps).compile()
                row["compile_s"] = time.perf_counter() - tick
            row["run_s_all"] = []
            for _ in range(1 if row["repeat"] else 2):  # the first call of a program also pays one-off costs
                tick = time.perf_counter()
                result = jax.block_until_ready(compiled[name](keys, hps))
                row["run_s_all"].append(time.perf_counter() - tick)
                if row["run_s_all"][-1] > SLOW_RUN_S:
                    break
            row["run_s"] = row["run_s_all"][-1]
            row["env_steps_per_s"] = steps * seeds / row["run_s"]
            row["final_return"] = float(final_returns(placement.get(result.metrics["episode_return"], seeds).T).mean())
            del result
        except Exception as error:  # noqa: BLE001 -- a lever that fails on this GPU is a result, not a stop
            row["error"] = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:300]}"
        emit(json.dumps({"row": row}), flush=True)
    out = {"task": task, "seeds": seeds, "total_timesteps": steps, "num_updates": base.num_updates,
           "xla_flags": os.environ.get("XLA_FLAGS", "")}
    stats = jax.devices()[0].memory_stats() or {}
    out["device_peak_mb"] = stats.get("peak_bytes_in_use", 0) / 2**20
    if matmul_size:
        one_hp = jax.tree.map(lambda x: x[0], members.hyperparams.as_arrays())
        out["flops_per_update"] = ppo_update_flops(registry.build("ppo", base), base, members.keys()[0],
                                                   one_hp)[0] * seeds
        out["matmul_flops_per_s"] = {dtype: matmul_rate(dtype, matmul_size) for dtype in ("float32", "bfloat16")}
        out["kernels_per_gradient_step"] = kernels_per_gradient_step(registry.build("ppo", base), base, keys, hps)
    emit(json.dumps({"process": out}), flush=True)


def check(task: str) -> dict:
    """The fused step against XLA's on this backend: one update's learning at the task's real shape, one seed."""
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from purerl.algos.ppo import make_train
    from purerl_lab.bench.worker import task_config

    config, hp = task_config(task)
    config = config.replace(total_timesteps=config.batch_size)
    hp = hp.as_arrays()
    xla, fused = make_train(config), make_train(config.replace(update_kernel="fused"))
    state, trajectory = jax.jit(lambda k: xla.rollout(xla.init(k, hp), hp))(jax.random.PRNGKey(0))
    learned = [jax.jit(lambda s, t, train=train: train.learn_from(s, t, (), hp, None))(state, trajectory)
               for train in (xla, fused)]
    flat = [ravel_pytree(s.params)[0] for s in (state, learned[0][0], learned[1][0])]
    return {"task": task, "backend": jax.default_backend(),
            "params_relative_error": float(jnp.linalg.norm(flat[1] - flat[2]) / jnp.linalg.norm(flat[1] - flat[0])),
            "stats_max_relative_error": max(float(jnp.abs(learned[0][1][k] - learned[1][1][k]) /
                                                  (jnp.abs(learned[0][1][k]) + 1e-12)) for k in learned[0][1])}


# ------------------------------------------------------------------ the call
def run_worker(task: str, size: tuple[int, int], variants: list[str], xla_flags: str, matmul_size: int,
               timeout_s: float) -> dict:
    """One worker process; what it finished comes back even when it is stopped or fails."""
    seeds, steps = size
    env = {**os.environ, "XLA_FLAGS": xla_flags, "PURERL_NO_COMPILE_CACHE": "1"}
    cmd = [sys.executable, "-m", "purerl_lab.bench.levers", "worker", "--task", task, "--seeds", str(seeds),
           "--total-timesteps", str(steps), "--variants", ",".join(variants), "--matmul-size", str(matmul_size)]
    stdout, error = harness.run_process(cmd, timeout_s, env)
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    out = {"task": task, "seeds": seeds, "xla_flags": xla_flags, **next((x["process"] for x in lines
                                                                         if "process" in x), {})}
    out["variants"] = [x["row"] for x in lines if "row" in x]
    return {**out, "error": error} if error else out


def run(sizes: dict[str, tuple[int, int]], purejaxrl: Path | None, xla_options: list[str], timeout_s: float,
        matmul_size: int = 4096, budget_s: float = float("inf"), progress=print) -> dict:
    """Every task of `sizes` ({task: (agents, steps per agent)}): its levers in one process and PureJaxRL at the
    same size (skipped with its reason without a checkout); then each XLA option in a process of its own. Steps
    that would start after `budget_s` are recorded as not run."""
    start = time.perf_counter()
    processes, peers = [], {}
    late = lambda: time.perf_counter() - start > budget_s  # noqa: E731
    checks = {}
    for task in sizes:
        progress(f"[{task}] the fused step against XLA's on this backend")
        stdout, error = harness.run_process([sys.executable, "-m", "purerl_lab.bench.levers", "check", "--task", task],
                                            timeout_s, {**os.environ, "PURERL_NO_COMPILE_CACHE": "1"})
        checks[task] = {"error": error} if error else json.loads(stdout.strip().splitlines()[-1])
    for task, size in sizes.items():
        progress(f"[{task}] purerl: every lever in one process")
        processes.append(run_worker(task, size, list(VARIANTS), "", matmul_size, timeout_s) if not late() else
                         {"task": task, "seeds": size[0], "xla_flags": "", "variants": [], "error": OUT_OF_TIME})
        progress(f"[{task}] PureJaxRL's ppo.py")
        peers[task] = (harness.run_peer("purejaxrl", task, *size, 2, purejaxrl, python=sys.executable)
                       if not late() else {"peer": "purejaxrl", "seeds": size[0], "error": OUT_OF_TIME})
    for task, size in sizes.items():
        for name in xla_options:
            progress(f"[{task}] purerl under XLA option {name}")
            processes.append({**(run_worker(task, size, ["xla"], XLA_OPTIONS[name], 0, timeout_s) if not late()
                                 else {"task": task, "seeds": size[0], "variants": [], "error": OUT_OF_TIME}),
                              "option": name})
    return {"task": "gpu-levers", "processes": processes, "purejaxrl": peers, "fused_check": checks,
            "machine": harness.machine(),
            "versions": harness.versions(), "targets": TARGETS,
            "command": " ".join(["python -m purerl_lab.bench.levers", *sys.argv[1:]])}


def main() -> None:
    import purerl

    purerl.configure_jax()  # as the command line runs: a CPU device per core, the compile cache, fast threefry
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    worker = sub.add_parser("worker", help="one process: compile and time variants of one task, print JSON")
    worker.add_argument("--task", choices=sorted(TASKS), required=True)
    worker.add_argument("--seeds", type=int, required=True)
    worker.add_argument("--total-timesteps", type=int, required=True)
    worker.add_argument("--variants", required=True)
    worker.add_argument("--matmul-size", type=int, default=0, help="0: no FLOP count and no matmul ceiling")
    sub.add_parser("check", help="the fused step against XLA's on this backend, print JSON").add_argument(
        "--task", choices=sorted(TASKS), required=True)
    call = sub.add_parser("run", help="every task, lever and XLA option, and PureJaxRL; add the record")
    call.add_argument("--sizes", default=",".join(f"{t}={n}:{s}" for t, (n, s) in TASKS.items()),
                      help="TASK=AGENTS:STEPS,...")
    call.add_argument("--matmul-size", type=int, default=4096)
    call.add_argument("--purejaxrl", type=Path, help="a checkout of luchris429/purejaxrl")
    call.add_argument("--xla-options", default=",".join(XLA_OPTIONS))
    call.add_argument("--timeout", type=float, default=240, help="seconds per process")
    call.add_argument("--budget", type=float, default=float("inf"), help="seconds after which no step starts")
    call.add_argument("--records", type=Path, default=Path("docs/benchmarks/records.json"))
    args = parser.parse_args()
    if args.what == "check":
        print(json.dumps(check(args.task)))
        return
    if args.what == "worker":
        variants = args.variants.split(",")
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown:
            parser.error(f"unknown variants {unknown}; choose from {sorted(VARIANTS)}")
        measure(args.task, args.seeds, args.total_timesteps, variants, args.matmul_size)
        return
    try:
        sizes = {task: tuple(int(n) for n in size.split(":")) for task, size in
                 (item.split("=") for item in args.sizes.split(","))}
    except ValueError:
        parser.error(f"--sizes must read TASK=AGENTS:STEPS,..., got {args.sizes!r}")
    options = [o for o in args.xla_options.split(",") if o]
    bad = [t for t in sizes if t not in TASKS] + [o for o in options if o not in XLA_OPTIONS]
    if bad or any(len(size) != 2 or min(size) < 1 for size in sizes.values()):
        parser.error(f"unknown tasks or XLA options, or a bad size: {bad or args.sizes}")
    from purerl_lab.bench import gpu, report

    tick = time.perf_counter()
    record = run(sizes, args.purejaxrl.resolve() if args.purejaxrl else None, options, args.timeout, args.matmul_size,
                 args.budget)
    record["wall_s"] = time.perf_counter() - tick
    record["commit"] = harness.measured_commit()
    records = json.loads(args.records.read_text()) if args.records.exists() else []
    report.save_records(args.records, gpu.merge(records, [record]))
    print(json.dumps(record))


if __name__ == "__main__":
    main()
