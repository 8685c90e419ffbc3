"""`purerl eval` replaces only its own files: RUN/eval.json when it is an evaluation purerl wrote, a GIF
(RUN/episode.gif too) when it carries purerl's mark. Anything else there, a folder included, is refused in one
line (exit 2) before anything is evaluated. A damaged summary.json beside the run is named as such, never blamed
on config.json."""

import json
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli

from purerl.run import files, rundir



@pytest.fixture
def run(tmp_path, trained) -> Path:
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    return out


def refused(capsys, run: Path, path: Path, *argv) -> None:
    """`eval RUN ARGV` exits 2 with one line refusing to replace `path`, having evaluated nothing."""
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    code, out, err = run_cli(capsys, "eval", run, "--episodes", "1", *argv)
    instead = "choose another --gif, or " if path.suffix == ".gif" else ""
    assert code == 2, err
    assert err == f"purerl: error: refusing to replace {path}: purerl did not write it; {instead}move it away first\n"
    assert out == "" and {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("content", ["my notes", "{}", '{"policy": "greedy"}', "[1, 2]"])
def test_a_users_eval_json_is_refused_before_evaluating(capsys, run, content):
    (run / "eval.json").write_text(content)
    refused(capsys, run, run / "eval.json")
    refused(capsys, run, run / "eval.json", "--gif")
    assert not (run / "episode.gif").exists()


def test_a_folder_named_eval_json_is_refused_before_evaluating(capsys, run):
    (run / "eval.json").mkdir()
    (run / "eval.json" / "mine.txt").write_text("mine")
    refused(capsys, run, run / "eval.json")
    assert (run / "eval.json" / "mine.txt").read_text() == "mine"


def test_a_users_episode_gif_in_the_run_is_refused_before_evaluating(capsys, run):
    (run / "episode.gif").write_bytes(b"GIF89a the user's animation\x3b")
    refused(capsys, run, run / "episode.gif", "--gif")
    assert (run / "episode.gif").read_bytes() == b"GIF89a the user's animation\x3b"
    assert not (run / "eval.json").exists()


def test_eval_replaces_its_own_eval_json_and_marked_gif(capsys, run):
    for _ in range(2):
        code, out, err = run_cli(capsys, "eval", run, "--episodes", "1", "--gif")
        assert code == 0 and "saved" in out, err
        assert files.written_by_purerl(run / "episode.gif")
        assert json.loads((run / "eval.json").read_text())["episodes"] == 1


def test_a_truncated_summary_is_named_not_config_json(capsys, run):
    summary = (run / "summary.json").read_bytes()
    (run / "summary.json").write_bytes(summary[: len(summary) // 2])
    code, _, err = run_cli(capsys, "eval", run, "--episodes", "1")
    assert code == 0, err  # a run recording its grid in member order needs no summary to be evaluated
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "grid": {"lr": [2.5e-4]}}))  # an older record's grid,
    (run / rundir.MARKER).write_text('{"purerl_run": true}\n')  # under an older marker, which kept no record
    code, _, err = run_cli(capsys, "eval", run, "--episodes", "1")
    assert code == 2 and err.count("\n") == 1, err
    assert f"{run / 'summary.json'} cannot be read as a run's summary: it is not JSON" in err
    assert "config.json" not in err


def test_an_evaluation_that_cannot_fit_this_machine_is_one_line_before_anything_is_written(capsys, monkeypatch, run):
    """Issue 84: `eval --episodes 1048576` is 7.8 GiB of keys a member (CartPole's 500 steps, 16 bytes each, which
    `purerl eval` measures at), so on a 4 GiB machine it is one line with the estimate, exit 2, nothing written."""
    from purerl.algos import memory

    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    monkeypatch.setattr(memory, "physical_bytes", lambda: 4 * 2**30)
    code, out, err = run_cli(capsys, "eval", run, "--episodes", "1048576")
    assert code == 2 and err.count("\n") == 1, err
    assert "1 member x 1,048,576 episodes of up to 500 steps need at least 7.8 GiB" in err
    assert out == "" and {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
