"""The ES loop: maximise convention, strategies, NaN robustness, chunking, resume after SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos import loop
from purerl.meta import evolve, evolve_files, strategies
from purerl.checks import ConfigError
from purerl_lab.studies import value_loss

TARGET = jnp.array([1.5, -0.5, 2.0])


def quadratic_task(nan_above: float | None = None) -> evolve.MetaTask:
    """Fitness -(x - target)^2, maximal at TARGET; optionally NaN where x[0] > nan_above."""

    def fitness(key, params):
        value = -jnp.sum((params["x"] - TARGET) ** 2)
        if nan_above is not None:
            value = jnp.where(params["x"][0] > nan_above, jnp.nan, value)
        return value

    return evolve.MetaTask("quadratic", {"x": jnp.zeros(3)}, fitness, {})


@pytest.mark.parametrize(
    "strategy, options",
    [
        ("open_es", dict(lr=0.05, std=0.1)),
        ("snes", dict(fitness_shaping="default", optimizer="sgd", lr=1.0, std=0.5)),
        ("cma_es", dict(fitness_shaping="default", std=0.5)),
    ],
)
def test_strategies_maximise_fitness(tmp_path, strategy, options):
    config = strategies.ESConfig(strategy=strategy, population_size=16, generations=60, **options)
    task = quadratic_task()
    log = evolve.run(evolve.Evolution(task, config), tmp_path, evolve.config_json(task, config), progress=False)
    mean = evolve_files.load_meta_params(tmp_path / evolve_files.MEAN_PARAMS, task.template)["x"]
    assert float(jnp.sum((mean - TARGET) ** 2)) < 0.1, (strategy, mean)
    assert log[-1]["mean"] > log[0]["mean"]
    assert (tmp_path / evolve_files.GENERATIONS_CSV).read_text().startswith("generation,best,mean,std,median,nan_count,seconds")
    assert (tmp_path / evolve_files.FITNESS_PNG).exists() and (tmp_path / evolve_files.BEST_PARAMS).exists()


def test_nan_fitness_gets_the_worst_fitness_and_is_counted(tmp_path):
    config = strategies.ESConfig(population_size=16, generations=5, lr=0.05, std=0.5)
    task = quadratic_task(nan_above=0.0)  # about half of the candidates fail
    log = evolve.run(evolve.Evolution(task, config), tmp_path, evolve.config_json(task, config), progress=False)
    assert sum(row["nan_count"] for row in log) > 0
    assert all(np.isfinite(row["mean"]) for row in log)
    mean = evolve_files.load_meta_params(tmp_path / evolve_files.MEAN_PARAMS, task.template)["x"]
    assert np.isfinite(np.asarray(mean)).all()


def _run(returns, episodes, params=1.0):
    """A finished run as `train` returns it: its metrics and its final state's parameters."""
    metrics = {"episode_return": jnp.asarray(returns, jnp.float32), "episodes": jnp.asarray(episodes, jnp.float32)}
    return SimpleNamespace(metrics=metrics, state=SimpleNamespace(params={"w": jnp.full(3, params)}))


@pytest.mark.parametrize("kind", evolve.FITNESS_KINDS)
def test_a_diverged_training_run_has_no_fitness_rather_than_its_returns_before(kind):
    late = np.array([100.0] * 20 + [np.nan] * 10)  # episodes still end after it diverges, with NaN returns
    runs = {"healthy": _run(np.full(30, 100.0), np.ones(30)),
            "diverged late": _run(late, np.ones(30)),
            "NaN parameters, finite returns": _run(np.full(30, 100.0), np.ones(30), params=np.nan),  # NaN logits
            "no episode ended yet": _run(np.r_[np.full(25, np.nan), np.full(5, 50.0)], np.r_[np.zeros(25), np.ones(5)])}
    fitness = {name: float(evolve.train_fitness(lambda key, hp, meta, run=run: run, None, kind)(None, None))
               for name, run in runs.items()}
    assert fitness["healthy"] == 100.0 and fitness["no episode ended yet"] == 50.0
    assert np.isnan(fitness["diverged late"]) and np.isnan(fitness["NaN parameters, finite returns"])
    repaired, bad = evolve.repair_fitness(np.array(list(fitness.values())))
    assert bad == 2 and repaired.max() == 100.0 and repaired[1] == repaired[2] == repaired.min()


