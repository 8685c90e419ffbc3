"""Meta-learned value loss (the PureJaxRL meta-evolution demo): the task and its held-out evaluation.

OpenES evolves a loss that replaces PPO's value loss on CartPole-v1, in one of two forms (`FORMS`):
`scaled`, the distance 0.5 (v - t)^2 exp(g(v, t)) (`objectives.learned_value_loss`), a reweighting of L2
that stays zero only at v = t; or `mlp`, exp(s) (0.5 e^2 + e h(e)) with h a small MLP of the error e = v - t
(`objectives.mlp_value_loss`), free to have a slope at e = 0, as the walkthrough's net was. Both start
exactly at L2 (a zero output layer). The fitness is the mean return over training (area under the curve)
at a budget where L2 has not yet reached 500. `held_out` retrains the evolved losses and the baselines on
seeds that evolution never used, at the training budget, at longer budgets and on another environment.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from purerl import envs, stats
from purerl.algos import memory
from purerl.algos.objectives import (clipped_l2, init_mlp_value_loss_params, init_value_loss_params, l2,
                                     learned_value_loss, mlp_value_loss)
from purerl.algos.ppo import make_train
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import ConfigError
from purerl.meta.evolve import MetaTask, curve_fitness, train_fitness
from purerl.meta.strategies import ESConfig
from purerl.run.population import Placement, batched, make_members

ENV = "CartPole-v1"
# cpu: 1e5 steps per inner run (4 envs x 64 steps, 391 updates), where L2's mean return over training
#      is about 300 of 500; population 32 x 4 rollouts x 40 generations is 5.1e8 env steps per ES seed,
#      so that 3 ES seeds fit a session on 2 cores (benchmarks/README.md, "What the published studies' budgets
#      cost").
# paper: the authors' walkthrough (PureJaxRL's examples/walkthrough.ipynb): OpenES population 128 x 2 rollouts x
#      512 generations, each inner run PureJaxRL's CartPole PPO with 64 steps per env (4 envs, 5e5 steps), for one
#      GPU; candidates are evaluated in chunks that fit
#      `memory_budget_mb` per device (XLA's memory analysis), so a 40 GB GPU does not run out of memory.
PRESETS = {
    "cpu": dict(es=dict(population_size=32, generations=40, rollouts=4),
                inner=dict(num_envs=4, num_steps=64, total_timesteps=100_000)),
    "paper": dict(es=dict(population_size=128, generations=512, rollouts=2), inner=dict(num_steps=64),
                  memory_budget_mb=30_000),
}
ES_DEFAULTS = dict(strategy="open_es", lr=0.03, std=0.1)  # open_es shapes by centred ranks
FITNESS = "auc"  # mean return over training: rewards learning fast, not only the end point

BASELINES = {"l2": l2, "clipped_l2": clipped_l2}

# Seeds for held-out evaluation. Evolution draws its training keys from fold_in(PRNGKey(es_seed),
# generation) splits, never from PRNGKey(n) of a small integer, so these runs are new to it.
HELD_OUT_SEED_START = 10_000
# Seeds of the replication: every held-out setting again, by the same command, on seeds disjoint from the first set
# (a verdict is bold only where both sets give it, `stats.replication`)
REPLICATION_SEED_START = 70_000


class LossForm(NamedTuple):
    """A learned loss's parameterisation: the value-loss hook, its template (exactly L2) and its description."""

    loss: Callable
    init: Callable[[jax.Array], Any]
    description: str


FORMS = {
    "scaled": LossForm(learned_value_loss, init_value_loss_params,
                       "0.5 (v - t)^2 exp(g), g = 16 tanh features of asinh(v - t)/3, asinh(t)/3; "
                       "zero output layer at start (= L2)"),
    "mlp": LossForm(mlp_value_loss, init_mlp_value_loss_params,
                    "exp(s) (0.5 e^2 + e h(e)), e = v - t, h = a 16-16 tanh MLP of asinh(e)/3; "
                    "zero output layer and s = 0 at start (= L2)"),
}
DEFAULT_FORM = "scaled"  # an evolve run whose config.json names no form (every run before `mlp` existed)


class Loss(NamedTuple):
    """One loss the held-out evaluation trains: a value-loss hook, its meta-parameters and PPO's hyperparameters."""

    value_loss: Callable
    meta_params: Any = None
    hyperparams: HyperParams = HyperParams()


def baselines(tuned_vf_coef: float | None = None) -> dict[str, Loss]:
    """L2 and clipped L2 at PPO's defaults, and L2 at a value coefficient chosen beforehand (`tuning`)."""
    out = {name: Loss(loss) for name, loss in BASELINES.items()}
    if tuned_vf_coef is not None:
        out["tuned_l2"] = Loss(l2, None, HyperParams(vf_coef=tuned_vf_coef))
    return out


