"""The evaluation at the end of training: every member's final policy played greedily on fresh full-length
episodes (`policy.members_evaluator`, the rollout `purerl eval` plays), recorded in summary.json beside the return
of the training window.

A replay learner's training returns are its exploration's (epsilon-greedy, action noise, uniform actions before
`learning_starts`), and at a short budget its window is still early learning: SAC on Pendulum at 8k env steps
averages -893 over its last 10 updates while its greedy policy returns about -108 (issue 86). So `purerl train` and
`purerl.train` evaluate a replay learner's run when it ends, as SB3's EvalCallback and CleanRL's end-of-run
evaluation do. An on-policy learner's window holds the episodes of its latest policies, so PPO and PQN are
evaluated only when asked. The studies, which score their own way, run `experiment.run` without it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from purerl import stats
from purerl.algos import memory
from purerl.checks import MAX_EPISODES, ConfigError, shown
from purerl.run.policy import members_evaluator

EPISODES = 10  # per member, where `default_episodes` evaluates: as many as CleanRL's end-of-run evaluation plays
# The episodes' keys are this key folded with each member's seed: its high word is 1, and every training seed's key
# (`PRNGKey(seed)`, seed < 2**32) has 0 there, so no key of any training run's stream is one of them. Members that
# share a seed meet the same episodes, so the settings of a grid are compared on the same starts.
SEED = 20_261_202
BASE_KEY = (1, SEED)


def replay_learner(config) -> bool:
    """Whether `config` is a replay learner's (it has `learning_starts`: DQN, SAC, TD3), whose training returns are
    its exploration's and, in a short run, early learning's (the table's note reads `learning_starts` too)."""
    return "learning_starts" in getattr(config, "__dataclass_fields__", {})


def default_episodes(config) -> int:
    """Episodes per member when none are asked for: `EPISODES` for a replay learner, else 0 (no evaluation)."""
    return EPISODES if replay_learner(config) else 0


def check(episodes, config, env_of, members: int, name: str = "final_eval_episodes") -> None:
    """`episodes` is None (the rule above), 0 (none) or a count up to `MAX_EPISODES`, and the evaluation of
    `members` on the env `env_of()` gives fits this machine's memory (`memory.evaluation_fits`): one line before any
    compile. The env is asked for only where there is an evaluation to size: a run without one builds none here."""
    if episodes is not None and (not isinstance(episodes, int) or isinstance(episodes, bool)
                                 or not 0 <= episodes <= MAX_EPISODES):
        raise ConfigError(f"{name} must be 0 (no evaluation) or a number of episodes up to {MAX_EPISODES:,}, "
                          f"got {shown(episodes)}")
    episodes = default_episodes(config) if episodes is None else episodes
    if episodes:
        memory.evaluation_fits(env_of(), members, episodes)


def keys(seeds) -> jax.Array:
    """One key per member [members, 2], from its seed alone."""
    base = jnp.asarray(BASE_KEY, jnp.uint32)
    return jax.vmap(lambda seed: jax.random.fold_in(base, seed))(jnp.asarray(seeds, jnp.uint32))


def evaluate(train, members, params, obs_stats, hyperparams, episodes: int) -> dict:
    """summary.json's `final_eval`: the mean greedy return of each member's `episodes` episodes, and its mean, IQM
    and bootstrap CI over the seeds, overall and per setting, as the training window's `final_return` has them.
    `params`, `obs_stats` and `hyperparams` have a leading member axis."""
    returns = members_evaluator(train, episodes)(params, obs_stats, keys(members.seeds), hyperparams)
    per_member = np.asarray(returns, np.float64).mean(axis=1)
    return {
        "policy": "greedy",
        "episodes": episodes,  # per member, each played from a reset to its end or the env's time limit
        "time_limit": train.env.max_episode_steps,
        "after_env_steps": train.config.num_updates * train.config.batch_size,  # each member's whole training
        "seed": SEED,
        "return": stats.summarize(per_member),
        "return_by_setting": {label: stats.summarize(per_member[idx]) for label, idx in members.groups().items()},
        "return_by_member": {members.label(i): float(v) for i, v in enumerate(per_member)},
    }
