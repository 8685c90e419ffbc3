"""`purerl plot` and `purerl summary`: compare finished training runs side by side.

Each run directory already holds what a comparison needs: config.json (what was run),
metrics.csv (one row per update, one return column per member) and summary.json (final
returns with bootstrap CIs). Curves are drawn by `results.draw_panels`, as a single run's own plot is, and
statistics come from `stats`, whose `MIN_SEEDS_FOR_CI` decides where the tables and the bands show a CI.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from purerl.checks import ConfigError
from purerl.stats import MIN_SEEDS_FOR_CI  # fewer seeds: show each seed's value, claim no interval
from purerl.run import files, pbt_files, records, results, rundir


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
    config = rundir.read_config(path)
    if config.get("command") != "train":
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


def curve_labels(runs: list[Run], metric: str = "episode_return") -> list[dict[str, str]]:
    """Per run, a label for each of its curves (grid setting) of `metric`, by what differs between all of them."""
    keys = [(i, setting) for i, run in enumerate(runs) for setting in run.series(metric)]
    labels = _labels([(_algo(runs[i]), _env(runs[i]), _fields(runs[i], setting), runs[i].path.name)
                      for i, setting in keys])
    out: list[dict[str, str]] = [{} for _ in runs]
    for (i, setting), label in zip(keys, labels):
        out[i][setting] = label
    return out


_NOT_LABELS = {"command", "algo", "seeds", "config.env"}  # the algo prefixes a label, the env names its panel,
# the seed count is the legend's n


def _labels(entities: list[tuple[str, str, dict, str]]) -> list[str]:
    """Labels for curves given as (algo, env, recorded fields, run directory name).

    The algorithm names a curve when the algorithms differ; each algorithm's own fields are compared only
    between its curves, so the fields another algorithm lacks (`buffer_size=None`) or sets by its own defaults
    never show. A field shows when it differs between two curves of that algorithm on the same environment
    (the panel); fields equal everywhere never show. Curves that would still read the same in one panel get
    their run directory's name.
    """
    algos = list(dict.fromkeys(algo for algo, _, _, _ in entities))
    shown: dict[str, list[str]] = {}
    for algo in algos:
        group = [(env, fields) for a, env, fields, _ in entities if a == algo]
        values: dict[tuple[str, str], set] = {}
        for env, fields in group:
            for key in set(fields) - _NOT_LABELS:
                values.setdefault((key, env), set()).add(_short(fields[key]))
        for env, fields in group:  # a field one curve lacks and another has differs as well
            for key in {k for k, _ in values} - set(fields):
                values.setdefault((key, env), set()).add("None")
        shown[algo] = sorted({key for (key, _), seen in values.items() if len(seen) > 1},
                             key=lambda k: (k.startswith("grid."), k))
    labels = []
    for algo, _, fields, _ in entities:
        parts = ", ".join(f"{key.rpartition('.')[2]}={_short(fields.get(key))}" for key in shown[algo])
        prefix = algo if len(algos) > 1 else ""
        labels.append(f"{prefix}: {parts}" if prefix and parts else prefix or parts)
    for i, (_, env, _, name) in enumerate(entities):
        twins = [j for j, other in enumerate(entities) if other[1] == env and labels[j] == labels[i]]
        if len(twins) > 1 or not labels[i]:
            labels[i] = f"{labels[i]} [{name}]" if labels[i] else name
    return labels


def _algo(run: Run) -> str:
    return str(run.config.get("algo", "ppo"))


def _env(run: Run) -> str:
    return run.config["config"]["env"]


def _fields(run: Run, setting: str) -> dict:
    """The run's recorded settings, flat (`hyperparams.lr`), with the grid's values put in their places:
    those of `setting` for one grid setting, or all of them (`0.001|0.003`) for the whole run ("default")."""
    fields = records.flat_fields({k: v for k, v in run.config.items() if k not in ("grid", "seeds")})
    for name, values in records.grid_pairs(run.config):
        fields[_field_key(fields, str(name))] = "|".join(_short(v) for v in values)
    if setting != "default":
        for part in setting.split(","):
            name, _, value = part.partition("=")
            fields[_field_key(fields, name)] = _number(value)
    return fields


def _field_key(fields: dict, name: str) -> str:
    return next((key for key in fields if key == name or key.endswith(f".{name}")), f"grid.{name}")


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(map(_short, value))
    return str(value)


def panel_notes(runs: list[Run]) -> dict[str, str]:
    """Per environment, the settings every curve on it shares and that differ between environments
    (`total_timesteps=50000` on one, `20000` on the other): the labels leave them to the panel's title."""
    by_env: dict[str, list[dict]] = {}
    algos: dict[str, set] = {}
    for run in runs:
        by_env.setdefault(_env(run), []).append(_fields(run, "default"))
        algos.setdefault(_env(run), set()).add(_algo(run))
    if len(by_env) < 2 or len({frozenset(a) for a in algos.values()}) > 1:
        return {}  # panels of different algorithms differ by those algorithms' defaults: nothing to note
    common = set.intersection(*(set(f) for group in by_env.values() for f in group)) - _NOT_LABELS
    notes: dict[str, list[str]] = {env: [] for env in by_env}
    for key in sorted(common):
        per_env = {env: {_short(f[key]) for f in group} for env, group in by_env.items()}
        if all(len(v) == 1 for v in per_env.values()) and len({next(iter(v)) for v in per_env.values()}) > 1:
            for env, value in per_env.items():
                notes[env].append(f"{key.rpartition('.')[2]}={next(iter(value))}")
    return {env: ", ".join(parts) for env, parts in notes.items() if parts}


