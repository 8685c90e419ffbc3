"""Fingerprints of published parts (`purerl_lab.publish.fingerprint`): a pure refactor keeps them, a change to what a part
computes (PPO's loss, the shuffle, an env's dynamics, the bootstrap, the ES loop) changes exactly the components,
and so the documents, that use it; and `results --check` reads them, says what changed and marks stale parts."""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl_lab.publish import differences, document, fingerprint, provenance, staleness
from purerl_lab.publish.catalog import STUDIES
from purerl_lab.studies.dpo.fingerprint import compare_part
from purerl_lab.studies.mfos.fingerprint import mfos_run_part

CARTPOLE = STUDIES["dpo"].commands[1]  # PPO, DPO and two LPO drifts on CartPole-v1
ACROBOT = STUDIES["dpo"].commands[2]
MFOS_PAPER = STUDIES["mfos_paper"].commands[0]


def compare_print(command: str = CARTPOLE) -> dict:
    fp = fingerprint.Fingerprint()
    compare_part(fp, command)
    return fp.components


def mfos_print() -> dict:
    fp = fingerprint.Fingerprint()
    mfos_run_part(fp, MFOS_PAPER)
    return fp.components


@pytest.fixture(scope="module")
def baseline() -> dict:
    return {"cartpole": compare_print(), "acrobot": compare_print(ACROBOT), "mfos": mfos_print()}


def differing(a: dict, b: dict) -> set[str]:
    return {name for name in a.keys() | b.keys() if a.get(name) != b.get(name)}


def test_every_registered_part_has_its_commands():
    for study in STUDIES.values():
        for part in study.parts:
            commands = fingerprint.part_commands(study.name, part)
            assert commands and all(c in study.commands for c in commands), (study.name, part)
    assert fingerprint.part_commands("act", "train-time Pendulum-v1") == [
        c for c in STUDIES["act"].commands if "train-time --env Pendulum-v1" in c and "--fresh-seeds" not in c]


def test_a_parts_commands_read_their_relative_paths_from_the_repository_wherever_check_runs(tmp_path, monkeypatch):
    """`results --check` run from another directory once found no committed meta-parameters and marked parts stale."""
    import os

    from purerl_lab.publish.fingerprint import parts

    seen = []
    study = STUDIES["dpo"]
    monkeypatch.setitem(parts.catalog.STUDIES._found(), "dpo", dataclasses.replace(
        study, fingerprint=lambda fp, command, part: seen.append(Path(os.getcwd()))))
    monkeypatch.chdir(tmp_path)
    parts.components("dpo", "CartPole-v1")
    assert seen == [parts.REPO.resolve()] and Path(os.getcwd()) == tmp_path


def test_lowered_text_ignores_python_names_and_locations():
    @jax.jit
    def step(w, x):  # a jitted helper is a private function named after it
        return w - 0.1 * jnp.tanh(x @ w).sum()

    @jax.jit
    def renamed_step(kernel, inputs):
        return kernel - 0.1 * jnp.tanh(inputs @ kernel).sum()

    def update(params, x):
        return {"w": step(params["w"], x)}

    def renamed_elsewhere(weights, inputs):  # the same computation under other names and pytree keys
        return {"kernel": renamed_step(weights["kernel"], inputs)}

    def other(params, x):
        return {"w": step(params["w"], x) * 1.01}

    shapes = ({"w": jax.ShapeDtypeStruct((3, 3), jnp.float32)}, jax.ShapeDtypeStruct((2, 3), jnp.float32))
    renamed = ({"kernel": shapes[0]["w"]}, shapes[1])
    text = fingerprint.lowered_text(update, *shapes)
    assert "loc(" not in text and "update" not in text and "step" not in text and '"' not in text
    assert text == fingerprint.lowered_text(renamed_elsewhere, *renamed)
    assert text != fingerprint.lowered_text(other, *shapes)


def test_moving_and_renaming_the_shuffle_keeps_the_fingerprint(baseline, monkeypatch):
    """The shuffle's code moved to another module under another name (what a file move or rename does to the
    objects the program is traced from): every component is unchanged."""
    from purerl.algos import shuffle

    source = Path(shuffle.__file__).read_text().replace("def permutation(", "def packed_sort_permutation(")
    moved = types.ModuleType("purerl_elsewhere.minibatches")
    exec(compile(source, "elsewhere/minibatches.py", "exec"), moved.__dict__)
    monkeypatch.setattr(shuffle, "permutation", moved.packed_sort_permutation)
    assert compare_print() == baseline["cartpole"]


