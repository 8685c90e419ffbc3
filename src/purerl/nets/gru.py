"""A GRU actor-critic for flat observations (`--network gru`): PPO's recurrent agent for partially
observable tasks, as PureJaxRL's PPO-RNN (a dense embedding, one GRU core shared by the actor and
the critic, a dense layer in each head). `ResetGRU` and `scan_gru` are the recurrent core it shares
with the M-FOS coin-game agent.

It follows the sequence contract of `nets/actor_critic.py`, so PPO trains it with whole sequences
per minibatch and resets its memory where an episode begins, without a branch in `ppo.py`.
"""

from __future__ import annotations

from typing import ClassVar

import flax.linen as nn
import jax.numpy as jnp

from purerl.checks import ConfigError
from purerl.nets.distributions import Categorical, DiagGaussian
from purerl.envs.core import ActionSpace
from purerl.nets.layers import dense, float_input


class ResetGRU(nn.Module):
    """A GRU cell whose memory is zeroed where an episode begins; returns (carry, carry)."""

    features: int

    @nn.compact
    def __call__(self, carry, inputs):
        x, reset = inputs
        carry = jnp.where(reset[..., None], jnp.zeros_like(carry), carry)
        carry, _ = nn.GRUCell(self.features)(carry, x)
        return carry, carry


def scan_gru(cell: ResetGRU, carry, xs):
    """Run `cell` over time-major inputs with the same parameters at every step."""
    scan = nn.scan(lambda module, c, x: module(c, x), variable_broadcast="params", split_rngs={"params": False})
    return scan(cell, carry, xs)


class GRUActorCritic(nn.Module):
    action_space: ActionSpace
    features: int = 128
    recurrent: ClassVar[bool] = True

    def setup(self):
        space = self.action_space
        out = space.num_actions if space.discrete else space.shape[0]
        self.embedding = dense(self.features, jnp.sqrt(2.0))
        self.core = ResetGRU(self.features)
        self.actor = nn.Sequential([dense(self.features, 2.0), nn.relu, dense(out, 0.01)])
        self.critic = nn.Sequential([dense(self.features, 2.0), nn.relu, dense(1, 1.0)])
        if not space.discrete:
            self.log_std = self.param("log_std", nn.initializers.zeros, (out,))

    def initial_carry(self, num_envs: int):
        return jnp.zeros((num_envs, self.features))

    def step(self, carry, obs, reset):
        carry, _ = self.core(carry, (nn.relu(self.embedding(float_input(obs))), reset))
        return carry, self._policy(carry)

    def unroll(self, carry, obs, resets):
        _, carries = scan_gru(self.core, carry, (nn.relu(self.embedding(float_input(obs))), resets))
        return carries, self._policy(carries), self._value(carries)

    def bootstrap_value(self, carries, obs):
        """Value of `obs` (the step's next or final observation) read after one more GRU step."""
        h, _ = self.core(carries, (nn.relu(self.embedding(float_input(obs))), jnp.zeros(obs.shape[:-1], bool)))
        return self._value(h)

    def policy(self, obs):
        """A memoryless action, which a recurrent agent has not: it acts through `step`."""
        raise ConfigError("a recurrent (--network gru) policy acts from its memory: use Policy.step(carry, obs, reset)")

    def _policy(self, h):
        head = self.actor(h)
        return Categorical(head) if self.action_space.discrete else DiagGaussian(head, self.log_std)

    def _value(self, h):
        return self.critic(h)[..., 0]

    def __call__(self, obs):
        """Touch every parameter once (for `init`), from one unbatched observation."""
        carry, pi = self.step(self.initial_carry(1), obs[None], jnp.ones((1,), bool))
        return pi, self.bootstrap_value(carry, obs[None])
