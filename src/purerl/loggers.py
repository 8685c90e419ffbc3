"""`--log tensorboard` and `--log wandb`: training metrics sent out once per chunk, from the host.

The compiled program already keeps one metric row per update in a preallocated buffer, so
logging never reaches into it with a per-step callback: after each chunk the host hands the
chunk's rows to `ChunkLogger.write`. Every member (seed x grid setting) is its own series,
next to an aggregate per setting (mean of each metric over the setting's seeds, and the IQM
of the episode return). The x axis is env steps per member, as in curves.png and metrics.csv.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
import warnings
from pathlib import Path

import numpy as np

from purerl import stats
from purerl.config import ConfigError

EXTRAS = {"tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb")}  # kind: (module, extra)
TENSORBOARD_DIR = "tensorboard"
WANDB_DIR = "wandb"


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
        self.series = [_member_series(label) for label in labels]  # (setting, "seed=N") per member
        self.backends = [_BACKENDS[kind](Path(out), config) for kind in kinds]

    def write(self, start: int, metrics: dict[str, np.ndarray]) -> None:
        """`metrics[name]` is [members, updates] for updates start, start+1, ... of this chunk."""
        if not self.backends:
            return
        num_updates = next(iter(metrics.values())).shape[1]
        for backend in self.backends:
            backend.begin((start + 1) * self.steps_per_update)
        for t in range(num_updates):
            step = (start + t + 1) * self.steps_per_update
            rows = {}
            for name, values in metrics.items():
                for i, (setting, seed) in enumerate(self.series):
                    rows[(setting, seed, name)] = values[i, t]
            for setting, members in self.groups.items():
                rows.update(_aggregate(setting, {name: values[members, t] for name, values in metrics.items()}))
            finite = {key: float(v) for key, v in rows.items() if np.isfinite(v)}  # no episode ended: no point
            for backend in self.backends:
                backend.write(step, finite)
        for backend in self.backends:
            backend.flush()

    def close(self) -> None:
        for backend in self.backends:
            backend.close()


def _member_series(label: str) -> tuple[str, str]:
    setting, _, seed = label.rpartition(",")
    return (setting or "default", seed)


def _aggregate(setting: str, values: dict[str, np.ndarray]) -> dict:
    with warnings.catch_warnings():  # no member of the setting ended an episode this update: NaN, skipped
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = {(setting, "aggregate", name): np.nanmean(v) for name, v in values.items()}
        returns = values["episode_return"]
        finite = returns[np.isfinite(returns)]
        rows[(setting, "aggregate", "episode_return_iqm")] = stats.iqm(finite) if finite.size else np.nan
    return rows


class TensorBoard:
    """Event files under RUN/tensorboard/SETTING/{seed=N,aggregate}: TensorBoard shows each as a run."""

    def __init__(self, out: Path, config: dict):
        self.root, self.writers, self.purge_step = out / TENSORBOARD_DIR, {}, None

    def begin(self, first_step: int) -> None:
        if self.purge_step is None:  # a resumed run drops what an earlier session logged past its checkpoint
            self.purge_step = first_step

    def write(self, step: int, rows: dict) -> None:
        for (setting, series, name), value in rows.items():
            self._writer(setting, series).add_scalar(name, value, step)

    def _writer(self, setting: str, series: str):
        if (setting, series) not in self.writers:
            from tensorboardX import SummaryWriter

            purge = self.purge_step if self.purge_step and self.purge_step > 0 else None
            self.writers[(setting, series)] = SummaryWriter(str(self.root / setting / series), purge_step=purge,
                                                            flush_secs=3600)
        return self.writers[(setting, series)]

    def flush(self) -> None:
        for writer in self.writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


class WandB:
    """One W&B run per purerl run (its config attached), with a series per member and per setting aggregate.

    Without a network connection it logs offline into RUN/wandb (`wandb sync` uploads it later);
    WANDB_MODE, when set, decides instead.
    """

    def __init__(self, out: Path, config: dict):
        import wandb

        mode = os.environ.get("WANDB_MODE") or ("online" if _reachable(wandb.Settings().base_url) else "offline")
        (out / WANDB_DIR).mkdir(exist_ok=True)
        self.run = wandb.init(dir=str(out), name=out.name, config=config, mode=mode, reinit="create_new")
        self.run.define_metric("*", step_metric="env_steps")

    def begin(self, first_step: int) -> None:
        pass

    def write(self, step: int, rows: dict) -> None:
        data = {f"{setting}/{series}/{name}": value for (setting, series, name), value in rows.items()}
        self.run.log({"env_steps": step, **data})

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.run.finish()


def _reachable(url: str, timeout_s: float = 2.0) -> bool:
    parsed = urllib.parse.urlparse(url)
    try:
        socket.create_connection((parsed.hostname, parsed.port or 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


_BACKENDS = {"tensorboard": TensorBoard, "wandb": WandB}
