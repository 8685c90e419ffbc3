"""Run directories: no user file is ever deleted, --resume never starts afresh, bad destinations are one line."""

import json
import os
from pathlib import Path

import pytest
from cli_run import SMALL, run_cli

from purerl.run import rundir
from purerl.checks import ConfigError


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def user_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.txt").write_text("four years of work")
    (folder / "sub" / "data.csv").write_text("1,2,3\n")
    return folder


def fake_run(folder: Path, config: dict, extra: dict[str, str] | None = None) -> Path:
    rundir.start(folder, config, resumed=False)
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("command", [["train", *SMALL], ["evolve", "value-loss", "--generations", "2", "--no-progress"]])
def test_overwrite_never_empties_a_folder_purerl_did_not_create(capsys, tmp_path, command):
    folder = user_folder(tmp_path)
    before = snapshot(folder)
    code, _, err = run_cli(capsys, *command, "--out", folder, "--overwrite")
    assert code == 2 and err.count("\n") == 1
    assert "not a purerl run" in err and "--overwrite" not in err  # no invitation to delete it
    assert snapshot(folder) == before


def test_overwrite_refuses_the_current_directory_even_when_it_is_a_run(capsys, tmp_path, monkeypatch):
    fake_run(tmp_path, {"command": "train"})
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", ".", "--overwrite")
    assert code == 2 and "current, home or root directory" in err
    assert snapshot(tmp_path) == before


def test_overwrite_refuses_a_run_holding_a_foreign_file(capsys, tmp_path):
    run = fake_run(tmp_path / "run", {"command": "train"}, extra={"metrics.csv": "x", "notes.txt": "mine"})
    before = snapshot(run)
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, "--overwrite")
    assert code == 2 and "files purerl did not write or does not replace (notes.txt)" in err
    assert snapshot(run) == before


@pytest.mark.parametrize("entry", ["holiday.gif", ".keys.tmp", "analysis/notes.md", "report/paper.tex",
                                   "mfos/figure.png"])
def test_overwrite_refuses_user_files_named_like_purerls_own(capsys, tmp_path, entry):
    """Names are matched exactly: a user's GIF, a temp file of theirs, or an analysis folder (another command's
    output, where notes may sit beside it) is kept and stops --overwrite."""
    run = fake_run(tmp_path / "run", {"command": "train"}, extra={"metrics.csv": "x"})
    (run / entry).parent.mkdir(parents=True, exist_ok=True)
    (run / entry).write_text("mine")
    before = snapshot(run)
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, "--overwrite")
    assert code == 2 and Path(entry).parts[0] in err and err.count("\n") == 1
    assert snapshot(run) == before


def test_overwrite_replaces_a_run_that_holds_only_purerls_files(tmp_path):
    run = fake_run(tmp_path / "run", {"command": "train", "seeds": [0]}, extra={"metrics.csv": "old"})
    (run / "checkpoint" / "7").mkdir(parents=True)
    (run / "tensorboard" / "default").mkdir(parents=True)
    (run / ".curves.png.tmp.png").write_text("a plot cut short")
    assert rundir.prepare(run, {"command": "train", "seeds": [1]}, resume=False, overwrite=True) is False
    rundir.start(run, {"command": "train", "seeds": [1]}, resumed=False)
    assert sorted(p.name for p in run.iterdir()) == [rundir.MARKER, rundir.CONFIG]
    assert json.loads((run / rundir.CONFIG).read_text())["seeds"] == [1]


def test_a_run_without_overwrite_or_resume_is_left_alone(tmp_path):
    run = fake_run(tmp_path / "run", {"command": "train", "seeds": [0]})
    with pytest.raises(ConfigError, match="already holds this run; pass --resume"):
        rundir.prepare(run, {"command": "train", "seeds": [0]}, resume=False, overwrite=False)
    with pytest.raises(ConfigError, match=r"already holds a different run \(differs in: seeds: \[0\] \(recorded\) "
                                          r"vs \[1\] \(this command\)\)"):
        rundir.prepare(run, {"command": "train", "seeds": [1]}, resume=False, overwrite=False)
    with pytest.raises(ConfigError, match=r"--resume: .* holds a different run \(differs in: seeds: "):
        rundir.prepare(run, {"command": "train", "seeds": [1]}, resume=True, overwrite=False)
    assert rundir.prepare(run, {"command": "train", "seeds": [0]}, resume=True, overwrite=False) is True


@pytest.mark.parametrize("command", [["train", *SMALL], ["evolve", "value-loss", "--no-progress"]])
def test_resume_without_a_run_is_an_error_not_a_fresh_start(capsys, tmp_path, command):
    code, _, err = run_cli(capsys, *command, "--resume")
    assert code == 2 and "--resume needs --out" in err
    for out in (tmp_path / "missing", tmp_path):
        code, _, err = run_cli(capsys, *command, "--out", out, "--resume")
        assert code == 2 and "holds no purerl run to continue" in err and err.count("\n") == 1
    assert not (tmp_path / "missing").exists() and not any(tmp_path.iterdir())


def test_unwritable_destinations_are_one_line_before_anything_is_written(capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")  # was `[Errno 17] File exists`, exit 1 (issue 84)
    for out, message in ((tmp_path / "file" / "run", "is a file, not a directory"),
                         (Path("/proc/purerl-run"), "is not writable"),
                         (tmp_path / "dangling", "dangling is a link to"),
                         (tmp_path / "dangling" / "run", "which does not exist")):
        code, _, err = run_cli(capsys, "train", *SMALL, "--out", out)
        assert code == 2 and message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "file"] and not (tmp_path / "nowhere").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_directory_without_write_permission_is_refused(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", locked / "run")
    assert code == 2 and "is not writable" in err


@pytest.mark.parametrize("extra", [["--resume"], []])  # (--overwrite replaces it: it is purerl's own file)
def test_a_corrupt_config_json_is_one_line(capsys, tmp_path, extra):
    run = fake_run(tmp_path / "run", {"command": "train"})
    (run / rundir.CONFIG).write_text("{not json")
    code, _, err = run_cli(capsys, "train", *SMALL, "--out", run, *extra)
    assert code == 2 and "cannot be read as a run's settings" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "eval", run)
    assert code == 2 and "cannot be read as a run's settings" in err
