"""Cheap talk (Lu et al., "Adversarial Cheap Talk", ICML 2023, arXiv 2211.11030).

An adversary appends a message m = scale * tanh(f_psi(s)) to the victim's
observation. It cannot change dynamics or rewards, see the victim's actions or
parameters, or add noise: m is a deterministic function of the current state.
`CheapTalk` is PPO's `observe` hook, so psi is the run's `meta_params` and a
population of adversaries trains a population of victims in one program.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from purerl.nets.layers import MLP


class CheapTalk:
    """Observation hook: [s, scale * tanh(f_psi(s))], f an MLP with 2 x 64 ReLU units (the paper's)."""

    def __init__(self, message_dims: int = 2, scale: float = 2.0 * math.pi, hidden_sizes=(64, 64),
                 condition_dims: int = 0):
        self.message_dims, self.scale, self.condition_dims = message_dims, scale, condition_dims
        self.net = MLP(tuple(hidden_sizes), "relu", message_dims, 1.0)

    def shape(self, env_shape: tuple[int, ...]) -> tuple[int, ...]:
        return (env_shape[0] + self.message_dims,)

    def init_params(self, key: jax.Array, state_dims: int):
        """Adversary weights for states of `state_dims` features (plus any conditioning, e.g. a goal)."""
        return self.net.init(key, jnp.zeros((state_dims + self.condition_dims,), jnp.float32))

    def messages(self, psi, inputs: jax.Array) -> jax.Array:
        return self.scale * jnp.tanh(self.net.apply(psi, inputs))

    def __call__(self, obs: jax.Array, psi) -> jax.Array:
        return jnp.concatenate([obs, self.messages(psi, obs)], axis=-1)