def test_new_algorithm_preset_and_report_wording_keep_the_fingerprint(baseline, monkeypatch):
    from purerl_lab.studies.dpo import compare
    from purerl.algos import registry
    from purerl.algos.ppo_config import PRESETS

    monkeypatch.setitem(registry.ALGORITHMS, "sac2", registry.ALGORITHMS["ppo"])  # a new algorithm file's entry
    monkeypatch.setitem(PRESETS, "tiny", PRESETS[next(iter(PRESETS))])  # a new preset
    monkeypatch.setattr(compare, "paper_claim", lambda env: "reworded")  # report wording
    monkeypatch.setattr(compare, "write_report", lambda *a, **k: None)
    assert compare_print() == baseline["cartpole"]


def test_a_loss_change_stales_every_ppo_program(baseline, monkeypatch):
    from purerl.algos import objectives

    clip = objectives.POLICY_OBJECTIVES["ppo"]
    monkeypatch.setitem(objectives.POLICY_OBJECTIVES, "ppo", lambda *args: 1.01 * clip(*args))
    changed = differing(baseline["cartpole"], compare_print())
    assert changed == {"program ppo run"}  # DPO's and LPO's objectives are their own; init does not see the loss


def test_a_shuffle_change_stales_training_but_not_statistics(baseline, monkeypatch):
    from purerl.algos import shuffle

    monkeypatch.setattr(shuffle, "permutation", lambda key, n: jax.random.permutation(key, n))
    runs = {"program ppo run", "program dpo run", "program lpo:es0 run", "program lpo:es1 run"}
    assert differing(baseline["cartpole"], compare_print()) == runs
    assert differing(baseline["mfos"], mfos_print()) == set()  # M-FOS's PPO takes one full-batch minibatch


def test_an_env_dynamics_change_stales_only_that_env(baseline, monkeypatch):
    from gymnax.environments.classic_control import cartpole

    step = cartpole.CartPole.step_env

    def heavier(self, key, state, action, params):
        return step(self, key, state, action, params.replace(gravity=params.gravity * 1.01))

    monkeypatch.setattr(cartpole.CartPole, "step_env", heavier)
    runs = {"program ppo run", "program dpo run", "program lpo:es0 run", "program lpo:es1 run"}
    assert differing(baseline["cartpole"], compare_print()) == runs  # init only resets
    assert differing(baseline["acrobot"], compare_print(ACROBOT)) == set()
    assert differing(baseline["mfos"], mfos_print()) == set()


def test_only_the_lpo_training_task_probes_the_evolutions_fitness(baseline, monkeypatch):
    """CartPole-v1 at 65,536 steps is the LPO evolutions' training task: its record holds every objective's fitness
    and its report pairs the drifts with PPO, so only its part sees a change to that fitness or to the pairing."""
    from purerl import stats
    from purerl.meta import evolve

    assert "host lpo training fitness" in baseline["cartpole"] and "host lpo training fitness" not in baseline["acrobot"]
    from purerl_lab.studies.dpo.fingerprint import _lpo_fitness_probe

    before = fingerprint.value_hash(_lpo_fitness_probe(["auc"]))
    paired = stats.paired_difference
    monkeypatch.setattr(stats, "paired_difference", lambda a, b: {**paired(a, b), "verdict": "better"})
    assert fingerprint.value_hash(_lpo_fitness_probe(["auc"])) != before
    fitness = evolve.curve_fitness
    monkeypatch.setattr(evolve, "curve_fitness", lambda returns, kind: fitness(returns[1:], kind))
    assert differing(baseline["cartpole"], compare_print()) == {"host lpo training fitness"}


def test_a_bootstrap_change_stales_the_statistics_everywhere(monkeypatch):
    from purerl import stats

    before = fingerprint.value_hash(fingerprint.stats_probe())
    ci = stats.bootstrap_ci
    monkeypatch.setattr(stats, "bootstrap_ci", lambda x, statistic=stats.iqm, confidence=0.95, resamples=2000,
                        seed=0: ci(x, statistic, confidence, 1000, seed))
    assert fingerprint.value_hash(fingerprint.stats_probe()) != before


