"""A checkpoint without its checksum is damaged, never trusted as an older format (no format of purerl's lacks
one): deleting the `sha256` key from a checkpoint's progress must not turn the check off. `--resume` then falls
back to the intact earlier checkpoint, bit-exact with an uninterrupted run, or stops with one line and exit 2."""

import json
import shutil
from pathlib import Path

import numpy as np
import orbax.checkpoint as ocp
import pytest
from cli_run import run_cli
from test_checkpoint_integrity import TIMING, TRAIN, flip_bytes

from purerl.cli import build_parser
from purerl.cli.train import train_spec
from purerl.run import experiment, stopping
from purerl.run.checkpoint import DIGEST, CheckpointDamaged, Checkpointer

TREE = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.int32(7)}


def drop_checksum(step: Path) -> None:
    path = step / "progress" / "metadata"
    progress = json.loads(path.read_text())
    del progress[DIGEST]
    path.write_text(json.dumps(progress))


def test_a_checkpoint_saved_without_a_checksum_is_damaged(tmp_path):
    checkpointer = Checkpointer(tmp_path / "ck")
    checkpointer.manager.save(3, args=ocp.args.Composite(state=ocp.args.StandardSave(TREE),
                                                         progress=ocp.args.JsonSave({"step": 3})))
    checkpointer.close()
    with pytest.raises(CheckpointDamaged, match=r"checkpoint at step 3 \(it has no checksum\) in .* is damaged"):
        Checkpointer(tmp_path / "ck").restore(TREE)


def test_restore_passes_over_a_checkpoint_whose_checksum_was_removed(tmp_path):
    checkpointer = Checkpointer(tmp_path / "ck")
    checkpointer.save(1, TREE)
    checkpointer.save(2, {"a": TREE["a"] + 1, "b": np.int32(8)})
    checkpointer.close()
    drop_checksum(tmp_path / "ck" / "2")
    restored, progress = Checkpointer(tmp_path / "ck").restore(TREE)
    assert progress["step"] == 1 and np.array_equal(restored["a"], TREE["a"]) and int(restored["b"]) == 7


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(a run stopped at update 4 of 8 with checkpoints at 2 and 4, the same run uninterrupted)."""
    base = tmp_path_factory.mktemp("checksum")
    spec = train_spec(build_parser().parse_args(TRAIN))
    with stopping.cut_after(2):
        assert experiment.run(spec, base / "stopped", progress=False, chunk_updates=2, checkpoint_every_s=0) is None
    experiment.run(spec, base / "full", progress=False)
    return base / "stopped", base / "full"


def resume(capsys, runs, tmp_path, *damaged: str):
    """`--resume` of a copy of the stopped run after flipping 16 bytes and dropping the checksum of `damaged`."""
    out = tmp_path / "run"
    shutil.copytree(runs[0], out)
    for step in damaged:
        flip_bytes(out / "checkpoint" / step)
        drop_checksum(out / "checkpoint" / step)
    code, _, err = run_cli(capsys, *TRAIN, "--out", out, "--resume")
    return out, code, err.strip().splitlines()


def test_resume_falls_back_past_a_flipped_checkpoint_whose_checksum_was_removed(capsys, tmp_path, runs):
    out, code, err = resume(capsys, runs, tmp_path, "4")
    assert code == 0 and len(err) == 1, err
    assert "checkpoint at step 4 (it has no checksum)" in err[0]
    assert "falling back to the intact checkpoint at step 2" in err[0]
    assert (out / "metrics.csv").read_bytes() == (runs[1] / "metrics.csv").read_bytes()
    summary, full = (json.loads((run / "summary.json").read_text()) for run in (out, runs[1]))
    assert summary["resumed_from_update"] == 2
    assert {k: v for k, v in summary.items() if k not in TIMING} == {k: v for k, v in full.items() if k not in TIMING}


def test_no_checkpoint_with_its_checksum_left_is_one_line_and_exit_2(capsys, tmp_path, runs):
    out, code, err = resume(capsys, runs, tmp_path, "4", "2")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("purerl: error: the checkpoints at step 4 (it has no checksum) and step 2 (it has no "
                             "checksum)") and "no intact earlier checkpoint is left" in err[0]
    assert not (out / "summary.json").exists()
