"""TD3 as one pure function: `train(key, hyperparams, meta_params) -> TrainResult`.

Read top to bottom: hyperparameters, config and presets, the deterministic actor, acting with Gaussian
exploration noise, and one gradient step (twin critics towards a smoothed target; every
`policy_frequency` steps one actor step and the Polyak update of every target).
`offpolicy.OffPolicyActorCritic` runs the env steps, the replay buffer and the metric rows.

TD3 as in Fujimoto et al. 2018 and the authors' code: clipped double Q-learning (the smaller twin target),
target policy smoothing (noise 0.2 clipped to 0.5), delayed actor and target updates (every 2 critic
steps), exploration noise 0.1, with CleanRL's `td3_continuous_action.py` settings (256-256 relu, lr 3e-4
for both, tau 0.005, batches of 256). Noise scales are in the agent's [-1, 1] action space, which is
CleanRL's scaling by the action box's half-width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from purerl import envs
from purerl.algos import offpolicy
from purerl.algos.offpolicy import OffPolicyActorCritic, OffPolicyConfig, RunnerState, Transition, polyak
from purerl.algos.settings import Preset, as_float_arrays
from purerl.checks import DISCOUNT, NON_NEGATIVE, POSITIVE, check_bounds
from purerl.nets.qnets import QNetwork


class TD3HyperParams(NamedTuple):
    """Traced scalars (defaults: the authors' and CleanRL's TD3)."""

    lr: Any = 3e-4  # actor
    q_lr: Any = 3e-4
    gamma: Any = 0.99
    tau: Any = 0.005
    exploration_noise: Any = 0.1
    policy_noise: Any = 0.2
    noise_clip: Any = 0.5

    def as_arrays(self) -> TD3HyperParams:
        return as_float_arrays(self)

    def validate(self) -> None:
        check_bounds(self, {"lr": POSITIVE, "q_lr": POSITIVE, "gamma": DISCOUNT, "tau": (0.0, 1.0, "in (0, 1]"),
                            "exploration_noise": NON_NEGATIVE, "policy_noise": NON_NEGATIVE,
                            "noise_clip": NON_NEGATIVE})


@dataclass(frozen=True)
class TD3Config(OffPolicyConfig):
    pass


PRESETS = {
    "continuous": Preset(
        "gymnax continuous control (Pendulum-v1, MountainCarContinuous-v0): CleanRL's TD3 (1 env, batches of "
        "256, 256-256 relu, lr 3e-4, tau 0.005), buffer of 1e5, learning from 5e3 steps (CleanRL: 2.5e4, for "
        "1e6-step MuJoCo budgets), 2e4 steps", action="continuous"),
    "brax": offpolicy.BRAX_PRESET,
}


class DeterministicActor(nn.Module):
    """tanh of an MLP (the Q-networks' shape and flax default init): an action in [-1, 1]."""

    action_dim: int
    hidden_sizes: tuple[int, ...]
    activation: str

    @nn.compact
    def __call__(self, obs):
        return jnp.tanh(QNetwork(self.action_dim, self.hidden_sizes, self.activation)(obs))


class TD3(OffPolicyActorCritic):
    """Built once per static config; calling it runs a whole training run (`loop.UpdateLoop`)."""

    LEARN_METRICS = ("critic_loss", "actor_loss", "q_value")
    hyperparams = TD3HyperParams

    def __init__(self, config: TD3Config, env: envs.Env | None = None):
        super().__init__(config, env)
        self.actor = DeterministicActor(self.action_dim, tuple(config.hidden_sizes), config.activation)

    def optimizers(self, hp: TD3HyperParams) -> dict[str, optax.GradientTransformation]:
        return {"actor": optax.adam(hp.lr), "critic": optax.adam(hp.q_lr)}

    def deterministic(self, params, obs):
        return self.actor.apply(params["actor"], obs)

    def explore(self, params, obs, key, hp: TD3HyperParams):
        action = self.deterministic(params, obs)
        return jnp.clip(action + hp.exploration_noise * jax.random.normal(key, action.shape), -1.0, 1.0)

    # ---------------------------------------------------------------- learning
    def critic_loss(self, critic_params, state: RunnerState, batch: Transition, key, hp: TD3HyperParams):
        next_action = self.actor.apply(state.target_params["actor"], batch.next_obs)
        smoothing = jnp.clip(hp.policy_noise * jax.random.normal(key, next_action.shape), -hp.noise_clip,
                             hp.noise_clip)
        next_action = jnp.clip(next_action + smoothing, -1.0, 1.0)
        next_q = self.q_values(state.target_params["critic"], batch.next_obs, next_action).min(axis=0)
        target = batch.reward + hp.gamma * (1.0 - batch.terminated.astype(jnp.float32)) * next_q
        q = self.q_values(critic_params, batch.obs, batch.action)
        return ((q - jax.lax.stop_gradient(target)) ** 2).mean(axis=1).sum(), q.mean()

    def actor_loss(self, actor_params, critic_params, obs):
        return -self.q_values(critic_params, obs, self.actor.apply(actor_params, obs))[0].mean()

    def learn(self, state: RunnerState, batch: Transition, key, step, hp: TD3HyperParams):
        (critic_loss, q_mean), grads = jax.value_and_grad(self.critic_loss, has_aux=True)(
            state.params["critic"], state, batch, key, hp)
        state = self.apply_gradients("critic", state, grads, hp)

        def actor_and_targets():
            loss, grads = jax.value_and_grad(self.actor_loss)(state.params["actor"], state.params["critic"],
                                                               batch.obs)
            new = self.apply_gradients("actor", state, grads, hp)
            return new._replace(target_params=polyak(new.params, new.target_params, hp.tau)), loss

        state, actor_loss = jax.lax.cond(step % self.config.policy_frequency == 0, actor_and_targets,
                                         lambda: (state, jnp.float32(jnp.nan)))
        return state, {"critic_loss": critic_loss, "actor_loss": actor_loss, "q_value": q_mean}


def make_train(config: TD3Config, env: envs.Env | None = None) -> TD3:
    """Build the train function for a static config: `train(key, hp, meta_params=None)`."""
    return TD3(config, env=env)
