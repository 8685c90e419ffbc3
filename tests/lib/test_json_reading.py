"""Every JSON file purerl reads goes through `files.read_json`: whatever a file holds (nested 200,000 deep, a
5000-digit integer, random bytes, the wrong kind, a record lacking a key purerl indexes), the answer is its data
or one `ConfigError` line naming it, at the command line one line and exit 2, never a traceback."""

import json
import shutil
from pathlib import Path

import pytest
from cli_run import SMALL, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from purerl.cli import main
from purerl.checks import ConfigError
from purerl.run import files, runlock

DEEP = "[" * 200_000
HUGE = "9" * 5000


def read(tmp_path: Path, content: str | bytes, kind=object):
    path = tmp_path / "file.json"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return files.read_json(path, "a test record", kind)


@pytest.mark.parametrize("content, kind, reason", [
    (DEEP, object, "it nests deeper than 64 levels"),
    ('{"a": "' + DEEP + '"}' + "]" * 100, object, "it is not JSON"),  # brackets in a string do not nest
    ('{"num_envs": ' + HUGE + "}", object, "it holds an integer of 5,000 digits (at most 40)"),
    ("[-" + HUGE + "]", object, "it holds an integer of 5,000 digits"),
    ("{not json", object, "it is not JSON (Expecting property name"),
    (b"\xff\xfe{}", object, "it is not UTF-8 text"),
    ("[1, 2]", dict, "it holds an array, not an object"),
    ('"text"', list, "it holds a string, not an array"),
])
def test_bad_json_is_one_configerror_line_naming_the_file(tmp_path, content, kind, reason):
    with pytest.raises(ConfigError) as error:
        read(tmp_path, content, kind)
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'file.json'} cannot be read as a test record: ") and reason in message
    assert "\n" not in message


def test_a_missing_file_or_a_folder_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read as a test record: it does not exist$"):
        files.read_json(tmp_path / "none.json", "a test record")
    with pytest.raises(ConfigError, match="cannot be read as a test record: it is a folder$"):
        files.read_json(tmp_path, "a test record")


def test_a_key_a_record_lacks_is_a_configerror_naming_file_and_key_and_still_a_keyerror(tmp_path):
    record = read(tmp_path, '{"a": {"b": 1}}')
    assert record == {"a": {"b": 1}} and json.dumps(record) == '{"a": {"b": 1}}'
    with pytest.raises(ConfigError, match=r"file.json has no 'env': it is damaged, or purerl did not write it"):
        record["env"]
    with pytest.raises(KeyError):  # code that handles an absent key still does
        record["a"]["c"]
    with pytest.raises(files.MissingKey, match="has no 'c'"):
        record.require("a", "c")
    assert str(files.MissingKey("one line")) == "one line"  # not KeyError's quoted form


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12)


def nested(depth: int, value) -> str:
    """`value` inside `depth` arrays and objects, alternating."""
    text = json.dumps(value)
    for level in range(depth):
        text = f"[{text}]" if level % 2 else f'{{"k": {text}}}'
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(
    JSON_VALUES.map(json.dumps),
    st.tuples(st.integers(0, 300), JSON_VALUES).map(lambda pair: nested(*pair)),
    st.integers(1, 6000).map(lambda digits: f'{{"n": {"7" * digits}}}'),
    st.text(alphabet='[]{}",:0123456789-.e \\nulltrufas', max_size=200),
    st.binary(max_size=200),
))
def test_read_json_returns_the_data_or_one_configerror_line(tmp_path, content):
    raw = content.encode() if isinstance(content, str) else content
    try:
        data = read(tmp_path, raw)
    except ConfigError as error:
        assert "\n" not in str(error) and str(tmp_path / "file.json") in str(error)
        return
    assert json.dumps(data) == json.dumps(json.loads(raw.decode("utf-8-sig")))  # (NaN is not equal to itself)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("json") / "run"
    assert main(["train", "--out", str(out), "--seeds", "2", *SMALL]) == 0
    return out


