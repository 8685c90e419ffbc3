"""How PPO executes its minibatch gradient steps: an update rule, so that `ppo.py` has no branch for it.

A rule `pack`s the parameters and optimiser state into its own layout, takes one
`step` per minibatch (read by index with `take`, where minibatches are gathered), and `unpack`s them again. `XlaUpdate` is XLA's gradient step on the arrays as they are;
`fused_update` builds the Pallas kernel's rule (`kernels/ppo_update.py`, `--update-kernel fused`) after refusing
what that kernel does not implement.
"""

from __future__ import annotations

from purerl.algos.objectives import clipped_l2, ppo_clip
from purerl.checks import ConfigError
from purerl.kernels.ppo_update import FusedUpdate, check_shapes
from purerl.nets.actor_critic import ActorCritic
from purerl.nets.layers import compute_dtype


class XlaUpdate:
    """The default update rule: XLA's gradient step on (params, opt_state) as they are."""

    def __init__(self, gradient_step):
        self.gradient_step = gradient_step

    def take(self, batch, indices, gather):
        """The minibatch at `indices`: `gather`'s copy of those samples."""
        return gather(indices)

    def pack(self, params, opt_state):
        return params, opt_state

    def step(self, packed, minibatch, hp, meta_params):
        params, opt_state, stats = self.gradient_step(*packed, minibatch, hp, meta_params)
        return (params, opt_state), stats

    def unpack(self, packed, params_like):
        return packed


def fused_update(ppo, objective, value_loss, adam_eps: float) -> FusedUpdate:
    """`--update-kernel fused`: the whole gradient step as one kernel per agent (kernels/ppo_update.py), with
    the optimiser PPO builds (global-norm clipping, Adam with `adam_eps`)."""
    cfg = ppo.config
    if not isinstance(ppo.network, ActorCritic) or not ppo.env.action_space.discrete:
        raise ConfigError("update-kernel fused supports the feed-forward actor-critic with discrete actions only")
    if objective is not ppo_clip or value_loss is not clipped_l2:
        raise ConfigError("update-kernel fused supports PPO's clipped objective and clipped L2 value loss only")
    check_shapes(ppo.observation_shape, cfg.minibatch_size)
    return FusedUpdate(len(cfg.hidden_sizes) + 1, cfg.activation, ppo.env.action_space.num_actions,
                       ppo.observation_shape[0], lambda hp, count: ppo.learning_rate(hp, count // ppo.steps_per_update),
                       cfg.normalize_advantages, adam_eps, compute_dtype(cfg.matmul_dtype))
