"""Meta-learned value loss (the PureJaxRL meta-evolution demo): the task and its held-out evaluation.

OpenES evolves g in the distance 0.5 (v - t)^2 exp(g(v, t)) that replaces PPO's value loss on
CartPole-v1 (see `objectives.learned_value_loss`). g's output layer starts at zero, so generation
0 trains with exactly L2 and every candidate is a reweighting of L2 that is still zero only at
v = t. The fitness is the mean return over training (area under the curve) at a budget where L2
has not yet reached 500. `held_out` retrains the evolved loss, L2 and PPO's clipped L2 on seeds
that evolution never used, at the training budget, at longer budgets and on another environment.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from purerl import envs, stats
from purerl.algos.objectives import clipped_l2, init_value_loss_params, l2, learned_value_loss
from purerl.algos.ppo import make_train
from purerl.config import ConfigError, HyperParams, PPOConfig
from purerl.meta.evolve import MetaTask, train_fitness
from purerl.meta.strategies import ESConfig
from purerl.run.population import Placement, batched, make_members

ENV = "CartPole-v1"
# cpu: 1e5 steps per inner run (4 envs x 64 steps, 391 updates), where L2's mean return over training
#      is about 300 of 500; population 32 x 4 rollouts x 40 generations is 5.1e8 env steps per ES seed,
#      about 25 minutes on 2 quiet cores (~350k steps/s), so 3 ES seeds fit about 90 minutes.
# paper: the published scale (population 512, 1024 generations) at the PureJaxRL CartPole defaults
#      (4 envs x 128 steps, 5e5 steps), for one GPU; candidates are evaluated in chunks that fit
#      `memory_budget_mb` per device (XLA's memory analysis), so a 40 GB GPU does not run out of memory.
PRESETS = {
    "cpu": dict(es=dict(population_size=32, generations=40, rollouts=4),
                inner=dict(num_envs=4, num_steps=64, total_timesteps=100_000)),
    "paper": dict(es=dict(population_size=512, generations=1024, rollouts=1), inner={}, memory_budget_mb=30_000),
}
ES_DEFAULTS = dict(strategy="open_es", lr=0.03, std=0.1)  # open_es shapes by centred ranks
FITNESS = "auc"  # mean return over training: rewards learning fast, not only the end point

BASELINES = {"l2": l2, "clipped_l2": clipped_l2}
# Seeds for held-out evaluation. Evolution draws its training keys from fold_in(PRNGKey(es_seed),
# generation) splits, never from PRNGKey(n) of a small integer, so these runs are new to it.
HELD_OUT_SEED_START = 10_000


def inner_config(preset: str = "cpu", env: str = ENV, total_timesteps: int | None = None) -> PPOConfig:
    config = PPOConfig(env=env, **PRESETS[preset]["inner"])
    return config.replace(total_timesteps=total_timesteps) if total_timesteps else config


def check_preset(preset: str) -> None:
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; choose from {', '.join(PRESETS)}")


def make_task(preset: str = "cpu", total_timesteps: int | None = None, fitness: str | None = None,
              env: str | None = None) -> MetaTask:
    check_preset(preset)
    if env not in (None, ENV):
        raise ConfigError(f"the value-loss study evolves on {ENV}, not {env}")
    config = inner_config(preset, total_timesteps=total_timesteps)
    fitness = fitness or FITNESS
    train = make_train(config, value_loss=learned_value_loss)
    return MetaTask(
        name="value-loss",
        template=initial_params(),
        fitness=train_fitness(train, HyperParams().as_arrays(), fitness),
        info={"env": ENV, "num_envs": config.num_envs, "num_steps": config.num_steps,
              "total_timesteps": config.total_timesteps, "fitness": fitness,
              "value_loss": "0.5 (v - t)^2 exp(g), g = 16 tanh features of asinh(v - t)/3, asinh(t)/3; "
                            "zero output layer at start (= L2)"},
        cpu_group=config.cpu_group,
    )


def initial_params(seed: int = 0):
    """Fixed random tanh features and a zero output layer: generation 0 is exactly L2."""
    return init_value_loss_params(jax.random.PRNGKey(seed))


def es_config(preset: str, **overrides) -> ESConfig:
    check_preset(preset)
    return ESConfig(**{**ES_DEFAULTS, **PRESETS[preset]["es"], **overrides})


def memory_budget_mb(preset: str) -> float | None:
    """The preset's default memory budget per device for chunked evaluation (None: all at once)."""
    return PRESETS.get(preset, {}).get("memory_budget_mb")


