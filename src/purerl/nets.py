"""Actor-critic networks (flax.linen).

The actor and critic are separate networks, as in CleanRL and PureJaxRL, with
orthogonal initialisation: gain sqrt(2) on hidden layers, 0.01 on the policy
head (a near-uniform initial policy) and 1.0 on the value head.

PPO talks to every network through one sequence contract, so a recurrent core
plugs in without a branch in `ppo.py`:

- `initial_carry(n)`: the memory of n fresh environments (`()` without memory);
- `step(carry, obs, reset) -> (carry, policy)`: one action step; `reset` marks
  observations that begin an episode, where the memory is zeroed first;
- `unroll(carry, obs, resets) -> (carries, policy, value)` over time-major
  `[T, N, ...]` inputs, `carries[t]` being the memory after step t;
- `bootstrap_value(carries, obs)`: the value of `obs` reached from `carries`
  (a truncated episode's final observation);
- `recurrent`: whether minibatches must keep whole sequences.

Networks without memory get all of it from `FeedForward`, given `policy(obs)`
and `value(obs)`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import ClassVar

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from purerl.distributions import Categorical, DiagGaussian
from purerl.envs.core import ActionSpace

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


def _dense(features: int, gain: float) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(gain), bias_init=nn.initializers.zeros)


class MLP(nn.Module):
    hidden_sizes: Sequence[int]
    activation: str
    out_features: int
    out_gain: float

    @nn.compact
    def __call__(self, x):
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(_dense(size, jnp.sqrt(2.0))(x))
        return _dense(self.out_features, self.out_gain)(x)


class FeedForward:
    """The sequence contract for a network without memory (the carry is `()`)."""

    recurrent: ClassVar[bool] = False

    def initial_carry(self, num_envs: int):
        return ()

    def step(self, carry, obs, reset):
        return carry, self.policy(obs)

    def unroll(self, carry, obs, resets):
        return carry, self.policy(obs), self.value(obs)

    def bootstrap_value(self, carries, obs):
        return self.value(obs)


class ActorCritic(FeedForward, nn.Module):
    """`policy(obs)` gives a distribution and `value(obs)` a scalar; `__call__` gives both."""

    action_space: ActionSpace
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"

    def setup(self):
        space = self.action_space
        out = space.num_actions if space.discrete else math.prod(space.shape)
        self.actor = MLP(self.hidden_sizes, self.activation, out, 0.01)
        self.critic = MLP(self.hidden_sizes, self.activation, 1, 1.0)
        if not space.discrete:
            self.log_std = self.param("log_std", nn.initializers.zeros, (out,))

    def policy(self, obs):
        head = self.actor(obs)
        if self.action_space.discrete:
            return Categorical(head)
        return DiagGaussian(head, self.log_std)

    def value(self, obs):
        return self.critic(obs)[..., 0]

    def __call__(self, obs):
        return self.policy(obs), self.value(obs)


class TorusConv(nn.Module):
    """A 3x3 convolution with wrap-around padding, as one dense matmul over the flattened grid.

    Same parameters and result as `nn.Conv(padding="CIRCULAR")`. On a small grid
    the convolution is a dense map whose weight is the kernel spread by a fixed
    0/1 shift tensor, and one matmul beats both XLA's CPU convolution (5-6x
    slower inside PPO's epoch loop) and nine rolled copies of the grid (measured
    on [8192, 3, 3, 7] grids, 16 channels: rolls 19.4 ms per gradient, this 1.7 ms).
    The weight grows as (H*W)^2, which suits the small boards it is used on.
    """

    features: int

    @nn.compact
    def __call__(self, x):
        height, width, channels = x.shape[-3:]
        kernel = self.param("kernel", nn.initializers.lecun_normal(), (3, 3, channels, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        weight = jnp.einsum("kqp,kco->qcpo", _torus_shifts(height, width),
                            kernel.reshape(9, channels, self.features))
        flat = x.reshape(x.shape[:-3] + (height * width * channels,))
        out = flat @ weight.reshape(height * width * channels, height * width * self.features)
        return out.reshape(x.shape[:-3] + (height, width, self.features)) + bias


def _torus_shifts(height: int, width: int) -> np.ndarray:
    """[9, H*W, H*W] 0/1: tap k of a 3x3 kernel centred on cell p reads cell q (wrapping around)."""
    shifts = np.zeros((9, height * width, height * width), np.float32)
    for i, j, di, dj in itertools.product(range(height), range(width), range(3), range(3)):
        source = ((i + di - 1) % height) * width + (j + dj - 1) % width
        shifts[di * 3 + dj, source, i * width + j] += 1.0
    return shifts


class GridEncoder(nn.Module):
    """Two 3x3 convolutions on a torus (grids that wrap around), then a dense layer."""

    channels: int
    features: int

    @nn.compact
    def __call__(self, grid):
        x = grid
        for _ in range(2):
            x = nn.relu(TorusConv(self.channels)(x))
        return nn.relu(nn.Dense(self.features)(x.reshape(x.shape[:-3] + (-1,))))


class ConvActorCritic(FeedForward, nn.Module):
    """Separate conv actor and critic for small grid observations [..., H, W, C] (discrete actions)."""

    action_space: ActionSpace
    channels: int = 2
    features: int = 8

    def setup(self):
        self.actor = nn.Sequential([GridEncoder(self.channels, self.features),
                                    _dense(self.action_space.num_actions, 0.01)])
        self.critic = nn.Sequential([GridEncoder(self.channels, self.features), _dense(1, 1.0)])

    def policy(self, obs):
        return Categorical(self.actor(obs))

    def value(self, obs):
        return self.critic(obs)[..., 0]

    def __call__(self, obs):
        return self.policy(obs), self.value(obs)


class ResetGRU(nn.Module):
    """A GRU cell whose memory is zeroed where an episode begins; returns (carry, carry)."""

    features: int

    @nn.compact
    def __call__(self, carry, inputs):
        x, reset = inputs
        carry = jnp.where(reset[..., None], jnp.zeros_like(carry), carry)
        carry, _ = nn.GRUCell(self.features)(carry, x)
        return carry, carry


def _scan_gru(cell: ResetGRU, carry, xs):
    """Run `cell` over time-major inputs with the same parameters at every step."""
    scan = nn.scan(lambda module, c, x: module(c, x), variable_broadcast="params", split_rngs={"params": False})
    return scan(cell, carry, xs)


class ConvGRUActorCritic(nn.Module):
    """Conv encoder + GRU for the actor and for the critic (the M-FOS coin-game agent).

    The memory runs through a whole episode, so in a meta-episode of many inner
    episodes the agent can condition on what the opponent did before.
    """

    action_space: ActionSpace
    channels: int = 16
    features: int = 16
    recurrent: ClassVar[bool] = True

    def setup(self):
        self.encoders = [GridEncoder(self.channels, self.features) for _ in range(2)]
        self.cores = [ResetGRU(self.features) for _ in range(2)]
        self.actor_head = _dense(self.action_space.num_actions, 0.01)
        self.critic_head = _dense(1, 1.0)

    def initial_carry(self, num_envs: int):
        return (jnp.zeros((num_envs, self.features)),) * 2

    def step(self, carry, obs, reset):
        carry = tuple(core(h, (encoder(obs), reset))[0] for core, encoder, h in zip(self.cores, self.encoders, carry))
        return carry, Categorical(self.actor_head(nn.relu(carry[0])))

    def unroll(self, carry, obs, resets):
        carries = tuple(_scan_gru(core, h, (encoder(obs), resets))[1]
                        for core, encoder, h in zip(self.cores, self.encoders, carry))
        return carries, Categorical(self.actor_head(nn.relu(carries[0]))), self._value(carries[1])

    def bootstrap_value(self, carries, obs):
        h, _ = self.cores[1](carries[1], (self.encoders[1](obs), jnp.zeros(obs.shape[:-3], bool)))
        return self._value(h)

    def _value(self, h):
        return self.critic_head(nn.relu(h))[..., 0]

    def __call__(self, obs):
        """Touch every parameter once (for `init`), from one unbatched observation."""
        carry, pi = self.step(self.initial_carry(1), obs[None], jnp.ones((1,), bool))
        return pi, self.bootstrap_value(carry, obs[None])


def init_params(network: ActorCritic, key: jax.Array, observation_shape: tuple[int, ...]):
    """Initialise parameters in a way that is safe to vmap on jaxlib 0.10 CPU.

    Orthogonal init runs a QR decomposition; under `vmap` several batched LAPACK
    calls in one CPU program can deadlock (shared NOTES, pitfall 1). A custom
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