def figure(runs: list[Run], metric: str = "episode_return", title: str | None = None):
    """One panel per environment, each run's curves (one per grid setting) on its own env-steps axis."""
    per_seed = {i: any(name.startswith(f"{metric}[") for name in run.columns) for i, run in enumerate(runs)}
    notes = panel_notes(runs)
    panels: dict[str, list[results.Curve]] = {}
    for i, (run, labels) in enumerate(zip(runs, curve_labels(runs, metric))):
        env = _env(run)
        panel = f"{env}\n({notes[env]})" if env in notes else env
        for setting, values in run.series(metric).items():
            panels.setdefault(panel, []).append(results.Curve(labels[setting], run.env_steps, values, per_seed[i]))
    return results.draw_panels(panels, title or f"{metric.replace('_', ' ')} of {len(runs)} runs",
                               ylabel=metric.replace("_", " "))


def plot(runs: list[Run], out: Path, metric: str = "episode_return", title: str | None = None) -> Path:
    """`figure`, saved as the PNG `out`."""
    return results.save_figure(figure(runs, metric, title), out)


def summary_rows(runs: list[Run]) -> list[dict]:
    """One row per run and grid setting: final return (mean of the last updates) over its seeds, labelled by
    the run's directory and, as in `plot`, by what differs between the rows (`curve_labels`)."""
    rows = []
    for run, labels in zip(runs, curve_labels(runs)):
        path = run.path / results.SUMMARY
        if not path.is_file():
            raise ConfigError(f"{run.path} has no {results.SUMMARY} (the run has not finished)")
        summary = files.read_json(path, "a run's summary")
        try:
            by_member = summary["final_return_by_member"]
            for setting, s in summary["final_return_by_setting"].items():
                seeds = [v for name, v in by_member.items()
                         if setting == "default" or name.rpartition(",seed=")[0] == setting]
                _check_row(s, seeds)
                rows.append({"run": run.path.name, "env": str(summary["env"]), "setting": str(setting),
                             "label": labels.get(str(setting), str(setting)), "stats": s, "per_seed": seeds})
        except files.MissingKey:
            raise  # names the file and the key
        except (ValueError, KeyError, TypeError, AttributeError) as error:
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
    for column in ("run", "env", "differs by", "seeds", "IQM", f"95% CI (>= {MIN_SEEDS_FOR_CI} seeds) or per seed"):
        table.add_column(column)
    for row in summary_rows(runs):
        s = row["stats"]
        if s["iqm"] is None:
            table.add_row(row["run"], row["env"], row["label"], str(s["n"]), "no episode ended", "")
            continue
        if s["n"] >= MIN_SEEDS_FOR_CI:
            spread = f"\\[{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]"  # escaped: rich reads [..] as markup
        else:
            spread = ", ".join("-" if v is None else f"{v:.1f}" for v in row["per_seed"])
        table.add_row(row["run"], row["env"], row["label"], str(s["n"]), f"{s['iqm']:.1f}", spread)
    Console(width=200).print(table)


def main(args: argparse.Namespace) -> int:
    """`purerl plot` / `purerl summary`: every input is checked before anything is drawn or written."""
    runs = [load(path) for path in args.runs]
    if len({run.path.resolve() for run in runs}) < len(runs):
        raise ConfigError("the same run is given twice")
    if getattr(args, "pbt", False) and len(runs) > 1:
        raise ConfigError("plot --pbt draws one PBT run; give one RUN")
    if args.command == "summary":
        print_summary(runs)
        return 0
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise ConfigError(f"--out must name a .png file, got {out}")
    if out.is_dir():
        raise ConfigError(f"--out {out} is a directory; name a .png file")
    if rundir.owns(out):  # purerl wrote it, as the run's own output: a plot of other runs does not replace it
        raise ConfigError(f"refusing to replace {out}: it is the run {out.parent}'s own {out.name}; choose another --out")
    files.check_replaceable(out, "--out")
    missing = [run.path.name for run in runs if args.metric not in run.metrics()]
    if missing:
        raise ConfigError(f"unknown metric '{args.metric}' in {missing[0]}; choose from {', '.join(runs[0].metrics())}")
    rundir.check_writable(out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    path = pbt_files.plot(runs[0].path, out) if args.pbt else plot(runs, out, args.metric)
    files.mark_written(path)  # a later `plot --out` may replace it
    print(f"saved {path}")
    return 0
