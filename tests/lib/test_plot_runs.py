"""`purerl plot` and `purerl summary` compare real runs; bad input is one line, exit 2, nothing written."""

import warnings

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pytest

from purerl.run import results, side_by_side
from cli_run import SMALL, run_cli
from purerl.cli import main


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two real runs that differ in env steps per update; the second sweeps lr inside the run. The first is the
    shared small run at 4 members (test_cli_input's diverged-members run compiles it)."""
    base = tmp_path_factory.mktemp("plot")
    first, second = base / "four-envs", base / "eight-envs"
    assert main(["train", "--out", str(first), "--seeds", "4", *SMALL]) == 0
    assert main(["train", "--out", str(second), "--seeds", "2", "--lr", "1e-3,3e-3", *SMALL, "--num-envs", "8"]) == 0
    return first, second


DQN_TINY = ["--algo", "dqn", "--env", "Acrobot-v1", "--seeds", "2", "--num-envs", "4", "--num-steps", "8",
            "--total-timesteps", "2048", "--buffer-size", "64", "--buffer-batch-size", "16", "--learning-starts", "32",
            "--train-interval", "4", "--target-update-interval", "32", "--epsilon-anneal-time", "100",
            "--hidden-sizes", "16", "--no-progress"]


@pytest.fixture(scope="module")
def dqn_acrobot(tmp_path_factory):
    """A third run of another algorithm on another environment."""
    out = tmp_path_factory.mktemp("plot-dqn") / "dqn-acrobot"
    assert main(["train", "--out", str(out), *DQN_TINY]) == 0
    return out


def test_labels_show_only_the_fields_that_differ_and_grid_rows_their_own_setting(two_runs):
    loaded = [side_by_side.load(path) for path in two_runs]
    labels = side_by_side.curve_labels(loaded)
    # the first run trains at the base lr; the second run's rows are its grid's lrs, never that base
    assert labels == [{"default": "num_envs=4, lr=0.00025"},
                      {"lr=0.001": "num_envs=8, lr=0.001", "lr=0.003": "num_envs=8, lr=0.003"}]
    assert set(loaded[1].series("episode_return")) == {"lr=0.001", "lr=0.003"}
    assert loaded[1].series("episode_return")["lr=0.001"].shape == (4, 2)  # 1024 / (8 x 32) updates, 2 seeds


def test_labels_across_algorithms_name_the_algorithm_and_no_other_algorithms_fields(two_runs, dqn_acrobot):
    loaded = [side_by_side.load(path) for path in [*two_runs, dqn_acrobot]]
    labels = [label for per_run in side_by_side.curve_labels(loaded) for label in per_run.values()]
    assert labels == ["ppo: num_envs=4, lr=0.00025", "ppo: num_envs=8, lr=0.001", "ppo: num_envs=8, lr=0.003", "dqn"]
    identical = [side_by_side.load(two_runs[0]), side_by_side.load(two_runs[0])]  # nothing differs: the directory tells them apart
    assert side_by_side.curve_labels(identical) == [{"default": "four-envs"}, {"default": "four-envs"}]


def test_settings_that_differ_only_between_environments_go_in_the_panel_titles(tmp_path):
    def run(name, algo, env, steps):
        config = {"command": "train", "algo": algo, "seeds": [0], "grid": [], "hyperparams": {"lr": 0.001},
                  "config": {"env": env, "total_timesteps": steps}}
        return side_by_side.Run(tmp_path / name, config, {"episode_return_mean": np.zeros(1)})

    same = [run("a", "ppo", "CartPole-v1", 100), run("b", "ppo", "Acrobot-v1", 500)]
    assert side_by_side.panel_notes(same) == {"CartPole-v1": "total_timesteps=100", "Acrobot-v1": "total_timesteps=500"}
    # the panel tells them apart; the label falls back to the directory
    assert side_by_side.curve_labels(same) == [{"default": "a"}, {"default": "b"}]
    mixed = [*same, run("c", "dqn", "CartPole-v1", 100)]
    assert side_by_side.panel_notes(mixed) == {}  # different algorithms per panel: their defaults are not the panel's


def _figure(paths, metric="episode_return"):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Tight layout not applied", no RuntimeWarning from empty updates
        figure = side_by_side.figure([side_by_side.load(path) for path in paths], metric)
        figure.canvas.draw()
    return figure


def test_one_panel_per_environment_with_one_legend_inside_the_figure(two_runs, dqn_acrobot):
    figure = _figure([*two_runs, dqn_acrobot])
    assert [ax.get_title() for ax in figure.axes] == ["CartPole-v1", "Acrobot-v1"]
    assert len(figure.legends) == 1 and not any(ax.get_legend() for ax in figure.axes)
    renderer = figure.canvas.get_renderer()
    for artist in [*figure.legends, *figure.axes, figure._suptitle]:
        box = artist.get_window_extent(renderer)
        assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1 and figure.bbox.y0 <= box.y0 \
            and box.y1 <= figure.bbox.y1, (artist, box, figure.bbox)
    entries = [text.get_text() for text in figure.legends[0].get_texts()]
    assert entries == ["ppo: num_envs=4, lr=0.00025 (n=4, no CI)", "ppo: num_envs=8, lr=0.001 (n=2, no CI)",
                       "ppo: num_envs=8, lr=0.003 (n=2, no CI)", "dqn (n=2, no CI)"]
    assert "n<10: no CI" in figure.legends[0].get_title().get_text()
    plt.close(figure)


def test_a_band_only_from_ten_seeds_and_single_seeds_below(two_runs):
    figure = _figure(two_runs)
    assert not figure.axes[0].collections  # 4 and 2 seeds: no band
    assert len(figure.axes[0].lines) == (1 + 4) + 2 * (1 + 2)  # each IQM line and its seeds' thin lines
    plt.close(figure)
    rng = np.random.default_rng(0)
    steps = np.arange(1, 41) * 100
    curves = [results.Curve("few", steps, rng.normal(size=(40, 9))),
              results.Curve("many", steps, rng.normal(size=(40, side_by_side.MIN_SEEDS_FOR_CI)))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = results.draw_panels({"": curves}, "title")
    assert len(figure.axes[0].collections) == 1  # the band of "many" alone
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["few (n=9, no CI)", "many (n=10, 95% CI)"]
    plt.close(figure)


def test_a_loss_is_drawn_per_seed_and_grid_setting_like_the_return(two_runs):
    figure = _figure(two_runs, "value_loss")
    assert len(figure.axes[0].lines) == (1 + 4) + 2 * (1 + 2)  # each IQM line and its seeds' thin lines
    assert [t.get_text() for t in figure.legends[0].get_texts()] == [
        "num_envs=4, lr=0.00025 (n=4, no CI)", "num_envs=8, lr=0.001 (n=2, no CI)", "num_envs=8, lr=0.003 (n=2, no CI)"]
    plt.close(figure)


def test_a_metric_that_averages_the_seeds_is_one_line_per_run(two_runs, tmp_path):
    """Runs written before metrics.csv kept each member's losses hold only their mean."""
    import csv
    import shutil

    older = []
    for run in two_runs:
        copy = tmp_path / run.name
        copy.mkdir()
        shutil.copy(run / "config.json", copy)
        with open(run / "metrics.csv", newline="") as f:
            rows = list(csv.reader(f))
        keep = [i for i, name in enumerate(rows[0]) if "[" not in name or name.startswith("episode_return[")]
        with open(copy / "metrics.csv", "w", newline="") as f:
            csv.writer(f).writerows([[row[i] for i in keep] for row in rows])
        older.append(copy)
    figure = _figure(older, "value_loss")
    assert len(figure.axes[0].lines) == 2 and not figure.axes[0].collections
    assert [t.get_text() for t in figure.legends[0].get_texts()] == [
        "num_envs=4, lr=0.00025 (mean over seeds)", "num_envs=8, lr=0.001|0.003 (mean over seeds)"]
    plt.close(figure)


def test_plot_overlays_runs_and_grid_settings_on_env_steps(capsys, tmp_path, two_runs):
    out = tmp_path / "figs" / "compare.png"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
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
    rows = side_by_side.summary_rows([side_by_side.load(p) for p in two_runs])
    assert [len(r["per_seed"]) for r in rows] == [4, 2, 2]


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


def test_plot_onto_a_runs_own_curves_says_whose_they_are_and_keeps_them(capsys, two_runs):
    """The train-written figure is purerl's: the refusal says so, not "purerl did not write it" (issue 86)."""
    own = two_runs[0] / "curves.png"
    before = own.read_bytes()
    code, _, err = run_cli(capsys, "plot", two_runs[1], "--out", own)
    assert code == 2 and err.count("\n") == 1 and f"it is the run {two_runs[0]}'s own curves.png" in err, err
    assert "did not write" not in err and own.read_bytes() == before