# ------------------------------------------------------------ held-out evaluation
def transfer_settings(budget: int) -> dict[str, dict]:
    """The training budget, 2x and 5x that budget, and Acrobot-v1 at the training budget."""
    return {
        "training_budget": dict(env=ENV, total_timesteps=budget),
        "acrobot": dict(env="Acrobot-v1", total_timesteps=budget),
        "2x_budget": dict(env=ENV, total_timesteps=2 * budget),
        "5x_budget": dict(env=ENV, total_timesteps=5 * budget),
    }


@functools.lru_cache(maxsize=None)
def _returns_program(value_loss, config: PPOConfig, num_seeds: int):
    """One compiled program per (loss, config, seeds): every learned candidate reuses the learned loss's."""
    train = make_train(config, value_loss=value_loss)
    placement = Placement.for_members(num_seeds)
    return placement, batched(lambda key, hp, meta: train(key, hp, meta).metrics["episode_return"], placement,
                              num_shared_args=1, num_member_args=2, cpu_group=config.cpu_group)


def train_returns(value_loss, meta_params, config: PPOConfig, seeds: list[int]) -> np.ndarray:
    """Episode return per update of PPO with `value_loss` on each seed: [updates, seeds] (NaN: none ended)."""
    envs.check_name(config.env)
    members = make_members(seeds, HyperParams())
    placement, run = _returns_program(value_loss, config, len(seeds))
    returns = run(placement.put(members.keys()), placement.put(members.hyperparams.as_arrays()), meta_params)
    return placement.get(returns, len(seeds)).T


def fitness_per_seed(returns: np.ndarray) -> dict[str, np.ndarray]:
    """The evolution's fitness (mean over updates of the return, as `train_fitness`) and the final return."""
    from purerl.run.results import final_returns

    with np.errstate(all="ignore"):
        return {"auc": np.nanmean(returns, axis=0), "final": final_returns(returns)}


def held_out(candidates: dict[str, object], settings: dict[str, dict], seeds_by_setting: dict[str, int],
             preset: str = "cpu", on_result=None) -> tuple[dict, dict]:
    """Every candidate (name -> learned meta-params) and both baselines on fresh seeds, per setting.

    Returns ({setting: {name: {"auc": summary, "final": summary, "auc_per_seed": [...]}}},
    {setting: {name: episode returns [updates, seeds]}}).
    """
    out, curves = {}, {}
    for setting, spec in settings.items():
        config = inner_config(preset, env=spec["env"], total_timesteps=spec["total_timesteps"])
        seeds = list(range(HELD_OUT_SEED_START, HELD_OUT_SEED_START + seeds_by_setting[setting]))
        losses = {name: (learned_value_loss, params) for name, params in candidates.items()}
        losses |= {name: (loss, None) for name, loss in BASELINES.items()}
        out[setting], curves[setting] = {}, {}
        for name, (loss, params) in losses.items():
            curves[setting][name] = train_returns(loss, params, config, seeds)
            per_seed = fitness_per_seed(curves[setting][name])
            out[setting][name] = {
                "auc": stats.summarize(per_seed["auc"]),
                "final": stats.summarize(per_seed["final"]),
                "auc_per_seed": [round(float(v), 3) for v in per_seed["auc"]],
            }
            if on_result:
                on_result(setting, name, out[setting][name])
        out[setting]["config"] = {"env": config.env, "total_timesteps": config.total_timesteps,
                                  "num_envs": config.num_envs, "num_steps": config.num_steps,
                                  "seeds": [seeds[0], seeds[-1]]}
    return out, curves


def verdict(learned: dict, baseline: dict) -> str:
    """'better' / 'worse' only when the 95% CIs of the IQM do not overlap."""
    if learned["ci95_low"] > baseline["ci95_high"]:
        return "better"
    if learned["ci95_high"] < baseline["ci95_low"]:
        return "worse"
    return "not distinguishable"

