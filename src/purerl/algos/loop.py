"""What DQN and PQN share with PPO's contract, written once: the update loop over a preallocated
metric buffer, and the checks of traced hyperparameters."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import ConfigError


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
    """Traced hyperparameters as float32 arrays (a NamedTuple of the same type)."""
    return type(hp)(*(jnp.asarray(v, jnp.float32) for v in hp))


def check_bounds(hp, bounds: dict[str, tuple[float, float, str]]) -> None:
    """Every value (scalars or grids) of each named field within (low, high]; else a ConfigError quoting `text`."""
    for name, (low, high, text) in bounds.items():
        for value in np.ravel(np.asarray(getattr(hp, name), dtype=float)).tolist():
            if not low < value <= high:
                raise ConfigError(f"{name} must be {text}, got {value:g}")


def check_config(config, positive_ints: tuple[str, ...]) -> None:
    """The named fields are positive integers; `hidden_sizes` and `activation` describe a network."""
    from purerl.nets import ACTIVATIONS

    for name in positive_ints:
        value = getattr(config, name)
        if not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{name.replace('_', '-')} must be a positive integer, got {value}")
    if not config.hidden_sizes or any(h <= 0 for h in config.hidden_sizes):
        raise ConfigError(f"hidden-sizes must be positive integers, got {config.hidden_sizes}")
    if config.activation not in ACTIVATIONS:
        raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got '{config.activation}'")


UNIT = (-1e-9, 1.0, "in [0, 1]")  # a probability or lambda
POSITIVE = (0.0, np.inf, "> 0")
DISCOUNT = (0.0, 1.0, "in (0, 1]")
