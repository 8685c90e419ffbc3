"""What one all-reduce between XLA:CPU host devices costs, against the same loop without it.

Splitting one agent's minibatch over both cores (data parallelism, as Brax's PPO does over GPUs) needs at
least one all-reduce per gradient step. This times `lax.psum` inside a compiled loop, the way a training
program would issue it, so the figure includes the rendezvous of the device threads.

    python benchmarks/collective_cost.py --devices 2 --sizes 2,9155 --iters 2000 --repeats 3
"""
import argparse
import os
import time


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def positive_ints(text: str) -> list[int]:
    return [positive_int(part) for part in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=positive_int, default=2)
    parser.add_argument("--sizes", type=positive_ints, default="2,9155",
                        help="floats per device reduced each iteration, comma-separated")
    parser.add_argument("--iters", type=positive_int, default=2000)
    parser.add_argument("--repeats", type=positive_int, default=3)
    args = parser.parse_args()
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = jax.make_mesh((args.devices,), ("d",))

    def looped(reduce):
        def program(x):
            return jax.lax.fori_loop(0, args.iters, lambda _, carry: reduce(carry * 0.5) * 0.9, x)
        return jax.jit(jax.shard_map(program, mesh=mesh, in_specs=PartitionSpec("d"),
                                     out_specs=PartitionSpec("d"), check_vma=False))

    variants = {"psum": looped(lambda x: jax.lax.psum(x, "d")), "no collective": looped(lambda x: x + 0.1)}
    print(f"{jax.devices()[0].device_kind}, {args.devices} host devices, {args.iters} iterations per run")
    for size in args.sizes:
        x = jax.device_put(jnp.ones((args.devices * size,)), NamedSharding(mesh, PartitionSpec("d")))
        best = {}
        for name, program in variants.items():
            program(x).block_until_ready()
            for _ in range(args.repeats):
                start = time.perf_counter()
                program(x).block_until_ready()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
        print(", ".join(f"{name}: {seconds / args.iters * 1e6:.2f} us per iteration"
                        for name, seconds in best.items()) + f" ({size} floats per device)")


if __name__ == "__main__":
    main()