def test_diverged_reads_losses_that_turn_non_finite_not_those_that_start_so():
    run = _run(np.full(6, 1.0), np.ones(6)).metrics
    before_learning = {**run, "td_loss": jnp.asarray([np.nan, np.nan, 1.0, 1.0, 1.0, 1.0])}  # DQN's buffer fills
    assert not loop.diverged(before_learning, {"w": jnp.ones(2)}, ("td_loss",))
    turned = {**run, "td_loss": jnp.asarray([1.0, 1.0, np.inf, 1.0, 1.0, 1.0])}
    assert loop.diverged(turned, {"w": jnp.ones(2)}, ("td_loss",))
    no_episode = {**run, "episode_return": jnp.full(6, jnp.nan), "episodes": jnp.zeros(6)}
    assert not loop.diverged(no_episode, {"w": jnp.ones(2)})


def test_repair_fitness():
    fitness, bad = evolve.repair_fitness(np.array([1.0, np.nan, -2.0, np.inf]))
    np.testing.assert_array_equal(fitness, [1.0, -2.0, -2.0, -2.0])
    assert bad == 2


def test_bad_es_config_is_rejected_before_any_compile():
    with pytest.raises(ConfigError, match="population-size must be even"):
        strategies.ESConfig(population_size=7).validate()
    with pytest.raises(ConfigError, match="unknown strategy 'open-es'"):
        strategies.ESConfig(strategy="open-es").validate()


def test_es_preset_sets_its_settings_over_the_tasks_and_each_es_flag_given_wins():
    from purerl.cli import build_parser
    from purerl.cli.meta import es_settings

    def settings(*flags):
        return es_settings(build_parser().parse_args(["evolve", "value-loss", *flags]), value_loss)

    task, preset = settings(), strategies.ES_PRESETS["paper-openes"]
    paper = settings("--es-preset", "paper-openes")
    assert {name: getattr(paper, name) for name in preset} == preset
    assert any(getattr(task, name) != value for name, value in preset.items())  # the preset changed something
    kept = [name for name in ("population_size", "generations", "rollouts") if name not in preset]
    assert kept and all(getattr(paper, name) == getattr(task, name) for name in kept)
    flagged = settings("--es-lr", "0.02", "--es-preset", "paper-openes", "--fitness-shaping", "centered_rank")
    assert (flagged.lr, flagged.fitness_shaping, flagged.std) == (0.02, "centered_rank", preset["std"])


@pytest.fixture(scope="module")
def tiny_value_loss():
    task = value_loss.make_task(total_timesteps=4 * 64 * 4)
    return task


# The cpu preset's 4 rollouts a candidate: a chunk of 4 candidates is then the program that COMMAND's whole
# population (and the throughput bench's) evaluates with, compiled once for all of them.
SIX_CANDIDATES = dict(population_size=6, std=1.0, rollouts=4)


def test_chunked_evaluation_equals_unchunked(tiny_value_loss):
    whole = evolve.Evolution(tiny_value_loss, strategies.ESConfig(**SIX_CANDIDATES))
    chunked = evolve.Evolution(tiny_value_loss, strategies.ESConfig(**SIX_CANDIDATES, max_parallel=4))
    population, _ = whole.strategy.ask(jax.random.PRNGKey(0), whole.init_state(), whole.params)
    a = whole.evaluate(jax.random.PRNGKey(1), population)
    b = chunked.evaluate(jax.random.PRNGKey(1), population)
    assert a.shape == (6,) and np.isfinite(a).all() and len(set(a.tolist())) > 1
    np.testing.assert_array_equal(a, b)


