"""Every ES strategy purerl offers, under every fitness shaping it accepts, climbs the fitness the user defined.

evosax minimises and its strategies read a shaped fitness in two opposite ways (a loss for Open-ES and PGPE,
recombination weights for the rest); these tests pin purerl's maximise convention and its log of raw fitness
for each pair, on a quadratic and on a noisy one, from the same start.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.meta import evolve, evolve_files, strategies
from purerl.checks import ConfigError
from purerl_lab.studies import value_loss
from purerl_lab.studies.dpo import lpo

OPTIMUM = 3.0
START_DISTANCE2 = 2 * OPTIMUM**2  # from x = (0, 0)
GENERATIONS = 60
PAIRS = [(strategy, shaping) for strategy in strategies.STRATEGIES for shaping in strategies.shapings(strategy)]


def quadratic(noise: float = 0.0, nan_below: float | None = None) -> evolve.MetaTask:
    """-|x - 3|^2, plus noise that differs between candidates (common random numbers would make a shared
    shift, which no ranking sees), NaN where x[0] < nan_below."""

    def fitness(key, params):
        x = params["x"]
        value = -jnp.sum((x - OPTIMUM) ** 2)
        if noise:
            own_key = jax.random.fold_in(key, jax.lax.bitcast_convert_type(x[0], jnp.uint32))
            value = value + noise * jax.random.normal(own_key)
        if nan_below is not None:
            value = jnp.where(x[0] < nan_below, jnp.nan, value)
        return value

    return evolve.MetaTask("quadratic", {"x": jnp.zeros(2)}, fitness, {})


def evolve_for(task, generations=GENERATIONS, **options):
    config = strategies.ESConfig(population_size=16, generations=generations, std=0.5, lr=0.1, **options)
    evolution = evolve.Evolution(task, config)
    state, log = evolution.init_state(), []
    for index in range(generations):
        state, row, fitness, best = evolution.generation(state, index)
        log.append((row, fitness, best))
    return np.asarray(evolution.mean(state)["x"]), log


@pytest.mark.parametrize("noise", [0.0, 1.0], ids=["exact", "noisy"])
@pytest.mark.parametrize("strategy, shaping", PAIRS)
def test_every_strategy_and_shaping_climbs_a_quadratic(strategy, shaping, noise):
    mean, log = evolve_for(quadratic(noise), strategy=strategy, fitness_shaping=shaping)
    distance2 = float(np.sum((mean - OPTIMUM) ** 2))
    assert distance2 < 0.1 * START_DISTANCE2, (strategy, shaping, mean)  # 90% of the way, never the wrong way
    first, last = log[0][0], log[-1][0]
    assert last["mean"] > first["mean"] + 10, (first, last)
    for row, fitness, best in log:  # the log is the raw fitness, never the shaped one
        assert row["mean"] == pytest.approx(float(np.mean(fitness)))
        assert row["best"] == pytest.approx(float(np.max(fitness)))
        if not noise:
            assert row["best"] == pytest.approx(-float(np.sum((np.asarray(best["x"]) - OPTIMUM) ** 2)), rel=1e-5)


def test_each_strategy_defaults_to_a_sound_shaping_and_refuses_the_others():
    for strategy in strategies.STRATEGIES:
        config = strategies.ESConfig(strategy=strategy, population_size=16)
        assert config.fitness_shaping == strategies.shapings(strategy)[0]
        assert strategies.ESConfig(strategy=strategy, population_size=16, fitness_shaping="default") == config
        config.validate()
        for shaping in {*strategies.SHAPING, strategies.OWN_WEIGHTS} - set(strategies.shapings(strategy)):
            with pytest.raises(ConfigError, match=f"--fitness-shaping for {strategy} must be"):
                strategies.ESConfig(strategy=strategy, population_size=16, fitness_shaping=shaping).validate()
    with pytest.raises(ConfigError, match="unknown fitness shaping 'rank'"):
        strategies.ESConfig(fitness_shaping="rank").validate()
    # the studies' own defaults leave the shaping to the strategy, so `--strategy cma_es` alone is sound
    assert lpo.es_config("cpu", strategy="cma_es").fitness_shaping == strategies.OWN_WEIGHTS
    assert value_loss.es_config("cpu", strategy="snes").fitness_shaping == strategies.OWN_WEIGHTS
    assert lpo.es_config("cpu").fitness_shaping == "centered_rank"  # what the committed LPO runs recorded


def test_a_shaping_the_strategy_cannot_use_is_one_line_and_exit_2(tmp_path, capsys):
    from cli_run import run_cli

    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "evolve", "lpo", "--strategy", "cma_es", "--fitness-shaping", "centered_rank",
                           "--out", out, "--no-progress")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "cma_es recombines candidates with its own rank weights" in err
    assert not out.exists()


def test_a_generation_with_no_finite_fitness_is_never_the_best(tmp_path, capsys):
    task = quadratic(nan_below=1.0)  # every candidate near the start fails
    config = strategies.ESConfig(population_size=8, generations=3, std=0.01, lr=0.1)
    evolution = evolve.Evolution(task, config)
    log = evolve.run(evolution, tmp_path, evolve.config_json(task, config), progress=False)
    assert [row["nan_count"] for row in log] == [8, 8, 8]
    assert all(np.isnan(row["mean"]) and np.isnan(row["best"]) for row in log)
    err = capsys.readouterr().err
    assert "generation 0: no candidate had a finite fitness; the ES state is unchanged" in err
    assert "best_meta_params.msgpack holds the initial mean" in err
    for name in (evolve_files.BEST_PARAMS, evolve_files.MEAN_PARAMS):  # state never moved, best never taken
        saved = evolve_files.load_meta_params(tmp_path / name, task.template)["x"]
        np.testing.assert_array_equal(np.asarray(saved), np.zeros(2))
    assert "nan" in (tmp_path / evolve_files.GENERATIONS_CSV).read_text().splitlines()[1]
    assert [row["nan_count"] for row in evolve_files.read_log(tmp_path)] == [8, 8, 8]


def test_a_diverging_es_mean_stops_the_run_with_one_line():
    def fitness(key, params):
        return 1e30 * params["x"][0]

    task = evolve.MetaTask("steep", {"x": jnp.zeros(2)}, fitness, {})
    config = strategies.ESConfig(population_size=8, generations=5, fitness_shaping="none", optimizer="sgd", lr=1e12)
    evolution = evolve.Evolution(task, config)
    with pytest.raises(evolve.ESDiverged, match="open_es mean became non-finite at generation 0"):
        evolution.generation(evolution.init_state(), 0)