def test_es_programs_see_the_strategy_and_the_loop_not_the_bookkeeping(monkeypatch):
    from purerl.meta import evolve
    from purerl.meta.evolve import MetaTask
    from purerl.meta.strategies import ESConfig

    task = MetaTask("quadratic", {"w": jnp.zeros(3)}, lambda key, p: -jnp.sum((p["w"] - 1.0) ** 2), {}, 0)
    config = ESConfig(strategy="open_es", population_size=8, generations=4, fitness_shaping="z_score", std=0.1)

    def es_print() -> dict:
        fp = fingerprint.Fingerprint()
        fingerprint.es_programs(fp, "es", task, config)
        return fp.components

    first = es_print()
    assert {"program es fitness", "program es es ask", "program es es tell", "host es es loop"} <= first.keys()
    repair = evolve.repair_fitness
    monkeypatch.setattr(evolve, "repair_fitness", lambda f: repair(f))  # a refactor: same numbers
    assert es_print() == first
    monkeypatch.setattr(evolve, "repair_fitness", lambda f: (np.nan_to_num(np.asarray(f, float), nan=-1.0),
                                                             int(np.isnan(f).sum())))  # NaN -> -1, not the worst
    assert differing(first, es_print()) == {"host es es loop"}


def manifest_with(tmp_path: Path, study: str, parts: dict) -> Path:
    name = STUDIES[study].document
    (tmp_path / name).write_text("# Title\n\nGenerated by the commands below.\n\n"
                                      + "".join(f"- **{p}**: facts\n" for p in parts)
                                      + "\n| env | a |\n|---|---|\n" + "".join(f"| {p} | 1.0 |\n" for p in parts))
    (tmp_path / "manifest.json").write_text(json.dumps({name: {"study": study, "depends": [], "parts": parts}}))
    return tmp_path


def part_entry(command: str, print_: dict | None, source: str = "x") -> dict:
    entry = {"command": command, "commit": "abc1234567", "dirty": False, "source_hash": source}
    return entry | ({"fingerprint": print_} if print_ else {})


def test_check_compares_fingerprints_and_says_what_changed(tmp_path, monkeypatch):
    old = {"hash": "1", "components": {"program ppo run": "a", "host stats": "s", "input commands": "c"}}
    new = {"hash": "2", "components": {"program ppo run": "b", "host stats": "s", "input commands": "c"}}
    current = provenance.source_hash(STUDIES["dpo"])
    parts = {"CartPole-v1": part_entry(CARTPOLE, old), "Acrobot-v1": part_entry(ACROBOT, new),
             "Pendulum-v1": part_entry(STUDIES["dpo"].commands[3], None, source="not-the-hash"),
             "brax:ant": part_entry(STUDIES["dpo"].commands[-2], old, source=current),
             "brax:halfcheetah": part_entry(STUDIES["dpo"].commands[-1], old, source="not-the-hash")}
    results = manifest_with(tmp_path, "dpo", parts)
    no_brax = "UnknownEnvError: brax:ant needs Brax"
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False: {
        p: no_brax if p[1].startswith("brax") else new for p in wanted})
    reasons = dict(staleness.stale_parts(results)[STUDIES["dpo"].document])
    assert reasons["CartPole-v1"] == "computation changed since abc1234567: program ppo run changed"
    assert "Acrobot-v1" not in reasons  # its recorded fingerprint is the current one
    assert reasons["Pendulum-v1"].startswith("source changed since abc1234567 (by source hash: no fingerprint")
    assert reasons["Breakout-MinAtar"] == "never generated"
    # Where a fingerprint cannot be computed (Brax not installed here), the source hash decides.
    assert "brax:ant" not in reasons
    assert reasons["brax:halfcheetah"].startswith(f"source changed since abc1234567 (by source hash: its fingerprint "
                                                  f"cannot be computed here, {no_brax})")


