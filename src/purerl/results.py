"""The run directory: config.json, metrics.csv, summary.json, checkpoint/, curves.png.

Every file is written to a temporary name and renamed into place, so a killed
run never leaves a half-written file; orbax checkpoints are atomic as well.
"""

from __future__ import annotations

import csv
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from purerl import stats
from purerl.rundir import CHECKPOINT, CONFIG  # noqa: F401  (the run directory's names)

METRICS = "metrics.csv"
SUMMARY = "summary.json"
CURVES = "curves.png"
FINAL_WINDOW = 10  # final return = mean over the last 10 updates


def write_atomic(path: Path, data: str | bytes) -> None:
    """Readers see the old file or the new one, never half of one; a failed write leaves no temp file behind."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def final_returns(episode_return: np.ndarray) -> np.ndarray:
    """Per member: the mean return over the last `FINAL_WINDOW` updates. episode_return is [updates, members]."""
    window = stats.forward_fill(episode_return)[-FINAL_WINDOW:]
    with warnings.catch_warnings():  # a member none of whose episodes ended has no final return (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(window, axis=0)


def write_metrics_csv(out: Path, metrics: dict[str, np.ndarray], steps_per_update: int, labels: list[str]) -> None:
    """One row per update: aggregate columns for every metric, per-member return columns."""
    names = list(metrics)
    num_updates = metrics[names[0]].shape[0]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    header = ["update", "env_steps"]
    header += [f"{name}_mean" for name in names]
    header += ["episode_return_iqm"]
    header += [f"episode_return[{label}]" for label in labels]
    writer.writerow(header)
    with warnings.catch_warnings():  # an update in which no member finished an episode is all-NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = {name: np.nanmean(metrics[name], axis=1) for name in names}
        iqm = stats.iqm(stats.forward_fill(metrics["episode_return"]), axis=1)
    for t in range(num_updates):
        row = [t, (t + 1) * steps_per_update]
        row += [_fmt(means[name][t]) for name in names]
        row += [_fmt(iqm[t])]
        row += [_fmt(v) for v in metrics["episode_return"][t]]
        writer.writerow(row)
    write_atomic(out / METRICS, buffer.getvalue())


def read_member_returns(run_dir: Path) -> np.ndarray:
    """Each member's episode return per update from metrics.csv, as [updates, members] (NaN where none ended)."""
    with open(Path(run_dir) / METRICS, newline="") as f:
        rows = list(csv.reader(f))
    columns = [i for i, name in enumerate(rows[0]) if name.startswith("episode_return[")]
    return np.array([[float(row[i]) if row[i] else np.nan for i in columns] for row in rows[1:]])


def _fmt(value: float) -> str:
    return "" if not np.isfinite(value) else f"{float(value):.6g}"


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float as None: JSON has no NaN, and `null` reads as "none measured"."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    write_atomic(out / SUMMARY, json.dumps(json_safe(summary), indent=2, sort_keys=True, allow_nan=False))


def plot_labelled_curves(out: Path, curves: dict[str, np.ndarray], steps_per_update: int, title: str,
                         filename: str = CURVES, ylabel: str = "episode return") -> Path:
    """`plot_curves` for separate runs: one [updates, seeds] array per label, one line each."""
    groups, start = {}, 0
    for label, curve in curves.items():
        groups[label] = list(range(start, start + curve.shape[1]))
        start += curve.shape[1]
    return plot_curves(out, np.concatenate(list(curves.values()), axis=1), steps_per_update, groups, title, filename,
                       ylabel)


def plot_curves(
    out: Path, episode_return: np.ndarray, steps_per_update: int, groups: dict[str, list[int]], title: str,
    filename: str = CURVES, ylabel: str = "episode return",
) -> Path:
    """IQM return over seeds with a 95% bootstrap band, one line per hyperparameter setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    window = max(1, episode_return.shape[0] // 50)
    filled = stats.forward_fill(episode_return)
    valid_rows = np.all(np.isfinite(filled), axis=1)
    filled[valid_rows] = stats.smooth(filled[valid_rows], window)
    steps = (np.arange(filled.shape[0]) + 1) * steps_per_update
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, members in groups.items():
        curve = filled[:, members]
        valid = np.all(np.isfinite(curve), axis=1)
        if not valid.any():
            ax.plot([], [], label=f"{label}: no episode ended")
            continue
        center = stats.iqm(curve[valid], axis=1)
        line = ax.plot(steps[valid], center, label=f"{label} (n={len(members)})")[0]
        if len(members) > 1:
            low, high = stats.bootstrap_ci(curve[valid], resamples=500)
            ax.fill_between(steps[valid], low, high, color=line.get_color(), alpha=0.25, linewidth=0)
    if not np.isfinite(filled).any():
        ax.text(0.5, 0.5, "no episode ended", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"{ylabel} (IQM, 95% CI; {window}-update average)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(groups) > 1 or next(iter(groups)) != "default" or not np.isfinite(filled).any():
        ax.legend(fontsize="small")
    fig.tight_layout()
    path = out / filename
    tmp = path.with_name(f".{filename}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)
    return path
