"""`--log tensorboard` and `--log wandb`: training metrics sent out once per chunk, from the host.

The compiled program already keeps one metric row per update in a preallocated buffer, so
logging never reaches into it with a per-step callback: after each chunk the host hands the
chunk's rows to `ChunkLogger.write`. Every member (seed x grid setting) is its own series,
next to an aggregate per setting (mean of each metric over the setting's seeds, and the IQM
of the episode return). The x axis is env steps per member, as in curves.png and metrics.csv.
TensorBoard gets every update; W&B gets window means (see `WandB`).
"""

from __future__ import annotations

import math
import os
import socket
import time
import urllib.parse
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from purerl import stats
from purerl.config import ConfigError

EXTRAS = {"tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb")}  # kind: (module, extra)
TENSORBOARD_DIR = "tensorboard"
WANDB_DIR = "wandb"
WANDB_POINTS = 250  # most points per W&B series in one run: its charts draw at most 1,000-1,500 points anyway


def check(kinds: list[str]) -> None:
    """One-line error for an unknown logger or one whose package is missing, before anything runs."""
    import importlib.util

    for kind in kinds:
        if kind not in EXTRAS:
            raise ConfigError(f"unknown logger '{kind}'; choose from {', '.join(EXTRAS)}")
        module, extra = EXTRAS[kind]
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f"--log {kind} needs {module}: pip install 'purerl[{extra}]'")


class ChunkLogger:
    """Fans one chunk of metrics out to every chosen backend (none: `write` does nothing)."""

    def __init__(self, kinds: list[str], out: Path, labels: list[str], groups: dict[str, list[int]],
                 steps_per_update: int, config: dict):
        self.labels, self.groups, self.steps_per_update = labels, groups, steps_per_update
        total_timesteps = config.get("config", {}).get("total_timesteps")
        self.num_updates = total_timesteps // steps_per_update if total_timesteps else None
        self.series = [_member_series(label) for label in labels]  # (setting, "seed=N") per member
        self.kinds, self.backends, self.closing = kinds, [], False
        # One background thread opens the backends (W&B starts a service: seconds, overlapped with the compile),
        # then writes each chunk while the next one computes (XLA releases the GIL), in chunk order.
        self.worker = ThreadPoolExecutor(max_workers=1) if kinds else None
        self.pending = self.worker.submit(self._open, Path(out), config) if kinds else None

    def _open(self, out: Path, config: dict) -> None:
        self.backends = [_BACKENDS[kind](out, config, self.num_updates) for kind in self.kinds]

    def write(self, start: int, metrics: dict[str, np.ndarray]) -> None:
        """`metrics[name]` is [members, updates] (host arrays) for updates start, start+1, ... of this chunk."""
        if not self.kinds:
            return
        if self.pending is not None:
            self.pending.result()  # the previous chunk is out, and its errors surface here
        self.pending = self.worker.submit(self._write, start, metrics)

    def _write(self, start: int, metrics: dict[str, np.ndarray]) -> None:
        num_updates = next(iter(metrics.values())).shape[1]
        steps = ((start + 1 + np.arange(num_updates)) * self.steps_per_update).tolist()
        series = {key: {name: values[i] for name, values in metrics.items()} for i, key in enumerate(self.series)}
        for setting, members in self.groups.items():
            series[(setting, "aggregate")] = _aggregate({name: values[members] for name, values in metrics.items()})
        # Per series and update, the finite values only: an update in which no episode ended has no return point.
        points = {key: [{name: v[t] for name, v in lists.items() if np.isfinite(v[t])} for t in range(num_updates)]
                  for key, lists in ((key, {n: v.tolist() for n, v in data.items()}) for key, data in series.items())}
        for backend in self.backends:
            backend.write(steps, points)

    def close_in_background(self) -> None:
        """Queue the backends' closing behind the chunks already queued and return at once: W&B's finish
        waits about a second on its service, which then overlaps the run's own outputs. `close` joins it."""
        if self.worker is not None and not self.closing:
            self.closing, previous = True, self.pending
            self.pending = self.worker.submit(self._close_after, previous)

    def close(self) -> None:
        """Close every backend (after the chunks already queued) and wait until they are closed."""
        if self.worker is None:
            return
        self.close_in_background()
        self.pending.result()
        self.worker.shutdown()

    def _close_after(self, previous) -> None:
        try:
            if previous is not None:
                previous.result()  # the last chunk's errors surface in `close`
        finally:
            for backend in self.backends:
                backend.close()


def _member_series(label: str) -> tuple[str, str]:
    setting, _, seed = label.rpartition(",")
    return (setting or "default", seed)


