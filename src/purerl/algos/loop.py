"""What DQN and PQN share with PPO's contract, written once: the update loop over a preallocated
metric buffer and float32 hyperparameters."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp



class TrainResult(NamedTuple):
    state: Any
    metrics: dict[str, jax.Array]


class UpdateLoop:
    """`run` and `__call__` for an algorithm with `init(key, hp, meta_params)`,
    `update(index, state, hp, meta_params)` and `config.num_updates`."""

    def run(self, state, hp, meta_params, start, stop):
        """Updates `start` to `stop - 1`. Chunks of one run compose exactly, so runs can checkpoint and resume."""
        return jax.lax.fori_loop(start, stop, lambda i, s: self.update(i, s, hp, meta_params), state)

    def __call__(self, key: jax.Array, hp, meta_params=None) -> TrainResult:
        state = self.init(key, hp, meta_params)
        state = self.run(state, hp, meta_params, 0, self.config.num_updates)
        return TrainResult(state, state.metrics)


def metric_buffers(names: tuple[str, ...], num_updates: int) -> dict[str, jax.Array]:
    """One NaN row per update for each metric: O(updates) memory, however long the run."""
    return {name: jnp.full((num_updates,), jnp.nan, jnp.float32) for name in names}


def record(metrics: dict[str, jax.Array], index: jax.Array, row: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """The buffers with row `index` set."""
    return {name: buffer.at[index].set(row[name].astype(jnp.float32)) for name, buffer in metrics.items()}


def as_float_arrays(hp):
    """Traced hyperparameters as float32 arrays (a NamedTuple of the same type), checked when known on the host."""
    from purerl.config import validate_concrete

    validate_concrete(hp)
    return type(hp)(*(jnp.asarray(v, jnp.float32) for v in hp))


def check_config(config, algorithm: str) -> None:
    """`make_train` takes a config object (`PPOConfig(env="CartPole-v1")`), not an env name or a dict."""
    if not hasattr(config, "validate"):
        raise TypeError(f"make_train for {algorithm} needs its config object (such as {algorithm}Config(env=...)), "
                        f"got {type(config).__name__} {config!r:.60}")
