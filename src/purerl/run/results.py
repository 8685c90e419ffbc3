"""What a training run writes into its directory besides config.json and checkpoint/ (`rundir`, `checkpoint`):
metrics.csv, summary.json and curves.png, and the curve plots `purerl plot` shares.

Every file goes through `files.write_atomic` (or `files.save_figure`), so a killed run never leaves a
half-written file; orbax checkpoints are atomic as well.
"""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from purerl import stats
from purerl.run import files, rundir
from purerl.run.files import write_atomic

METRICS = "metrics.csv"
SUMMARY = "summary.json"
CURVES = "curves.png"
FINAL_WINDOW = 10  # final return = mean over the last 10 updates
rundir.register_files(METRICS, SUMMARY, CURVES)


def final_returns(episode_return: np.ndarray, episodes: np.ndarray | None = None) -> np.ndarray:
    """Per member: the mean return over the last `FINAL_WINDOW` updates. episode_return is [updates, members].

    An update in which no episode ended has a NaN return, which the last one before it fills. With `episodes`
    (the metric of that name, same shape), a member whose last update with an ended episode has a return that
    is not finite has diverged and gets NaN: filling would report its last return before it diverged. (Its
    last such update, not any: a PBT member that diverged and then took a healthy member's state has recovered.)"""
    window = stats.forward_fill(episode_return)[-FINAL_WINDOW:]
    with warnings.catch_warnings():  # a member none of whose episodes ended has no final return (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        final = np.nanmean(window, axis=0)
    if episodes is not None:
        ended = np.asarray(episodes) > 0
        last = len(ended) - 1 - np.argmax(ended[::-1], axis=0)  # per member, its last update with an episode
        diverged = ended.any(axis=0) & ~np.isfinite(np.asarray(episode_return)[last, np.arange(ended.shape[1])])
        final = np.where(diverged, np.nan, final)
    return final


def write_metrics_csv(out: Path, metrics: dict[str, np.ndarray], steps_per_update: int, labels: list[str]) -> None:
    """One row per update: the mean of every metric over members, the return's IQM, then every metric of every
    member (`NAME[LABEL]`, the returns first), so the mean columns stay where readers found them. A run resumed
    from its checkpoint rewrites the whole file from the metric rows the checkpoint holds: no row twice."""
    names = list(metrics)
    per_member = ["episode_return", *(name for name in names if name != "episode_return")]
    header = ["update", "env_steps", *(f"{name}_mean" for name in names), "episode_return_iqm"]
    header += [f"{name}[{label}]" for name in per_member for label in labels]
    with warnings.catch_warnings():  # an update in which no member finished an episode is all-NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = [np.nanmean(metrics[name], axis=1) for name in names]
        iqm = stats.iqm(stats.forward_fill(metrics["episode_return"]), axis=1)
    values = np.column_stack([*means, iqm, *(metrics[name] for name in per_member)])  # [updates, columns]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows([t, (t + 1) * steps_per_update, *map(_fmt, row)] for t, row in enumerate(values.tolist()))
    write_atomic(out / METRICS, buffer.getvalue())


def read_member_metric(run_dir: Path, metric: str = "episode_return") -> np.ndarray:
    """Each member's episode return (or another `metric`) per update from metrics.csv, as [updates, members] (NaN
    where none ended, or where the value was not finite: the `episodes` metric tells the two apart)."""
    with open(Path(run_dir) / METRICS, newline="") as f:
        rows = list(csv.reader(f))
    columns = [i for i, name in enumerate(rows[0]) if name.startswith(f"{metric}[")]
    return np.array([[float(row[i]) if row[i] else np.nan for i in columns] for row in rows[1:]])


def _fmt(value: float) -> str:
    """A Python float (`tolist`'s) to 6 significant digits, or "" when not finite; no numpy call per value."""
    return f"{value:.6g}" if math.isfinite(value) else ""


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float as None: JSON has no NaN, and `null` reads as "none measured"."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


# What a finished run's summary.json holds that `--resume` keeps it for (and `print_summary` shows).
SUMMARY_KEYS = ("env", "members", "final_return", "final_return_by_setting", "final_return_by_member",
                "final_return_window_updates", "compile_s", "run_s")


def read_summary(out: Path) -> dict[str, Any]:
    """The summary.json in OUT, which `--resume` of a finished run keeps as it stands: one line naming the file
    (and the first of SUMMARY_KEYS it lacks) when it is not one, not a KeyError once the run has been restored."""
    return files.read_json(Path(out) / SUMMARY, "a run's summary").require(*SUMMARY_KEYS)


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    write_atomic(out / SUMMARY, json.dumps(json_safe(summary), indent=2, sort_keys=True, allow_nan=False))


def plot_labelled_curves(out: Path, curves: dict[str, np.ndarray], steps_per_update: int, title: str,
                         filename: str = CURVES, ylabel: str = "episode return") -> Path:
    """`plot_curves` for separate runs: one [updates, seeds] array per label, one line each."""
    steps = (np.arange(next(iter(curves.values())).shape[0]) + 1) * steps_per_update
    figure = draw_panels({"": [Curve(label, steps, curve) for label, curve in curves.items()]}, title, ylabel)
    return save_figure(figure, out / filename)


