"""Learning checks against the issue's thresholds. Run on purpose: `pytest -m slow`."""

import jax
import numpy as np
import pytest

from purerl.algos.ppo import make_train
from purerl.config import apply_preset
from purerl.population import make_members
from purerl.results import final_returns

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def train_preset(env: str, preset: str, seeds: int, discrete: bool, **overrides) -> np.ndarray:
    """Final return (mean of the last 10 updates) of every seed of a preset."""
    config, hp = apply_preset(preset, env, discrete)
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
    config, hp = apply_preset("brax", "brax:hopper", discrete=False)
    config = config.replace(num_envs=64, num_steps=32, total_timesteps=200_704, num_minibatches=8)
    out = jax.jit(make_train(config))(jax.random.PRNGKey(0), hp.as_arrays())
    returns = np.asarray(out.metrics["episode_return"])
    first, last = np.nanmean(returns[:5]), np.nanmean(returns[-5:])
    print(f"brax:hopper return {first:.1f} -> {last:.1f}")
    assert last > first + 50, (first, last)


def test_value_loss_cpu_preset_improves_fitness(tmp_path):
    """`purerl evolve value-loss` (CPU preset, ~20 min): last generation's mean fitness beats the first's."""
    from purerl import evolve
    from purerl.studies import value_loss

    task, config = value_loss.make_task("cpu"), value_loss.es_config("cpu")
    log = evolve.run(evolve.Evolution(task, config), tmp_path, evolve.config_json(task, config), progress=False)
    print("value-loss mean fitness:", log[0]["mean"], "->", log[-1]["mean"])
    assert log[-1]["mean"] > log[0]["mean"]


def test_lpo_cpu_preset_starts_at_ppo_and_does_not_collapse(tmp_path):
    """`purerl evolve lpo` (CPU preset, 12 of its 300 generations): generation 0 is PPO (zero drift net), and fitness stays there or above."""
    from purerl import evolve
    from purerl.algos.ppo import make_train
    from purerl.studies import lpo

    task, config = lpo.make_task("cpu"), lpo.es_config("cpu", generations=12)
    log = evolve.run(evolve.Evolution(task, config), tmp_path, evolve.config_json(task, config), progress=False)
    ppo_config, hp = lpo.inner_setup(lpo.PRESETS["cpu"]["env"], lpo.PRESETS["cpu"]["config"])
    keys = jax.random.split(jax.random.PRNGKey(1), 8)
    ppo = jax.jit(jax.vmap(make_train(ppo_config), in_axes=(0, None)))(keys, hp.as_arrays())
    ppo_final = final_returns(np.asarray(ppo.metrics["episode_return"]).T)
    print("LPO generation fitness:", [round(r["mean"], 2) for r in log], "PPO:", ppo_final.mean())
    assert abs(log[0]["mean"] - ppo_final.mean()) < 3 * ppo_final.std() + 1.0
    assert min(r["mean"] for r in log[-3:]) > 0.5 * log[0]["mean"]
