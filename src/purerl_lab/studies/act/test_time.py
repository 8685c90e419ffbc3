"""Test-time ACT: a goal-conditioned exploiter steers the frozen greedy victim to a target cart position through
the message channel alone, evolved jointly with the messages the victim hears in training (or alone, against
victims trained with random messages or a silent channel)."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from purerl import stats
from purerl.checks import ConfigError
from purerl.meta.evolve import MetaTask
from purerl.meta.evolve_files import MEAN_PARAMS, load_meta_params
from purerl.run import files, rundir
from purerl_lab.publish import provenance
from purerl_lab.studies.act import FRESH_SEED_START, TEST_TIME_ENV, adversary_params, victim, victim_of
from purerl_lab.studies.act.cheap_talk import CheapTalk

GOAL_RANGE = 1.5  # target cart positions are drawn uniformly from [-1.5, 1.5]
EVAL_GOALS = 16


def goal_inputs(obs: jax.Array, goal: jax.Array) -> jax.Array:
    return jnp.concatenate([obs, goal[None]], axis=-1)


def controlled_episode(train, victim_params, obs_stats, exploiter: CheapTalk, phi, key, goal):
    """The frozen greedy victim, steered by the exploiter's messages towards cart position `goal`.

    Returns (goal return, cart positions): reward exp(-(x - goal)^2) per step until the episode ends.
    """
    env = train.env
    reset_key, key = jax.random.split(key)
    obs, env_state = env.reset(reset_key)

    def step(carry, step_key):
        obs, env_state, alive = carry
        seen = jnp.concatenate([obs, exploiter.messages(phi, goal_inputs(obs, goal))])
        action = train.act(victim_params, obs_stats, seen)
        env_state, ts = env.step(step_key, env_state, action)
        x = ts.final_obs[0]
        reward = jnp.where(alive, jnp.exp(-((x - goal) ** 2)), 0.0)
        return (ts.obs, env_state, alive & ~ts.done), (reward, jnp.where(alive, x, jnp.nan))

    _, (rewards, xs) = jax.lax.scan(step, (obs, env_state, jnp.bool_(True)), jax.random.split(key, env.max_episode_steps))
    return rewards.sum(), xs


def goal_return(train, result_state, exploiter, phi, key, goals: int):
    goal_key, episode_key = jax.random.split(key)
    targets = jax.random.uniform(goal_key, (goals,), minval=-GOAL_RANGE, maxval=GOAL_RANGE)
    returns, _ = jax.vmap(lambda k, g: controlled_episode(train, result_state.params, result_state.obs_stats,
                                                          exploiter, phi, k, g))(jax.random.split(episode_key, goals), targets)
    return returns.mean()


VICTIM_MESSAGES = ("evolved", "random", "silent")  # what the victim hears in training, for the test-time tasks


def training_messages(talk: CheapTalk, kind: str, seed: int, env_name: str):
    """The fixed message function of an exploiter-only task: a random adversary (seed + 777), or silence (zero
    weights give zero messages: a victim with no channel whose padded inputs the exploiter fills at test time)."""
    psi = adversary_params(talk, jax.random.PRNGKey(seed + 777), env_name)
    return jax.tree.map(jnp.zeros_like, psi) if kind == "silent" else psi


def test_time_task(env_name: str = "CartPole-v1", victim_messages: str = "evolved", seed: int = 0,
                   goals: int = 8) -> MetaTask:
    """Joint evolution of train-time messages and a goal-conditioned exploiter ("evolved"), or the exploiter
    alone against victims trained with fixed random messages ("random") or with a silent channel ("silent")."""
    if env_name != TEST_TIME_ENV:
        raise ConfigError(f"test-time ACT steers a cart to a goal position: it runs on {TEST_TIME_ENV}, not {env_name}")
    if victim_messages not in VICTIM_MESSAGES:
        raise ConfigError(f"victim messages must be one of {', '.join(VICTIM_MESSAGES)}, got '{victim_messages}'")
    talk, exploiter = CheapTalk(), CheapTalk(condition_dims=1)
    train = victim(env_name, talk)
    hp = victim_of(env_name).hp.as_arrays()
    k_train, k_exploit = jax.random.split(jax.random.PRNGKey(seed))
    joint = victim_messages == "evolved"
    fixed_psi = None if joint else training_messages(talk, victim_messages, seed, env_name)
    template = {"exploit": adversary_params(exploiter, k_exploit, env_name)}
    if joint:
        template["train"] = adversary_params(talk, k_train, env_name)

    def fitness(key, meta):
        train_key, eval_key = jax.random.split(key)
        state = train(train_key, hp, meta["train"] if joint else fixed_psi).state
        return goal_return(train, state, exploiter, meta["exploit"], eval_key, goals)

    name = "act-test-time" if joint else f"act-test-time-exploiter-{victim_messages}"
    return MetaTask(name, template, fitness, {"env": env_name, "victim_messages": victim_messages, "goals": goals,
                                              "fitness": "mean goal return of the frozen greedy victim"},
                    train.config.cpu_group)


def evaluate_test_time(runs: dict[str, tuple[str, Path]], env_name: str, plots_dir: Path, seeds: list[int],
                       fresh: bool = False, runs_dir: Path | None = None) -> dict:
    """Goal return on fresh victim seeds for each evolved run ({label: (victim messages, run dir)}, named in the
    record as `provenance.record_path` gives it beside the command's `runs_dir`), and a random shaper (random train-time messages and a random exploiter); `fresh`: the replication's, into fresh_test_time.json
    and without the study's plot of a controlled episode."""
    talk, exploiter = CheapTalk(), CheapTalk(condition_dims=1)
    train = victim(env_name, talk)
    hp = victim_of(env_name).hp.as_arrays()
    conditions = {}
    for label, (kind, run_dir) in runs.items():
        seed = rundir.read_config(run_dir)["es"]["seed"]
        meta = load_meta_params(Path(run_dir) / MEAN_PARAMS, test_time_task(env_name, kind, seed).template)
        psi = meta["train"] if kind == "evolved" else training_messages(talk, kind, seed, env_name)
        conditions[label] = (psi, meta["exploit"])
    conditions["random shaper"] = (adversary_params(talk, jax.random.PRNGKey(4242), env_name),
                                   adversary_params(exploiter, jax.random.PRNGKey(4243), env_name))
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, jnp.uint32))

    @jax.jit
    def per_seed(psi, phi):
        def one(key):
            train_key, eval_key = jax.random.split(key)
            state = train(train_key, hp, psi).state
            return goal_return(train, state, exploiter, phi, eval_key, EVAL_GOALS)

        return jax.vmap(one)(keys)

    rows = {label: stats.summarize(np.asarray(per_seed(psi, phi))) for label, (psi, phi) in conditions.items()}
    plots_dir.mkdir(parents=True, exist_ok=True)
    joint = next(((psi, phi) for label, (psi, phi) in conditions.items() if runs.get(label, ("",))[0] == "evolved"), None)
    if joint is not None and not fresh:
        _plot_controlled_episode(train, hp, exploiter, joint, plots_dir / "test_time_episode.png")
    report = {"env": env_name, **({"fresh_seeds": True} if fresh else {}), "seeds": seeds,
              "goals_per_seed": EVAL_GOALS, "goal_return": rows,
              "runs": {label: provenance.record_path(run_dir, runs_dir) for label, (_, run_dir) in runs.items()}}
    files.write_atomic(plots_dir / f"{'fresh_' if fresh else ''}test_time.json", json.dumps(report, indent=2))
    return report


def _plot_controlled_episode(train, hp, exploiter, joint: tuple, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    psi, phi = joint
    state = jax.jit(train)(jax.random.PRNGKey(FRESH_SEED_START), hp, psi).state
    fig, ax = plt.subplots(figsize=(7, 4))
    for goal in (-1.0, 0.0, 1.0):
        ret, xs = jax.jit(lambda g: controlled_episode(train, state.params, state.obs_stats, exploiter,
                                                       phi, jax.random.PRNGKey(1), g))(jnp.float32(goal))
        line = ax.plot(np.asarray(xs), label=f"goal {goal:+.1f} (return {float(ret):.0f})")[0]
        ax.axhline(goal, color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("cart position x")
    ax.set_title("Frozen victim steered through the message channel alone")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    files.save_figure(fig, path, dpi=120)
