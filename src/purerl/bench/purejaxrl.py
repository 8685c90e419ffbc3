"""PureJaxRL's own `ppo.py`, run beside purerl in the current Python (a GPU machine has no network for a venv).

The checkout's `purejaxrl/ppo.py` and `wrappers.py` are copied to a temporary
directory with only the changes today's gymnax needs (`PATCHES`), and its
`make_train` is run as PureJaxRL runs many seeds: `jax.jit(jax.vmap(train))`.
Compile is timed apart (lower + compile); run time is the median of timed calls
of the compiled program. Command line (prints one JSON line):

    python -m purerl.bench.purejaxrl --checkout PATH --task cartpole --seeds 2048
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

# Each patch: (file, text in the authors' file, replacement, why). Anything else is their code unchanged.
_SIX_VALUES = (
    "wrappers.py",
    "obs, state, reward, done, info = self._env.step(key, state, action, params)",
    "obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)\n"
    "        done = jnp.logical_or(terminated, truncated)\n"
    "        info = {k: v for k, v in info.items() if k != 'final_observation'}",
    "gymnax 1.x's step returns six values (terminated, truncated); FlattenObservationWrapper merges them into "
    "done, which PureJaxRL treats as terminal, and drops the info['final_observation'] that gymnax 0.x did not "
    "have (ppo.py returns every step's info: 400 GiB at 256 MinAtar seeds)",
)
PATCHES = (
    ("wrappers.py", "from brax import envs\n", "", "brax is only for its Brax wrappers (unused here)"),
    ("wrappers.py", "from brax.envs.wrappers.training import EpisodeWrapper, AutoResetWrapper\n", "", "as above"),
    ("wrappers.py", "import navix as nx\n", "", "navix is only for its Navix wrapper (unused here)"),
    _SIX_VALUES,
)
# The authors' configs: ppo.py's __main__ (CartPole), and examples/brax_minatar.ipynb's MinAtar one on Breakout at
# purerl's MinAtar bench budget; DEBUG off.
CONFIGS = {
    "cartpole": dict(LR=2.5e-4, NUM_ENVS=4, NUM_STEPS=128, TOTAL_TIMESTEPS=5e5, UPDATE_EPOCHS=4, NUM_MINIBATCHES=4,
                     GAMMA=0.99, GAE_LAMBDA=0.95, CLIP_EPS=0.2, ENT_COEF=0.01, VF_COEF=0.5, MAX_GRAD_NORM=0.5,
                     ACTIVATION="tanh", ENV_NAME="CartPole-v1", ANNEAL_LR=True, DEBUG=False),
    "minatar": dict(LR=5e-3, NUM_ENVS=64, NUM_STEPS=128, TOTAL_TIMESTEPS=1_048_576, UPDATE_EPOCHS=4,
                    NUM_MINIBATCHES=8, GAMMA=0.99, GAE_LAMBDA=0.95, CLIP_EPS=0.2, ENT_COEF=0.01, VF_COEF=0.5,
                    MAX_GRAD_NORM=0.5, ACTIVATION="relu", ENV_NAME="Breakout-MinAtar", ANNEAL_LR=True, DEBUG=False),
}
FINAL_WINDOW = 10  # updates; purerl's final return averages its last 10 updates too
DESCRIPTION = "PureJaxRL's own ppo.py (luchris429/purejaxrl), N seeds vmapped in one jitted program, same Python"
MISMATCHES = tuple(f"patched: {why}" for *_, why in PATCHES if why != "as above") + (
    "Time limits: PureJaxRL treats a truncation as terminal (no bootstrap); purerl bootstraps it.",
    "final_return: mean return of training episodes ending in the last 10 updates (as purerl).",
)


class PatchError(RuntimeError):
    """The checkout's files no longer hold the text a patch expects; the message is one line."""


def patched_copy(checkout: Path, into: Path) -> Path:
    """ppo.py and wrappers.py of `checkout` with `PATCHES` applied, written into `into`."""
    source = Path(checkout) / "purejaxrl"
    texts = {name: (source / name).read_text() for name in ("ppo.py", "wrappers.py")}
    for name, old, new, _ in PATCHES:
        if texts[name].count(old) < 1:
            raise PatchError(f"{source / name} does not contain {old.strip()!r}: not the expected PureJaxRL")
        texts[name] = texts[name].replace(old, new)
    for name, text in texts.items():
        (into / name).write_text(text)
    return into