def form_of(evolve_config: dict) -> str:
    """The loss form an evolve run's config.json records."""
    form = evolve_config.get("task_info", {}).get("loss_form", DEFAULT_FORM)
    if form not in FORMS:
        raise ConfigError(f"unknown value-loss form '{form}'; purerl knows {', '.join(FORMS)}")
    return form


def inner_config(preset: str = "cpu", env: str = ENV, total_timesteps: int | None = None) -> PPOConfig:
    config = PPOConfig(env=env, **PRESETS[preset]["inner"])
    return config.replace(total_timesteps=total_timesteps) if total_timesteps else config


def check_preset(preset: str) -> None:
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; choose from {', '.join(PRESETS)}")


def make_task(preset: str = "cpu", total_timesteps: int | None = None, fitness: str | None = None,
              env: str | None = None, loss_form: str = DEFAULT_FORM) -> MetaTask:
    """The meta-task of one loss form; config.json names the form unless it is the default (so a default run's
    config is what it always was, and an older run still resumes)."""
    check_preset(preset)
    if env not in (None, ENV):
        raise ConfigError(f"the value-loss study evolves on {ENV}, not {env}")
    if loss_form not in FORMS:
        raise ConfigError(f"unknown loss form '{loss_form}'; choose from {', '.join(FORMS)}")
    config = inner_config(preset, total_timesteps=total_timesteps)
    fitness = fitness or FITNESS
    train = make_train(config, value_loss=FORMS[loss_form].loss)
    return MetaTask(
        name="value-loss",
        template=initial_params(form=loss_form),
        fitness=train_fitness(train, HyperParams().as_arrays(), fitness),
        info={"env": ENV, "num_envs": config.num_envs, "num_steps": config.num_steps,
              "total_timesteps": config.total_timesteps, "fitness": fitness,
              "value_loss": FORMS[loss_form].description}
             | ({} if loss_form == DEFAULT_FORM else {"loss_form": loss_form}),
        cpu_group=config.cpu_group,
        run_bytes=memory.ppo_bytes(config, train.env),
    )


def initial_params(seed: int = 0, form: str = DEFAULT_FORM):
    """Fixed random tanh features and a zero output layer: generation 0 is exactly L2."""
    return FORMS[form].init(jax.random.PRNGKey(seed))


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


def train_returns(value_loss, meta_params, config: PPOConfig, seeds: list[int],
                  hyperparams: HyperParams = HyperParams()) -> np.ndarray:
    """Episode return per update of PPO with `value_loss` on each seed: [updates, seeds] (NaN: none ended)."""
    members = make_members(seeds, hyperparams)
    return returns_of(value_loss, meta_params, config, members.keys(), members.hyperparams.as_arrays())


def returns_of(value_loss, meta_params, config: PPOConfig, keys, hyperparams: HyperParams) -> np.ndarray:
    """`train_returns` of members given by their keys [members, 2] and hyperparameters (leaves [members])."""
    envs.check_name(config.env)
    count = len(keys)
    placement, run = _returns_program(value_loss, config, count)
    returns = run(placement.put(keys), placement.put(hyperparams), meta_params)
    return placement.get(returns, count).T


def fitness_per_seed(returns: np.ndarray) -> dict[str, np.ndarray]:
    """The evolution's fitness (`curve_fitness`: the mean over updates of the return) and the final return."""
    from purerl.run.results import final_returns

    return {"auc": curve_fitness(returns, "auc"), "final": final_returns(returns)}


def held_out(losses: dict[str, Loss], settings: dict[str, dict], seeds_by_setting: dict[str, int],
             preset: str = "cpu", on_result=None, seed_start: int = HELD_OUT_SEED_START) -> tuple[dict, dict]:
    """Every loss (learned ones and `baselines`) on the same fresh seeds, `seed_start` on, per setting.

    Returns ({setting: {name: {"auc": summary, "final": summary, "auc_per_seed": [...]}}},
    {setting: {name: episode returns [updates, seeds]}}).
    """
    out, curves = {}, {}
    for setting, spec in settings.items():
        config = inner_config(preset, env=spec["env"], total_timesteps=spec["total_timesteps"])
        seeds = list(range(seed_start, seed_start + seeds_by_setting[setting]))
        out[setting], curves[setting] = {}, {}
        for name, loss in losses.items():
            curves[setting][name] = train_returns(loss.value_loss, loss.meta_params, config, seeds, loss.hyperparams)
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
