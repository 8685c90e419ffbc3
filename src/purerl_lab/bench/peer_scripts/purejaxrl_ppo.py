"""PureJaxRL's own `purejaxrl/ppo.py`, N seeds vmapped, on a patched temporary copy; one JSON line on stdout.

The user's checkout is never edited: `ppo.py` and `wrappers.py` are copied to a
temporary directory and the patches in `PATCHES` are applied there, each of which
must match exactly once (otherwise the script stops with a one-line reason). They
are the minimal changes today's gymnax needs:

- `wrappers.py` imports brax and navix at the top for wrappers CartPole and
  MinAtar never use; those three imports are dropped.
- gymnax 1.x's `step` returns six values (terminated and truncated apart);
  PureJaxRL's `FlattenObservationWrapper` unpacks five. It now unpacks six and
  passes on `done = terminated or truncated`, what gymnax 0.x returned as done.
- `ppo.py` initialises the network inside `train`, so under `jax.vmap` the orthogonal
  initialisers become several independent batched QRs, on which jaxlib 0.10's CPU
  runtime can deadlock (0% CPU, forever: 8 MinAtar seeds hung in 2 of 3 tries).
  `jax.custom_batching.sequential_vmap` makes that one call loop over the seeds. The
  keys, and so the parameters, are unchanged; training is still vmapped.

The config is PureJaxRL's own: CartPole's is the dict in `ppo.py`'s `__main__`
block (with `DEBUG` off: its print callback is not part of training), MinAtar's
is the dict in `examples/brax_minatar.ipynb` with `ENV_NAME` set to
Breakout-MinAtar. Only `TOTAL_TIMESTEPS` is set from the command line. Seeds
are vmapped as in PureJaxRL's README: `jax.jit(jax.vmap(make_train(config)))`.

It is the one PureJaxRL runner: on a CPU the harness runs it in the purejaxrl peer
venv; on a GPU machine, which may have no network to build that venv, in purerl's
own Python (which then needs distrax). Either way:
    python purejaxrl_ppo.py --checkout ~/purejaxrl --task cartpole --seeds 8 --total-timesteps 500224
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()

import ast  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from peer_common import FINAL_WINDOW, emit, finite_mean, parse_args, peak_rss_mb, versions  # noqa: E402

BRAX_NAVIX_IMPORTS = (
    "from brax import envs\n"
    "from brax.envs.wrappers.training import EpisodeWrapper, AutoResetWrapper\n"
    "import navix as nx\n"
)
FIVE_VALUE_STEP = (  # in FlattenObservationWrapper.step (the only step followed by a reshape)
    "        obs, state, reward, done, info = self._env.step(key, state, action, params)\n"
    "        obs = jnp.reshape(obs, (-1,))\n"
)
SIX_VALUE_STEP = (
    "        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)\n"
    "        done = jnp.logical_or(terminated, truncated)\n"
    "        info = {k: v for k, v in info.items() if k != 'final_observation'}\n"
    "        obs = jnp.reshape(obs, (-1,))\n"
)
VMAPPED_INIT = "        network_params = network.init(_rng, init_x)\n"
SEQUENTIAL_INIT = ("        network_params = jax.custom_batching.sequential_vmap(\n"
                   "            lambda key: network.init(key, init_x))(_rng)\n")
# (file, old text, new text, why): each old text must occur exactly once.
PATCHES = (
    ("wrappers.py", BRAX_NAVIX_IMPORTS, "", "drop brax/navix imports (unused for gymnax envs)"),
    ("wrappers.py", FIVE_VALUE_STEP, SIX_VALUE_STEP, "FlattenObservationWrapper: gymnax 1.x six-value step; its "
     "new info['final_observation'] is dropped (ppo.py keeps every step's info: 400 GiB at 256 MinAtar seeds)"),
    ("ppo.py", VMAPPED_INIT, SEQUENTIAL_INIT, "network.init runs seed by seed under vmap (jaxlib 0.10's CPU "
     "deadlock on several batched QRs of orthogonal init); the same keys, so the same parameters"),
)
MINATAR_NOTEBOOK = Path("examples") / "brax_minatar.ipynb"


class PatchError(RuntimeError):
    """The checkout does not look like the PureJaxRL this script knows; the message is one line."""


def patched_copy(checkout: Path, into: Path) -> list[str]:
    """Copy ppo.py and wrappers.py from `checkout` into `into` and apply PATCHES; returns what was changed."""
    for name in ("ppo.py", "wrappers.py"):
        source = checkout / "purejaxrl" / name
        if not source.is_file():
            raise PatchError(f"{source} not found: pass a checkout of luchris429/purejaxrl")
        shutil.copyfile(source, into / name)
    applied = []
    for name, old, new, why in PATCHES:
        path = into / name
        text = path.read_text()
        if text.count(old) != 1:
            raise PatchError(f"patch '{why}' expects its text once in {name}, found {text.count(old)} times")
        path.write_text(text.replace(old, new))
        applied.append(f"{name}: {why}")
    return applied


def literal_config(source: str, must_contain: str) -> dict:
    """The first dict literal in `source` that has the key `must_contain` (PureJaxRL keeps configs as literals)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if must_contain in keys:
                return ast.literal_eval(node)
    raise PatchError(f"no config dict with {must_contain} found")


