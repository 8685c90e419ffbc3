"""What an evolve run keeps in its directory, and reads back to resume or report: the generation log
(generations.csv), the fitness plot, the saved meta-parameters, and the progress bar that shows them.

Apart from `evolve.py`, whose ES makes the numbers, so that a change to how a run is written down does not
touch what it computes.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
from flax import serialization

from purerl.checks import ConfigError
from purerl.run import files, rundir

GENERATIONS_CSV = "generations.csv"
FITNESS_PNG = "fitness.png"
BEST_PARAMS = "best_meta_params.msgpack"
MEAN_PARAMS = "mean_meta_params.msgpack"
rundir.register_files(GENERATIONS_CSV, FITNESS_PNG, BEST_PARAMS, MEAN_PARAMS)


def load_meta_params(path: Path, template: Any) -> Any:
    """Meta-parameters saved by `run` (best or mean), restored into `template`'s structure."""
    path = Path(path)
    if path.is_dir():
        path = path / BEST_PARAMS
    if not path.exists():
        raise ConfigError(f"no meta-parameters at {path}")
    try:
        return serialization.from_bytes(template, path.read_bytes())
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"{path} does not hold meta-parameters of this kind ({error})") from error


def fitness_row(index: int, fitness: np.ndarray, seconds: float) -> dict:
    """One generations.csv row: statistics of the finite raw fitness (NaN when none is finite)."""
    finite = fitness[np.isfinite(fitness)]
    stat = (lambda f: float(f(finite))) if finite.size else (lambda f: float("nan"))
    return {"generation": index, "best": stat(np.max), "mean": stat(np.mean), "std": stat(np.std),
            "median": stat(np.median), "nan_count": int(fitness.size - finite.size), "seconds": seconds}


_LOG_FIELDS = ("generation", "best", "mean", "std", "median", "nan_count", "seconds")


def write_log(out: Path, log: list[dict]) -> None:
    lines = [",".join(_LOG_FIELDS)]
    lines += [",".join(f"{row[k]:.6g}" if isinstance(row[k], float) else str(row[k]) for k in _LOG_FIELDS) for row in log]
    files.write_atomic(out / GENERATIONS_CSV, "\n".join(lines) + "\n")


def read_log(out: Path) -> list[dict]:
    """The generation log of the evolve run in OUT (generations.csv), one dict per generation."""
    path = out / GENERATIONS_CSV
    if not path.exists():
        return []
    rows = path.read_text().strip().splitlines()[1:]
    parsed = []
    for line in rows:
        values = line.split(",")
        row = {k: float(v) for k, v in zip(_LOG_FIELDS, values)}
        row["generation"], row["nan_count"] = int(row["generation"]), int(row["nan_count"])
        parsed.append(row)
    return parsed


def made_by(sessions: list[dict]) -> str:
    """An evolve run's sessions (its provenance.json, `rundir.sessions`) in words: the command, commit, machine and
    date of each, "" for a run that has none."""
    return "; ".join(f"`{s['command']}` at {str(s['commit'])[:10]} on {s['machine']}, {s['date']}" for s in sessions)


@contextlib.contextmanager
def session_recorded(out: Path, facts: dict | None):
    """Append this session's `facts` to the run's provenance.json (`rundir.record_session`) as the block ends,
    however it ends (a signal's stop, an error). Entered only once the session holds OUT (`rundir.start`), so a
    second process refused there, because another is running the same directory, writes nothing into it."""
    try:
        yield
    finally:
        if facts is not None:
            rundir.record_session(out, facts)


def plot_fitness(out: Path, log: list[dict], title: str) -> None:
    """Best and mean fitness per generation, with a +-1 std band over the population."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gens = np.array([row["generation"] for row in log])
    mean = np.array([row["mean"] for row in log])
    std = np.array([row["std"] for row in log])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    line = ax.plot(gens, mean, label="population mean")[0]
    ax.fill_between(gens, mean - std, mean + std, color=line.get_color(), alpha=0.2, linewidth=0, label="+-1 std")
    ax.plot(gens, [row["best"] for row in log], label="best in generation")
    ax.set_xlabel("generation")
    ax.set_ylabel("fitness")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    files.save_figure(fig, out / FITNESS_PNG, dpi=120)


class GenerationBar:
    """The evolve progress bar: generations done, and the latest best and mean fitness."""

    def __init__(self, enabled: bool, total: int, completed: int):
        self.enabled, self.total, self.completed = enabled, total, completed

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("[bold]evolve"), BarColumn(), MofNCompleteColumn(), TextColumn("generations"),
                TextColumn("best {task.fields[best]} mean {task.fields[mean]}"), TimeRemainingColumn(),
            )
            self.progress.__enter__()
            self.task = self.progress.add_task("evolve", total=self.total, completed=self.completed, best="-", mean="-")
        return self

    def advance(self, row: dict) -> None:
        if self.enabled:
            self.progress.update(self.task, advance=1, best=f"{row['best']:.2f}", mean=f"{row['mean']:.2f}")

    def __exit__(self, *exc):
        if self.enabled:
            self.progress.__exit__(*exc)
