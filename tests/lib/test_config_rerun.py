"""`purerl train --config RUN/config.json` reruns a recorded experiment bit for bit; flags replace single fields."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cli_run import SMALL, ReachedTraining, run_cli
from purerl.cli import main
from purerl.run import experiment, records
from purerl.run.population import make_members


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    out = tmp_path_factory.mktemp("rerun") / "original"
    assert main(["train", "--out", str(out), "--seeds", "2", "--seed", "3", "--lr", "1e-3,3e-3", *SMALL]) == 0
    return out


def _metrics_without_timing(run):
    return (run / "metrics.csv").read_bytes()


def test_rerun_from_config_is_bit_identical(capsys, tmp_path, original):
    rerun = tmp_path / "rerun"
    code, _, err = run_cli(capsys, "train", "--config", original / "config.json", "--out", rerun, "--no-progress")
    assert code == 0, err
    assert (rerun / "config.json").read_text() == (original / "config.json").read_text()
    assert _metrics_without_timing(rerun) == _metrics_without_timing(original)
    before, after = (json.loads((r / "summary.json").read_text()) for r in (original, rerun))
    assert after["final_return_by_member"] == before["final_return_by_member"]


def test_flags_replace_single_fields_and_keep_the_rest(capsys, tmp_path, original):
    rerun = tmp_path / "rerun"
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", rerun, "--seeds", "1", "--gamma", "0.9",
                           "--lr", "2e-3", "--no-anneal-lr", "--no-progress")
    assert code == 0, err
    before, after = (json.loads((r / "config.json").read_text()) for r in (original, rerun))
    assert after["seeds"] == [3]  # the recorded first seed, one of them
    assert after["hyperparams"]["gamma"] == 0.9 and after["hyperparams"]["lr"] == 2e-3
    assert after["grid"] == []  # a single --lr replaces the recorded lr sweep
    assert after["config"]["anneal_lr"] is False
    changed = {k for k in before["config"] if before["config"][k] != after["config"][k]}
    assert changed == {"anneal_lr"}
    assert {k for k in before["hyperparams"] if before["hyperparams"][k] != after["hyperparams"][k]} == {"gamma", "lr"}


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("content, extra, message", [
    (None, [], "does not exist"),
    ("{not json", [], "cannot be read as a training record: it is not JSON"),
    ('{"command": "evolve"}', [], "records a 'evolve' run, not a training run"),
    ('[1, 2]', [], "records no purerl run"),
    ('{"command": "train", "config": {}}', [], "has no algo: a record is read whole"),
    ("ORIGINAL:num_envs=\"8\"", [], "num_envs must be int"),
    ("ORIGINAL", ["--preset", "classic"], "--preset cannot be combined with --config"),
    ("ORIGINAL", ["--seeds", "0"], "--seeds must be positive"),
    ("ORIGINAL", ["--seeds", "4294967296"], "--seeds must be at most 1,048,576"),  # found by the property test
    ("ORIGINAL", ["--num-minibatches", "7"], "not divisible by num-minibatches=7"),
])
def test_bad_config_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, original, content, extra, message):
    path = tmp_path / "config.json"
    if content is not None and content.startswith("ORIGINAL"):
        data = json.loads((original / "config.json").read_text())
        if ":" in content:
            field, value = content.split(":", 1)[1].split("=")
            data["config"][field] = json.loads(value)
        content = json.dumps(data)
    if content is not None:
        path.write_text(content)
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--config", path, "--out", out, *extra)
    assert code == 2
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def _without(part, key):
    return lambda record: {**record, part: {k: v for k, v in record[part].items() if k != key}}


@pytest.mark.parametrize("edit, message", [
    (_without("config", "env"), "has no config.env: a record is read whole, never filled in with defaults"),
    (_without("config", "num_envs"), "has no config.num_envs"),
    (_without("hyperparams", "lr"), "has no hyperparams.lr"),
    (lambda record: {**record, "notes": "mine"}, "holds notes, which is no field of a training record"),
    (lambda record: {**record, "preset": "nope"}, "records the preset 'nope', which is not one of ppo's"),
    (lambda record: {**record, "hyperparams": {**record["hyperparams"], "lr": 1e39}}, "lr must be finite"),
    (lambda record: {**record, "hyperparams": {**record["hyperparams"], "lr": math.inf}}, "holds inf at hyperparams"),
    (lambda record: {**record, "hyperparams": {**record["hyperparams"], "gamma": math.nan}}, "holds nan at"),
    (lambda record: {**record, "grid": record["grid"] * 2}, "sweeps lr twice in its grid"),
    (lambda record: {**record, "grid": DUPLICATE}, "names 'lr' twice in one object"),
])
def test_each_edit_of_the_attack_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, original, edit, message):
    """The attack's edits of a `--config` file: each once was trained with a default, the last value or a
    divergent number in its place."""
    text = json.dumps(edit(json.loads((original / "config.json").read_text())))
    path = tmp_path / "config.json"
    path.write_text(text.replace(json.dumps(DUPLICATE), '{"lr": [0.001, 0.003], "lr": [0.01, 0.03]}'))
    code, _, err = run_cli(capsys, "train", "--config", path, "--out", tmp_path / "run")
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_a_dqn_record_reruns_bit_identically(capsys, tmp_path):
    original, rerun = tmp_path / "dqn", tmp_path / "rerun"
    # test_value_based's tiny DQN on its three seeds: the programs its resume test compiles
    tiny = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "192", "--buffer-size", "64",
            "--buffer-batch-size", "16", "--learning-starts", "32", "--train-interval", "4",
            "--target-update-interval", "32", "--epsilon-anneal-time", "100", "--hidden-sizes", "16", "--seeds", "3"]
    assert main(["train", "--algo", "dqn", "--out", str(original), *tiny, "--no-progress"]) == 0
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", rerun, "--no-progress")
    assert code == 0, err
    assert (rerun / "metrics.csv").read_bytes() == (original / "metrics.csv").read_bytes()
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", tmp_path / "other", "--clip-eps", "0.1")
    assert code == 2 and "--clip-eps is not a setting of the recorded dqn run" in err


@pytest.mark.parametrize("flags, message", [
    (["--algo", "dqn"], "--algo dqn cannot replace the record's ppo"),
    (["--network", "gru"], "--network gru cannot replace the record's mlp"),
])
def test_a_rerun_keeps_its_algorithm_and_network(capsys, tmp_path, original, flags, message):
    code, _, err = run_cli(capsys, "train", "--config", original, "--out", tmp_path / "rerun", *flags)
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "rerun").exists()


# --- an edited --config file: trained exactly as it reads, or refused in one line (issue 84) ----------------------

def _keys(record, prefix=()):
    """The path of every key of a record, at any depth (an object's own key as well as its leaves')."""
    for key, value in record.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from _keys(value, (*prefix, key))


def _parent(record, path):
    for key in path[:-1]:
        record = record[key]
    return record


def _numbers(record):
    return [path for path in _keys(record) if type(_parent(record, path)[path[-1]]) in (int, float)]


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False, width=32),
                   st.text(max_size=6), st.lists(st.integers(0, 9), max_size=3), st.just({}))
DUPLICATE = "\x00twice\x00"  # stands for the object whose key the file gives twice


def edited_file(recorded: dict, data) -> tuple[str, dict | None]:
    """A hand edit of a recorded config.json: (its text, the record it reads as; None when it names a key twice)."""
    record = json.loads(json.dumps(recorded))
    kind = data.draw(st.sampled_from(["none", "delete", "add", "retype", "value", "non-finite", "huge", "repeat",
                                      "grid twice", "grid"]))
    if kind in ("delete", "retype"):
        path = data.draw(st.sampled_from(sorted(_keys(record))))
        parent = _parent(record, path)
        parent.pop(path[-1]) if kind == "delete" else parent.__setitem__(path[-1], data.draw(VALUES))
    elif kind == "add":
        parent = data.draw(st.sampled_from([record, record["config"], record["hyperparams"]]))
        parent[data.draw(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10).filter(
            lambda name: name not in parent))] = data.draw(VALUES)
    elif kind in ("value", "non-finite", "huge"):
        path = data.draw(st.sampled_from(_numbers(record)))
        value = {"value": st.floats(0.01, 0.99), "non-finite": st.sampled_from([math.inf, -math.inf, math.nan]),
                 "huge": st.sampled_from([1e39, -1e39, 10**30, 2**64, 1.7e308])}[kind]
        _parent(record, path)[path[-1]] = data.draw(value)
    elif kind == "grid twice":
        record["grid"] = [[name, values] for name, values in record["grid"]] * 2
    elif kind == "grid":  # any names, sweepable or not, with any number of values
        names = data.draw(st.lists(st.sampled_from(["lr", "gamma", "nope", "seed"]), max_size=2, unique=True))
        record["grid"] = [[name, data.draw(st.lists(st.floats(0.01, 0.99), max_size=3, unique=True))]
                          for name in names]
    if kind != "repeat":
        return json.dumps(record, indent=2), record
    path = data.draw(st.sampled_from([("hyperparams",), ("config",), ()]))
    target = _parent(record, (*path, None)) if path else record
    key = data.draw(st.sampled_from(sorted(target)))
    pairs = [*target.items(), (key, data.draw(VALUES))]
    twice = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"
    if not path:
        return twice, None
    _parent(record, path)[path[-1]] = DUPLICATE
    return json.dumps(record).replace(json.dumps(DUPLICATE), twice), None


def same(a, b) -> bool:
    """Two records alike as JSON reads them: a number is its value as a float (1 and 1.0; purerl writes every
    hyperparameter as one), but true is not 1."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    numbers = [type(x) in (int, float) for x in (a, b)]
    return float(a) == float(b) if all(numbers) else type(a) is type(b) and a == b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_edited_config_file_trains_as_it_reads_or_is_refused_in_one_line(capsys, tmp_path_factory, original,
                                                                            data):
    """Missing, extra, retyped, non-finite, huge and repeated keys: a `--config` file is validated as the flags are,
    so it either trains exactly the run it reads as (nothing filled in, nothing dropped) or is one line, exit 2,
    before anything compiles or is written."""
    text, reads_as = edited_file(json.loads((original / "config.json").read_text()), data)
    folder = tmp_path_factory.mktemp("edited")
    (folder / "config.json").write_text(text)
    trained = []

    def train(spec, *args, **kwargs):
        trained.append(spec)
        raise ReachedTraining

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment, "run", train)
        code, _, err = run_cli(capsys, "train", "--config", folder / "config.json", "--out", folder / "run")
    if code == 0:
        assert reads_as is not None and same(records.comparable(trained[0].to_json()), records.comparable(reads_as))
        spec = trained[0]  # and the population sweeps every grid entry it reads: none is dropped on the way
        assert set(make_members(spec.seeds, spec.hyperparams, spec.grid).swept) == set(spec.grid)
    else:
        assert code == 2 and err.count("\n") == 1 and err.startswith("purerl: error: "), err
    assert not (folder / "run").exists()


def test_the_command_trains_an_edited_file_as_it_reads_and_refuses_a_repeated_key(tmp_path, original):
    """The same two ends through the `purerl` command itself: an edit it accepts is what the new run records and
    trains, and a grid naming `lr` twice is one line on stderr, exit 2, with nothing written."""
    recorded = json.loads((original / "config.json").read_text())
    recorded["hyperparams"]["gamma"] = 0.9
    (tmp_path / "edited.json").write_text(json.dumps(recorded))
    twice = json.dumps({**recorded, "grid": DUPLICATE}).replace(
        json.dumps(DUPLICATE), '{"lr": [0.001, 0.003], "lr": [0.01, 0.03]}')
    (tmp_path / "twice.json").write_text(twice)
    command = [str(Path(sys.executable).with_name("purerl")), "train", "--no-progress", "--config"]
    ok = subprocess.run([*command, tmp_path / "edited.json", "--out", tmp_path / "ok"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert same(json.loads((tmp_path / "ok" / "config.json").read_text()), recorded)
    refused = subprocess.run([*command, tmp_path / "twice.json", "--out", tmp_path / "no"], capture_output=True,
                             text=True)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "names 'lr' twice in one object" in refused.stderr and not (tmp_path / "no").exists()
