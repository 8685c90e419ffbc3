"""Cheap talk: the adversary only appends a bounded, state-determined message; populations train in one program."""

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.algos.ppo import make_train
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import ConfigError
from purerl_lab.studies.act.cheap_talk import CheapTalk
from purerl_lab.studies import act
from purerl.run import stopping
from purerl_lab.studies.act import partials, test_time

ROOT = Path(__file__).resolve().parents[2]

@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1", "Reacher-misc"])
def test_messages_are_bounded_appended_and_depend_only_on_the_state(name):
    env = envs.make(name)
    talk = CheapTalk()
    psi = talk.init_params(jax.random.PRNGKey(0), env.observation_shape[0])
    obs, _ = env.reset(jax.random.PRNGKey(1))
    seen = talk(obs, psi)
    assert seen.shape == talk.shape(env.observation_shape) == (env.observation_shape[0] + 2,)
    np.testing.assert_array_equal(seen[:-2], obs)  # the true observation is untouched
    assert float(jnp.abs(seen[-2:]).max()) <= 2 * math.pi
    np.testing.assert_array_equal(talk(obs, psi), seen)  # deterministic: no noise
    other = talk.init_params(jax.random.PRNGKey(5), env.observation_shape[0])
    assert not np.allclose(talk(obs, other)[-2:], seen[-2:])


def test_a_population_of_adversaries_trains_a_population_of_victims_in_one_program():
    config = PPOConfig(env="Pendulum-v1", num_envs=2, num_steps=32, total_timesteps=2 * 32 * 3, num_minibatches=2)
    talk = CheapTalk()
    train = make_train(config, observe=talk)
    psis = jax.lax.map(lambda k: talk.init_params(k, 3), jax.random.split(jax.random.PRNGKey(0), 4))
    out = jax.jit(jax.vmap(train, in_axes=(None, None, 0)))(jax.random.PRNGKey(1), HyperParams().as_arrays(), psis)
    losses = np.asarray(out.metrics["value_loss"])
    assert losses.shape == (4, 3) and np.isfinite(losses).all()
    assert len({round(float(v), 6) for v in losses[:, -1]}) == 4  # each adversary changes what its victim sees


def test_anti_and_pro_fitness_are_opposite_signs_of_the_victims_mean_return():
    anti, pro = act.train_time_task("anti"), act.train_time_task("pro")
    # one program: XLA shares part of the two identical trainings, so it compiles faster than two
    a, p = jax.jit(lambda k, t: (anti.fitness(k, t), pro.fitness(k, t)))(jax.random.PRNGKey(3), anti.template)
    assert float(a) == pytest.approx(-float(p)) and float(p) > 0


def test_silent_training_messages_are_zeros_and_random_ones_are_not():
    talk = CheapTalk()
    silent = test_time.training_messages(talk, "silent", 0, "CartPole-v1")
    noisy = test_time.training_messages(talk, "random", 0, "CartPole-v1")
    obs = jnp.array([0.1, -0.2, 0.03, 0.4])
    assert np.all(np.asarray(talk.messages(silent, obs)) == 0)
    assert np.any(np.asarray(talk.messages(noisy, obs)) != 0)


def test_evolved_runs_are_found_per_prefix_and_es_seed_without_confusing_prefixes(tmp_path):
    from purerl_lab.studies.act import cli as act_cli

    for name in ("test-time-es1", "test-time-es0", "test-time-exploiter-es0", "test-time-exploiter-silent-es0",
                 "test-time-exploiter-silent-es2", "anti-es0"):
        (tmp_path / name).mkdir()
        (tmp_path / name / act_cli.MEAN_PARAMS).write_bytes(b"")
    (tmp_path / "test-time-es3").mkdir()  # an unfinished run (no parameters) is not evaluated
    found = [(prefix, kind, run_dir.name) for prefix, kind, _, run_dir in act_cli.evolved_runs(tmp_path, "test-time")]
    assert found == [("test-time", "evolved", "test-time-es0"), ("test-time", "evolved", "test-time-es1"),
                     ("test-time-exploiter", "random", "test-time-exploiter-es0"),
                     ("test-time-exploiter-silent", "silent", "test-time-exploiter-silent-es0"),
                     ("test-time-exploiter-silent", "silent", "test-time-exploiter-silent-es2")]
    assert [label for *_, label, _ in act_cli.evolved_runs(tmp_path, "train-time")] == ["anti (evolved), ES seed 0"]
    es = dict(strategy="open_es", population_size=32, generations=2, rollouts=2, lr=0.03, lr_final=0.003, std=0.1,
              std_final=0.03, fitness_shaping="z_score")
    (tmp_path / "anti-es0" / "config.json").write_text(json.dumps({"es": es, "task_info": {"env": "CartPole-v1"}}))
    (tmp_path / "anti-es0" / "generations.csv").write_text("generation,mean,seconds\n0,1.0,12.5\n1,2.0,10.0\n")
    only = tmp_path / "only"
    only.mkdir()
    (tmp_path / "anti-es0").rename(only / "anti-es0")
    budget = act_cli._es_budget([only, tmp_path / "absent"])
    assert budget[-2] == ("- CartPole-v1 `anti-es0`: open_es, population 32 x 2 generations x 2 victims per "
                          "candidate, lr 0.03 to 0.003, std 0.1 to 0.03, z_score fitness; 22 s")
    assert "CartPole-v1 population 1024 x 2049 generations, Pendulum-v1 population 768 x 2049" in budget[0]


