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

import math
from collections.abc import Sequence
from typing import ClassVar

import flax.linen as nn

from purerl.envs.core import ActionSpace
from purerl.nets.distributions import Categorical, DiagGaussian
from purerl.nets.layers import MLP


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
    dtype: object = None  # the matmuls' dtype (`layers.compute_dtype`); weights and outputs stay float32

    def setup(self):
        space = self.action_space
        out = space.num_actions if space.discrete else math.prod(space.shape)
        self.actor = MLP(self.hidden_sizes, self.activation, out, 0.01, self.dtype)
        self.critic = MLP(self.hidden_sizes, self.activation, 1, 1.0, self.dtype)
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
