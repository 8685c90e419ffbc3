"""The resume check every algorithm's tests share: a run cut after one chunk and resumed equals an uninterrupted one."""

import json

from purerl.run import experiment, stopping


def assert_resume_is_bit_exact(spec: experiment.TrainSpec, tmp_path) -> dict:
    """Train `spec` (three seeds) whole and cut after the first of its 2-update chunks, resume the cut run, and
    check both give the same returns and the same metrics.csv, byte for byte; returns the full run's summary."""
    full = experiment.run(spec, tmp_path / "full", progress=False, chunk_updates=2)
    with stopping.cut_after(1):
        assert experiment.run(spec, tmp_path / "cut", progress=False, chunk_updates=2) is None
    resumed = experiment.run(spec, tmp_path / "cut", resume=True, progress=False, chunk_updates=2)
    assert resumed["resumed_from_update"] == 2
    assert resumed["final_return_by_member"] == full["final_return_by_member"]
    assert (tmp_path / "cut" / "metrics.csv").read_text() == (tmp_path / "full" / "metrics.csv").read_text()
    assert len(set(full["final_return_by_member"].values())) == len(spec.seeds)  # different seeds, different runs
    saved = json.loads((tmp_path / "full" / "config.json").read_text())
    assert saved["algo"] == spec.algo and experiment.TrainSpec.from_json(saved) == spec
    return full
