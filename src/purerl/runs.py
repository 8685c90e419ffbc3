"""`purerl plot` and `purerl summary`: compare finished training runs side by side.

Each run directory already holds what a comparison needs: config.json (what was run),
metrics.csv (one row per update, one return column per member) and summary.json (final
returns with bootstrap CIs). Curves are drawn by `results.plot_labelled_curves` and statistics
come from `stats`, so a comparison reads exactly like a single run's own plot.
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from purerl import results, rundir
from purerl.config import ConfigError

MIN_SEEDS_FOR_CI = 10  # fewer seeds: show each seed's value and claim no interval


@dataclass
class Run:
    path: Path
    config: dict
    columns: dict[str, np.ndarray]  # metrics.csv, one array per column

    @property
    def env_steps(self) -> np.ndarray:
        return self.columns["env_steps"]

    def series(self, metric: str) -> dict[str, np.ndarray]:
        """Per grid setting, the metric as [updates, seeds]; a metric with one column is one series."""
        members = [name for name in self.columns if name.startswith(f"{metric}[")]
        if not members:
            column = metric if metric in self.columns else f"{metric}_mean"
            return {"default": self.columns[column][:, None]}
        groups: dict[str, list[np.ndarray]] = {}
        for name in members:
            label = name[len(metric) + 1:-1]
            setting = label.rpartition(",seed=")[0] if ",seed=" in label else "default"
            groups.setdefault(setting, []).append(self.columns[name])
        return {setting: np.stack(values, axis=1) for setting, values in groups.items()}

    def metrics(self) -> list[str]:
        names = {name.partition("[")[0] for name in self.columns if "[" in name}
        names |= {name.removesuffix("_mean") for name in self.columns
                  if "[" not in name and name not in ("update", "env_steps")}
        return sorted(names)


def load(path: Path) -> Run:
    """A finished training run, or a one-line `ConfigError` saying why `path` is not one."""
    path = Path(path)
    if not (path / rundir.CONFIG).is_file():
        raise ConfigError(f"{path} is not a purerl run directory (no {rundir.CONFIG})")
    try:
        config = json.loads((path / rundir.CONFIG).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"cannot read {path / rundir.CONFIG} ({error})") from None
    if not isinstance(config, dict) or config.get("command") != "train":
        raise ConfigError(f"{path} is not a training run (plot and summary compare `purerl train` runs)")
    if not isinstance(config.get("config"), dict) or not isinstance(config["config"].get("env"), str):
        raise ConfigError(f"{path / rundir.CONFIG} is not a valid training record (no config.env)")
    if not (path / results.METRICS).is_file():
        raise ConfigError(f"{path} has not finished: no {results.METRICS} yet (continue it with --resume)")
    try:
        with open(path / results.METRICS, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ConfigError(f"cannot read {path / results.METRICS} ({error})") from None
    if len(rows) < 2 or rows[0][:2] != ["update", "env_steps"]:
        raise ConfigError(f"{path / results.METRICS} is not a purerl metrics file")
    if any(len(row) != len(rows[0]) for row in rows[1:]):
        raise ConfigError(f"{path / results.METRICS} is cut short or damaged (rows of different lengths)")
    try:
        values = np.array([[float(v) if v else np.nan for v in row] for row in rows[1:]])
    except ValueError as error:
        raise ConfigError(f"{path / results.METRICS} is damaged ({error})") from None
    return Run(path, config, {name: values[:, i] for i, name in enumerate(rows[0])})


def run_labels(runs: list[Run]) -> list[str]:
    """Each run's directory name, plus the recorded settings in which the runs differ."""
    flat = [_flatten(run.config) for run in runs]
    differing = sorted(k for k in set().union(*flat) if len({repr(f.get(k)) for f in flat}) > 1)
    labels = []
    for run, fields in zip(runs, flat):
        shown = ", ".join(f"{k.rpartition('.')[2]}={_short(fields.get(k))}" for k in differing)
        labels.append(f"{run.path.name} ({shown})" if shown else run.path.name)
    return labels


