"""A run's config.json edited by hand is never followed: resume, `eval` and `purerl.load` refuse it in one line,
exit 2, naming the field, and write nothing (issue 84); unedited, the run resumes as recorded."""

import json
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli
from hypothesis import HealthCheck, example, given, settings, strategies as st

from purerl.checks import ConfigError
from purerl.run import records


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()
            and p.name != ".purerl-lock"}


def _leaves(record, prefix=()):
    if isinstance(record, dict):
        for key, value in record.items():
            yield from _leaves(value, (*prefix, key))
    else:
        yield prefix


def _edit(record: dict, path: tuple, value, delete: bool) -> dict:
    record = json.loads(json.dumps(record))
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return record


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False, width=32),
                   st.text(max_size=8), st.lists(st.integers(0, 9), max_size=3))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_edited_config_json_is_refused_in_one_line_and_nothing_is_written(trained, tmp_path_factory, capsys, data):
    run = tmp_path_factory.mktemp("copy") / "run"
    shutil.copytree(trained, run)
    recorded = json.loads((run / "config.json").read_text())
    paths = sorted(_leaves(recorded))
    path = data.draw(st.sampled_from(paths))
    delete = data.draw(st.booleans())
    edited = _edit(recorded, path, data.draw(VALUES), delete)
    if data.draw(st.booleans()):
        edited["an_extra_key"] = 1
    (run / "config.json").write_text(json.dumps(edited, indent=2))
    before = _snapshot(run)
    unedited = json.dumps(edited, sort_keys=True) == json.dumps(recorded, sort_keys=True)  # true is not 1
    for argv in (["train", "--out", run, "--resume"], ["eval", run, "--episodes", "2"]):
        code, _, err = run_cli(capsys, *argv)
        if unedited:
            assert code == 0, err
            continue
        assert code == 2 and err.count("\n") == 1 and "was edited after purerl wrote it" in err, err
        assert _snapshot(run) == before
    if not unedited:
        import purerl

        with pytest.raises(ConfigError, match="edited"):
            purerl.load(run)


def test_the_refusal_names_the_field_and_both_values(trained, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    recorded = json.loads((run / "config.json").read_text())
    seeds = recorded["seeds"]
    (run / "config.json").write_text(json.dumps({**recorded, "seeds": [seeds[0], 5]}))
    code, _, err = run_cli(capsys, "train", "--out", run, "--resume")
    assert code == 2 and f"seeds: {records._show('seeds', seeds)} (written) vs" in err and "(now)" in err, err
    (run / "config.json").write_text(json.dumps(recorded, indent=3))  # the same record, laid out otherwise
    assert run_cli(capsys, "train", "--out", run, "--resume")[0] == 0


def test_a_number_retyped_as_a_boolean_or_a_float_is_an_edit(trained, tmp_path, capsys):
    """JSON's true is not 1 and 1.0 is not 1, though Python's == says they are: the check compares the text."""
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    recorded = json.loads((run / "config.json").read_text())
    for value in (True, 1.0):
        (run / "config.json").write_text(json.dumps({**recorded, "config": {**recorded["config"], "rollout_unroll": value}}))
        code, _, err = run_cli(capsys, "train", "--out", run, "--resume")
        assert code == 2 and "was edited after purerl wrote it" in err and "rollout_unroll" in err, err


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False) | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=200, deadline=None)
@example(name="grid", written=[0], now=[["lr", [0.001]]])
@example(name="grid", written={"lr": {}}, now={})
@example(name="grid", written=None, now={"\n": None})
@example(name="grid", written=[["\n", [1]]], now=None)
@given(name=st.sampled_from(["grid", "seeds", "lr"]), written=JSON, now=JSON)
def test_the_refusal_shows_any_edited_value_of_any_field(name, written, now):
    """An edited field's value may be anything JSON holds (a grid of bare numbers, say): the refusal still shows
    both values in its one line, never a traceback."""
    text = records.differences({name: written}, {name: now}, ("written", "now"))
    assert ("(written) vs" in text and text.endswith("(now)")) or not records._differs(written, now), text
    assert "\n" not in text