def _aggregate(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Over one setting's members ([members, updates] each): every metric's mean, and the return's IQM."""
    with warnings.catch_warnings():  # no member of the setting ended an episode this update: NaN, skipped
        warnings.simplefilter("ignore", RuntimeWarning)
        means = {name: np.nanmean(v, axis=0) for name, v in values.items()}
    returns = values["episode_return"]
    finite = np.isfinite(returns)
    iqm = np.full(returns.shape[1], np.nan)
    complete = finite.all(axis=0)  # the usual case, in one vectorised call; the rest column by column
    iqm[complete] = stats.iqm(returns[:, complete], axis=0)
    for t in np.flatnonzero(~complete & finite.any(axis=0)):
        iqm[t] = stats.iqm(returns[finite[:, t], t])
    means["episode_return_iqm"] = iqm
    return means


class TensorBoard:
    """Event files under RUN/tensorboard/SETTING/{seed=N,aggregate}: TensorBoard shows each as a run.

    Events go straight to tensorboardX's synchronous file writer: `ChunkLogger` already writes from its own
    thread, and SummaryWriter's queue and second thread cost more CPU than the writing itself.
    """

    def __init__(self, out: Path, config: dict, num_updates: int | None):
        self.root, self.writers, self.purge_step = out / TENSORBOARD_DIR, {}, None

    def write(self, steps: list[int], points: dict) -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary

        if self.purge_step is None:  # a resumed run drops what an earlier session logged past its checkpoint
            self.purge_step = steps[0]
        for (setting, series), rows in points.items():
            writer = self._writer(setting, series)
            for step, row in zip(steps, rows):  # one event per update holding every metric
                values = [Summary.Value(tag=name, simple_value=value) for name, value in row.items()]
                writer.write_event(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))
        self.flush()

    def _writer(self, setting: str, series: str):
        if (setting, series) not in self.writers:
            from tensorboardX.event_file_writer import EventsWriter
            from tensorboardX.proto.event_pb2 import Event, SessionLog

            directory = self.root / setting / series
            directory.mkdir(parents=True, exist_ok=True)
            writer = EventsWriter(str(directory / "events"))
            if self.purge_step:  # TensorBoard discards the older file's events from this step on
                writer.write_event(Event(wall_time=time.time(), step=self.purge_step,
                                         session_log=SessionLog(status=SessionLog.START)))
            self.writers[(setting, series)] = writer
        return self.writers[(setting, series)]

    def flush(self) -> None:
        for writer in self.writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


class WandB:
    """One W&B run per purerl run (its config attached), with a series per member and per setting aggregate.

    Each `run.log` is one IPC round trip to W&B's service whose cost grows with the keys (about 3 ms for 8
    members' metrics on two busy cores), so logging every update of a small task like CartPole costs more
    than the 5% budget. W&B therefore gets one point per window of consecutive updates, the mean of each
    metric over the window, with windows sized to send at most `WANDB_POINTS` per series; metrics.csv and
    TensorBoard keep every update. Without a network connection it logs offline into RUN/wandb
    (`wandb sync` uploads it later); WANDB_MODE, when set, decides instead.
    """

    def __init__(self, out: Path, config: dict, num_updates: int | None):
        import wandb

        mode = os.environ.get("WANDB_MODE") or ("online" if _reachable(wandb.Settings().base_url) else "offline")
        (out / WANDB_DIR).mkdir(exist_ok=True)
        self.run = wandb.init(dir=str(out), name=out.name, config=config, mode=mode, reinit="create_new")
        self.run.define_metric("*", step_metric="env_steps")
        self.window = max(1, math.ceil((num_updates or 0) / WANDB_POINTS))
        self.pending: list[tuple[int, dict]] = []  # this window's updates so far: (env steps, {key: value})

    def write(self, steps: list[int], points: dict) -> None:
        for t, step in enumerate(steps):
            self.pending.append((step, {f"{setting}/{series}/{name}": value
                                        for (setting, series), rows in points.items()
                                        for name, value in rows[t].items()}))
            if len(self.pending) == self.window:
                self._log_window()

    def _log_window(self) -> None:
        """The window's mean of each key over the updates that have it, at the window's last env step."""
        sums, counts = {}, {}
        for _, data in self.pending:
            for key, value in data.items():
                sums[key], counts[key] = sums.get(key, 0.0) + value, counts.get(key, 0) + 1
        self.run.log({"env_steps": self.pending[-1][0], **{key: sums[key] / counts[key] for key in sums}})
        self.pending = []

    def close(self) -> None:
        if self.pending:  # the last, shorter window
            self._log_window()
        self.run.finish()


def _reachable(url: str, timeout_s: float = 2.0) -> bool:
    parsed = urllib.parse.urlparse(url)
    try:
        socket.create_connection((parsed.hostname, parsed.port or 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


_BACKENDS = {"tensorboard": TensorBoard, "wandb": WandB}
