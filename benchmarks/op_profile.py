"""Where one compiled training program spends its time, op by op (what found the per-core gap in README.md).

Runs the program once to warm up, once timed, once under `jax.profiler`, then reads the trace back with
`jax.profiler.ProfileData` and sums each XLA op's time on the CPU's runtime threads, naming each op by the
`op_name` its HLO metadata gives (which jax function made it). Pin it to one core to compare like with like:

    PURERL_HOST_DEVICES=1 taskset -c 0 python benchmarks/op_profile.py --task minatar --seeds 8 --total-timesteps 32768
    PURERL_HOST_DEVICES=1 taskset -c 0 python benchmarks/op_profile.py ... --variant "one-sequence minibatches (before)"

With `--purejaxrl PATH` (a checkout of luchris429/purejaxrl; run it with the purejaxrl peer venv's python)
it profiles PureJaxRL's own `ppo.py` instead, patched as `purerl bench` runs it.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
from pathlib import Path

import jax
from jax.profiler import ProfileData

HARNESS_EVENTS = ("end:", "ThreadpoolListener", "ThunkExecutor")  # markers and envelopes around the ops
PEER_SCRIPTS = Path(__file__).resolve().parents[1] / "src" / "purerl" / "bench" / "peer_scripts"


def op_times(compiled, args) -> tuple[float, collections.Counter, collections.Counter]:
    """(timed run s, total ns per op name, calls per op name) of one profiled run."""
    jax.block_until_ready(compiled(*args))
    tick = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    run_s = time.perf_counter() - tick
    with tempfile.TemporaryDirectory() as trace_dir:
        with jax.profiler.trace(trace_dir):
            jax.block_until_ready(compiled(*args))
        profile = ProfileData.from_file(str(next(Path(trace_dir).rglob("*.xplane.pb"))))
    total, calls = collections.Counter(), collections.Counter()
    for plane in profile.planes:
        for line in plane.lines if plane.name == "/host:CPU" else ():
            for event in line.events if line.name != "python" else ():
                if not event.name.startswith(HARNESS_EVENTS):
                    total[event.name] += event.duration_ns
                    calls[event.name] += 1
    return run_s, total, calls


def report(label: str, compiled, args, top: int) -> None:
    run_s, total, calls = op_times(compiled, args)
    source = dict(re.findall(r'^\s*(?:ROOT )?%?([\w.\-]+) = .*?metadata=\{op_name="([^"]+)"', compiled.as_text(), re.M))
    print(f"{label}: {run_s:.3f} s per run (a `while` op's time includes the ops of its body)")
    print("| ms | calls | op | made by |\n|---|---|---|---|")
    for name, ns in total.most_common(top):
        print(f"| {ns / 1e6:.1f} | {calls[name]} | {name} | {source.get(name, '')[-100:]} |")


def main() -> None:
    import purerl

    purerl.configure_jax()  # as the command line runs: a CPU device per core, the compile cache, fast threefry
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="minatar", choices=("cartpole", "minatar"))
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--total-timesteps", type=int, default=32768, help="steps per agent")
    parser.add_argument("--variant", default="purerl", help="a name from ab_variants.VARIANTS")
    parser.add_argument("--purejaxrl", type=Path, help="profile PureJaxRL's ppo.py from this checkout instead")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    keys = jax.random.split(jax.random.PRNGKey(0), args.seeds)
    if args.purejaxrl:
        sys.path.insert(0, str(PEER_SCRIPTS))  # the peer venv has no purerl: its runner is imported by path
        import purejaxrl_ppo as runner

        copy = Path(tempfile.mkdtemp(prefix="purejaxrl-"))
        runner.patched_copy(args.purejaxrl, copy)
        sys.path.insert(0, str(copy))
        import ppo

        train = ppo.make_train(runner.purejaxrl_config(args.purejaxrl, args.task, args.total_timesteps))
        report(f"purejaxrl {args.task} x{args.seeds}", jax.jit(jax.vmap(train)).lower(keys).compile(), (keys,),
               args.top)
        return
    from ab_variants import VARIANTS

    from purerl_lab.bench.worker import task_config
    from purerl.run.population import make_members

    config, hp = task_config(args.task, args.total_timesteps)
    members = make_members(list(range(args.seeds)), hp)
    inputs = (members.keys(), members.hyperparams.as_arrays())
    compiled = jax.jit(jax.vmap(VARIANTS[args.variant](config))).lower(*inputs).compile()
    report(f"{args.variant} {args.task} x{args.seeds}", compiled, inputs, args.top)


if __name__ == "__main__":
    main()