def test_mark_writes_the_notice_and_clears_it_when_current_and_names_missing_parts(tmp_path, monkeypatch):
    print_ = {"hash": "1", "components": {}}
    parts = {"CartPole-v1": part_entry(CARTPOLE, print_), "Acrobot-v1": part_entry(ACROBOT, print_)}
    results = manifest_with(tmp_path, "dpo", parts)
    page = results / STUDIES["dpo"].document
    original = page.read_text()
    stale = {STUDIES["dpo"].document: [("CartPole-v1", "computation changed since abc: program ppo run changed")]}
    staleness.mark(results, stale)
    text = page.read_text()
    assert text.splitlines()[2] == document.NOTICE_START and "**CartPole-v1** (computation changed" in text
    assert f"- **CartPole-v1**{document.STALE_MARK}:" in text and f"| CartPole-v1{document.STALE_MARK} |" in text
    assert f"Acrobot-v1{document.STALE_MARK}" not in text
    manifest = json.loads((results / "manifest.json").read_text())[STUDIES["dpo"].document]["parts"]
    assert manifest["CartPole-v1"]["stale"].startswith("computation changed") and "stale" not in manifest["Acrobot-v1"]
    staleness.mark(results, stale)
    assert page.read_text() == text  # idempotent
    missing = [name for name in STUDIES["dpo"].parts if name not in parts and not name.startswith("fresh_")]
    assert f"**INCOMPLETE: {len(missing)} part(s) not generated yet:** {', '.join(missing)}" in text
    staleness.mark(results, {})
    current = page.read_text()  # no stale part left; the parts never generated are still said
    assert "STALE:" not in current and document.STALE_MARK not in current and "INCOMPLETE" in current
    notice, block = ("\n".join(lines) + "\n" for lines in (document.stale_notice("dpo", {}, missing),
                                                           differences.block("dpo")))
    assert current.replace(notice, "").replace(block, "") == original  # and the study's differences were inserted


def test_record_stores_the_fingerprint_of_a_registered_command_only(tmp_path, monkeypatch):
    import shlex

    print_ = {"hash": "f00", "components": {"program ppo run": "a"}}
    asked = []
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False: asked.extend(wanted)
                        or {p: print_ for p in wanted})
    argv = shlex.split(CARTPOLE.format(runs="/scratch"))[1:]
    budget = {"env_steps_per_run": 65536, "seeds": list(range(16))}
    entry = provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", argv, 1.0, budget)
    assert entry["fingerprint"] == print_ and asked == [("dpo", "CartPole-v1")]
    other = provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", [*argv[:-1], "1024"], 1.0, budget)
    assert "fingerprint" not in other  # a budget the registry does not list: no fingerprint, and stale anyway


def test_a_run_resumed_across_a_refactor_stays_current_and_across_a_computation_change_does_not(tmp_path, monkeypatch):
    """Sessions are compared by fingerprint where both have one: a new source hash with the same computation is
    one computation; a session without a fingerprint falls back to its source hash."""
    import shlex

    from purerl_lab.publish import sessions

    computed = {"hash": "f00", "components": {"program ppo run": "a"}}
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False:
                        {p: computed for p in wanted})
    monkeypatch.setattr(provenance, "git_state", lambda: ("c0ffee" * 6 + "abcd", False))
    argv = shlex.split(CARTPOLE.format(runs="/scratch"))[1:]
    budget = {"env_steps_per_run": 65536, "seeds": list(range(16))}
    earlier = sessions.facts("dpo", "CartPole-v1", argv)
    assert earlier["fingerprint"] == "f00"
    assert "fingerprint" not in sessions.facts("dpo", "CartPole-v1", [*argv[:-1], "1024"])  # not registered

    refactored = {**earlier, "source_hash": "0" * 16}
    entry = provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", argv, 1.0, budget, sessions=[refactored, earlier])
    assert not entry["mixed_sources"] and not entry["dirty"]
    other = {"hash": "bad", "components": {"program ppo run": "b"}}
    changed = {**earlier, "fingerprint": "bad", "fingerprint_record": other}
    entry = provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", argv, 1.0, budget, sessions=[changed, earlier])
    assert entry["mixed_sources"] and entry["dirty"]
    assert provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", argv, 1.0, budget, sessions=[
        {k: v for k, v in changed.items() if k != "fingerprint_record"}, earlier])["mixed_sources"]
    unprinted = {k: v for k, v in refactored.items() if k != "fingerprint"}
    entry = provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", argv, 1.0, budget, sessions=[unprinted, earlier])
    assert entry["mixed_sources"]  # no fingerprint then: its source hash differs


def last_bits(x: np.ndarray, ulps: int = 3) -> np.ndarray:
    """x with every float moved a few units in the last place, as another CPU kind's rounding moves it."""
    out = x.copy()
    toward = np.where(np.arange(out.size).reshape(out.shape) % 2, np.inf, -np.inf).astype(x.dtype)  # x's own width
    for _ in range(ulps):
        out = np.nextafter(out, toward)
    assert (out != x).all()
    return out


