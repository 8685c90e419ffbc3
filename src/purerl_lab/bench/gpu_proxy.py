"""GPU speed without a GPU: PPO programs compiled for an H100 here, their kernels counted, their H100 time modelled.

XLA compiles for a GPU it is only told about (`jax.experimental.topologies`, the target config in `gpu_targets/`),
so on a CPU-only machine purerl's and PureJaxRL's whole training programs become XLA's optimised GPU HLO.
`hlo_count` reads each one's kernels (launches weighted by loop trip counts, bytes, FLOPs) and loop iterations,
and a per-kernel cost model, fitted to every H100 time `docs/benchmarks.md` records, turns them into seconds:

    time = sum over launches of max(launch floor, bytes / bandwidth, FLOPs / throughput)
           + loop iterations x the cost of one (its predicate goes back to the host)

The CUDA plugin lives only in this benchmark's own venv (`PROXY`, built like a peer's), never in purerl's:

    purerl bench --task gpu-proxy --purejaxrl CHECKOUT       # every program, the fit, the report section
    python -m purerl_lab.bench.gpu_proxy worker --system purerl --task cartpole --seeds 2048 --variant fused
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

TARGET = Path(__file__).resolve().parent / "gpu_targets" / "h100_sxm.txtpb"
TASKS = {"cartpole": (1, 256, 2048), "minatar": (1, 16, 256)}  # the widths the report compares
GOALS = {("cartpole", 2048): 3.0, ("minatar", 256): 2.0}  # PureJaxRL's modelled time over purerl's
ON_GPU = "on-a-gpu"
# name -> purerl config overrides: each lever alone; what purerl picks on a GPU, alone and with bf16 matmuls
VARIANTS = {
    "default": {},
    "unroll8": {"rollout_unroll": 8},
    "bf16": {"matmul_dtype": "bfloat16"},
    "fused": {"update_kernel": "fused"},
    "gather": {"minibatch_gather": True},
    "compact": {"compact_obs": True},
    "bootstrap": {"rollout_bootstrap": True},
    ON_GPU: {},  # on top of registry.Algorithm.gpu_defaults, what `purerl train` picks where JAX runs on a GPU
    ON_GPU + "+bf16": {"matmul_dtype": "bfloat16"},
}
WORKER_ENV = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_gpu_autotune_level=0", "PURERL_NO_COMPILE_CACHE": "1"}


# ------------------------------------------------------------------ in the proxy venv: one program
def target_device():
    from jax.experimental import topologies

    topology = topologies.get_topology_desc(platform="cuda", topology="1x1x1", target_config=TARGET.read_text())
    return topology.devices[0]


def _on(device, tree):
    import jax

    sharding = jax.sharding.SingleDeviceSharding(device)
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), tree)


def purerl_program(task: str, seeds: int, total_timesteps: int, overrides: dict, device, on_gpu: bool = False):
    """purerl's program as a GPU runs it (`population.batched` on a GPU: jit of vmap over members); `on_gpu`:
    with the settings purerl picks by itself on a GPU under `overrides`."""
    import jax

    from purerl.algos import registry
    from purerl_lab.bench.worker import task_config
    from purerl.run.population import make_members

    config, hp = task_config(task, total_timesteps)
    if on_gpu:
        from purerl import envs

        chosen = registry.get("ppo").gpu_defaults(config, envs.make(config.env), "mlp", "ppo", "clipped_l2")
        overrides = {**chosen, **overrides}
    config = config.replace(**overrides)
    members = make_members(list(range(seeds)), hp)
    args = _on(device, (members.keys(), members.hyperparams.as_arrays()))
    train = registry.build("ppo", config)
    return jax.jit(jax.vmap(train)).trace(*args), config.num_updates, config.matmul_dtype == "bfloat16"


@functools.lru_cache(maxsize=None)
def _purejaxrl_module(checkout: Path):
    """PureJaxRL's ppo.py from a patched copy of `checkout` (the purejaxrl peer's patches), once per process."""
    import importlib
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent / "peer_scripts"))
    import purejaxrl_ppo

    folder = tempfile.mkdtemp(prefix="purejaxrl-proxy-")
    purejaxrl_ppo.patched_copy(checkout, Path(folder))
    sys.path.insert(0, folder)
    return importlib.import_module("ppo"), purejaxrl_ppo


def purejaxrl_program(checkout: Path, task: str, seeds: int, total_timesteps: int, device):
    """PureJaxRL's own ppo.py at its own config for the task, vmapped over seeds as its README does."""
    import jax
    import jax.numpy as jnp

    ppo, runner = _purejaxrl_module(checkout)
    config = runner.purejaxrl_config(checkout, task, total_timesteps)
    train = ppo.make_train(config)
    keys = jax.ShapeDtypeStruct((seeds, 2), jnp.uint32, sharding=jax.sharding.SingleDeviceSharding(device))
    return jax.jit(jax.vmap(train)).trace(keys), config["NUM_UPDATES"], False