def plot_curves(
    out: Path, episode_return: np.ndarray, steps_per_update: int, groups: dict[str, list[int]], title: str,
    filename: str = CURVES, ylabel: str = "episode return",
) -> Path:
    """IQM return over seeds, one line per hyperparameter setting; a 95% bootstrap band only from
    `stats.MIN_SEEDS_FOR_CI` seeds (the tables' rule), below that each seed as a thin line."""
    steps = (np.arange(episode_return.shape[0]) + 1) * steps_per_update
    curves = [Curve("IQM over seeds" if label == "default" else label, steps, episode_return[:, members])
              for label, members in groups.items()]
    return save_figure(draw_panels({"": curves}, title, ylabel), out / filename)


@dataclass
class Curve:
    """One line of a figure: `values` is [points, seeds] at `steps` env steps (NaN where no episode ended).
    `per_seed=False`: one column that already aggregates the seeds (a metrics.csv `_mean` column)."""
    label: str
    steps: np.ndarray
    values: np.ndarray
    per_seed: bool = True


def draw_panels(panels: dict[str, list[Curve]], title: str, ylabel: str = "episode return"):
    """One subplot per panel (an environment), side by side, with one legend for all of them below the axes.

    A label keeps its colour in every panel. The line is the IQM over seeds (smoothed over 2% of the
    updates); the band is the 95% bootstrap CI of that IQM only where a curve has at least
    `stats.MIN_SEEDS_FOR_CI` seeds, as in the summary tables; with fewer, each seed is a thin line of the
    same colour and the legend says "no CI". Constrained layout keeps the legend and titles inside the
    figure (no tight_layout, so no "Tight layout not applied").
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter, MaxNLocator

    labels = list(dict.fromkeys(curve.label for curves in panels.values() for curve in curves))
    palette = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20").colors
    colors = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    seeds: dict[str, set] = {label: set() for label in labels}
    width = max(7.0, 4.6 * len(panels))
    longest = max([len(_legend_entry(label, {1})) for label in labels] or [1])
    columns = max(1, min(len(labels), int(width * 72 / (6.0 * longest + 40))))
    rows = -(-len(labels) // columns)  # the legend's rows make the figure taller, never the axes shorter
    figure, axes = plt.subplots(1, len(panels), figsize=(width, 4.0 + 0.2 * rows), layout="constrained",
                                squeeze=False)
    for ax, (name, curves) in zip(axes[0], panels.items()):
        empty = []
        for curve in curves:
            if curve.per_seed:
                seeds[curve.label].add(curve.values.shape[1])
            if not _draw_curve(ax, curve, colors[curve.label]):
                empty.append(curve.label)
        if empty:
            ax.text(0.5, 0.5, "no episode ended:\n" + "\n".join(empty), transform=ax.transAxes, ha="center",
                    va="center", fontsize="small")
        if name:
            ax.set_title(name)
        ax.set_xlabel("environment steps")
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 20k, 1.5M: long step counts never overlap
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{ylabel} (IQM over seeds)")
    handles = [Line2D([], [], color=colors[label], linewidth=2, label=_legend_entry(label, seeds[label]))
               for label in labels]
    least = stats.MIN_SEEDS_FOR_CI
    caption = (f"line: IQM over seeds (moving average over 2% of the updates)\nband: 95% bootstrap CI where "
               f"n \u2265 {least} seeds; n<{least}: no CI, thin lines are single seeds")
    figure.legend(handles=handles, loc="outside lower center", ncols=columns, fontsize="small", frameon=False,
                  title=caption, title_fontsize="x-small")
    figure.suptitle(title)
    return figure


def _draw_curve(ax, curve: Curve, color) -> bool:
    """The IQM line, and the band or the single seeds; False where the curve has no finite value."""
    filled = stats.forward_fill(curve.values)
    valid = np.all(np.isfinite(filled), axis=1)
    if not valid.any():
        return False
    window = max(1, filled.shape[0] // 50)
    smoothed = stats.smooth(filled[valid], window)
    steps = np.asarray(curve.steps)[valid]
    ax.plot(steps, stats.iqm(smoothed, axis=1), color=color, linewidth=1.8)
    seeds = smoothed.shape[1]
    if curve.per_seed and seeds >= stats.MIN_SEEDS_FOR_CI:
        low, high = stats.bootstrap_ci(smoothed, resamples=500)
        ax.fill_between(steps, low, high, color=color, alpha=0.25, linewidth=0)
    elif curve.per_seed and seeds > 1:
        ax.plot(steps, smoothed, color=color, linewidth=0.6, alpha=0.35)
    return True


def _legend_entry(label: str, seeds: set) -> str:
    if not seeds:
        return f"{label} (mean over seeds)"
    n = "/".join(str(s) for s in sorted(seeds))
    if max(seeds) < stats.MIN_SEEDS_FOR_CI:
        return f"{label} (n={n}, no CI)"
    if min(seeds) >= stats.MIN_SEEDS_FOR_CI:
        return f"{label} (n={n}, 95% CI)"
    return f"{label} (n={n}, 95% CI where n \u2265 {stats.MIN_SEEDS_FOR_CI})"


def save_figure(figure, path: Path) -> Path:
    """Write a results figure to `path` whole (`files.save_figure`), trimmed to what it draws."""
    return files.save_figure(figure, path, dpi=120, bbox_inches="tight", pad_inches=0.1)
