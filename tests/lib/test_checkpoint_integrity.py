"""A damaged checkpoint is never resumed from: `train --resume` falls back to an intact earlier checkpoint
(bit-exact with an uninterrupted run, and says so) or stops with one line and exit 2. One run stopped at
update 4 of 8 (checkpoints at 2 and 4) is copied for every case. The exit-2 cases run the console script,
so that whatever orbax logs or prints from its threads would show on stderr."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import SMALL, run_cli

from purerl.run import experiment, stopping
from purerl.cli import build_parser
from purerl.cli.train import train_spec

TRAIN = ["train", "--seeds", "2", *SMALL]
TIMING = ("compile_s", "run_s", "env_steps_per_s", "resumed_from_update")


def largest_data_file(step: Path) -> Path:
    return max((p for p in (step / "state").rglob("d/*") if p.is_file()), key=lambda p: p.stat().st_size)


def flip_bytes(step: Path) -> None:
    path = largest_data_file(step)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 16] = bytes(b ^ 0xFF for b in data[middle:middle + 16])
    path.write_bytes(bytes(data))


def edit_step(step: Path) -> None:
    path = step / "progress" / "metadata"
    progress = json.loads(path.read_text())
    path.write_text(json.dumps({**progress, "step": progress["step"] - 1}))


def truncate(step: Path) -> None:
    path = largest_data_file(step)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def delete_manifest(step: Path) -> None:
    (step / "state" / "manifest.ocdbt").unlink()


def garble_metadata(step: Path) -> None:
    (step / "state" / "_METADATA").write_bytes(b"\x00not json{")


def empty_folder(step: Path) -> None:
    shutil.rmtree(step)
    step.mkdir()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(a run stopped at update 4 of 8 with checkpoints at 2 and 4, the same run uninterrupted)."""
    base = tmp_path_factory.mktemp("integrity")
    spec = train_spec(build_parser().parse_args(TRAIN))
    with stopping.cut_after(2):
        assert experiment.run(spec, base / "stopped", progress=False, chunk_updates=2, checkpoint_every_s=0) is None
    assert sorted(p.name for p in (base / "stopped" / "checkpoint").iterdir()) == ["2", "4"]
    experiment.run(spec, base / "full", progress=False)
    return base / "stopped", base / "full"


def copy(runs, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(runs[0], out)
    return out


def resume(capsys, out: Path):
    code, _, err = run_cli(capsys, *TRAIN, "--out", out, "--resume")
    return code, err.strip().splitlines()


@pytest.mark.parametrize("damage", [flip_bytes, edit_step, truncate, delete_manifest, garble_metadata,
                                    empty_folder])
def test_a_damaged_latest_checkpoint_falls_back_to_the_intact_one(capsys, tmp_path, runs, damage):
    out = copy(runs, tmp_path)
    damage(out / "checkpoint" / "4")
    code, err = resume(capsys, out)
    assert code == 0 and len(err) == 1, err
    assert "checkpoint at step 4 (" in err[0] and "damaged; falling back to the intact checkpoint at step 2" in err[0]
    summary = json.loads((out / "summary.json").read_text())
    full = json.loads((runs[1] / "summary.json").read_text())
    assert summary["resumed_from_update"] == 2
    assert (out / "metrics.csv").read_bytes() == (runs[1] / "metrics.csv").read_bytes()
    assert {k: v for k, v in summary.items() if k not in TIMING} == {k: v for k, v in full.items() if k not in TIMING}
    assert sorted(p.name for p in (out / "checkpoint").iterdir()) == ["2", "8"]  # the damaged one is gone


@pytest.mark.parametrize("latest, earlier", [(flip_bytes, truncate), (delete_manifest, edit_step),
                                             (empty_folder, garble_metadata)])
def test_no_intact_checkpoint_is_one_line_and_exit_2(tmp_path, runs, latest, earlier):
    out = copy(runs, tmp_path)
    latest(out / "checkpoint" / "4")
    earlier(out / "checkpoint" / "2")
    purerl = Path(sys.executable).with_name("purerl")
    proc = subprocess.run([str(purerl), *TRAIN, "--out", str(out), "--resume"], capture_output=True, text=True,
                          timeout=300)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1, proc.stderr
    assert err[0].startswith("purerl: error: the checkpoints at step 4 (") and ") and step 2 (" in err[0]
    assert f"in {out / 'checkpoint'} are damaged, and no intact earlier checkpoint is left" in err[0]
    assert not (out / "summary.json").exists()
    assert sorted(p.name for p in (out / "checkpoint").iterdir()) == ["2", "4"]  # left for the user to look at


def test_a_path_orbax_reads_as_a_pattern_is_refused_before_anything_is_written(capsys, tmp_path):
    out = tmp_path / "exp[train]" / "run"
    code, _, err = run_cli(capsys, *TRAIN, "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "'['" in err and str(out) in err
    assert not (tmp_path / "exp[train]").exists()
