"""`--log tensorboard` writes event files TensorBoard reads back; `--log wandb` logs offline without a network."""

import csv
import io
import math

import numpy as np
import pytest

from purerl.run import log_backends, loggers, wandb_process
from cli_run import SMALL, run_cli
from purerl.cli import main



def read_scalars(run_dir):
    """TensorBoard's own reader over one TensorBoard run directory: {tag: [(step, value), ...]}."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    out = tmp_path_factory.mktemp("tb") / "run"
    assert main(["train", "--out", str(out), "--seeds", "2", "--lr", "1e-3,3e-3", "--log", "tensorboard", *SMALL]) == 0
    return out


def test_every_member_and_each_setting_aggregate_is_its_own_tensorboard_run(logged_run):
    root = logged_run / log_backends.TENSORBOARD_DIR
    runs = sorted(str(p.relative_to(root)) for p in root.glob("*/*") if p.is_dir())
    assert runs == ["lr=0.001/aggregate", "lr=0.001/seed=0", "lr=0.001/seed=1",
                    "lr=0.003/aggregate", "lr=0.003/seed=0", "lr=0.003/seed=1"]


def test_event_files_hold_the_same_numbers_as_metrics_csv(logged_run):
    with open(logged_run / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    member = read_scalars(logged_run / log_backends.TENSORBOARD_DIR / "lr=0.003" / "seed=1")
    assert {"episode_return", "policy_loss", "value_loss"} <= set(member)
    expected = [(int(r["env_steps"]), float(r["episode_return[lr=0.003,seed=1]"])) for r in rows
                if r["episode_return[lr=0.003,seed=1]"]]
    assert [step for step, _ in member["episode_return"]] == [step for step, _ in expected]
    for (_, logged), (_, written) in zip(member["episode_return"], expected):
        assert math.isclose(logged, written, rel_tol=1e-5)  # metrics.csv keeps 6 significant digits
    aggregate = read_scalars(logged_run / log_backends.TENSORBOARD_DIR / "lr=0.003" / "aggregate")
    assert {"episode_return", "episode_return_iqm", "value_loss"} <= set(aggregate)
    assert aggregate["value_loss"][0][0] == 128  # x axis: env steps per member after the first update


def test_tensorboard_gets_window_means_and_a_resumed_session_replaces_what_follows_its_checkpoint(tmp_path,
                                                                                                monkeypatch):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    monkeypatch.setattr(log_backends, "TENSORBOARD_POINTS", 3)
    config = {"config": {"total_timesteps": 70}}  # 7 updates of 10 steps: windows of 3 updates

    def session(start, returns, run_s):
        chunk_logger = loggers.ChunkLogger(["tensorboard"], tmp_path, ["seed=0"], {"default": [0]}, 10, config)
        chunk_logger.write(start, {"episode_return": np.array([returns])}, {"chunk_s": 2.0, "run_s": run_s})
        chunk_logger.close()

    def wall_time():
        return read_scalars(tmp_path / log_backends.TENSORBOARD_DIR / log_backends.TIME)["time/wall_s"]

    session(0, [np.nan, 2.0, 4.0, 1.0, 1.0, 1.0, 5.0], run_s=7.0)
    first = read_scalars(tmp_path / log_backends.TENSORBOARD_DIR / "default" / "seed=0")["episode_return"]
    assert first == [(30, 3.0), (60, 1.0), (70, 5.0)]  # NaN skipped; the last window is shorter
    assert wall_time() == [(70, 7.0)]
    session(4, [7.0, 8.0, 9.0], run_s=9.0)  # resumed from the checkpoint after update 4: its steps start at 50
    resumed = read_scalars(tmp_path / log_backends.TENSORBOARD_DIR / "default" / "seed=0")["episode_return"]
    assert resumed == [(30, 3.0), (70, 8.0)]
    assert wall_time() == [(70, 9.0)]  # the speed series too drops what followed the checkpoint


def test_wandb_logs_offline_without_a_network(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens there: as with no network
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), "--seeds", "2", "--log", "wandb", *SMALL]) == 0
    offline = list((out / wandb_process.DIRECTORY).glob("offline-run-*/run-*.wandb"))
    assert len(offline) == 2 and all(path.stat().st_size > 0 for path in offline)  # one run per member


class FakeWandB:
    """`wandb.init` replaced: each run it opens, with its keyword arguments and what it logs."""

    def __init__(self):
        self.runs = []

    def init(self, **kwargs):
        run = FakeWandB.Run(kwargs)
        self.runs.append(run)
        return run

    class Run:
        def __init__(self, kwargs):
            self.kwargs, self.logged, self.finished = kwargs, [], False

        def define_metric(self, *args, **kwargs):
            pass

        def log(self, data):
            self.logged.append(data)

        def finish(self):
            self.finished = True


def replay_into_fake_wandb(monkeypatch, out, write, labels, groups, config, settings=None):
    """What the trainer's `ChunkLogger` sends W&B's process (`write(chunk_logger)`), served by `wandb_process`
    to a fake `wandb` module: no W&B install and no network needed. Returns the fake runs."""
    import sys
    import types

    sent = io.BytesIO()

    class Pipe(io.BytesIO):
        def close(self):
            sent.write(self.getvalue())

    class FakeProcess:  # what the trainer sends W&B's process, kept to replay below
        def __init__(self, *args, **kwargs):
            self.stdin, self.returncode = Pipe(), 0

        def wait(self):
            return 0

    monkeypatch.setattr(log_backends.subprocess, "Popen", FakeProcess)
    out.mkdir(exist_ok=True)
    chunk_logger = loggers.ChunkLogger(["wandb"], out, labels, groups, 10, config, settings)
    write(chunk_logger)
    chunk_logger.close()
    fake = FakeWandB()
    module = types.SimpleNamespace(init=fake.init, Settings=lambda **kwargs: kwargs)
    monkeypatch.setitem(sys.modules, "wandb", module)
    monkeypatch.setenv("WANDB_MODE", "offline")
    sent.seek(0)
    wandb_process.serve(sent)
    return fake.runs


def test_wandb_gets_window_means_within_its_point_budget(monkeypatch, tmp_path):
    monkeypatch.setattr(log_backends, "WANDB_POINTS", 3)
    config = {"config": {"total_timesteps": 70}}  # 7 updates of 10 steps: windows of 3, 3 and the last 1
    returns = np.array([[np.nan, 2.0, 4.0, 1.0, 1.0, 1.0, 5.0]])

    def write(chunk_logger):
        chunk_logger.write(0, {"episode_return": returns[:, :4], "value_loss": np.arange(4.0)[None]})
        chunk_logger.write(4, {"episode_return": returns[:, 4:], "value_loss": np.arange(4.0, 7.0)[None]})

    [run] = replay_into_fake_wandb(monkeypatch, tmp_path, write, ["seed=0"], {"default": [0]}, config)
    assert run.finished
    assert [point["env_steps"] for point in run.logged] == [30, 60, 70]
    assert [point["episode_return"] for point in run.logged] == [3.0, 1.0, 5.0]  # NaN skipped
    assert [point["value_loss"] for point in run.logged] == [1.0, 4.0, 6.0]  # across the chunk edge


def test_wandb_opens_one_run_per_member_grouped_by_experiment(monkeypatch, tmp_path):
    for name in log_backends.WANDB_ENV.values():
        monkeypatch.delenv(name, raising=False)
    labels = ["lr=0.001,seed=0", "lr=0.001,seed=1", "lr=0.003,seed=0", "lr=0.003,seed=1"]
    groups = {"lr=0.001": [0, 1], "lr=0.003": [2, 3]}
    config = {"config": {"total_timesteps": 20}, "hyperparams": {"lr": 0.001, "gamma": 0.99}}
    metrics = {"episode_return": np.arange(8.0).reshape(4, 2), "value_loss": np.ones((4, 2))}

    def write(chunk_logger):
        chunk_logger.write(0, metrics, {"chunk_s": 2.0, "run_s": 5.0})

    runs = replay_into_fake_wandb(monkeypatch, tmp_path / "exp-1", write, labels, groups, config)
    assert [run.kwargs["name"] for run in runs] == [f"exp-1/{label}" for label in labels]
    assert {run.kwargs["group"] for run in runs} == {"exp-1"}  # the experiment: its run directory's name
    assert [run.kwargs["job_type"] for run in runs] == ["lr=0.001", "lr=0.001", "lr=0.003", "lr=0.003"]
    assert [(run.kwargs["config"]["hyperparams"]["lr"], run.kwargs["config"]["seed"]) for run in runs] == [
        (0.001, 0), (0.001, 1), (0.003, 0), (0.003, 1)]
    assert runs[0].kwargs["config"]["hyperparams"]["gamma"] == 0.99
    assert all(run.kwargs["project"] is None and run.kwargs["tags"] is None for run in runs)  # W&B's own default
    third = [point for point in runs[2].logged if "episode_return" in point]
    assert third == [{"env_steps": 10, "episode_return": 4.0, "value_loss": 1.0},
                     {"env_steps": 20, "episode_return": 5.0, "value_loss": 1.0}]  # no aggregate: W&B groups
    speed = [point for point in runs[2].logged if "time/env_steps_per_s" in point]
    assert speed == [{"env_steps": 20, "time/env_steps_per_s": 4 * 2 * 10 / 2.0, "time/wall_s": 5.0}]


def test_wandb_flags_and_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_PROJECT", "from-env")
    monkeypatch.setenv("WANDB_RUN_GROUP", "env-group")
    monkeypatch.setenv("WANDB_TAGS", "a,b")
    monkeypatch.delenv("WANDB_ENTITY", raising=False)
    out = tmp_path / "exp"
    assert log_backends.wandb_settings(out, 2) == {"project": "from-env", "entity": None, "group": "env-group",
                                              "tags": ["a", "b"]}
    assert log_backends.wandb_settings(out, 2, project="p", entity="team", group="g", tags="x, y") == {
        "project": "p", "entity": "team", "group": "g", "tags": ["x", "y"]}
    monkeypatch.delenv("WANDB_RUN_GROUP")
    assert log_backends.wandb_settings(out, 2)["group"] == "exp"


@pytest.mark.parametrize("argv, message", [
    (["--wandb-project", "p"], "--wandb-project needs --log wandb"),
    (["--log", "wandb", "--wandb-project", "a/b"], "--wandb-project 'a/b' cannot contain /"),
    (["--log", "wandb", "--wandb-tags", "ok," + "t" * 65], "--wandb-tags must be comma-separated tags of 1 to 64"),
    (["--log", "wandb", "--wandb-group", ""], "--wandb-group must be 1 to 128 characters"),
    (["--log", "wandb", "--seeds", "257"], "one W&B run per member: at most 256, got 257 members"),
])
def test_bad_wandb_input_is_one_line_exit_2_before_anything_is_written(capsys, tmp_path, monkeypatch, argv, message):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "wandb" else real(name, *a))
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--out", out, *argv, *SMALL)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_tensorboard_has_speed_and_wall_time_series(logged_run):
    series = read_scalars(logged_run / log_backends.TENSORBOARD_DIR / log_backends.TIME)
    assert set(series) == {"time/env_steps_per_s", "time/wall_s"}
    speed, wall = series["time/env_steps_per_s"], series["time/wall_s"]
    assert [step for step, _ in speed] == [step for step, _ in wall] == [128 * (i + 1) for i in range(8)]
    assert all(value > 0 for _, value in speed)  # 2 x 2 members' steps per second of each chunk
    assert all(b > a > 0 for (_, a), (_, b) in zip(wall, wall[1:]))  # seconds trained so far


def test_a_failed_wandb_process_is_reported_not_ignored(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "no-such-mode")  # wandb.init rejects it, in W&B's process
    chunk_logger = loggers.ChunkLogger(["wandb"], tmp_path, ["seed=0"], {"default": [0]}, 10, {"hyperparams": {}})
    chunk_logger.write(0, {"episode_return": np.ones((1, 3))})
    with pytest.raises(RuntimeError, match="W&B's logging process"):
        chunk_logger.close()


def test_chunk_logger_skips_updates_in_which_no_episode_ended():
    written = []

    class Recorder:
        def __init__(self, out, config, num_updates):
            pass

        def write(self, steps, points, first_step):
            written.append((steps, points))

        def close(self):
            pass

    loggers.BACKENDS["recorder"] = Recorder
    try:
        chunk_logger = loggers.ChunkLogger(["recorder"], "unused", ["seed=0", "seed=1"], {"default": [0, 1]}, 10, {})
        chunk_logger.write(3, {"episode_return": np.array([[np.nan, 2.0], [np.nan, np.nan]]),
                               "value_loss": np.array([[0.5, 0.25], [1.5, 0.75]])})
        chunk_logger.close()
    finally:
        del loggers.BACKENDS["recorder"]
    [(steps, points)] = written
    assert steps == [40, 50]  # env steps per member after updates 3 and 4
    assert points[("default", "seed=0")] == [{"value_loss": 0.5}, {"episode_return": 2.0, "value_loss": 0.25}]
    assert points[("default", "aggregate")][0] == {"value_loss": 1.0}
    assert points[("default", "aggregate")][1] == {"episode_return": 2.0, "episode_return_iqm": 2.0, "value_loss": 0.5}


def test_closing_in_the_background_follows_every_write_and_close_waits_for_it():
    import threading

    events, release = [], threading.Event()

    class SlowToClose:
        def __init__(self, out, config, num_updates):
            pass

        def write(self, steps, points, first_step):
            events.append("write")

        def close(self):
            release.wait(10)  # W&B's finish waiting on its service
            events.append("closed")

    loggers.BACKENDS["slow"] = SlowToClose
    try:
        chunk_logger = loggers.ChunkLogger(["slow"], "unused", ["seed=0"], {"default": [0]}, 10, {})
        chunk_logger.write(0, {"episode_return": np.ones((1, 2))})
        chunk_logger.close_in_background()
        assert "closed" not in events  # returned at once: the run's outputs are written meanwhile
        release.set()
        chunk_logger.close()
    finally:
        del loggers.BACKENDS["slow"]
    assert events == ["write", "closed"]


@pytest.mark.parametrize("argv, message", [
    (["--log", "csv"], "invalid choice: 'csv'"),
])
def test_bad_logger_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, argv, message):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--out", out, *argv, *SMALL)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_missing_logger_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(loggers.ConfigError, match=r"pip install 'purerl\[wandb\]'"):
        loggers.check(["wandb"])
