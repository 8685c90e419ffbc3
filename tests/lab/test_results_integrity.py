"""A render refuses incomplete records, a refused evolve writes nothing into the winner's run,
and `results --check` names the parts it cannot check here instead of calling them stale."""

import importlib.util
import json
import os
import shutil
import socket
from pathlib import Path

import jax.numpy as jnp
import pytest

from purerl.cli import main
from purerl.checks import ConfigError
from purerl.meta import evolve, strategies
from purerl_lab.publish import document, fingerprint, provenance, records, staleness
from purerl.run import rundir, runlock

BRAX_PARTS = [("dpo.md", "brax:ant"), ("dpo.md", "brax:halfcheetah"), ("offpolicy.md", "brax:hopper")]
NO_BRAX = "UnknownEnvError: brax:hopper needs Brax: pip install 'purerl[brax]'"


@pytest.fixture
def results(tmp_path):
    """A copy of the published documents, their records and manifest: the tests may break it."""
    return Path(shutil.copytree(provenance.RESULTS_DIR, tmp_path / "results"))


def _tree(folder: Path) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _empty(path: Path) -> None:
    path.write_text("{}")


def _without_game(path: Path) -> None:
    table = json.loads(path.read_text())
    del table["games"]["imp"]
    path.write_text(json.dumps(table))


def _the_study_s(path: Path) -> None:
    """A replication's record replaced by its study's (the same env)."""
    path.write_bytes(path.with_name(path.name.removeprefix("fresh_")).read_bytes())


