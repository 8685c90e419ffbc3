"""The W&B logging process behind `--log wandb`, run as a script (`python -P wandb_process.py`).

`import wandb` and `wandb.init` cost about 0.7 s of CPU, and each `run.log` is a round trip to W&B's
service. In their own process they use the core that the trainer leaves idle while it imports and
compiles, and they never hold the trainer's GIL. This file imports only the standard library and
wandb (not purerl, whose import loads jax), so it starts in a fraction of a second.

It reads pickled messages from stdin: first the run's `dict(out=..., config=...)`, then
`(steps, points)` per batch of points (`loggers.WandB.write`); end of input finishes the run.
Any error ends the process with a traceback on stderr and a nonzero exit, which the trainer reports.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import urllib.parse
from pathlib import Path

DIRECTORY = "wandb"  # under the run directory: offline runs, and W&B's own files


def serve(stream) -> None:
    """Open the W&B run, log every batch of points, and finish the run at the end of `stream`."""
    import wandb

    opening = pickle.load(stream)
    out = Path(opening["out"])
    mode = os.environ.get("WANDB_MODE") or ("online" if reachable(wandb.Settings().base_url) else "offline")
    (out / DIRECTORY).mkdir(exist_ok=True)
    run = wandb.init(dir=str(out), name=out.name, config=opening["config"], mode=mode, reinit="create_new")
    run.define_metric("*", step_metric="env_steps")
    try:
        while True:
            try:
                steps, points = pickle.load(stream)
            except EOFError:
                return
            for t, step in enumerate(steps):
                run.log({"env_steps": step, **{f"{setting}/{series}/{name}": value
                                                for (setting, series), rows in points.items()
                                                for name, value in rows[t].items()}})
    finally:
        run.finish()


def reachable(url: str, timeout_s: float = 2.0) -> bool:
    parsed = urllib.parse.urlparse(url)
    try:
        socket.create_connection((parsed.hostname, parsed.port or 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


if __name__ == "__main__":
    serve(sys.stdin.buffer)