def fused_update_work(inst, operand_shapes: list[str], low_precision: bool = False) -> tuple | None:
    """(FLOPs, low-precision FLOPs, bytes read) of one launch of purerl's fused PPO step (`kernels/ppo_update.py`),
    which the HLO shows only as a custom call. Per sample and dense layer: the forward pass and the weight gradient
    (2 x in x out each), and the input gradient for every layer but the first; on the shapes the kernel computes
    (its layout: hidden widths padded, the observation and the heads not). It reads every operand whole but the
    batch's observations, of which it reads the minibatch's rows (by index, as an XLA gather's slice counts)."""
    from math import prod

    from purerl_lab.bench.hlo_count import dims, shape_bytes

    if "ppo_update" not in inst.attributes:
        return None
    leaves = operand_shapes[8:]  # scalars, the rows to read, six data arrays, then params, mu and nu of each layer
    kernels = [dims(s) for s in leaves[:len(leaves) // 3]][0::2]  # each layer's (kernel, bias)
    rows, obs = dims(operand_shapes[1]), operand_shapes[2]
    samples, agents = rows[-1], (rows[0] if len(rows) == 2 else 1)
    first = {0, len(kernels) // 2}  # the actor's and the critic's first layers take the observation
    per_sample = sum((4 if i in first else 6) * prod(p[-2:]) for i, p in enumerate(kernels))
    flops = float(agents * samples * per_sample)
    read = sum(shape_bytes(s) for s in operand_shapes) - shape_bytes(obs) * (1 - samples / dims(obs)[-2])
    return flops, flops if low_precision else 0.0, read


def measure_program(traced, num_updates: int, low_precision: bool = False) -> dict:
    from purerl_lab.bench import hlo_count

    tick = time.perf_counter()
    text = traced.lower(lowering_platforms=("cuda",)).compile().as_text()
    compile_s = time.perf_counter() - tick
    counts = hlo_count.count(text, functools.partial(fused_update_work, low_precision=low_precision))
    merged: dict[tuple, int] = {}
    for k in counts.kernels:  # kernels of equal work, merged: what the cost model needs, and small
        key = (k.kind, round(k.bytes), round(k.flops), round(k.low_precision_flops))
        merged[key] = merged.get(key, 0) + k.launches
    return {**counts.summary(), "num_updates": num_updates, "compile_s": compile_s,
            "kernels": [[kind, b, f, low, n] for (kind, b, f, low), n in sorted(merged.items())]}


def worker(jobs: list[dict], checkout: Path | None) -> None:
    """Each job's program compiled for the target and counted: one JSON line per job, as it finishes."""
    import jax

    device = target_device()
    for job in jobs:
        try:
            if job["system"] == "purerl":
                program = purerl_program(job["task"], job["seeds"], job["total_timesteps"], VARIANTS[job["variant"]],
                                         device, on_gpu=job["variant"].startswith(ON_GPU))
            else:
                program = purejaxrl_program(checkout, job["task"], job["seeds"], job["total_timesteps"], device)
            out = {**job, "jax": jax.__version__, **measure_program(*program)}
        except Exception as error:  # noqa: BLE001 -- a program that does not compile is a result, not a stop
            out = {**job, "error": f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:300]}"}
        print(json.dumps(out), flush=True)


# ------------------------------------------------------------------ in purerl's venv: the whole benchmark
def venv_spec():
    """The proxy's venv: purerl's own requirements with the CUDA build of the same jax, and PureJaxRL's distrax."""
    from importlib import metadata

    from purerl_lab.bench.peer_table import PEERS, Peer

    jax_version = metadata.version("jax")
    own = [r.split(";")[0].strip() for r in metadata.requires("purerl") or [] if "extra ==" not in r]
    own = [r for r in own if not r.startswith(("jax", "jaxlib"))]
    extra = [r for r in PEERS["purejaxrl"].flat_requirements if r.startswith(("distrax", "tfp-nightly"))]
    return Peer(name="gpu-proxy", description="XLA's CUDA compiler for the GPU proxy (compiles, runs nothing)",
                requirements=((f"jax[cuda12]=={jax_version}", f"jaxlib=={jax_version}", *own, *extra),),
                script="", env="")


def h100_points(records: list[dict]) -> list[dict]:
    """Every H100 time the benchmark records hold of the proxy's tasks: purerl's and PureJaxRL's PPO, by width."""
    points = []
    for record in records:
        if ("H100" not in ((record.get("machine") or {}).get("gpu") or {}).get("name", "") or "rows" not in record
                or record["task"] not in TASKS):
            continue
        for row in record["rows"]:
            for system in ("purerl", "purejaxrl"):
                result = row.get(system) or {}
                if result.get("run_s") and not result.get("error"):
                    points.append({"system": system, "task": record["task"], "seeds": row["seeds"],
                                   "total_timesteps": int(result["total_timesteps"]), "measured_s": result["run_s"],
                                   "jax": (result.get("versions") or record.get("versions") or {}).get("jax", "?")})
    return points


def run(records: list[dict], purejaxrl: Path | None, python: str, timeout_s: float = 3600, progress=print) -> dict:
    """The fit points' programs and every variant at the report's widths, compiled and counted; the model fitted."""
    from purerl_lab.bench import gpu_model, harness

    points = h100_points(records)
    if not points:
        raise RuntimeError("no H100 times in the benchmark records to fit the model to")
    steps = {(p["system"], p["task"]): p["total_timesteps"] for p in points}
    jobs = [{"system": p["system"], "task": p["task"], "seeds": p["seeds"], "variant": "default",
             "total_timesteps": p["total_timesteps"]} for p in points if purejaxrl or p["system"] == "purerl"]
    jobs += [{"system": "purerl", "task": task, "seeds": seeds, "variant": variant,
              "total_timesteps": steps[("purerl", task)]}  # the budget purerl's H100 time was measured at
             for task, widths in TASKS.items() if ("purerl", task) in steps
             for seeds in widths for variant in VARIANTS if variant != "default"]
    env = {**os.environ, **WORKER_ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    programs = []
    for system, task in [(system, task) for system in ("purejaxrl", "purerl") for task in TASKS]:
        mine = [job for job in jobs if (job["system"], job["task"]) == (system, task)]
        if not mine:
            continue
        progress(f"[gpu-proxy] {system} {task}: {len(mine)} programs compiled for the H100 target")
        cmd = [python, "-m", "purerl_lab.bench.gpu_proxy", "worker", "--jobs", json.dumps(mine)]
        if purejaxrl:
            cmd += ["--checkout", str(purejaxrl)]
        stdout, error = harness.run_process(cmd, timeout_s, env)
        done = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        programs += done + [{**job, "error": error or "not reached"} for job in mine[len(done):]]
    key = lambda p: (p["system"], p["task"], p["seeds"], p.get("variant", "default"),  # noqa: E731
                     p["total_timesteps"])
    counted = {key(p): p for p in programs if not p.get("error")}
    fitted = [(counted[key({**p, "variant": "default"})], p["measured_s"]) for p in points
              if key({**p, "variant": "default"}) in counted]
    model = gpu_model.fit(fitted)
    for p in programs:
        if not p.get("error"):
            p["modelled_s"] = gpu_model.modelled_s(p, model["params"])
            p["terms_s"] = gpu_model.terms(p, model["params"])
    fitted_points = [p for p in points if key({**p, "variant": "default"}) in counted]
    fit_rows = [{**{k: p[k] for k in ("system", "task", "seeds", "measured_s", "jax")}, "error": e, "loo_error": loo}
                for p, e, loo in zip(fitted_points, model["errors"], model["loo_errors"])]
    return {"task": "gpu-proxy", "target": TARGET.name, "target_device": "NVIDIA H100 80GB HBM3",
            "programs": programs, "model": {**model, "points": fit_rows}, "goals": [[*k, v] for k, v in GOALS.items()],
            "variants": VARIANTS, "tasks": TASKS, "gpu_defaults": ON_GPU, "machine": harness.machine(),
            "versions": harness.versions()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("worker", help="in the proxy venv: compile and count programs, one JSON line each")
    one.add_argument("--jobs", required=True, help="JSON list of {system, task, seeds, variant, total_timesteps}")
    one.add_argument("--checkout", type=Path, help="a checkout of luchris429/purejaxrl")
    args = parser.parse_args()
    worker(json.loads(args.jobs), args.checkout)


if __name__ == "__main__":
    main()
