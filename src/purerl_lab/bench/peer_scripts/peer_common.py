"""Helpers shared by the peer scripts. Standard library only: it runs in every peer venv."""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import sys
from importlib import metadata

# The CleanRL / PureJaxRL CartPole PPO settings that purerl's "classic" preset uses.
CLEANRL_CARTPOLE = {
    "num_envs": 4,
    "num_steps": 128,
    "lr": 2.5e-4,
    "anneal_lr": True,
    "update_epochs": 4,
    "num_minibatches": 4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_eps": 0.2,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
    "hidden_sizes": [64, 64],
    "activation": "tanh",
    "adam_eps": 1e-5,
}

# Final return = mean return of the episodes that end in the last FINAL_WINDOW
# updates (purerl averages its last 10 updates too).
FINAL_WINDOW = 10


def parse_args(description: str, extra=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, default=1, help="number of agents (seeds 0..N-1)")
    parser.add_argument("--total-timesteps", type=int, default=500_000, help="env steps per agent")
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    batch = CLEANRL_CARTPOLE["num_envs"] * CLEANRL_CARTPOLE["num_steps"]
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.total_timesteps < batch:
        parser.error(f"--total-timesteps must be >= one batch ({batch}), got {args.total_timesteps}")
    return args


def num_updates(total_timesteps: int) -> int:
    """Whole updates only, as CleanRL does: total_timesteps // (num_envs * num_steps)."""
    return total_timesteps // (CLEANRL_CARTPOLE["num_envs"] * CLEANRL_CARTPOLE["num_steps"])


def versions(*packages: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kib / (1024.0 if sys.platform != "darwin" else 1024.0 * 1024.0), 1)


def finite_mean(values) -> float | None:
    values = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return sum(values) / len(values) if values else None


def emit(result: dict) -> None:
    """The one JSON line on stdout that run_peer parses."""
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
