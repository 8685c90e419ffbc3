"""The base every algorithm builds on, written once: its construction, the update loop over a preallocated
metric buffer, the metric rows and their episode means, and the schedule of the algorithms that learn from each
rollout in epochs of minibatches (PPO, PQN)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.checks import ConfigError

from purerl import envs


class TrainResult(NamedTuple):
    state: Any
    metrics: dict[str, jax.Array]


class UpdateLoop:
    """`run` and `__call__` for an algorithm with `init(key, hp, meta_params)`,
    `update(index, state, hp, meta_params)` and `config.num_updates`."""

    def __init__(self, config, env: envs.Env | None = None):
        if not hasattr(config, "validate"):  # an env name or a dict where the config object belongs
            name = type(self).__name__
            raise TypeError(f"make_train for {name} needs its config object (such as {name}Config(env=...)), "
                            f"got {type(config).__name__} {config!r:.60}")
        config.validate()
        self.config = config
        self.env = env if env is not None else envs.make(config.env)

    def run(self, state, hp, meta_params, start, stop):
        """Updates `start` to `stop - 1`. Chunks of one run compose exactly, so runs can checkpoint and resume."""
        return jax.lax.fori_loop(start, stop, lambda i, s: self.update(i, s, hp, meta_params), state)

    def __call__(self, key: jax.Array, hp, meta_params=None) -> TrainResult:
        state = self.init(key, hp, meta_params)
        state = self.run(state, hp, meta_params, 0, self.config.num_updates)
        return TrainResult(state, state.metrics)


class MinibatchEpochs(UpdateLoop):
    """An update loop that learns from each rollout in `update_epochs` passes of `num_minibatches` minibatches,
    at a learning rate set per update (`config.anneal_lr`)."""

    @property
    def steps_per_update(self) -> int:
        """Optimiser steps in one update."""
        return self.config.update_epochs * self.config.num_minibatches

    def learning_rate(self, hp, update_index: jax.Array) -> jax.Array:
        """Linear annealing to 0 over updates (CleanRL), or constant."""
        if not self.config.anneal_lr:
            return hp.lr * jnp.ones_like(update_index, jnp.float32)
        return hp.lr * (1.0 - update_index / self.config.num_updates)


def metric_buffers(names: tuple[str, ...], num_updates: int) -> dict[str, jax.Array]:
    """One NaN row per update for each metric: O(updates) memory, however long the run."""
    return {name: jnp.full((num_updates,), jnp.nan, jnp.float32) for name in names}


def episode_row(episode_done, episode_return, episode_length) -> dict[str, jax.Array]:
    """Mean return and length of the episodes that ended in an update (NaN if none), and how many ended."""
    ended = episode_done.astype(jnp.float32)
    episodes = ended.sum()

    def mean_over_ended(x):
        return jnp.where(episodes > 0, (x * ended).sum() / jnp.maximum(episodes, 1.0), jnp.nan)

    return {
        "episode_return": mean_over_ended(episode_return),
        "episode_length": mean_over_ended(episode_length.astype(jnp.float32)),
        "episodes": episodes,
    }


def diverged(metrics: dict[str, jax.Array], params, loss_names: tuple[str, ...] = ()) -> jax.Array:
    """Whether one run diverged: its final parameters are not finite, a loss turned non-finite after being finite
    (DQN's is NaN until its buffer fills), or an episode ended with a return that is not finite (a continuous
    action that is NaN). A diverged run still finishes, and its returns from before it diverged, or those of a
    policy acting on NaN logits, would read as a result. `metrics` holds [updates] arrays of one run."""
    ended = jnp.asarray(metrics["episodes"]) > 0
    bad = jnp.any(ended & ~jnp.isfinite(metrics["episode_return"]))
    for name in loss_names:
        finite = jnp.isfinite(metrics[name])
        bad |= jnp.any(~finite & (jnp.cumsum(finite) > 0))
    for leaf in jax.tree.leaves(params):
        bad |= ~jnp.isfinite(leaf).all()
    return bad


def record(metrics: dict[str, jax.Array], index: jax.Array, row: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """The buffers with row `index` set. A statistic the row has and no buffer holds (one a subclass's loss adds)
    is refused when the program is traced, never dropped: the class names it in its metrics to record it."""
    extra = sorted(set(row) - set(metrics))
    if extra:
        raise ConfigError(f"the update returns statistics no metric column holds ({', '.join(extra)}): add them to "
                          "the algorithm's metric names (PPO: `metric_names = PPO.metric_names + (...)` in the "
                          "subclass) to record them in metrics.csv")
    return {name: buffer.at[index].set(row[name].astype(jnp.float32)) for name, buffer in metrics.items()}

