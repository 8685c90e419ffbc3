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

TASKS = {
    # PPO, CartPole-v1, CleanRL defaults, 500k steps per agent.
    "cartpole": dict(env="CartPole-v1", preset="classic", overrides={}),
    # Breakout-MinAtar with the PureJaxRL MinAtar preset at a budget that fits a 2-core CPU.
    "minatar": dict(env="Breakout-MinAtar", preset="minatar", overrides=dict(total_timesteps=1_048_576)),
}


def task_config(task: str, total_timesteps: int | None = None):
    from purerl.config import apply_preset

    spec = TASKS[task]
    config, hp = apply_preset(spec["preset"], spec["env"], discrete=True)
    overrides = dict(spec["overrides"])
    if total_timesteps:
        overrides["total_timesteps"] = total_timesteps
    return config.replace(**overrides), hp


def measure(task: str, seeds: int, repeats: int, total_timesteps: int | None, floor: bool) -> dict:
    import jax

    from purerl.algos.ppo import make_train
    from purerl.population import Placement, make_members
    from purerl.results import final_returns

    config, hp = task_config(task, total_timesteps)
    train = make_train(config)
    members = make_members(list(range(seeds)), hp)
    placement = Placement.for_members(seeds)  # the seed axis sharded over the devices, as `purerl train` does
    keys, hps = placement.put(members.keys()), placement.put(members.hyperparams.as_arrays())
    program = jax.jit(jax.vmap(train), in_shardings=(placement.sharding,) * 2, out_shardings=placement.sharding)
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
    steps = config.num_updates * config.batch_size * seeds
    final = final_returns(placement.get(out.metrics["episode_return"], seeds).T)
    result = {
        "system": "purerl",
        "task": task,
        "seeds": seeds,
        "total_timesteps": config.num_updates * config.batch_size,
        "compile_s": compile_s,
        "process_start_to_ready_s": ready_s,
        "run_s": run_s,
        "run_s_all": run_times,
        "env_steps_per_s": steps / run_s,
        "agents_per_hour": seeds / (compile_s + run_s) * 3600,
        "final_return": float(final.mean()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "devices": jax.device_count(),
        "backend": jax.default_backend(),
    }
    if floor:
        per_device = placement.padded(seeds) // placement.num_devices
        host_hps = jax.tree.map(lambda x: x[:per_device], members.hyperparams.as_arrays())
        result.update(floor_analysis(train, members.keys()[:per_device], host_hps, config, placement.num_devices, run_s))
    return result


def floor_analysis(train, keys, hps, config, devices: int, run_s: float) -> dict:
    """FLOPs of one update from XLA's cost analysis, the machine's matmul FLOP/s, and rollout vs learn time.

    `keys` and `hps` are one device's share of the members; every device runs the same
    program, so the population's FLOPs are `devices` times that share's.
    """
    import jax
    import jax.numpy as jnp

    state = jax.jit(jax.vmap(train.init))(keys, hps)
    update = jax.jit(jax.vmap(lambda s, h: train.update(0, s, h, None))).lower(state, hps).compile()
    rollout = jax.jit(jax.vmap(lambda s, h: train.rollout(s, h)[0])).lower(state, hps).compile()
    cost = update.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    flops_per_update = float(cost.get("flops", 0.0)) * devices

    def timed(fn, *args, repeats=20):
        jax.block_until_ready(fn(*args))
        times = []
        for _ in range(repeats):
            tick = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times.append(time.perf_counter() - tick)
        return statistics.median(times)

    update_s, rollout_s = timed(update, state, hps), timed(rollout, state, hps)
    n = 2048
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    matmul = jax.jit(lambda x: x @ x)
    matmul_flops = 2 * n**3 / timed(matmul, a, repeats=10)
    achieved = flops_per_update * config.num_updates / run_s
    steps_per_update = config.batch_size * keys.shape[0]
    return {
        "floor_devices": devices,
        "flops_per_update": flops_per_update,
        "achieved_flops_per_s": achieved,
        "matmul_flops_per_s": matmul_flops,
        "fraction_of_matmul_floor": achieved / matmul_flops,
        "rollout_us_per_env_step": rollout_s / steps_per_update * 1e6,
        "learn_us_per_env_step": max(update_s - rollout_s, 0.0) / steps_per_update * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", choices=sorted(TASKS), default="cartpole")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--total-timesteps", type=int)
    parser.add_argument("--floor", action="store_true")
    args = parser.parse_args()
    assert os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.environ.get("PURERL_NO_COMPILE_CACHE")
    print(json.dumps(measure(args.task, args.seeds, args.repeats, args.total_timesteps, args.floor)))


if __name__ == "__main__":
    main()