def damaged_copy(finished: Path, tmp_path: Path, name: str, content: str) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    (out / name).write_text(content)
    return out


def one_line_exit_2(capsys, *argv) -> str:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("purerl: error: "), err
    return err


@pytest.mark.parametrize("change, message", [
    (lambda config: DEEP, "nests deeper than 64 levels"),
    (lambda config: config.replace('"num_envs": 4', f'"num_envs": {HUGE}'), "an integer of 5,000 digits"),
    (lambda config: json.dumps({**json.loads(config), "objective": 3}), "objective must be a string, got 3"),
    (lambda config: json.dumps({**json.loads(config), "value_loss": [1]}), "value_loss must be a string"),
    (lambda config: json.dumps({k: v for k, v in json.loads(config).items() if k != "hyperparams"}),
     "has no hyperparams: a record is read whole, never filled in with defaults"),
])
def test_a_bad_config_file_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, finished, change, message):
    path = tmp_path / "config.json"
    path.write_text(change((finished / "config.json").read_text()))
    err = one_line_exit_2(capsys, "train", "--config", path, "--out", tmp_path / "new", *SMALL)
    assert err.startswith(f"purerl: error: --config: {path}") and message in err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("name, content, message", [
    ("config.json", DEEP, "--resume: {out}/config.json cannot be read as a run's settings: it nests deeper"),
    ("summary.json", DEEP, "--resume: {out}/summary.json cannot be read as a run's summary: it nests deeper"),
    ("summary.json", "{}", "{out}/summary.json has no 'env': it is damaged, or purerl did not write it"),
    ("summary.json", '{"n": ' + HUGE + "}", "{out}/summary.json cannot be read as a run's summary: it holds an "
                                            "integer of 5,000 digits"),
])
def test_resume_of_a_run_with_a_bad_record_is_one_line_exit_2(capsys, tmp_path, finished, name, content, message):
    out = damaged_copy(finished, tmp_path, name, content)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    err = one_line_exit_2(capsys, "train", "--out", out, "--resume")
    assert message.format(out=out) in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("name, argv", [
    ("summary.json", ["summary", "RUN"]),
    ("config.json", ["summary", "RUN"]),
    ("config.json", ["plot", "RUN", "--out", "OUT"]),
    ("config.json", ["eval", "RUN", "--episodes", "1"]),
])
def test_summary_plot_and_eval_of_a_deep_record_are_one_line_exit_2(capsys, tmp_path, finished, name, argv):
    out = damaged_copy(finished, tmp_path, name, DEEP)
    argv = [{"RUN": out, "OUT": tmp_path / "plot.png"}.get(a, a) for a in argv]
    err = one_line_exit_2(capsys, *argv)
    assert f"{out / name} cannot be read as" in err and "nests deeper than 64 levels" in err
    assert not (tmp_path / "plot.png").exists() and not (out / "eval.json").exists()


def test_a_summary_lacking_a_key_summary_reads_is_one_line_naming_it(capsys, tmp_path, finished):
    summary = json.loads((finished / "summary.json").read_text())
    del summary["final_return_by_member"]
    out = damaged_copy(finished, tmp_path, "summary.json", json.dumps(summary))
    err = one_line_exit_2(capsys, "summary", out)
    assert f"{out / 'summary.json'} has no 'final_return_by_member'" in err


@pytest.mark.parametrize("content", [DEEP, '{"pid": ' + HUGE + "}", '{"pid": 100000000000000000000}',
                                     '{"pid": -1}', '{"pid": "1"}', "[]", "\x00"])
def test_a_lock_purerl_did_not_write_whole_is_stale_not_a_traceback(tmp_path, content):
    (tmp_path / runlock.LOCK).write_text(content)
    runlock.check_unlocked(tmp_path)  # nobody holds it: no error
    runlock.lock(tmp_path)
    assert json.loads((tmp_path / runlock.LOCK).read_text())["pid"] > 0  # taken over
    runlock.release_locks()
    assert not (tmp_path / runlock.LOCK).exists()
