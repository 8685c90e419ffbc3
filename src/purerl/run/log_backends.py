"""The backends `--log` sends a run's metrics to, once per chunk (`loggers.ChunkLogger`): TensorBoard event files
in the run directory, and W&B, one run per member in its own process. Each says how many points per series it
takes (`max_points`) and whether it aggregates a setting's seeds itself (`aggregates`)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

from purerl.checks import ConfigError

TENSORBOARD_DIR = "tensorboard"
TENSORBOARD_POINTS = 1000  # TensorBoard keeps 1,000 points per scalar series by default (a reservoir sample)
WANDB_POINTS = 250  # W&B's charts draw at most 1,000-1,500 points, and each `run.log` is an IPC round trip
WANDB_MAX_RUNS = 256  # one W&B run per member, each opened in about 0.2 s of W&B's process, before its first point
TIME = "time"  # the TensorBoard run (and tag prefix) of the speed series
# W&B's own variables, which a flag's absence leaves in charge (wandb.init reads them the same way)
WANDB_ENV = {"project": "WANDB_PROJECT", "entity": "WANDB_ENTITY", "group": "WANDB_RUN_GROUP", "tags": "WANDB_TAGS"}


def member_series(label: str) -> tuple[str, str]:
    """A member's label as (its setting, "seed=N"), the series it is filed under."""
    setting, _, seed = label.rpartition(",")
    return (setting or "default", seed)


def wandb_settings(out: Path, members: int, project: str | None = None, entity: str | None = None,
                   group: str | None = None, tags: str | None = None) -> dict:
    """The W&B project, entity, group and tags of a run's W&B runs, one per member: each flag given, else W&B's
    variable for it (`WANDB_ENV`); the group defaults to the experiment, the run directory's name, so a
    member's runs sit together as W&B groups seeds. Checked here, in one line, before anything compiles."""
    given = {"project": project, "entity": entity, "group": group, "tags": tags}
    values = {name: value if value is not None else os.environ.get(WANDB_ENV[name]) for name, value in given.items()}
    where = {name: f"--wandb-{name}" if given[name] is not None else WANDB_ENV[name] for name in given}
    if members > WANDB_MAX_RUNS:
        raise ConfigError(f"--log wandb makes one W&B run per member: at most {WANDB_MAX_RUNS}, got {members:,} "
                          "members (--log tensorboard takes any number)")
    for name in ("project", "entity", "group"):
        value = values[name]
        if value is not None and not (0 < len(value.strip()) <= 128):
            raise ConfigError(f"{where[name]} must be 1 to 128 characters, got {value!r:.140}")
    bad = sorted(set("/\\#?%:") & set(values["project"] or ""))
    if bad:
        raise ConfigError(f"{where['project']} {values['project']!r} cannot contain {' '.join(bad)} (W&B's rule)")
    tag_list = [tag.strip() for tag in (values["tags"] or "").split(",")] if values["tags"] is not None else None
    if tag_list is not None and not all(0 < len(tag) <= 64 for tag in tag_list):
        raise ConfigError(f"{where['tags']} must be comma-separated tags of 1 to 64 characters each, got "
                          f"{values['tags']!r:.140}")
    return {"project": values["project"], "entity": values["entity"], "group": values["group"] or Path(out).name,
            "tags": tag_list}


