"""The training progress bar: steps per agent (as the plots count them), speed, latest return.

It says "compiling" until the first chunk has run, so a long XLA compile is not mistaken for a hang,
and its columns are short enough for an 80-column terminal. The speed is timed from the end of the
first chunk, since that chunk ran inside the compile and cannot be timed on its own.
"""

from __future__ import annotations

import time

import numpy as np


def _short(count: float) -> str:
    """At most 3 significant digits and a unit letter: 999999 is "1M", not "1e+03k"."""
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(float(f"{count:.3g}")) >= scale:
            return f"{float(f'{count / scale:.3g}'):g}{unit}"
    return f"{count:.0f}"


class TrainingBar:
    """A rich progress bar over env steps per agent; silent when disabled."""

    def __init__(self, enabled: bool, steps_per_agent: int, agents: int):
        self.enabled, self.total, self.agents = enabled, steps_per_agent, agents
        self.completed: int | None = None
        self.latest_return = float("nan")

    def __enter__(self) -> TrainingBar:
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("[bold]train"),
                BarColumn(bar_width=12),
                TextColumn("{task.fields[steps]}"),
                TextColumn("{task.fields[status]}"),
                TextColumn("eta"),
                TimeRemainingColumn(),
            )
            self.progress.__enter__()
            self.task = self.progress.add_task("train", total=self.total, completed=0,
                                               steps=f"0/{_short(self.total)} steps x {self.agents}",
                                               status="compiling")
        return self

    def advance(self, stop: int, returns: np.ndarray) -> None:
        """Every agent has run `stop` steps (a resumed run's first call is already past 0)."""
        if self.completed is None:
            self.started, self.start_completed = time.perf_counter(), stop
        self.completed = stop
        with np.errstate(all="ignore"):
            finite = returns[np.isfinite(returns)]
        if finite.size:
            self.latest_return = float(finite.mean())
        if self.enabled:
            elapsed = time.perf_counter() - self.started
            timed = self.completed - self.start_completed
            rate = f"{_short(timed * self.agents / elapsed)}/s" if timed and elapsed > 0 else "-/s"
            ret = f"{self.latest_return:.1f}" if np.isfinite(self.latest_return) else "-"
            self.progress.update(self.task, completed=self.completed,
                                 steps=f"{_short(stop)}/{_short(self.total)} steps x {self.agents}",
                                 status=f"{rate} return {ret}")

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.progress.__exit__(*exc)
