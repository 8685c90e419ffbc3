"""The two action distributions PPO needs, as pure functions on arrays.

A few lines on `jax.nn` / `jax.random` replace distrax, which would pull in a
nightly TensorFlow Probability.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

_LOG_2PI = math.log(2.0 * math.pi)


class Categorical(NamedTuple):
    logits: jax.Array

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.categorical(key, self.logits)

    def log_prob(self, action: jax.Array) -> jax.Array:
        """The action's entry picked by a select, not `take_along_axis`: the same value, and its gradient is a
        select too, not a scatter-add (a few kernels fewer per PPO gradient step)."""
        log_probs = jax.nn.log_softmax(self.logits)
        chosen = action[..., None].astype(jnp.int32) == jnp.arange(self.logits.shape[-1])
        return jnp.where(chosen, log_probs, 0.0).sum(axis=-1)

    def entropy(self) -> jax.Array:
        log_probs = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)

    def mode(self) -> jax.Array:
        return jnp.argmax(self.logits, axis=-1)


class DiagGaussian(NamedTuple):
    mean: jax.Array
    log_std: jax.Array

    def sample(self, key: jax.Array) -> jax.Array:
        return self.mean + jnp.exp(self.log_std) * jax.random.normal(key, self.mean.shape)

    def log_prob(self, action: jax.Array) -> jax.Array:
        z = (action - self.mean) * jnp.exp(-self.log_std)
        return jnp.sum(-0.5 * z**2 - self.log_std - 0.5 * _LOG_2PI, axis=-1)

    def entropy(self) -> jax.Array:
        log_std = jnp.broadcast_to(self.log_std, self.mean.shape)
        return jnp.sum(log_std + 0.5 * (1.0 + _LOG_2PI), axis=-1)

    def mode(self) -> jax.Array:
        return self.mean
