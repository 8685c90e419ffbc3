"""The W&B logging process behind `--log wandb`, run as a script (`python -P wandb_process.py`).

`import wandb` and `wandb.init` cost about 0.7 s of CPU, and each `run.log` is a round trip to W&B's
service. In their own process they use the core that the trainer leaves idle while it imports and
compiles, and they never hold the trainer's GIL. This file imports only the standard library and
wandb (not purerl, whose import loads jax), so it starts in a fraction of a second.

It reads pickled messages from stdin: first the run's `dict(out, members, project, entity, group, tags)`
(`log_backends.WandB`), which opens one W&B run per member, then `("points", steps, points)` per batch of
a member's window means and `("time", step, values)` per chunk's speed; end of input finishes the runs.
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
    """Open a W&B run per member, log every batch of points, and finish the runs at the end of `stream`."""
    import wandb

    opening = pickle.load(stream)
    out = Path(opening["out"])
    mode = os.environ.get("WANDB_MODE") or ("online" if reachable(wandb.Settings().base_url) else "offline")
    (out / DIRECTORY).mkdir(exist_ok=True)
    runs = {}
    try:
        for i, member in enumerate(opening["members"]):  # a group per experiment, a job type per grid setting
            config = member["config"]
            run = wandb.init(dir=str(out), name=f"{out.name}/{config['member']}", group=opening["group"],
                             job_type=config["setting"], project=opening["project"], entity=opening["entity"],
                             tags=opening["tags"], config=config, mode=mode, reinit="create_new",
                             settings=wandb.Settings(quiet=i > 0))  # W&B's banner and summary once, not per member
            run.define_metric("*", step_metric="env_steps")
            runs[tuple(member["series"])] = run
        while True:
            try:
                message = pickle.load(stream)
            except EOFError:
                return
            if message[0] == "time":
                _, step, values = message
                for run in runs.values():
                    run.log({"env_steps": step, **values})
                continue
            _, steps, points = message
            for key, rows in points.items():
                run = runs[key]
                for step, row in zip(steps, rows):
                    if row:  # a window in which no value of the member was finite: nothing to log
                        run.log({"env_steps": step, **row})
    finally:
        for run in runs.values():
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
