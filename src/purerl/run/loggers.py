"""`--log tensorboard` and `--log wandb`: training metrics sent out once per chunk, from the host (to the
backends of `log_backends`).

The compiled program already keeps one metric row per update in a preallocated buffer, so
logging never reaches into it with a per-step callback: after each chunk the host hands the
chunk's rows to `ChunkLogger.write`. Every member (seed x grid setting) is its own series,
next to an aggregate per setting (mean of each metric over the setting's seeds, and the IQM
of the episode return) where the backend does not aggregate itself (W&B groups runs). The x axis
is env steps per member, as in curves.png and metrics.csv.
Each backend gets at most its `max_points` per series, as means over windows of consecutive updates
(`Windows`): past that many, its charts show a sample anyway, and every point costs the training CPU.
metrics.csv keeps every update. Once per chunk each backend also gets the speed (`time/env_steps_per_s`,
all members' env steps over the chunk's seconds) and `time/wall_s`, the seconds trained so far over
every session (summary.json's `run_s`: compiles and checkpoint saves excluded).
"""

from __future__ import annotations

import math
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from purerl import stats
from purerl.checks import ConfigError
from purerl.run.log_backends import BACKENDS, member_series, wandb_settings

EXTRAS = {"tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb")}  # kind: (module, extra)
MAX_QUEUED = 3  # tasks the writer thread may hold: W&B's opening can outlast the compile by a chunk or two


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
    """Fans one chunk of metrics out to every chosen backend (none: `write` does nothing).

    `wandb` is W&B's project, entity, group and tags (`log_backends.wandb_settings`; by default from W&B's
    variables)."""

    def __init__(self, kinds: list[str], out: Path, labels: list[str], groups: dict[str, list[int]],
                 steps_per_update: int, config: dict, wandb: dict | None = None):
        if "wandb" in kinds and wandb is None:
            wandb = wandb_settings(out, len(labels))
        self.labels, self.groups, self.steps_per_update = labels, groups, steps_per_update
        total_timesteps = config.get("config", {}).get("total_timesteps")
        self.num_updates = total_timesteps // steps_per_update if total_timesteps else None
        self.series = [member_series(label) for label in labels]  # (setting, "seed=N") per member
        self.kinds, self.backends, self.windows, self.first_step, self.closing = kinds, [], [], None, False
        # One background thread opens the backends (W&B starts a service: seconds, overlapped with the compile),
        # then writes each chunk while the next one computes (XLA releases the GIL), in chunk order.
        self.worker = ThreadPoolExecutor(max_workers=1) if kinds else None
        self.queued = deque([self.worker.submit(self._open, Path(out), config, wandb)] if kinds else [])

    def _open(self, out: Path, config: dict, wandb: dict | None) -> None:
        def backend(kind: str):
            extra = (self.labels, wandb) if kind == "wandb" else ()  # W&B opens a run per member
            return BACKENDS[kind](out, config, self.num_updates, *extra)

        self.backends = [backend(kind) for kind in self.kinds]
        self.windows = [Windows(self.num_updates, getattr(backend, "max_points", None)) for backend in self.backends]

    def write(self, start: int, metrics: dict[str, np.ndarray], clock: dict | None = None) -> None:
        """`metrics[name]` is [members, updates] (host arrays) for updates start, start+1, ... of this chunk;
        `clock` is `chunks.run_chunks`' timing (this chunk's `chunk_s`, `run_s` so far), for the speed."""
        if not self.kinds:
            return
        speed = None
        if clock is not None and clock.get("chunk_s", 0) > 0:
            updates = next(iter(metrics.values())).shape[1]
            speed = {"env_steps_per_s": updates * self.steps_per_update * len(self.labels) / clock["chunk_s"],
                     "wall_s": clock["run_s"]}
        self._settle(MAX_QUEUED - 1)
        self.queued.append(self.worker.submit(self._write, start, metrics, speed))

    def _settle(self, keep: int) -> None:
        """Wait until at most `keep` tasks are queued; the errors of the tasks waited for surface here."""
        while len(self.queued) > keep:
            self.queued.popleft().result()

    def _write(self, start: int, metrics: dict[str, np.ndarray], speed: dict | None) -> None:
        num_updates = next(iter(metrics.values())).shape[1]
        steps = (start + 1 + np.arange(num_updates)) * self.steps_per_update
        if self.first_step is None:
            self.first_step = int(steps[0])
        members = {key: {name: values[i] for name, values in metrics.items()} for i, key in enumerate(self.series)}
        series = dict(members)
        for setting, indices in self.groups.items():
            series[(setting, "aggregate")] = _aggregate({name: values[indices] for name, values in metrics.items()})
        for backend, windows in zip(self.backends, self.windows):
            self._send(backend, *windows.add(steps, series if getattr(backend, "aggregates", True) else members))
            if speed is not None:
                backend.write_time(int(steps[-1]), speed, self.first_step)

    def _send(self, backend, steps: np.ndarray, series: dict) -> None:
        """Per series and point, the finite values only: an update in which no episode ended has no return."""
        if not len(steps):
            return
        lists = {key: {name: v.tolist() for name, v in data.items()} for key, data in series.items()}
        points = {key: [{name: v[t] for name, v in data.items() if math.isfinite(v[t])} for t in range(len(steps))]
                  for key, data in lists.items()}
        backend.write(steps.tolist(), points, self.first_step)

    def close_in_background(self) -> None:
        """Queue the backends' closing behind the chunks already queued and return at once: W&B's finish
        waits on its service, which then overlaps the run's own outputs. `close` joins it."""
        if self.worker is not None and not self.closing:
            self.closing = True
            self.queued.append(self.worker.submit(self._close_backends))

    def close(self) -> None:
        """Close every backend (after the chunks already queued) and wait until they are closed."""
        if self.worker is None:
            return
        self.close_in_background()
        try:
            self._settle(0)  # the first error of a queued task is raised here
        finally:
            self.worker.shutdown()

    def _close_backends(self) -> None:
        for backend, windows in zip(self.backends, self.windows):
            try:
                self._send(backend, *windows.flush())  # the last, shorter window
            finally:
                backend.close()