def test_a_sketch_tells_rounding_from_a_changed_value():
    rng = np.random.default_rng(0)
    value = {"loss": rng.normal(size=(40, 7)).astype(np.float32), "steps": np.arange(5), "kind": "mean",
             "curve": np.where(rng.random(30) < 0.2, np.nan, rng.normal(size=30))}
    base = fingerprint.sketch(value)
    assert fingerprint.sketch({"steps": [1, 2], "kind": "x"}) is None  # nothing to round: the hash alone decides
    rounded = {**value, "loss": last_bits(value["loss"]), "curve": last_bits(value["curve"])}
    assert fingerprint.value_hash(rounded) != fingerprint.value_hash(value)
    assert fingerprint.same_within_rounding(base, fingerprint.sketch(rounded))
    one_changed = value["loss"].copy()
    one_changed[3, 4] *= 1.1  # one float of 310, by 10%
    nan_moved = value["curve"].copy()
    nan_moved[np.flatnonzero(np.isnan(nan_moved))[0]] = 0.0
    for changed in ({**value, "loss": one_changed}, {**value, "loss": value["loss"] * np.float32(1.001)}, {**value, "steps": np.arange(1, 6)}, {**value, "kind": "iqm"},
                    {**value, "curve": nan_moved}, {**value, "loss": value["loss"].astype(np.float64)}):
        assert not fingerprint.same_within_rounding(base, fingerprint.sketch(changed))


def test_an_es_loop_rounded_on_two_cpu_kinds_is_one_value():
    """act.md's test-time exploiter ES loop probed at one commit on Zen 4 (avx512f) and Zen 3 (avx2): two ES
    generations carry XLA's rounding up to 2.2e-5 of the norm (Adam scales each gradient entry by its own size).
    That is rounding; the same value 0.1% larger, or with one float moved, is a change."""
    exact = "1bb246cb8b1380e5"
    zen4 = {"exact": exact, "count": 23372, "numbers": [26.541988761726266, -23.270528938051108, -14.381029234190713,
                                                       2.3004474827494406, -26.30006533213517]}
    zen3 = {"exact": exact, "count": 23372, "numbers": [26.542036860180726, -23.27080936254143, -14.380453364523849,
                                                       2.3008232089062197, -26.29993934589979]}
    assert fingerprint.same_within_rounding(zen4, zen3)
    for numbers in ([x * 1.001 for x in zen4["numbers"]], [zen4["numbers"][0], -23.2, *zen4["numbers"][2:]]):
        assert not fingerprint.same_within_rounding(zen4, {**zen4, "numbers": numbers})


def test_rounding_in_host_values_is_not_a_change_but_a_real_change_is(tmp_path, monkeypatch):
    """Another CPU kind rounds host numbers differently in the last bits: the part stays current, with sketches."""
    values = np.random.default_rng(1).normal(size=100)

    def record(host_values, loss="a"):
        fp = fingerprint.Fingerprint()
        fp.add("program ppo run", loss)
        fp.probe("stats", lambda: {"cells": host_values})
        return fp.record()

    recorded = record(values)
    parts = {"CartPole-v1": part_entry(CARTPOLE, recorded)}
    results = manifest_with(tmp_path, "dpo", parts)
    for now, stale in ((record(last_bits(values)), False), (record(values * 1.001), True),
                       (record(last_bits(values), loss="b"), True)):
        monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False: {
            p: now for p in wanted})
        reasons = dict(staleness.stale_parts(results)[STUDIES["dpo"].document])
        assert ("CartPole-v1" in reasons) == stale, reasons.get("CartPole-v1")
    assert "host stats changed" in fingerprint.changed(recorded, record(values * 1.001))


def test_a_run_resumed_on_another_cpu_kind_is_one_computation(tmp_path, monkeypatch):
    """Sessions on two CPU kinds: the host floats differ in the last bits, the sketches agree."""
    import shlex

    from purerl_lab.publish import sessions

    values = np.random.default_rng(2).normal(size=50)

    def record(host_values):
        fp = fingerprint.Fingerprint()
        fp.add("program ppo run", "a")
        fp.probe("stats", lambda: host_values)
        return fp.record()

    here, there = record(values), record(last_bits(values))
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False:
                        {p: here for p in wanted})
    monkeypatch.setattr(provenance, "git_state", lambda: ("c0ffee" * 6 + "abcd", False))
    argv = shlex.split(CARTPOLE.format(runs="/scratch"))[1:]
    budget = {"env_steps_per_run": 65536, "seeds": list(range(16))}
    earlier = {**sessions.facts("dpo", "CartPole-v1", argv), "fingerprint": there["hash"], "fingerprint_record": there}
    entry = provenance.record("dpo", tmp_path / "dpo.md", "CartPole-v1", argv, 1.0, budget,
                              sessions=[earlier, sessions.facts("dpo", "CartPole-v1", argv)])
    assert here["hash"] != there["hash"] and not entry["mixed_sources"] and not entry["dirty"]