class TensorBoard:
    """Event files under RUN/tensorboard/SETTING/{seed=N,aggregate}: TensorBoard shows each as a run.

    Events go straight to tensorboardX's synchronous file writer: `ChunkLogger` already writes from its own
    thread, and SummaryWriter's queue and second thread cost more CPU than the writing itself.
    """

    def __init__(self, out: Path, config: dict, num_updates: int | None):
        self.root, self.writers, self.purge_step = out / TENSORBOARD_DIR, {}, None
        self.max_points = TENSORBOARD_POINTS
        from tensorboardX.proto import event_pb2, summary_pb2  # imported here, while the run compiles

        self.event_pb2, self.summary_pb2 = event_pb2, summary_pb2

    def write(self, steps: list[int], points: dict, first_step: int) -> None:
        Event, Summary = self.event_pb2.Event, self.summary_pb2.Summary
        if self.purge_step is None:  # a resumed run drops what an earlier session logged past its checkpoint
            self.purge_step = first_step
        for (setting, series), rows in points.items():
            writer = self._writer(setting, series)
            for step, row in zip(steps, rows):  # one event per update holding every metric
                values = [Summary.Value(tag=name, simple_value=value) for name, value in row.items()]
                writer.write_event(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))
        self.flush()

    def write_time(self, step: int, speed: dict, first_step: int) -> None:
        """The run's speed, once per chunk, in a TensorBoard run of its own (RUN/tensorboard/time)."""
        Event, Summary = self.event_pb2.Event, self.summary_pb2.Summary
        if self.purge_step is None:
            self.purge_step = first_step
        values = [Summary.Value(tag=f"{TIME}/{name}", simple_value=value) for name, value in speed.items()]
        writer = self._writer(TIME, "")
        writer.write_event(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))
        writer.flush()

    def _writer(self, setting: str, series: str):
        if (setting, series) not in self.writers:
            from tensorboardX.event_file_writer import EventsWriter

            Event, SessionLog = self.event_pb2.Event, self.event_pb2.SessionLog

            directory = self.root / setting / series
            directory.mkdir(parents=True, exist_ok=True)
            # tensorboardX names the file by the second and opens it with "wb": the suffix keeps a session
            # resumed within the same second from overwriting the last one's file
            writer = EventsWriter(str(directory / "events"), filename_suffix=f".{os.getpid()}.{time.time_ns()}")
            if self.purge_step:  # TensorBoard discards the older file's events from this step on
                writer.write_event(Event(wall_time=time.time(), step=self.purge_step,
                                         session_log=SessionLog(status=SessionLog.START)))
            self.writers[(setting, series)] = writer
        return self.writers[(setting, series)]

    def flush(self) -> None:
        for writer in self.writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


class WandB:
    """One W&B run per member, grouped by experiment (`wandb_settings`), its config the run's config.json and
    its member (label, setting, seed); a member's series under the metric's own name, and the speed series.

    W&B groups the runs itself (mean and spread over a group's seeds), so it gets no aggregate series. W&B
    runs in its own process (`wandb_process`): its import and `wandb.init` (about 0.7 s of CPU, then about
    0.2 s a run) use the core the trainer leaves idle while it compiles, and its calls never hold the
    trainer's GIL. Each `run.log` is a round trip to W&B's service whose cost grows with the keys, so W&B gets
    at most `WANDB_POINTS` window means per series. Without a network connection it logs offline into RUN/wandb
    (`wandb sync` uploads it later); WANDB_MODE, when set, decides instead.
    """

    aggregates = False

    def __init__(self, out: Path, config: dict, num_updates: int | None, labels: list[str], settings: dict):
        # -P: the script's folder (purerl's modules) stays off sys.path; a new session: a Ctrl-C meant for the
        # trainer does not kill it, and it finishes the W&B runs when the trainer closes its input
        self.process = subprocess.Popen([sys.executable, "-P", str(Path(__file__).with_name("wandb_process.py"))],
                                        stdin=subprocess.PIPE, start_new_session=True)
        self.max_points = WANDB_POINTS
        members = [{"series": member_series(label), "config": _member_config(config, label)} for label in labels]
        self._send({"out": str(out), "members": members, **settings})

    def write(self, steps: list[int], points: dict, first_step: int) -> None:
        self._send(("points", steps, points))

    def write_time(self, step: int, speed: dict, first_step: int) -> None:
        self._send(("time", step, {f"{TIME}/{name}": value for name, value in speed.items()}))

    def _send(self, message) -> None:
        try:
            pickle.dump(message, self.process.stdin)
            self.process.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError(f"W&B's logging process ended early (exit {self.process.wait()}); its error is above")

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        if self.process.wait() != 0:
            raise RuntimeError(f"W&B's logging process failed (exit {self.process.returncode}); its error is above")


def _member_config(config: dict, label: str) -> dict:
    """The run's config.json as one member trained it: its seed, and its grid values among the hyperparameters
    (so W&B can group or filter by `hyperparams.lr`)."""
    setting, _, seed = label.rpartition(",")
    values = dict(item.split("=", 1) for item in setting.split(",") if item)
    hyperparams = {**config.get("hyperparams", {}), **{name: float(value) for name, value in values.items()}}
    return {**config, "hyperparams": hyperparams, "member": label, "setting": setting or "default",
            "seed": int(seed.removeprefix("seed="))}


BACKENDS = {"tensorboard": TensorBoard, "wandb": WandB}