class Windows:
    """Means over windows of consecutive updates (NaNs skipped), sized so a series gets at most `max_points`.

    Windows run across chunk edges: `add` returns the windows a chunk completes and keeps the rest for the next.
    """

    def __init__(self, num_updates: int | None, max_points: int | None):
        self.size = max(1, math.ceil((num_updates or 0) / max_points)) if max_points else 1
        self.steps, self.series = np.zeros(0, np.int64), {}

    def add(self, steps: np.ndarray, series: dict) -> tuple[np.ndarray, dict]:
        """(last env step of each completed window, {key: {name: [windows]}}) for one chunk's updates."""
        if self.size == 1:
            return steps, series
        self.steps = np.concatenate([self.steps, steps])
        self.series = {key: {name: np.concatenate([self.series.get(key, {}).get(name, []), v])
                             for name, v in data.items()} for key, data in series.items()}
        return self._take(len(self.steps) // self.size * self.size)

    def flush(self) -> tuple[np.ndarray, dict]:
        """The last window, shorter than the others (nothing when the updates filled whole windows)."""
        return self._take(len(self.steps))

    def _take(self, count: int) -> tuple[np.ndarray, dict]:
        """The windows in the first `count` updates held: whole ones, or (from `flush`) one shorter one."""
        size = min(self.size, count) or 1
        with warnings.catch_warnings():  # a window in which no episode ended: NaN, skipped
            warnings.simplefilter("ignore", RuntimeWarning)
            means = {key: {name: np.nanmean(v[:count].reshape(-1, size), axis=1) for name, v in data.items()}
                     for key, data in self.series.items()}
        steps = self.steps[size - 1:count:size]
        self.steps = self.steps[count:]
        self.series = {key: {name: v[count:] for name, v in data.items()} for key, data in self.series.items()}
        return steps, means


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
