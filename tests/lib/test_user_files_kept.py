"""`--overwrite` and checkpoint rotation delete only files purerl wrote, at any depth: a user's file
inside a checkpoint step folder, a folder of theirs with a digit name, a W&B run folder, or under W&B's names,
stops `--overwrite` before anything is deleted, and keeps its step through rotation."""

import os
import shutil
from pathlib import Path

import pytest
from cli_run import SMALL, reached, run_cli  # a command that reaches training counts as exit 0
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from purerl.checks import ConfigError
from purerl.cli import build_parser, main
from purerl.cli.train import train_spec
from purerl.run import experiment, inventory, rundir, stopping
from purerl.run.checkpoint import INVENTORY

TRAIN = ["train", "--seeds", "1", *SMALL]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One small finished CartPole run with W&B-like folders beside its checkpoints and event files."""
    out = tmp_path_factory.mktemp("trained") / "run"
    assert main([*TRAIN, "--out", str(out), "--log", "tensorboard"]) == 0
    wandb_run = out / "wandb" / "offline-run-20250101_000000-abc"
    for name in ("files/config.yaml", "logs/debug.log", "run-abc.wandb"):
        (wandb_run / name).parent.mkdir(parents=True, exist_ok=True)
        (wandb_run / name).write_text("W&B's")
    os.symlink(wandb_run.name, out / "wandb" / "latest-run")
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def steps(run: Path) -> list[str]:
    return sorted((p.name for p in (run / "checkpoint").iterdir()), key=int)


def copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, symlinks=True)
    return to


def test_the_trained_run_is_all_purerls_and_overwrite_replaces_it(capsys, tmp_path, monkeypatch, trained):
    assert inventory.foreign_entries(trained) == []
    assert all((trained / "checkpoint" / step / INVENTORY).is_file() for step in steps(trained))
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    code, _, err = run_cli(capsys, *TRAIN, "--out", copy(trained, tmp_path / "run"), "--overwrite")
    assert code == 0, err


def user_file_cases(trained: Path) -> list[str]:
    first = steps(trained)[0]
    return [f"checkpoint/{first}/my_notes.txt", "checkpoint/123/my_notes.txt", f"checkpoint/{first}/state/d/notes",
            "wandb/offline-run-20250101_000000-abc/my_notes.txt", "wandb/latest-run"]


@pytest.mark.parametrize("case", range(5))
def test_overwrite_refuses_a_user_file_one_level_inside_a_librarys_folder(capsys, tmp_path, monkeypatch, trained,
                                                                        case):
    run = copy(trained, tmp_path / "run")
    entry = user_file_cases(trained)[case]
    (run / entry).unlink(missing_ok=True)  # wandb/latest-run: the user's file, not W&B's link
    (run / entry).parent.mkdir(parents=True, exist_ok=True)
    (run / entry).write_text("mine")
    before = snapshot(run)
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    code, _, err = run_cli(capsys, *TRAIN, "--out", run, "--overwrite")
    assert code == 2 and entry in err and err.count("\n") == 1, err
    assert snapshot(run) == before


def test_resume_keeps_a_rotated_step_that_holds_a_user_file(capsys, tmp_path):
    out = tmp_path / "run"
    spec = train_spec(build_parser().parse_args(TRAIN))
    with stopping.cut_after(3):  # checkpoints after each of the first three chunks: two are kept
        assert experiment.run(spec, out, progress=False, chunk_updates=1, checkpoint_every_s=0) is None
    oldest = out / "checkpoint" / steps(out)[0]
    (oldest / "my_notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "train", "--out", out, "--resume", "--no-progress", "--checkpoint-every", "1e-9")

    assert code == 0, err
    assert (oldest / "my_notes.txt").read_text() == "mine"
    assert err.count(f"keeping the old checkpoint {oldest}") == 1, err
    assert len(steps(out)) == 3  # the user's step and the newest two; every other old one was deleted


names = st.one_of(st.text("abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12),
                  st.integers(0, 10**6).map(str),
                  st.sampled_from(["latest-run", "run-20250101_000000-x", "offline-run-20250101_000000-abc",
                                   "_CHECKPOINT_METADATA", "commit_success.txt", "metadata", "manifest.ocdbt",
                                   "_METADATA", "d", "state", "progress", "ocdbt.process_0", "debug.log",
                                   INVENTORY, "0123456789abcdef0123456789abcdef", "files", "config.yaml"]))
names = names.filter(lambda name: name not in (".", "..") and not name.startswith("events.out.tfevents."))


def put_user_files(run: Path, data) -> dict[Path, bytes]:
    """One to three files of the user's, at drawn depths under the folders libraries write, whose names and parents
    are taken by nothing of purerl's."""
    folders = sorted({str(p.relative_to(run)) for p in run.rglob("*") if p.is_dir() and not p.is_symlink()
                      and p.relative_to(run).parts[0] in inventory.OWN_FOLDERS})
    mine = {}
    for _ in range(data.draw(st.integers(1, 3))):
        where = run / data.draw(st.sampled_from(folders)) / Path(*data.draw(st.lists(names, max_size=2)))
        path = where / data.draw(names)
        if any(p.exists() for p in [path, *path.parents] if p != run and not p.is_dir()) or path.is_dir() \
                or path.is_symlink() or any(p.is_symlink() for p in path.parents):
            continue  # a name already taken by a file (or a link) of purerl's: nothing new of the user's
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.draw(st.binary(max_size=32)))
        mine[path] = path.read_bytes()
    return mine


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_overwrite_refuses_and_deletes_nothing_for_user_files_at_any_depth(capsys, monkeypatch, tmp_path_factory,
                                                                        trained, data):
    run = copy(trained, tmp_path_factory.mktemp("run") / "run")
    mine = put_user_files(run, data)
    assume(mine)  # every name drawn was purerl's own: nothing of the user's to keep, and --overwrite may replace
    before = snapshot(run)
    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    code, _, err = run_cli(capsys, *TRAIN, "--out", run, "--overwrite")
    assert code == 2 and err.count("\n") == 1, err
    assert snapshot(run) == before
    assert all(path.read_bytes() == content for path, content in mine.items())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_overwrite_deletes_only_the_files_it_checked(tmp_path_factory, trained, data):
    """The deletion itself checks the run again and goes file by file through what it checked (no folder is removed
    whole): a user's file put there after `prepare` stops it before anything is deleted, and one put there after its
    own check (patched in) survives with its folders, while everything else purerl wrote is gone."""
    run = copy(trained, tmp_path_factory.mktemp("run") / "run")
    config = rundir.read_config(run)
    assert rundir.prepare(run, config, resume=False, overwrite=True) is False
    checked = inventory.check_only_own(run)
    mine = put_user_files(run, data)
    assume(mine)
    before = snapshot(run)
    with pytest.raises(ConfigError, match="refusing to overwrite"):
        rundir.start(run, config, resumed=False)
    assert snapshot(run) == before
    with pytest.MonkeyPatch.context() as patch:  # the user's files came after the check
        patch.setattr(inventory, "check_only_own", lambda out: checked)
        rundir.start(run, config, resumed=False)
    assert all(path.read_bytes() == content for path, content in mine.items())
    left = {p for p in run.rglob("*") if not p.is_dir() or p.is_symlink()}
    assert left - set(mine) == {run / rundir.MARKER, run / rundir.CONFIG}
    assert {p for p in run.rglob("*") if p.is_dir()} == {q for p in mine for q in p.parents if run in q.parents}
