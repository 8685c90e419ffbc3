"""A grid member keeps its settings in every record and every way of rerunning or continuing its run, in
whatever order the grid's flags are given; `--resume` alone continues the run as recorded."""

import csv
import itertools
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import purerl
from cli_run import SMALL, run_cli
from purerl.run import experiment, rerun, results, rundir, stopping
from purerl.cli import build_parser, main, train_spec

GRIDS = {
    2: {"lr": "1e-3,2.5e-4", "clip_eps": "0.1,0.2"},
    3: {"lr": "1e-3,2.5e-4", "gamma": "0.9,0.99", "clip_eps": "0.1,0.2"},
}
README = Path(__file__).resolve().parents[2] / "README.md"


def grid_flags(grid: dict, order) -> list[str]:
    return [token for name in order for token in (f"--{name.replace('_', '-')}", grid[name])]


def command(size: int, order=None) -> list[str]:
    """The training flags of a grid run, its grid flags in `order` (default sorted, as config.json used to be)."""
    grid = GRIDS[size]
    return [*grid_flags(grid, order or sorted(grid)), "--seeds", "1", *SMALL]


class Killed(Exception):
    pass


def train_killed(args, chunks: int) -> None:
    """`purerl train ARGS` stopped, as a kill would, after `chunks` chunks, with a checkpoint saved."""
    real = experiment.run

    def run(*a, **kw):
        with stopping.cut_after(chunks):
            assert real(*a, **kw) is None
        raise Killed

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "run", run)
        with pytest.raises(Killed):
            main(["train", *map(str, args)])


def member_labels(run: Path) -> list[str]:
    """The member labels in member order (metrics.csv's columns); summary.json gives each label its column's return."""
    rows = list(csv.reader((run / "metrics.csv").read_text().splitlines()))
    columns = [i for i, name in enumerate(rows[0]) if name.startswith("episode_return[")]
    returns = np.array([[float(row[i]) if row[i] else np.nan for i in columns] for row in rows[1:]])
    members = [rows[0][i].removeprefix("episode_return[").removesuffix("]") for i in columns]
    by_member = json.loads((run / "summary.json").read_text())["final_return_by_member"]
    assert by_member == pytest.approx(dict(zip(members, results.final_returns(returns).tolist())), rel=1e-6)
    return members


def labels(spec) -> list[str]:
    members = spec.validate()
    return [members.label(i) for i in range(len(members))]


def without_timing(summary: dict) -> dict:
    timing = ("compile_s", "run_s", "env_steps_per_s", "resumed_from_update")
    return {k: v for k, v in summary.items() if k not in timing}


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> dict[int, Path]:
    """One uninterrupted run per grid size."""
    runs = {}
    for size in GRIDS:
        runs[size] = tmp_path_factory.mktemp(f"grid{size}") / "live"
        assert main(["train", "--out", str(runs[size]), *command(size)]) == 0
    return runs


@pytest.mark.parametrize("size", GRIDS)
def test_every_flag_order_builds_the_members_the_records_list(live, size):
    recorded = member_labels(live[size])
    for order in itertools.permutations(GRIDS[size]):
        assert labels(train_spec(build_parser().parse_args(["train", *command(size, order)]))) == recorded
    config = json.loads((live[size] / "config.json").read_text())
    swept = [part.partition("=")[0] for part in recorded[0].split(",")[:-1]]
    assert [name for name, _ in config["grid"]] == swept  # a list: sort_keys keeps the member order
    assert labels(rerun.load_spec(live[size])) == recorded


@pytest.mark.parametrize("size", GRIDS)
def test_a_config_rerun_is_bit_identical(capsys, tmp_path, live, size):
    code, _, err = run_cli(capsys, "train", "--config", live[size] / "config.json", "--out", tmp_path / "rerun",
                           "--no-progress")
    assert code == 0, err
    for name in ("config.json", "metrics.csv"):
        assert (tmp_path / "rerun" / name).read_bytes() == (live[size] / name).read_bytes(), name


def test_a_member_trains_its_labelled_setting_wherever_the_record_puts_it(capsys, tmp_path, live):
    config = json.loads((live[2] / "config.json").read_text())
    config["grid"].reverse()
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, _, err = run_cli(capsys, "train", "--config", tmp_path / "config.json", "--out", tmp_path / "run")
    assert code == 0, err
    before, after = member_labels(live[2]), member_labels(tmp_path / "run")
    assert after != before and sorted(after) != sorted(before)  # other members, whose labels order their keys otherwise
    before, after = (json.loads((r / "summary.json").read_text())["final_return_by_member"]
                     for r in (live[2], tmp_path / "run"))
    normal = lambda d: {",".join(sorted(k.split(","))): v for k, v in d.items()}  # noqa: E731
    assert normal(after) == normal(before)