def test_a_tiny_memory_budget_chunks_the_population_with_the_same_fitness(tiny_value_loss):
    """A budget of one candidate per device: the smallest chunk, one program shared with the memory measurement;
    the whole population's program is test_chunked_evaluation_equals_unchunked's."""
    whole = evolve.Evolution(tiny_value_loss, strategies.ESConfig(**SIX_CANDIDATES))
    per_candidate = evolve.memory_per_candidate(whole)
    tiny = evolve.Evolution(tiny_value_loss, strategies.ESConfig(**SIX_CANDIDATES),
                            memory_budget_bytes=1.5 * per_candidate)
    # The budget is per device (one host device per core by default).
    assert tiny.chunk == jax.device_count() and whole.chunk == 6
    population, _ = whole.strategy.ask(jax.random.PRNGKey(0), whole.init_state(), whole.params)
    fitness = whole.evaluate(jax.random.PRNGKey(1), population)
    assert len(set(fitness.tolist())) > 1
    np.testing.assert_array_equal(tiny.evaluate(jax.random.PRNGKey(1), population), fitness)


COMMAND = ["evolve", "value-loss", "--population-size", "4", "--generations", "6", "--total-timesteps", "1024",
           "--std", "1.0", "--no-progress"]


def purerl(*args, **kwargs):
    exe = Path(sys.executable).with_name("purerl")
    return subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


@pytest.mark.timeout(600)
def test_sigkill_mid_run_then_resume_gives_exactly_the_uninterrupted_es_mean(tmp_path):
    full, cut = tmp_path / "full", tmp_path / "cut"
    reference = purerl(*COMMAND, "--out", str(full))
    assert reference.wait() == 0, reference.stderr.read()  # first, so the victim loads its compiled program
    victim = purerl(*COMMAND, "--out", str(cut))
    log = cut / evolve_files.GENERATIONS_CSV
    deadline = time.time() + 300
    while time.time() < deadline and victim.poll() is None:
        if log.exists() and len(log.read_text().strip().splitlines()) >= 3:  # header + 2 generations
            break
        time.sleep(0.05)
    assert victim.poll() is None, "the run finished before it could be killed"
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert not (cut / evolve_files.MEAN_PARAMS).exists()
    resumed = purerl(*COMMAND, "--out", str(cut), "--resume")
    assert resumed.wait() == 0, resumed.stderr.read()
    assert (cut / evolve_files.MEAN_PARAMS).read_bytes() == (full / evolve_files.MEAN_PARAMS).read_bytes()
    rows = (cut / evolve_files.GENERATIONS_CSV).read_text().strip().splitlines()
    assert len(rows) == 7
    assert any(float(row.split(",")[3]) > 0 for row in rows[1:])  # fitness varied within generations
    strip_seconds = lambda lines: [line.rsplit(",", 1)[0] for line in lines]  # noqa: E731
    assert strip_seconds(rows) == strip_seconds((full / evolve_files.GENERATIONS_CSV).read_text().strip().splitlines())
    # One record per session that ended: the SIGKILLed one could not write its own.
    sessions = {run: json.loads((run / "provenance.json").read_text()) for run in (full, cut)}
    assert [[s["command"].endswith("--resume") for s in record] for record in sessions.values()] == [[False], [True]]
    assert all(s["commit"] and s["machine"] for record in sessions.values() for s in record)


def test_evolve_cli_refuses_a_different_run_in_the_same_directory(tmp_path, capsys):
    from purerl.cli import main

    from purerl.run import rundir

    rundir.start(tmp_path, {"command": "train"}, resumed=False)
    code = main([*COMMAND, "--out", str(tmp_path)])
    assert code == 2 and "already holds a different run" in capsys.readouterr().err


def test_an_evolution_that_cannot_fit_this_machine_is_one_line_before_anything_is_written(tmp_path, capsys):
    """Issue 84: a million candidates (each four PPO runs at once) ran on for minutes after writing the run; the
    generation's lower bound (the task's `run_bytes` per inner run) refuses it with the estimate, exit 2."""
    from purerl.cli import main

    code = main(["evolve", "value-loss", "--population-size", "1000000", "--out", str(tmp_path / "run"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "1,000,000 candidates, 4,000,000 training runs" in err and "GiB, more than this machine's" in err
    assert not (tmp_path / "run").exists()
    task = value_loss.make_task("cpu")
    evolve.Evolution(task, value_loss.es_config("cpu"))  # the preset fits
    assert task.run_bytes > 0
