"""The progress bar counts one agent's steps (as the plots do), says "compiling" first, and fits 80 columns."""

import numpy as np
from rich.console import Console

from purerl.run.progress import TrainingBar, _short


def render(bar: TrainingBar) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(bar.progress.get_renderable())
    return console.export_text().strip()


def test_progress_bar_counts_steps_per_agent_and_fits_80_columns():
    with TrainingBar(True, steps_per_agent=500_000, agents=64) as bar:
        assert "compiling" in render(bar) and "0/500k steps x 64" in render(bar)
        bar.advance(250_000, np.array([[20.0, np.nan]]))
        first_chunk = render(bar)
        bar.advance(500_000, np.array([[30.0]]))
        line = render(bar)
    assert "250k/500k steps x 64" in first_chunk and "return 20.0" in first_chunk
    assert "-/s" in first_chunk, "the first chunk ran inside the compile, so it has no speed"
    assert "500k/500k steps x 64" in line and "/s return 30.0" in line and "-/s" not in line
    assert len(line.splitlines()) == 1 and "…" not in line and "eta" in line


def test_the_widest_line_still_fits_80_columns():
    with TrainingBar(True, steps_per_agent=999_999_999, agents=1_048_576) as bar:
        bar.advance(1, np.array([-123456.7]))
        bar.started -= 1e-3  # a rate of 1e18 steps/s: wider than any real one
        bar.advance(999_999_999, np.array([-123456.7]))
        line = render(bar)
    assert len(line.splitlines()) == 1 and "…" not in line and "eta" in line, line


def test_counts_are_three_digits_and_a_unit():
    assert [_short(c) for c in (0, 999, 1000, 999_499, 999_999, 1_234_567, 5e17)] == \
        ["0", "999", "1k", "999k", "1M", "1.23M", "500P"]