@pytest.mark.parametrize("document, record, damage, words", [
    ("dpo.md", "dpo/CartPole-v1.json", Path.unlink, "part CartPole-v1: dpo/CartPole-v1.json cannot be read"),
    ("dpo.md", "dpo/CartPole-v1.json", _empty, "part CartPole-v1: dpo/CartPole-v1.json lacks env, objectives"),
    ("act.md", "act/test_time.json", _empty, "part test-time: act/test_time.json lacks env, seeds, goal_return"),
    ("pbt.md", "pbt/Acrobot-v1.json", Path.unlink, "part Acrobot-v1: pbt/Acrobot-v1.json cannot be read"),
    ("pbt.md", "pbt/fresh_Acrobot-v1.json", _the_study_s,
     "part fresh_Acrobot-v1: pbt/fresh_Acrobot-v1.json is the record of the study"),
    ("mfos.md", "mfos/table.json", _without_game, "part imp: mfos/table.json lacks games.imp"),
    ("mfos_coin.md", "mfos_coin/coin.json", lambda path: path.unlink(missing_ok=True),
     "part coin: mfos_coin/coin.json cannot be read"),
])
def test_a_render_from_a_missing_or_incomplete_record_is_refused_in_one_line_and_writes_nothing(
        results, capsys, document, record, damage, words):
    damage(results / record)
    before = _tree(results)
    assert main(["results", "--render", document, "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{document}: refusing to render from incomplete records" in err[0] and words in err[0]
    assert _tree(results) == before


def test_every_published_document_has_its_records_whole(results):
    for name, entry in provenance.read_manifest(results).items():
        records.require_complete(results, name, entry)


def test_a_record_that_differs_from_the_hash_its_manifest_records_is_refused(results):
    import hashlib

    entry = provenance.read_manifest(results)["pbt.md"]
    data = (results / "pbt" / "Pendulum-v1.json").read_bytes()
    entry["parts"]["Pendulum-v1"][records.HASH] = {"pbt/Pendulum-v1.json": hashlib.sha256(data).hexdigest()}
    records.require_complete(results, "pbt.md", entry)
    entry["parts"]["Pendulum-v1"][records.HASH] = {"pbt/Pendulum-v1.json": "0" * 64}
    with pytest.raises(ConfigError, match="part Pendulum-v1: pbt/Pendulum-v1.json is not the record the manifest"):
        records.require_complete(results, "pbt.md", entry)


def _quadratic() -> evolve.MetaTask:
    return evolve.MetaTask("quadratic", {"x": jnp.zeros(2)}, lambda key, params: -jnp.sum(params["x"] ** 2), {})


def test_an_evolve_refused_because_another_process_holds_the_run_appends_no_session(tmp_path, monkeypatch):
    config = strategies.ESConfig(population_size=4, generations=2, lr=0.05, std=0.5)
    task = _quadratic()
    settings = evolve.config_json(task, config)
    evolve.run(evolve.Evolution(task, config), tmp_path, settings, progress=False, session={"command": "first"})
    assert [s["command"] for s in rundir.sessions(tmp_path)] == ["first"]
    before = _tree(tmp_path)
    prepare = rundir.prepare

    def racing(out, *args):
        """The race: another process takes the run between this one's checks and its start."""
        resumed = prepare(out, *args)
        (Path(out) / runlock.LOCK).write_text(json.dumps({"pid": os.getppid(), "host": socket.gethostname()}))
        return resumed

    monkeypatch.setattr(rundir, "prepare", racing)
    with pytest.raises(ConfigError, match="being written by another purerl process"):
        evolve.run(evolve.Evolution(task, config), tmp_path, settings, resume=True, progress=False,
                   session={"command": "second"})
    assert {p: b for p, b in _tree(tmp_path).items() if p.name != runlock.LOCK} == before


@pytest.fixture
def without_brax(results, monkeypatch):
    """`results --check` here as on an install without brax: its parts' fingerprints cannot be computed, every
    other part's is what its manifest records (nothing is lowered)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "brax" else real(name, *rest))
    manifest = provenance.read_manifest(results)
    recorded = {(entry["study"], part): facts["fingerprint"] for entry in manifest.values()
                for part, facts in entry["parts"].items()}
    computed = {key: NO_BRAX if key[1].startswith("brax:") else value for key, value in recorded.items()}
    monkeypatch.setattr(fingerprint, "environment_key", lambda: "elsewhere")
    monkeypatch.setattr(fingerprint, "stamp_holds", lambda record, environment=None: False)
    monkeypatch.setattr(fingerprint, "many", lambda wanted, *args, **kwargs: {key: computed[key] for key in wanted})
    return computed


def test_parts_that_need_a_missing_package_are_named_as_uncheckable_not_stale(results, without_brax, capsys):
    assert main(["results", "--check", "--results-dir", str(results)]) == 0
    out = capsys.readouterr().out
    assert "STALE" not in out
    for name, part in BRAX_PARTS:
        assert f"cannot check here: {name} {part} (needs brax: pip install 'purerl[brax]')\n" in out
    assert f"all {len(provenance.STUDIES)} documents current where checked; 3 part(s) could not be checked here" in out


def test_a_checkable_stale_part_still_fails_the_check_beside_the_uncheckable_ones(results, without_brax, capsys):
    changed = without_brax[("dpo", "CartPole-v1")]
    without_brax[("dpo", "CartPole-v1")] = {**changed, "hash": "other",
                                             "components": {**changed["components"], "program new": "1"}}
    assert main(["results", "--check", "--results-dir", str(results)]) == 1
    out = capsys.readouterr().out
    assert "STALE dpo.md: CartPole-v1: computation changed since" in out and "program new new" in out
    assert "cannot check here: offpolicy.md brax:hopper" in out
    assert "1 of 8 documents stale where checked; 3 part(s) could not be checked here" in out


def test_marking_leaves_an_uncheckable_part_as_its_manifest_records_it(results, without_brax):
    manifest = json.loads((results / provenance.MANIFEST).read_text())
    manifest["offpolicy.md"]["parts"]["brax:hopper"]["stale"] = "computation changed since 0123456789"
    (results / provenance.MANIFEST).write_text(json.dumps(manifest))
    stale, unchecked = staleness.judged(results)
    assert stale == {} and unchecked["offpolicy.md"] == [("brax:hopper", "needs brax: pip install 'purerl[brax]'")]
    staleness.mark(results, stale, unchecked)
    kept = provenance.read_manifest(results)["offpolicy.md"]["parts"]["brax:hopper"]
    assert kept["stale"] == "computation changed since 0123456789"


@pytest.mark.parametrize("reason, needs", [
    (NO_BRAX, "needs brax: pip install 'purerl[brax]'"),
    ("ModuleNotFoundError: No module named 'brax.envs'", "needs brax: pip install 'purerl[brax]'"),
    ("ModuleNotFoundError: No module named 'purerl_nowhere'", "needs purerl_nowhere"),
    ("ModuleNotFoundError: No module named 'numpy'", None),  # installed: the failure lies elsewhere
    ("ValueError: a bug", None),
])
def test_only_a_package_missing_here_makes_a_part_uncheckable(monkeypatch, reason, needs):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "brax" else real(name, *rest))
    assert staleness.missing_package(reason) == needs


def test_marking_writes_each_provenance_bullet_again_as_it_reruns_from_a_clone(results):
    """A provenance bullet written before commands were shown portable (here mfos_paper.md's) loses the runner's
    folder at the next --mark; a document whose bullets are its own words (value_loss.md's stages) keeps them."""
    paper, value_loss = results / "mfos_paper.md", results / "value_loss.md"
    part = provenance.read_manifest(results)["mfos_paper.md"]["parts"]["ipd-vs-nl"]
    old = "- **ipd-vs-nl**: `purerl mfos --out /root/purerl-runs/regen2/mfos-paper-ipd-nl` at an older commit."
    paper.write_text("\n".join(old if line.startswith("- **ipd-vs-nl**: `") else line
                               for line in paper.read_text().split("\n")))
    before = value_loss.read_text()
    assert staleness.remark(paper) and not staleness.remark(value_loss) and value_loss.read_text() == before
    text = paper.read_text()
    assert "/root/" not in text and f"- **ipd-vs-nl**: {document.describe(part)}" in text
    assert "--out RUNS/mfos-paper-ipd-nl" in text