def checkout_commit(checkout: Path) -> str:
    proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def peer_info(checkout: Path) -> dict:
    """What the report says of this peer (the harness's peer-notes format)."""
    commit = checkout_commit(checkout)
    return {"description": DESCRIPTION, "requirements": [f"purejaxrl@{commit}"],
            "install": f"Run in purerl's own Python from a checkout at commit {commit}.", "mismatches": list(MISMATCHES)}


def run(checkout: Path, task: str, seeds: int, repeats: int, total_timesteps: int | None,
        timeout_s: float = 3600) -> dict:
    """`measure` in a fresh process of this Python; a failure is a result with a one-line `error`."""
    cmd = [sys.executable, "-m", "purerl.bench.purejaxrl", "--checkout", str(checkout), "--task", task,
           "--seeds", str(seeds), "--repeats", str(repeats)]
    cmd += ["--total-timesteps", str(total_timesteps)] if total_timesteps else []
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"peer": "purejaxrl", "seeds": seeds, "error": f"timed out after {timeout_s:.0f} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"peer": "purejaxrl", "seeds": seeds, "error": f"exit {proc.returncode}: {last}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(checkout: Path, task: str, seeds: int, repeats: int, total_timesteps: int | None) -> dict:
    import jax
    import numpy as np

    config = dict(CONFIGS[task])
    if total_timesteps:
        config["TOTAL_TIMESTEPS"] = total_timesteps
    with tempfile.TemporaryDirectory(prefix="purejaxrl-") as tmp:
        sys.path.insert(0, str(patched_copy(checkout, Path(tmp))))
        import ppo  # the patched copy of the authors' file

        train = jax.jit(jax.vmap(ppo.make_train(config)))
    keys = jax.random.split(jax.random.PRNGKey(30), seeds)
    tick = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_s = time.perf_counter() - tick
    ready_s = time.perf_counter() - PROCESS_START
    run_times, out = [], None
    for _ in range(repeats):
        out = None  # free the last call's outputs (2048 seeds: ~16 GB of per-step info) before the next
        tick = time.perf_counter()
        out = jax.block_until_ready(compiled(keys))
        run_times.append(time.perf_counter() - tick)
    run_s = statistics.median(run_times)
    info = out["metrics"]  # [seeds, updates, steps, envs]
    final = jax.jit(_final_return)(info["returned_episode_returns"], info["returned_episode"])
    steps = config["NUM_UPDATES"] * config["NUM_STEPS"] * config["NUM_ENVS"]
    result = {
        "peer": "purejaxrl", "task": task, "seeds": seeds, "total_timesteps": steps, "compile_s": compile_s,
        "process_start_to_ready_s": ready_s, "run_s": run_s, "run_s_all": run_times,
        "env_steps_per_s": steps * seeds / run_s, "agents_per_hour": seeds / (compile_s + run_s) * 3600,
        "final_return": float(np.nanmean(np.asarray(final))),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "backend": jax.default_backend(),
        "patches": [why for *_, why in PATCHES], "error": None,
    }
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        result["device_peak_mb"] = stats["peak_bytes_in_use"] / 2**20
    return result


def _final_return(returns, ended):
    """Per seed: mean return of the episodes that end in the last FINAL_WINDOW updates."""
    import jax.numpy as jnp

    returns, ended = returns[:, -FINAL_WINDOW:], ended[:, -FINAL_WINDOW:]
    axes = tuple(range(1, returns.ndim))
    return (returns * ended).sum(axes) / jnp.maximum(ended.sum(axes), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkout", type=Path, required=True, help="a checkout of luchris429/purejaxrl")
    parser.add_argument("--task", choices=sorted(CONFIGS), default="cartpole")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--total-timesteps", type=int)
    args = parser.parse_args()
    print(json.dumps(measure(args.checkout, args.task, args.seeds, args.repeats, args.total_timesteps)))


if __name__ == "__main__":
    main()
