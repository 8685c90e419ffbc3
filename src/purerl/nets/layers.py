"""The building blocks every network shares: orthogonal dense layers, the MLP, and a parameter init that is
safe to vmap (so seed i gets the same parameters alone or inside any population)."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


def dense(features: int, gain: float, dtype=None) -> nn.Dense:
    """`dtype` is the matmuls' (None: the inputs'); the weights stay float32 either way."""
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(gain), bias_init=nn.initializers.zeros,
                    dtype=dtype)


def compute_dtype(name: str):
    """A config's `matmul_dtype` as flax's `dtype`: None for float32 (flax then adds no casts)."""
    return None if name == "float32" else jnp.dtype(name)


def float_input(x):
    """Observations as a network takes them: float32 where they were stored narrower (PPO's `compact_obs`: int8
    0/1 grids, exact in float32); floating inputs unchanged, with no op."""
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)


class MLP(nn.Module):
    hidden_sizes: Sequence[int]
    activation: str
    out_features: int
    out_gain: float
    dtype: object = None  # the matmuls' dtype; the output is float32 whatever it is

    @nn.compact
    def __call__(self, x):
        act = ACTIVATIONS[self.activation]
        x = float_input(x)
        for size in self.hidden_sizes:
            x = act(dense(size, jnp.sqrt(2.0), self.dtype)(x))
        out = dense(self.out_features, self.out_gain, self.dtype)(x)
        return out if self.dtype is None else out.astype(jnp.float32)


def init_params(network: nn.Module, key: jax.Array, observation_shape: tuple[int, ...]):
    """Initialise parameters in a way that is safe to vmap on jaxlib 0.10 CPU.

    Orthogonal init runs a QR decomposition; under `vmap` several batched LAPACK
    calls in one CPU program can deadlock. A custom
    batching rule turns a batch of keys into a sequential `lax.map`, so seed i
    gets the same parameters alone or inside any batch.
    """

    @jax.custom_batching.custom_vmap
    def init(key):
        return network.init(key, jnp.zeros(observation_shape, jnp.float32))

    @init.def_vmap
    def _init_batched(axis_size, in_batched, key):
        (key_batched,) = in_batched
        if not key_batched:
            params = init(key)
            return params, jax.tree.map(lambda _: False, params)
        params = jax.lax.map(init, key)
        return params, jax.tree.map(lambda _: True, params)

    return init(key)