def test_resume_after_kills_is_bit_identical_in_every_form(capsys, tmp_path, live):
    """Killed twice: resumed from its own config.json, then with its grid flags in another order, then (a 3-key
    grid) with `--resume` alone, as the README writes it."""
    cut = tmp_path / "cut2"
    train_killed(["--out", cut, *command(2)], chunks=2)
    train_killed(["--config", cut / "config.json", "--out", cut, "--resume", "--no-progress"], chunks=2)
    code, _, err = run_cli(capsys, "train", "--out", cut, "--resume", *command(2, GRIDS[2]))
    assert code == 0, err
    cut3 = tmp_path / "cut3"
    train_killed(["--out", cut3, *command(3, ["gamma", "lr", "clip_eps"])], chunks=3)
    code, _, err = run_cli(capsys, "train", "--out", cut3, "--resume", "--no-progress")
    assert code == 0, err
    for run, size in ((cut, 2), (cut3, 3)):
        assert (run / "metrics.csv").read_bytes() == (live[size] / "metrics.csv").read_bytes()
        summary, reference = (json.loads((r / "summary.json").read_text()) for r in (run, live[size]))
        assert summary["resumed_from_update"] > 0 and without_timing(summary) == without_timing(reference)


@pytest.mark.parametrize("size", GRIDS)
def test_eval_and_load_label_members_as_they_were_trained(capsys, live, size):
    expected = member_labels(live[size])
    code, _, err = run_cli(capsys, "eval", live[size], "--episodes", "2")
    assert code == 0, err
    assert list(json.loads((live[size] / "eval.json").read_text())["greedy_return_by_member"]) == expected
    assert [purerl.load(live[size], member=i).label for i in range(len(expected))] == expected


def test_an_older_record_with_a_sorted_grid_dict_keeps_its_members(capsys, tmp_path, live):
    """Before the grid was a list, config.json sorted it; the summary's labels say what trained."""
    old = tmp_path / "old"
    shutil.copytree(live[2], old)
    config = json.loads((old / "config.json").read_text())
    config["grid"] = dict(config["grid"])
    (old / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    (old / rundir.MARKER).write_text('{"purerl_run": true}\n')  # under an older marker, which kept no record
    expected = member_labels(live[2])
    assert labels(rerun.load_spec(old)) == expected
    assert [purerl.load(old, member=i).label for i in range(len(expected))] == expected
    code, _, err = run_cli(capsys, "train", "--out", old, "--resume", "--no-progress")
    assert code == 0, err
    assert member_labels(old) == member_labels(live[2])
    grids = [json.loads((run / "config.json").read_text())["grid"] for run in (old, live[2])]
    assert grids[0] == grids[1]  # now recorded as a list, in the order that trained
    unfinished = tmp_path / "unfinished"  # no summary: the dict's order, which `--config` resumed with
    unfinished.mkdir()
    (unfinished / "config.json").write_text(json.dumps(config, sort_keys=True))
    assert [name for name in rerun.load_spec(unfinished).grid] == sorted(GRIDS[2])


def test_resume_with_differing_flags_names_each_field_and_both_values(capsys, live):
    before = (live[2] / "config.json").read_text()
    flags = [*grid_flags({**GRIDS[2], "lr": "2.5e-4"}, GRIDS[2]), "--seeds", "2", *SMALL]
    code, _, err = run_cli(capsys, "train", "--out", live[2], "--resume", *flags)
    assert code == 2 and err.count("\n") == 1, err
    for difference in ("lr: 0.001 (recorded) vs 0.00025 (this command)", "seeds: [0] (recorded) vs [0, 1] (this command)",
                       "grid: lr=0.001,0.00025 clip_eps=0.1,0.2 (recorded) vs clip_eps=0.1,0.2 (this command)"):
        assert difference in err
    assert (live[2] / "config.json").read_text() == before


def test_the_readme_resume_example_runs_as_written(capsys, tmp_path, monkeypatch, live):
    line = re.search(r"^\s*(purerl train --out (\S+) --resume)\b", README.read_text(), re.M)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(live[2], tmp_path / line[2])
    code, _, err = run_cli(capsys, *line[1].split()[1:])
    assert code == 0, err
    assert member_labels(tmp_path / line[2]) == member_labels(live[2])