def purejaxrl_config(checkout: Path, task: str, total_timesteps: int) -> dict:
    if task == "cartpole":
        config = literal_config((checkout / "purejaxrl" / "ppo.py").read_text(), "ENV_NAME")
        config["DEBUG"] = False
    else:
        notebook = json.loads((checkout / MINATAR_NOTEBOOK).read_text())
        cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
        source = next((c for c in cells if "-MinAtar" in c and "ENV_NAME" in c), None)
        if source is None:
            raise PatchError(f"no MinAtar config in {checkout / MINATAR_NOTEBOOK}")
        config = literal_config(source, "ENV_NAME")
        config["ENV_NAME"] = "Breakout-MinAtar"
    config["TOTAL_TIMESTEPS"] = total_timesteps
    return config


def checkout_commit(checkout: Path) -> str:
    proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def device_peak_mb(jax) -> float | None:
    """Peak accelerator memory in use (XLA's allocator statistics); None on a CPU."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats["peak_bytes_in_use"] / 2**20 if "peak_bytes_in_use" in stats else None


def main() -> None:
    def extra(parser):
        parser.add_argument("--checkout", type=Path, required=True, help="a checkout of luchris429/purejaxrl")
        parser.add_argument("--task", choices=("cartpole", "minatar"), default="cartpole")
        parser.add_argument("--repeats", type=int, default=1, help="timed runs of the compiled program (median)")

    args = parse_args(__doc__.splitlines()[0], extra)
    checkout = args.checkout.expanduser().resolve()
    with tempfile.TemporaryDirectory(prefix="purejaxrl-patched-") as tmp:
        try:
            applied = patched_copy(checkout, Path(tmp))
            config = purejaxrl_config(checkout, args.task, args.total_timesteps)
        except (PatchError, OSError, ValueError, KeyError) as error:
            sys.exit(f"purejaxrl: {error}")
        sys.path.insert(0, tmp)
        ppo = importlib.import_module("ppo")
        import jax

        train = ppo.make_train(config)  # adds NUM_UPDATES and MINIBATCH_SIZE to config
        keys = jax.random.split(jax.random.PRNGKey(30), args.seeds)  # 30: the key in ppo.py's __main__
        tick = time.perf_counter()
        compiled = jax.jit(jax.vmap(train)).lower(keys).compile()
        compile_s = time.perf_counter() - tick
    ready_s = time.perf_counter() - PROCESS_START
    run_times, out = [], None
    for _ in range(max(args.repeats, 1)):
        out = None  # free the last call's outputs (2048 seeds: ~16 GB of per-step info) before the next
        tick = time.perf_counter()
        out = jax.block_until_ready(compiled(keys))
        run_times.append(time.perf_counter() - tick)
    metrics = jax.device_get(out["metrics"])  # [seeds, updates, steps, envs]
    ended = metrics["returned_episode"][:, -FINAL_WINDOW:]
    returns = metrics["returned_episode_returns"][:, -FINAL_WINDOW:]
    by_seed = [float(r[e].mean()) if e.any() else None for r, e in zip(returns, ended)]
    emit({
        "peer": "purejaxrl",
        "task": args.task,
        "seeds": args.seeds,
        "measured_seeds": args.seeds,
        "extrapolated": False,
        "total_timesteps": args.total_timesteps,
        "env_steps_per_agent": config["NUM_UPDATES"] * config["NUM_STEPS"] * config["NUM_ENVS"],
        "num_updates": config["NUM_UPDATES"],
        "compile_s": compile_s,
        "process_start_to_ready_s": ready_s,
        "run_s": statistics.median(run_times),
        "run_s_all": run_times,
        "final_return": finite_mean(by_seed),
        "final_return_by_seed": by_seed,
        "final_return_kind": f"mean return of the training episodes that ended in the last {FINAL_WINDOW} updates",
        "config": {k: v for k, v in config.items() if k != "DEBUG"},
        "patches": applied,
        "checkout_commit": checkout_commit(checkout),
        "device_peak_mb": device_peak_mb(jax),
        "peak_rss_mb": peak_rss_mb(),
        "backend": jax.default_backend(),
        "versions": versions("jax", "jaxlib", "flax", "optax", "gymnax", "distrax", "numpy"),
    })


if __name__ == "__main__":
    main()