def test_the_pendulum_victim_is_the_authors_and_its_files_are_named_apart_from_cartpoles():
    """main_train_time.py's PENDULUM: 16 envs x 256 steps x 128 updates, 16 full-batch epochs, lr 0.02, gamma
    0.95, entropy 0.005; CartPole's evaluation keeps its first file names, Pendulum's carry the env."""
    victim = act.victim_of("Pendulum-v1")
    assert (victim.config.num_envs, victim.config.num_steps, victim.config.num_updates) == (16, 256, 128)
    assert (victim.config.update_epochs, victim.config.num_minibatches, victim.hp.lr, victim.hp.gamma,
            victim.hp.ent_coef) == (16, 1, 0.02, 0.95, 0.005)
    assert act.train_time_files("CartPole-v1") == ("train_time.json", "train_time.png")
    assert act.train_time_files("Pendulum-v1") == ("train_time-Pendulum-v1.json", "train_time-Pendulum-v1.png")
    assert act.es_config("paper", "Pendulum-v1").population_size == 768
    with pytest.raises(ConfigError, match="victims on CartPole-v1 and Pendulum-v1, not Acrobot-v1"):
        act.es_config("cpu", "Acrobot-v1")


@pytest.mark.parametrize("argv, message", [
    (["act", "test-time", "--env", "Pendulum-v1"], "it runs on CartPole-v1, not Pendulum-v1"),
    (["act", "train-time", "--env", "Acrobot-v1"], "not Acrobot-v1"),
    (["act", "train-time", "--env", "Pendulum-v1", "--preset", "big"], "unknown preset 'big'; choose from cpu, paper"),
])
def test_act_refuses_an_env_without_the_authors_victim_in_one_line(capsys, tmp_path, argv, message):
    from purerl.cli import main

    assert main([*argv, "--runs-dir", str(tmp_path / "runs")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("victims, message", [
    ("0", "argument --victims: expected a positive number, got '0'"),
    ("x", "argument --victims: expected an integer, got 'x'"),
    ("5000", "argument --victims: expected at most 4,096, got '5000'"),
    ("64", "--victims sets an evaluation's victims: it needs --report or --from-params"),
])
def test_act_refuses_a_bad_victims_count_in_one_line_before_building_anything(monkeypatch, capsys, tmp_path,
                                                                               victims, message):
    from cli_run import run_cli

    monkeypatch.setattr(act, "victim", lambda *a: pytest.fail("a victim was built"))
    code, _, err = run_cli(capsys, "act", "train-time", "--env", "Pendulum-v1", "--victims", victims,
                           "--runs-dir", tmp_path / "runs")
    assert code == 2 and message in err and err.count("\n") == 1 and not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_act_cli_runs_one_folder_per_es_seed_and_reports_every_run_and_baseline(tmp_path):
    """Tiny budgets: two anti ES seeds and the three test-time runs, evaluated from their folders into one report."""
    from purerl.cli import main

    tiny = ["--population-size", "2", "--generations", "1", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    for seed in ("0", "1"):
        assert main(["act", "train-time", "--mode", "anti", "--seed", seed, *tiny]) == 0
    base = tmp_path / "runs" / "CartPole-v1"
    assert sorted(p.name for p in base.glob("anti*")) == ["anti-es0", "anti-es1"]
    report = tmp_path / "act.md"
    assert main(["act", "train-time", "--from-params", str(base), "--report", str(report), *tiny]) == 0
    assert main(["act", "test-time", "--report", str(report), *tiny]) == 0
    text = report.read_text()
    for row in ("anti (evolved), ES seed 0", "anti (evolved), ES seed 1", "random adversary", "no messages",
                "joint (evolved messages + exploiter), ES seed 0", "exploiter vs random-message victim, ES seed 0",
                "exploiter vs silent-channel victim, ES seed 0", "random shaper"):
        assert f"| {row} |" in text, row
    assert "Train-time shaping" in text
    part = json.loads((tmp_path / "manifest.json").read_text())["act.md"]["parts"]["test-time"]
    assert part["wall_s"] >= sum(run["evolve_wall_s"] for run in part["evolved"].values()) > 0  # it evolved them
    kept = sorted(p.name for p in (tmp_path / "act" / "params").iterdir())
    assert kept == ["anti-es0", "anti-es1", "test-time-es0", "test-time-exploiter-es0", "test-time-exploiter-silent-es0"]
    # the records name each evolved run as the other records do: relative to the command's --runs-dir
    train_runs = json.loads((tmp_path / "act" / "train_time.json").read_text())["runs"]
    assert train_runs == {f"anti (evolved), ES seed {s}": f"CartPole-v1/anti-es{s}" for s in (0, 1)}
    test_runs = json.loads((tmp_path / "act" / "test_time.json").read_text())["runs"]
    assert test_runs["joint (evolved messages + exploiter), ES seed 0"] == "CartPole-v1/test-time-es0"


def test_test_time_checks_every_run_directory_before_the_first_evolves(capsys, tmp_path):
    from purerl.cli import main

    runs = tmp_path / "runs"
    (runs / "CartPole-v1" / "test-time-exploiter-es0").mkdir(parents=True)
    (runs / "CartPole-v1" / "test-time-exploiter-es0" / "notes.txt").write_text("mine")
    assert main(["act", "test-time", "--runs-dir", str(runs), "--generations", "1", "--no-progress"]) == 2
    assert "not a purerl run" in capsys.readouterr().err
    assert sorted(p.name for p in (runs / "CartPole-v1").iterdir()) == ["test-time-exploiter-es0"]


class _Stop(Exception):
    pass


def test_act_resume_continues_the_runs_that_exist_and_starts_the_missing_ones(monkeypatch, capsys, tmp_path):
    """A test-time phase stopped in its second run resumes with one command, as `compare --resume` does."""
    from purerl.run import rundir
    from purerl.cli import main
    from purerl_lab.studies.act import cli as act_cli

    calls = []

    def evolve_one_run_then_stop(task, config, out, args, resume):
        calls.append((out.name, resume))
        if out.name != "test-time-es0":
            raise _Stop
        if not resume:
            rundir.start(out, act_cli._record(task, config, args), False)

    monkeypatch.setattr(act_cli, "_evolve", evolve_one_run_then_stop)
    argv = ["act", "test-time", "--runs-dir", str(tmp_path), "--generations", "1", "--no-progress"]
    with pytest.raises(_Stop):
        main(argv)
    assert main(argv) == 2 and "already holds this run" in capsys.readouterr().err
    calls.clear()
    with pytest.raises(_Stop):
        main([*argv, "--resume"])
    assert calls == [("test-time-es0", True), ("test-time-exploiter-es0", False)]


def test_an_evolve_run_without_report_only_evolves(monkeypatch, capsys, tmp_path):
    """Evaluating every run in the folder after each evolve run cost more than the run itself on Pendulum."""
    from purerl.cli import main
    from purerl_lab.studies.act import cli as act_cli

    evolved = []
    monkeypatch.setattr(act_cli, "_evolve", lambda task, config, out, args, resume: evolved.append(out.name))
    monkeypatch.setattr(act, "evaluate_train_time", lambda *a: pytest.fail("an evolve run evaluated"))
    assert main(["act", "train-time", "--env", "Pendulum-v1", "--runs-dir", str(tmp_path), "--no-progress"]) == 0
    assert evolved == ["anti-es0"]
    assert f"--from-params {tmp_path / 'Pendulum-v1'}" in capsys.readouterr().out


def _rows(n: int, **cis) -> dict:
    """Summaries of `n` victims per label, with the given (low, high) CIs."""
    return {label: {"n": n, "ci_valid": True, "iqm": (low + high) / 2, "ci95_low": low, "ci95_high": high,
                    "mean": (low + high) / 2, "values": []} for label, (low, high) in cis.items()}


def test_no_act_verdict_from_fewer_victims_than_the_env_needs_and_one_above_where_cis_separate():
    from purerl_lab.studies.act import cli as act_cli

    pairs = [("anti", "random adversary")]
    apart = dict(anti=(-620.0, -560.0), **{"random adversary": (-510.0, -460.0)})
    assert act.victim_of("Pendulum-v1").victims == 64 and act.victim_of("CartPole-v1").victims == 32
    few = act_cli._verdicts(_rows(32, **apart), pairs, "Pendulum-v1")
    assert few == ["- No verdicts: 32 held-out victims, and a verdict on Pendulum-v1 needs at least 64 (`--victims`)."]
    assert act_cli._verdicts(_rows(64, **apart), pairs, "Pendulum-v1") == [
        "- anti vs random adversary: lower (CIs do not overlap)"]
    overlapping = dict(anti=(-520.0, -480.0), **{"random adversary": (-510.0, -460.0)})
    assert act_cli._verdicts(_rows(64, **overlapping), pairs, "Pendulum-v1") == [
        "- anti vs random adversary: not distinguishable at this budget"]
    assert act_cli._verdicts(_rows(32, **apart), pairs, "CartPole-v1") == [  # CartPole's verdicts rest on 32
        "- anti vs random adversary: lower (CIs do not overlap)"]
    assert act_cli._verdicts(_rows(16, **apart), pairs, "CartPole-v1")[0].startswith("- No verdicts: 16 held-out")
    test_time = dict(joint=(150.0, 160.0), silent=(90.0, 110.0))
    assert "not judged. No verdicts: 16 held-out victims" in act_cli._backdoor_verdict(
        _rows(16, **test_time), ["joint"], ["silent"], "CartPole-v1")
    assert act_cli._backdoor_verdict(_rows(32, **test_time), ["joint"], ["silent"], "CartPole-v1").startswith(
        "Train-time shaping adds control")
    below = dict(joint=(137.1, 151.5), random=(153.1, 159.4), silent=(90.0, 110.0))
    words = act_cli._backdoor_verdict(_rows(32, **below), ["joint"], ["random", "silent"], "CartPole-v1")
    assert words.startswith("Train-time shaping is not shown to add control") and words.endswith(
        "It gives less control where a joint run's CI lies below a baseline's: joint, 144.3 [137.1, 151.5], below "
        "random, 156.2 [153.1, 159.4].")


def test_victims_sets_the_fresh_seeds_an_evaluation_trains_and_records(monkeypatch, tmp_path):
    """--victims N evaluates seeds 20000 .. 20000 + N - 1; without it each env trains its own count."""
    from purerl.cli import main
    from purerl_lab.publish import provenance

    evaluated = []

    def evaluate(run_dirs, env_name, plots_dir, seeds, conditions_done, fresh, runs_dir):
        evaluated.append(seeds)
        return {"mean_return_over_training": {}, "earlier_sessions_s": 0.0}

    monkeypatch.setattr(act, "evaluate_train_time", evaluate)
    monkeypatch.setattr(partials, "train_time_inputs", lambda env_name, seeds: {})  # lowers the victim programs
    params = ROOT / "docs/results/act/params-Pendulum-v1"
    report = tmp_path / "act.md"
    base = ["act", "train-time", "--env", "Pendulum-v1", "--from-params", str(params), "--report", str(report),
            "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    assert main([*base, "--victims", "80"]) == 0
    assert evaluated[-1] == list(range(20_000, 20_080))
    part = provenance.read_manifest(tmp_path)["act.md"]["parts"]["train-time Pendulum-v1"]
    assert part["budget"]["seeds"] == evaluated[-1] and part["command"].endswith("--victims 80")
    assert main(base) == 0 and evaluated[-1] == list(range(20_000, 20_064))
    assert act.fresh_seeds("CartPole-v1") == list(range(20_000, 20_032))


def test_every_registered_act_evaluation_trains_the_victims_its_verdicts_need():
    from purerl_lab.publish.catalog import STUDIES
    from purerl_lab.studies.commands import parse_command

    reports = [parse_command(c) for c in STUDIES["act"].commands if " --report " in c]
    assert {(args.phase, args.env) for args in reports} == {
        ("train-time", "CartPole-v1"), ("train-time", "Pendulum-v1"), ("test-time", "CartPole-v1")}
    for args in reports:
        assert len(act.fresh_seeds(args.env, args.victims)) >= act.victim_of(args.env).victims
    assert next(a for a in reports if a.env == "Pendulum-v1").victims == 64


def test_the_victims_count_is_in_the_evaluations_fingerprint_and_no_program_depends_on_it(monkeypatch):
    """Victims are trained one program each, vmapped: their count changes the seeds (an input) and the random
    adversaries, never a lowered program; CartPole's default count fingerprints as the 32 seeds it always had."""
    from purerl_lab.publish.catalog import STUDIES
    from purerl_lab.publish.fingerprint import core
    from purerl_lab.studies.act import fingerprint as act_fingerprint

    monkeypatch.setattr(core.Fingerprint, "program", lambda self, name, *args, **kw: self.add(f"program {name}", "-"))

    def components(command):
        fp = core.Fingerprint()
        act_fingerprint.act_part(fp, command)
        return fp.components

    pendulum = next(c for c in STUDIES["act"].commands if "--env Pendulum-v1 --from-params" in c)
    at_64, at_32 = components(pendulum), components(pendulum.replace("--victims 64", "--victims 32"))
    assert {name for name in at_64 if at_64[name] != at_32[name]} == {
        "input Pendulum-v1 victims", "host Pendulum-v1 random adversaries"}
    cartpole = next(c for c in STUDIES["act"].commands if "--env CartPole-v1 --from-params" in c)
    assert components(cartpole) == components(cartpole + " --victims 32")


def test_a_diverged_victim_counts_as_not_finite_rather_than_by_its_returns_before(monkeypatch, tmp_path):
    """The evaluation's value of a victim that diverged is NaN, which its row counts; the curve is kept."""
    curve = np.full((5, 12), 100.0)

    def victims(env_name, psis, seeds):
        return curve, np.arange(len(seeds)) == 3  # the fourth seed diverged

    monkeypatch.setattr(act, "victim_curves", victims)
    report = act.evaluate_train_time({}, "CartPole-v1", tmp_path, list(range(12)))
    for row in report["mean_return_over_training"].values():
        assert row["n"] == 12 and not row["ci_valid"] and np.isnan(row["values"][3])
        assert all(v == 100.0 for i, v in enumerate(row["values"]) if i != 3)


def test_a_stopped_evaluation_resumes_from_the_conditions_it_finished_and_refuses_a_damaged_one(monkeypatch, tmp_path):
    """Each finished condition is kept (named by a hash of its inputs); a signal stops the evaluation before the
    next condition, and --resume reads the finished ones back and trains only the rest, to the uninterrupted
    numbers; a damaged file is refused before any victim trains, and left as it is."""
    trained = []

    def victims(env_name, psis, seeds):
        trained.append("no channel" if psis is None else "random")
        curve = np.arange(5 * len(seeds), dtype=np.float32).reshape(5, -1) + (psis is None)
        return curve, np.zeros(len(seeds), bool)

    monkeypatch.setattr(act, "victim_curves", victims)
    seeds = list(range(12))

    def evaluate(folder, resume, inputs=None):
        trained.clear()
        done = partials.Partials(tmp_path / folder, inputs or {"env": "CartPole-v1", "seeds": seeds}, resume)
        return act.evaluate_train_time({}, "CartPole-v1", tmp_path / folder / "plots", seeds, done)

    whole = evaluate("whole", resume=False)
    assert trained == ["random", "no channel"] and whole["earlier_sessions_s"] == 0
    with monkeypatch.context() as signalled:  # SIGTERM arrives while the first condition trains
        signalled.setattr(stopping, "pending", lambda: "SIGTERM" if trained else None)
        with pytest.raises(stopping.StopRequested) as stop:
            evaluate("cut", resume=False)
    assert (stop.value.done, stop.value.total, stop.value.saved) == (1, 2, True)
    assert trained == ["random"] and len(list((tmp_path / "cut").glob("*.npz"))) == 1
    resumed = evaluate("cut", resume=True)
    assert trained == ["no channel"] and resumed["earlier_sessions_s"] > 0
    assert resumed["mean_return_over_training"] == whole["mean_return_over_training"]
    assert (tmp_path / "cut/plots/train_time.json").read_bytes() == (tmp_path / "whole/plots/train_time.json").read_bytes()
    evaluate("cut", resume=False)  # without --resume every condition trains again
    assert trained == ["random", "no channel"]
    evaluate("cut", resume=True, inputs={"env": "CartPole-v1", "seeds": seeds, "cpu": "another"})
    assert trained == ["random", "no channel"] and len(list((tmp_path / "cut").glob("*.npz"))) == 4
    damaged = sorted((tmp_path / "cut").glob("random-adversary-*.npz"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    for resume in (True, False):
        with pytest.raises(ConfigError, match="is not a finished condition of this evaluation; move it away"):
            evaluate("cut", resume=resume)
        assert trained == [] and len(damaged.read_bytes()) == 100