def _flatten(config: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in config.items():
        if key == "seeds":
            value = f"{len(value)} seeds"
        if isinstance(value, dict) and key != "grid":
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _short(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def plot(runs: list[Run], out: Path, metric: str = "episode_return") -> Path:
    """IQM curves with 95% bootstrap bands for every run and grid setting, on one env-steps axis.

    Runs that take different env steps per update are read on the finest run's grid (each run's
    value is that of its last update at or before the step), up to the shortest run's end.
    """
    step = int(min(run.env_steps[0] for run in runs))
    end = int(min(run.env_steps[-1] for run in runs))
    grid = np.arange(1, end // step + 1) * step
    curves = {}
    for run, label in zip(runs, run_labels(runs)):
        index = np.searchsorted(run.env_steps, grid, side="right") - 1
        for setting, values in run.series(metric).items():
            resampled = np.where((index >= 0)[:, None], values[np.maximum(index, 0)], np.nan)
            curves[label if setting == "default" else f"{label}: {setting}"] = resampled
    envs = sorted({run.config["config"]["env"] for run in runs})
    cut = " (cut at the shortest run)" if any(run.env_steps[-1] > end for run in runs) else ""
    title = f"{metric} on {', '.join(envs)}{cut}"
    return results.plot_labelled_curves(out.parent, curves, step, title, filename=out.name,
                                        ylabel=metric.replace("_", " "))


def summary_rows(runs: list[Run]) -> list[dict]:
    """One row per run and grid setting: final return (mean of the last updates) over its seeds."""
    rows = []
    for run, label in zip(runs, run_labels(runs)):
        path = run.path / results.SUMMARY
        if not path.is_file():
            raise ConfigError(f"{run.path} has no {results.SUMMARY} (the run has not finished)")
        try:
            summary = json.loads(path.read_text())
            by_member = summary["final_return_by_member"]
            for setting, s in summary["final_return_by_setting"].items():
                seeds = [v for name, v in by_member.items()
                         if setting == "default" or name.rpartition(",seed=")[0] == setting]
                _check_row(s, seeds)
                rows.append({"run": label, "env": str(summary["env"]), "setting": str(setting), "stats": s,
                             "per_seed": seeds})
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise ConfigError(f"{path} is not a summary purerl wrote, or is damaged ({type(error).__name__}: "
                              f"{error})") from None
    return rows


def _check_row(s, seeds: list) -> None:
    """What `print_summary` formats: numbers (or null where nothing was measured)."""
    number = lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))  # noqa: E731
    needed = ["n", "iqm"] + (["ci95_low", "ci95_high"] if isinstance(s.get("n"), int) and
                             s["n"] >= MIN_SEEDS_FOR_CI else [])
    if not all(number(s[key]) for key in needed) or not isinstance(s["n"], int) or not all(map(number, seeds)):
        raise ValueError("a statistic that is not a number")


def print_summary(runs: list[Run]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"final return (mean of each seed's last {results.FINAL_WINDOW} updates)")
    for column in ("run", "env", "setting", "seeds", "IQM", f"95% CI (>= {MIN_SEEDS_FOR_CI} seeds) or per seed"):
        table.add_column(column)
    for row in summary_rows(runs):
        s = row["stats"]
        if s["iqm"] is None:
            table.add_row(row["run"], row["env"], row["setting"], str(s["n"]), "no episode ended", "")
            continue
        if s["n"] >= MIN_SEEDS_FOR_CI:
            spread = f"\\[{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]"  # escaped: rich reads [..] as markup
        else:
            spread = ", ".join("-" if v is None else f"{v:.1f}" for v in row["per_seed"])
        table.add_row(row["run"], row["env"], row["setting"], str(s["n"]), f"{s['iqm']:.1f}", spread)
    Console(width=200).print(table)


def main(args: argparse.Namespace) -> int:
    """`purerl plot` / `purerl summary`: every input is checked before anything is drawn or written."""
    runs = [load(path) for path in args.runs]
    if len({run.path.resolve() for run in runs}) < len(runs):
        raise ConfigError("the same run is given twice")
    if args.command == "summary":
        print_summary(runs)
        return 0
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise ConfigError(f"--out must name a .png file, got {out}")
    if out.is_dir():
        raise ConfigError(f"--out {out} is a directory; name a .png file")
    rundir.check_replaceable(out, "--out")
    missing = [run.path.name for run in runs if args.metric not in run.metrics()]
    if missing:
        raise ConfigError(f"unknown metric '{args.metric}' in {missing[0]}; choose from {', '.join(runs[0].metrics())}")
    rundir.check_writable(out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    path = plot(runs, out, args.metric)
    rundir.mark_written(path)  # a later `plot --out` may replace it
    print(f"saved {path}")
    return 0