def test_a_programs_host_computed_constants_are_compared_up_to_rounding():
    """A program closing over a host-initialised array carries it as a constant: rounding of that array is not a
    change; the array scaled, or other code around the same array, is."""
    weights = np.random.default_rng(3).normal(size=(4, 64)).astype(np.float32)
    x = jax.ShapeDtypeStruct((3, 4), jnp.float32)

    def record(w, code=lambda x, w: jnp.tanh(x @ w)):
        fp = fingerprint.Fingerprint()
        fp.program("policy", lambda x: code(x, w), x)
        return fp.record()

    base = record(weights)
    assert base["sketches"]["program policy"]["count"] == weights.size
    assert fingerprint.rounding_only(base, record(last_bits(weights))) == ["program policy"]
    assert fingerprint.changed(base, record(last_bits(weights))) == []
    for other in (record(weights * np.float32(1.001)), record(weights, code=lambda x, w: jax.nn.relu(x @ w))):
        assert fingerprint.changed(base, other) == ["program policy changed"]
    text = fingerprint.lowered_text(lambda x: x @ weights, x)
    assert not fingerprint.values.float_constants(text.replace("f32>", "i32>"))[1]  # integers stay exact


def test_an_unsketched_record_from_another_cpu_kind_says_so():
    values = np.arange(1.0, 30.0)
    fp = fingerprint.Fingerprint()
    fp.probe("stats", lambda: values)
    now = fp.record()
    old = {"hash": "0", "components": {"host stats": "0"}}  # made before sketches, on an unrecorded kind
    assert "unrecorded CPU kind" in fingerprint.unverifiable_rounding(old, now)
    assert fingerprint.unverifiable_rounding({**old, "components": {"host stats": "0", "program x": "1"}},
                                             {**now, "components": {**now["components"], "program x": "2"}}) is None


def test_mark_gives_sketches_only_to_parts_current_to_the_bit(tmp_path, monkeypatch):
    values = np.arange(10.0)
    fp = fingerprint.Fingerprint()
    fp.probe("stats", lambda: values)
    now = fp.record()
    before = {key: now[key] for key in ("hash", "components")}  # a record made before sketches existed
    other = {"hash": "0", "components": {"host stats": "0"}}
    results = manifest_with(tmp_path, "dpo", {"CartPole-v1": part_entry(CARTPOLE, before),
                                              "Acrobot-v1": part_entry(ACROBOT, other)})
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False: {
        p: now for p in wanted})
    assert staleness.record_current(results) == [f"{STUDIES['dpo'].document}: CartPole-v1 (sketches)"]
    parts = json.loads((results / "manifest.json").read_text())[STUDIES["dpo"].document]["parts"]
    assert parts["CartPole-v1"]["fingerprint"] == {**before, "sketches": now["sketches"]}
    assert "sketches" not in parts["Acrobot-v1"]["fingerprint"]
    assert staleness.record_current(results) == []  # nothing left to give
    program = fingerprint.Fingerprint()  # a record whose host values have sketches, but not its program's
    program.probe("stats", lambda: values)
    program.program("policy", lambda x: x @ np.arange(256.0, dtype=np.float32).reshape(4, 64),
                    jax.ShapeDtypeStruct((3, 4), np.float32))
    with_program = program.record()
    host_only = {**with_program, "sketches": {"host stats": with_program["sketches"]["host stats"]}}
    (tmp_path / "b").mkdir()
    results = manifest_with(tmp_path / "b", "dpo", {"CartPole-v1": part_entry(CARTPOLE, host_only)})
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False: {
        p: with_program for p in wanted})
    assert staleness.record_current(results) == [f"{STUDIES['dpo'].document}: CartPole-v1 (sketches)"]


