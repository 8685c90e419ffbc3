"""`purerl plot` and `purerl summary` compare real runs; bad input is one line, exit 2, nothing written."""

import matplotlib.image
import numpy as np
import pytest

from purerl import runs
from cli_run import run_cli
from purerl.cli import main

SMALL = ["--num-steps", "32", "--total-timesteps", "2048", "--update-epochs", "2", "--num-minibatches", "2",
         "--no-progress"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two real runs that differ in env steps per update; the second sweeps lr inside the run."""
    base = tmp_path_factory.mktemp("plot")
    first, second = base / "four-envs", base / "eight-envs"
    assert main(["train", "--out", str(first), "--seeds", "3", "--num-envs", "4", *SMALL]) == 0
    assert main(["train", "--out", str(second), "--seeds", "2", "--num-envs", "8", "--lr", "1e-3,3e-3", *SMALL]) == 0
    return first, second


def test_legend_names_each_run_by_what_differs_in_its_config(two_runs):
    loaded = [runs.load(path) for path in two_runs]
    labels = runs.run_labels(loaded)
    assert labels[0].startswith("four-envs (") and "num_envs=4" in labels[0] and "3 seeds" in labels[0]
    assert "num_envs=8" in labels[1] and "2 seeds" in labels[1]
    assert set(loaded[1].series("episode_return")) == {"lr=0.001", "lr=0.003"}
    assert loaded[1].series("episode_return")["lr=0.001"].shape == (8, 2)  # 2048 / (8 x 32) updates, 2 seeds


def test_plot_overlays_runs_and_grid_settings_on_env_steps(capsys, tmp_path, two_runs):
    out = tmp_path / "figs" / "compare.png"
    code, stdout, err = run_cli(capsys, "plot", *two_runs, "--out", out)
    assert code == 0, err
    image = matplotlib.image.imread(out)
    assert image.shape[0] > 300 and image.shape[1] > 500
    assert np.std(image) > 0.05  # not blank: curves and bands were drawn


def test_any_metric_column_can_be_plotted(capsys, tmp_path, two_runs):
    out = tmp_path / "loss.png"
    code, _, err = run_cli(capsys, "plot", *two_runs, "--out", out, "--metric", "value_loss")
    assert code == 0 and out.exists(), err


def test_summary_prints_one_table_with_per_seed_values_below_ten_seeds(capsys, two_runs):
    code, stdout, err = run_cli(capsys, "summary", *two_runs)
    assert code == 0, err
    assert "four-envs" in stdout and "eight-envs" in stdout and "lr=0.001" in stdout and "lr=0.003" in stdout
    rows = runs.summary_rows([runs.load(p) for p in two_runs])
    assert [len(r["per_seed"]) for r in rows] == [3, 2, 2]


@pytest.mark.parametrize("argv, message", [
    (["plot", "MISSING", "--out", "OUT/x.png"], "is not a purerl run directory"),
    (["plot", "RUN", "--out", "OUT/x.txt"], "--out must name a .png file"),
    (["plot", "RUN", "--out", "OUT/x.png", "--metric", "nope"], "unknown metric 'nope'"),
    (["plot", "RUN", "RUN", "--out", "OUT/x.png"], "the same run is given twice"),
    (["plot", "RUN", "--out", "FILE/x.png"], "is a file, not a directory"),
    (["summary", "MISSING"], "is not a purerl run directory"),
    (["summary", "UNFINISHED"], "has not finished"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, two_runs, argv, message):
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.json").write_text((two_runs[0] / "config.json").read_text())
    (tmp_path / "FILE").write_text("a user file")
    names = {"MISSING": tmp_path / "missing", "RUN": two_runs[0], "UNFINISHED": unfinished}
    argv = [str(names.get(a, a)).replace("OUT/", f"{tmp_path}/out/").replace("FILE/", f"{tmp_path}/FILE/")
            for a in argv]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists() and (tmp_path / "FILE").read_text() == "a user file"
