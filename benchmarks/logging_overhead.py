"""What `--log tensorboard` and `--log wandb` cost a training run, measured side by side.

Each repeat runs `purerl train` in fresh processes, once per logger in turn (none,
tensorboard, wandb in W&B's offline mode), so every logger shares the machine's
state. It reports the median process wall time (imports, compile, training,
writing) and the median `run_s` that the run records, and each one's overhead
against no logger. Needs `purerl[tensorboard,wandb]`:

    python benchmarks/logging_overhead.py --repeats 3

`--against SRC` adds each logger run from another purerl source tree (a `git worktree` of an earlier
commit, its `src` folder), in the same turns, to measure what a change to the loggers bought.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOGGERS = ("none", "tensorboard", "wandb")


def train(logger: str, out: Path, args, src: str | None = None) -> tuple[float, float]:
    """(process wall s, recorded run_s) of one `purerl train` run (purerl imported from `src` if given)."""
    cmd = [sys.executable, "-m", "purerl.cli", "train", "--env", args.env, "--seeds", str(args.seeds),
           "--total-timesteps", str(args.total_timesteps), "--out", str(out), "--no-progress"]
    cmd += [] if logger == "none" else ["--log", logger]
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(out.parent))
    if src:
        env["PYTHONPATH"] = src
    tick = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - tick
    return wall, json.loads((out / "summary.json").read_text())["run_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--total-timesteps", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", metavar="SRC", help="also run each logger from this purerl source tree")
    args = parser.parse_args()
    variants = {logger: (logger, None) for logger in LOGGERS}
    if args.against:
        variants.update({f"{logger} @ {args.against}": (logger, args.against) for logger in LOGGERS[1:]})
    times = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="purerl-logging-") as tmp:
        for repeat in range(args.repeats):
            for i, (name, (logger, src)) in enumerate(variants.items()):
                times[name].append(train(logger, Path(tmp) / f"{i}-{repeat}", args, src))
    base_wall = statistics.median(w for w, _ in times["none"])
    base_run = statistics.median(r for _, r in times["none"])
    print(f"`python benchmarks/logging_overhead.py --env {args.env} --seeds {args.seeds} "
          f"--total-timesteps {args.total_timesteps} --repeats {args.repeats}"
          f"{f' --against {args.against}' if args.against else ''}`, load {os.getloadavg()[0]:.1f}\n")
    print("| logger | process wall s | overhead | run_s | overhead |\n|---|---|---|---|---|")
    for logger, runs in times.items():
        wall, run = statistics.median(w for w, _ in runs), statistics.median(r for _, r in runs)
        print(f"| {logger} | {wall:.2f} | {wall / base_wall - 1:+.1%} | {run:.2f} | {run / base_run - 1:+.1%} |")


if __name__ == "__main__":
    main()