def stamped(record: dict, files: dict[str, bytes], package: Path) -> dict:
    """`record` stamped as computed from `files` (name -> bytes, written under `package`) in this environment."""
    from purerl_lab.publish.fingerprint import parts

    for name, data in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_bytes(data)
    sources = {name: fingerprint.digest(data) for name, data in files.items()}
    return parts._stamped({"record": record, "sources": sources}, fingerprint.environment_key())


def test_a_record_whose_stamp_holds_is_trusted_without_computing(tmp_path, monkeypatch):
    """A check on a fresh clone computes only the parts whose sources or inputs changed since their stamp."""
    from purerl_lab.publish.fingerprint import parts as fp_parts

    package = tmp_path / "purerl"
    monkeypatch.setattr(fp_parts, "SOURCE", package)
    record = {"hash": "1", "components": {"program ppo run": "a"}}
    files = {"algos/ppo.py": b"def loss(): ...\n", "envs/gymnax.py": b"# env\n"}
    results = manifest_with(tmp_path, "dpo", {"CartPole-v1": part_entry(CARTPOLE, stamped(record, files, package)),
                                              "Acrobot-v1": part_entry(ACROBOT, record)})
    computed = []

    def many(wanted, workers=2, cache=True, refresh=False):
        computed.extend(wanted)
        return {p: {"hash": "2", "components": {"program ppo run": "b"}} for p in wanted}

    monkeypatch.setattr(fingerprint, "many", many)
    reasons = dict(staleness.stale_parts(results)[STUDIES["dpo"].document])
    assert computed == [("dpo", "Acrobot-v1")] and "CartPole-v1" not in reasons and "Acrobot-v1" in reasons
    computed.clear()
    staleness.stale_parts(results, refresh=True)  # --no-cache trusts no stamp
    assert sorted(computed) == [("dpo", "Acrobot-v1"), ("dpo", "CartPole-v1")]
    (package / "algos/ppo.py").write_bytes(b"def loss(): return 1\n")  # a file the computation loaded changed
    computed.clear()
    assert "CartPole-v1" in dict(staleness.stale_parts(results)[STUDIES["dpo"].document]) and len(computed) == 2
    (package / "algos/ppo.py").write_bytes(files["algos/ppo.py"])
    (package / "envs/gymnax.py").unlink()
    assert not fingerprint.stamp_holds(json.loads((results / "manifest.json").read_text())[
        STUDIES["dpo"].document]["parts"]["CartPole-v1"]["fingerprint"])
    (package / "envs/gymnax.py").write_bytes(files["envs/gymnax.py"])
    other = stamped(record, files, package)
    other["loaded"]["environment"] = "another jax, or other committed meta-parameters"
    assert not fingerprint.stamp_holds(other) and fingerprint.stamp_holds(stamped(record, files, package))


def test_mark_stamps_current_parts_and_leaves_stale_ones(tmp_path, monkeypatch):
    from purerl_lab.publish.fingerprint import parts as fp_parts

    package = tmp_path / "purerl"
    monkeypatch.setattr(fp_parts, "SOURCE", package)
    record = {"hash": "1", "components": {"program ppo run": "a"}}
    now = stamped(record, {"algos/ppo.py": b"# PPO, moved\n"}, package)
    results = manifest_with(tmp_path, "dpo", {"CartPole-v1": part_entry(CARTPOLE, record),
                                              "Acrobot-v1": part_entry(ACROBOT, {"hash": "0", "components": {
                                                  "program ppo run": "z"}})})
    monkeypatch.setattr(fingerprint, "many", lambda wanted, workers=2, cache=True, refresh=False: {
        p: now for p in wanted})
    assert staleness.record_current(results) == [f"{STUDIES['dpo'].document}: CartPole-v1 (loaded)"]
    parts = json.loads((results / "manifest.json").read_text())[STUDIES["dpo"].document]["parts"]
    assert parts["CartPole-v1"]["fingerprint"] == now and "loaded" not in parts["Acrobot-v1"]["fingerprint"]
    assert staleness.record_current(results) == []  # its stamp holds now: nothing computed, nothing to give


def test_a_computed_record_is_stamped_with_the_sources_it_loaded():
    record = fingerprint.many([("pbt", "Acrobot-v1")], workers=1, cache=False)[("pbt", "Acrobot-v1")]
    assert {"purerl/algos/ppo.py", "purerl/run/pbt.py", "purerl/stats.py", "purerl_lab/studies/pbt/design.py"} <= set(
        record["loaded"]["files"].split())
    assert fingerprint.stamp_holds(record)
