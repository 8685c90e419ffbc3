"""Learning checks against the issue's thresholds. Run on purpose: `pytest -m slow`."""

import jax
import numpy as np
import pytest

from purerl.algos.ppo import make_train
from purerl.algos import ppo_config
from purerl.run.population import make_members
from purerl.run.results import final_returns

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def train_preset(env: str, preset: str, seeds: int, discrete: bool, **overrides) -> np.ndarray:
    """Final return (mean of the last 10 updates) of every seed of a preset."""
    config, hp = ppo_config.preset(preset, env, discrete)
    train = make_train(config.replace(**overrides))
    members = make_members(list(range(seeds)), hp)
    out = jax.jit(jax.vmap(train))(members.keys(), members.hyperparams.as_arrays())
    return final_returns(np.asarray(out.metrics["episode_return"]).T)


def test_cartpole_defaults_every_one_of_8_seeds_reaches_475():
    final = train_preset("CartPole-v1", "classic", 8, discrete=True)
    print("CartPole-v1 final returns:", final)
    assert (final >= 475).all(), final


def test_pendulum_continuous_preset_reaches_minus_300_on_4_seeds():
    final = train_preset("Pendulum-v1", "continuous", 4, discrete=False)  # 1e6 steps per seed
    print("Pendulum-v1 final returns:", final)
    assert final.mean() >= -300, final


def test_acrobot_reaches_minus_120():
    final = train_preset("Acrobot-v1", "classic", 4, discrete=True)  # CleanRL defaults, 5e5 steps
    print("Acrobot-v1 final returns:", final)
    assert final.mean() >= -120, final


def test_brax_hopper_ppo_return_rises():
    pytest.importorskip("brax")
    config, hp = ppo_config.preset("brax", "brax:hopper", discrete=False)
    config = config.replace(num_envs=64, num_steps=32, total_timesteps=200_704, num_minibatches=8)
    out = jax.jit(make_train(config))(jax.random.PRNGKey(0), hp.as_arrays())
    returns = np.asarray(out.metrics["episode_return"])
    first, last = np.nanmean(returns[:5]), np.nanmean(returns[-5:])
    print(f"brax:hopper return {first:.1f} -> {last:.1f}")
    assert last > first + 50, (first, last)


def test_value_loss_cpu_preset_improves_fitness(tmp_path):
    """`purerl evolve value-loss` (CPU preset, ~20 min): last generation's mean fitness beats the first's."""
    from purerl.meta import evolve
    from purerl_lab.studies import value_loss

    task, config = value_loss.make_task("cpu"), value_loss.es_config("cpu")
    log = evolve.run(evolve.Evolution(task, config), tmp_path, evolve.config_json(task, config), progress=False)
    print("value-loss mean fitness:", log[0]["mean"], "->", log[-1]["mean"])
    assert log[-1]["mean"] > log[0]["mean"]


def test_lpo_cpu_preset_improves_on_its_first_generations_and_leaves_ppo(tmp_path):
    """`purerl evolve lpo` (CPU preset, 20 of its 300 generations, about 2 minutes): the population's mean
    fitness (AUC) rises over its first generations, and the ES mean's drift is no longer PPO's."""
    from purerl.meta import evolve, evolve_files
    from purerl_lab.studies.dpo import lpo

    task, config = lpo.make_task("cpu"), lpo.es_config("cpu", generations=20)
    log = evolve.run(evolve.Evolution(task, config), tmp_path, evolve.config_json(task, config), progress=False)
    means = [row["mean"] for row in log]
    print("LPO generation mean fitness:", [round(m, 1) for m in means])
    assert np.mean(means[-5:]) > np.mean(means[:5])
    features = lpo.analyze_drift([str(tmp_path / evolve_files.MEAN_PARAMS)], tmp_path / "drift")["features"]
    assert features[f"LPO {tmp_path.name}"]["mean_abs_difference_from_ppo"] > 0.01
