"""The progress bar counts one agent's steps (as the plots do), says "compiling" first, and fits 80 columns."""

import numpy as np
from rich.console import Console

from purerl.progress import TrainingBar


def render(bar: TrainingBar) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(bar.progress.get_renderable())
    return console.export_text()


def test_progress_bar_counts_steps_per_agent_and_fits_80_columns():
    with TrainingBar(True, steps_per_agent=500_000, agents=64) as bar:
        first = render(bar)
        assert "compiling" in first and "0/500k steps x 64" in first
        bar.advance(0, 250_000, np.array([[20.0, np.nan]]))
        line = render(bar).strip()
    assert "250k/500k steps x 64" in line and "return 20.0" in line
    assert len(line.splitlines()) == 1 and "…" not in line and "eta" in line
