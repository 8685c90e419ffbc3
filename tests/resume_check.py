"""The resume check every algorithm's tests share: a run cut after one chunk and resumed equals an uninterrupted one."""

import json

from purerl.run import experiment, stopping
from purerl.run.trainspec import TrainSpec


def assert_cut_and_resumed_run_equals_whole(run, tmp_path, members: int) -> dict:
    """`run(out, **session)` trains into `out` (in 2-update chunks); train it whole and cut after the first chunk
    (`stopping.cut_after`), resume the cut run, and check both give the same returns and the same metrics.csv,
    byte for byte; returns the full run's summary."""
    full = run(tmp_path / "full")
    with stopping.cut_after(1):
        assert run(tmp_path / "cut") is None
    resumed = run(tmp_path / "cut", resume=True)
    assert resumed["resumed_from_update"] == 2
    assert resumed["final_return_by_member"] == full["final_return_by_member"]
    assert (tmp_path / "cut" / "metrics.csv").read_text() == (tmp_path / "full" / "metrics.csv").read_text()
    assert len(set(full["final_return_by_member"].values())) == members  # different seeds, different runs
    return full


def assert_resume_is_bit_exact(spec: TrainSpec, tmp_path) -> dict:
    """`assert_cut_and_resumed_run_equals_whole` for `spec` (its seeds) as the command line runs it, and
    config.json gives back the same spec."""
    full = assert_cut_and_resumed_run_equals_whole(
        lambda out, **session: experiment.run(spec, out, progress=False, chunk_updates=2, **session),
        tmp_path, len(spec.seeds))
    saved = json.loads((tmp_path / "full" / "config.json").read_text())
    assert saved["algo"] == spec.algo and TrainSpec.from_json(saved) == spec
    return full
