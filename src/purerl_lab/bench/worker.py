"""One benchmark measurement of purerl in a fresh process; prints one JSON line.

A fresh process per measurement is the only honest way to time a cold compile
(empty persistent cache) and the start-up of a new process with a warm cache.
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()  # before jax is imported

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402


def tasks() -> dict[str, dict]:
    """The tasks purerl is timed on: each registered algorithm's (`registry.bench_tasks`)."""
    from purerl.algos import registry

    return registry.bench_tasks()


def task_config(task: str, total_timesteps: int | None = None):
    from purerl.algos import registry
    from purerl.algos.settings import apply_preset

    spec = tasks()[task]
    algorithm = registry.get(spec["algo"])
    config, hp = apply_preset(spec["preset"], spec["env"], spec.get("discrete", True), algorithm.presets,
                              algorithm.config, algorithm.hyperparams)
    overrides = dict(spec["overrides"])
    if total_timesteps:
        overrides["total_timesteps"] = total_timesteps
    return config.replace(**overrides), hp


def measure(task: str, seeds: int, repeats: int, total_timesteps: int | None, floor: bool) -> dict:
    import jax

    from purerl.runtime import host_devices
    from purerl.algos import registry
    from purerl_lab.bench import floor as floor_analysis
    from purerl.run.population import Placement, batched, make_members
    from purerl.run.results import final_returns

    host_devices.one_core_for_one_member(seeds)  # before any backend starts, as `purerl train` does
    config, hp = task_config(task, total_timesteps)
    algo = tasks()[task]["algo"]
    train = registry.build(algo, config)
    members = make_members(list(range(seeds)), hp)
    placement = Placement.for_members(seeds)  # the seed axis sharded over the devices, as `purerl train` does
    keys, hps = placement.put(members.keys()), placement.put(members.hyperparams.as_arrays())
    program = batched(train, placement, num_member_args=2, cpu_group=config.cpu_group)  # as `purerl train` runs it
    tick = time.perf_counter()
    compiled = program.lower(keys, hps).compile()
    compile_s = time.perf_counter() - tick
    ready_s = time.perf_counter() - PROCESS_START
    run_times, out = [], None
    for _ in range(repeats):
        tick = time.perf_counter()
        out = jax.block_until_ready(compiled(keys, hps))
        run_times.append(time.perf_counter() - tick)
    run_s = statistics.median(run_times)
    steps = config.env_steps * seeds
    final = final_returns(placement.get(out.metrics["episode_return"], seeds).T)
    result = {
        "system": "purerl",
        "task": task,
        "algo": algo,
        "seeds": seeds,
        "total_timesteps": config.env_steps,
        "compile_s": compile_s,
        "process_start_to_ready_s": ready_s,
        "run_s": run_s,
        "run_s_all": run_times,
        "env_steps_per_s": steps / run_s,
        "agents_per_hour": seeds / (compile_s + run_s) * 3600,
        "final_return": float(final.mean()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "devices": placement.num_devices,
        "backend": jax.default_backend(),
    }
    device_stats = jax.devices()[0].memory_stats() or {}  # GPUs report it; CPUs do not
    if "peak_bytes_in_use" in device_stats:
        result["device_peak_mb"] = device_stats["peak_bytes_in_use"] / 2**20
    if floor and algo in floor_analysis.ANALYSES:
        per_device = placement.padded(seeds) // placement.num_devices
        host_hps = jax.tree.map(lambda x: x[:per_device], members.hyperparams.as_arrays())
        result.update(floor_analysis.ANALYSES[algo](train, members.keys()[:per_device], host_hps, config,
                                                    placement.num_devices, run_s))
    return result


EVOLVE_PRESETS = {"cpu": "cpu", "gpu": "paper"}  # bench preset -> value-loss study preset


def measure_evolve(preset: str, generations: int) -> dict:
    """Meta-evolution throughput of the value-loss study, with a generation's time split into its parts.

    A generation is what `evolve.run` does per step: ask, evaluate (host transfers
    and the compiled inner training runs), tell, then a checkpoint. Whole
    generations are timed after the first (which compiles); each part is then
    timed alone on the same inputs, so the parts can be checked against the whole.
    """
    import tempfile
    from pathlib import Path

    import jax
    import numpy as np

    from purerl.run.checkpoint import Checkpointer
    from purerl.meta.evolve import Evolution
    from purerl_lab.studies import value_loss

    study = EVOLVE_PRESETS[preset]
    task = value_loss.make_task(study)
    config = value_loss.es_config(study)
    evolution = Evolution(task, config)
    inner = value_loss.inner_config(study, total_timesteps=task.info["total_timesteps"])
    agents = config.population_size * config.rollouts
    state = evolution.init_state()
    tick = time.perf_counter()
    state, *_ = evolution.generation(state, 0)
    first_s = time.perf_counter() - tick

    def timed(fn):
        tick = time.perf_counter()
        out = jax.block_until_ready(fn())
        return out, time.perf_counter() - tick

    parts = {name: [] for name in ("generation", "ask", "to_host", "to_device", "inner_training", "from_device",
                                   "tell", "checkpoint")}
    with tempfile.TemporaryDirectory(prefix="purerl-bench-evolve-") as tmp:
        checkpointer = Checkpointer(Path(tmp))
        for index in range(1, generations + 1):
            (state, _, fitness, best), seconds = timed(lambda: evolution.generation(state, index))
            parts["generation"].append(seconds)
            payload = {"es_state": state, "best_params": best}
            parts["checkpoint"].append(timed(lambda: (checkpointer.save(index, payload),
                                                      checkpointer.manager.wait_until_finished()))[1])
            key = jax.random.PRNGKey(index)
            population, seconds = timed(lambda: evolution.strategy.ask(key, state, evolution.params)[0])
            parts["ask"].append(seconds)
            host, seconds = timed(lambda: jax.tree.map(np.asarray, population))
            parts["to_host"].append(seconds)
            placed, seconds = timed(lambda: evolution.placement.put(host))
            parts["to_device"].append(seconds)
            keys = jax.random.split(key, config.rollouts)
            scores, seconds = timed(lambda: evolution._evaluate(placed, keys))
            parts["inner_training"].append(seconds)
            parts["from_device"].append(timed(lambda: evolution.placement.get(scores, config.population_size))[1])
            parts["tell"].append(timed(lambda: evolution.strategy.tell(key, population, -fitness, state,
                                                                       evolution.params)[0])[1])
        checkpointer.close()
    median = {name: statistics.median(values) for name, values in parts.items()}
    cycle = median["generation"] + median["checkpoint"]
    env_steps = agents * inner.env_steps
    return {
        "task": "evolve", "preset": preset, "study_preset": study, "population_size": config.population_size,
        "rollouts": config.rollouts, "generations_measured": generations, "preset_generations": config.generations,
        "inner_total_timesteps": inner.env_steps, "devices": evolution.placement.num_devices,
        "first_generation_s": first_s, "generation_s": median["generation"], "parts_s": median,
        "parts_fraction": {name: value / cycle for name, value in median.items() if name != "generation"},
        "es_overhead_fraction": (median["ask"] + median["tell"]) / cycle,
        "agents_per_hour": agents / cycle * 3600,
        "agents_per_hour_with_compile": agents * config.generations / (first_s + (config.generations - 1) * cycle) * 3600,
        "env_steps_per_s": env_steps / cycle,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "backend": jax.default_backend(),
    }


def main() -> None:
    import purerl

    purerl.configure_jax()  # as the command line runs: a CPU device per core, the compile cache, fast threefry
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", choices=sorted(tasks()) + ["evolve"], default="cartpole")
    parser.add_argument("--preset", choices=sorted(EVOLVE_PRESETS), default="cpu", help="evolve only")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--total-timesteps", type=int)
    parser.add_argument("--floor", action="store_true")
    args = parser.parse_args()
    assert os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.environ.get("PURERL_NO_COMPILE_CACHE")
    if args.task == "evolve":
        print(json.dumps(measure_evolve(args.preset, args.repeats)))
        return
    print(json.dumps(measure(args.task, args.seeds, args.repeats, args.total_timesteps, args.floor)))


if __name__ == "__main__":
    main()
