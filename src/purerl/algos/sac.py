"""Soft Actor-Critic as one pure function: `train(key, hyperparams, meta_params) -> TrainResult`.

Read top to bottom: hyperparameters, config and presets, the squashed Gaussian actor, acting, and one
gradient step (critics, then every `policy_frequency` steps as many actor and temperature steps, then the
Polyak target update). `offpolicy.OffPolicyActorCritic` runs the env steps, the replay buffer and the
metric rows; `jax.vmap(train)` trains many seeds or a hyperparameter grid in one program.

SAC as in Haarnoja et al. 2018 ("Soft Actor-Critic Algorithms and Applications", the v2 with automatic
entropy tuning and no state-value network), with CleanRL's `sac_continuous_action.py` settings: twin
critics and their Polyak targets (tau 0.005), a tanh-squashed Gaussian with log-std bounded to [-5, 2],
target entropy -|A|, actor lr 3e-4, critic lr 1e-3, batches of 256, delayed actor updates made up for
(CleanRL's `policy_frequency`), log alpha starting at 0. The temperature loss is the authors' code's
(softlearning; also SB3's), -log(alpha) (log pi + target entropy); the paper's and CleanRL's multiply by
alpha instead of log alpha, which changes the step size of the temperature, not its fixed point.
Log-probabilities, and so the target entropy, are those of the action in the [-1, 1] box before it is
scaled to the env's bounds (as SB3 and rejax); CleanRL's are in the env's units.
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
from purerl.nets.distributions import DiagGaussian
from purerl.nets.qnets import QNetwork

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class SACHyperParams(NamedTuple):
    """Traced scalars (defaults: CleanRL's SAC)."""

    lr: Any = 3e-4  # actor and temperature
    q_lr: Any = 1e-3
    gamma: Any = 0.99
    tau: Any = 0.005
    alpha: Any = 0.2  # the fixed temperature when autotune is off

    def as_arrays(self) -> SACHyperParams:
        return as_float_arrays(self)

    def validate(self) -> None:
        check_bounds(self, {"lr": POSITIVE, "q_lr": POSITIVE, "gamma": DISCOUNT, "tau": (0.0, 1.0, "in (0, 1]"),
                            "alpha": NON_NEGATIVE})


@dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
    autotune: bool = True  # learn the temperature towards entropy -|A|

    def ignored_hyperparams(self) -> dict[str, str]:
        return {"alpha": "autotune (on) learns the temperature; turn it off (--no-autotune) to fix the temperature "
                         "at alpha"} if self.autotune else {}


PRESETS = {
    "continuous": Preset(
        "gymnax continuous control (Pendulum-v1, MountainCarContinuous-v0): CleanRL's SAC (1 env, buffer of "
        "1e5, batches of 256, learning from 5e3 steps, 256-256 relu, actor lr 3e-4, critic lr 1e-3, tau 0.005), "
        "2e4 steps", action="continuous"),
    "brax": offpolicy.BRAX_PRESET,
}


class SquashedGaussianActor(nn.Module):
    """Mean and log-std of a Gaussian over pre-tanh actions, from one MLP (the Q-networks' shape and flax
    default init); the log-std is squashed into [LOG_STD_MIN, LOG_STD_MAX] as in CleanRL."""

    action_dim: int
    hidden_sizes: tuple[int, ...]
    activation: str

    @nn.compact
    def __call__(self, obs):
        mean, raw_log_std = jnp.split(QNetwork(2 * self.action_dim, self.hidden_sizes, self.activation)(obs), 2,
                                      axis=-1)
        return mean, LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (jnp.tanh(raw_log_std) + 1.0)


class SAC(OffPolicyActorCritic):
    """Built once per static config; calling it runs a whole training run (`loop.UpdateLoop`)."""

    LEARN_METRICS = ("critic_loss", "actor_loss", "q_value", "alpha", "entropy")
    TARGETS = ("critic",)
    hyperparams = SACHyperParams

    def __init__(self, config: SACConfig, env: envs.Env | None = None):
        super().__init__(config, env)
        self.actor = SquashedGaussianActor(self.action_dim, tuple(config.hidden_sizes), config.activation)
        self.target_entropy = -float(self.action_dim)

    def optimizers(self, hp: SACHyperParams) -> dict[str, optax.GradientTransformation]:
        return {"actor": optax.adam(hp.lr), "critic": optax.adam(hp.q_lr), "log_alpha": optax.adam(hp.lr)}

    def extra_params(self):
        return {"log_alpha": jnp.float32(0.0)}

    def sample(self, actor_params, obs, key):
        """A squashed action in [-1, 1] and its log-probability (the tanh's Jacobian included)."""
        gaussian = DiagGaussian(*self.actor.apply(actor_params, obs))
        pre_tanh = gaussian.sample(key)
        action = jnp.tanh(pre_tanh)
        return action, gaussian.log_prob(pre_tanh) - jnp.log(1.0 - action**2 + 1e-6).sum(axis=-1)

    def explore(self, params, obs, key, hp):
        return self.sample(params["actor"], obs, key)[0]

    def deterministic(self, params, obs):
        return jnp.tanh(self.actor.apply(params["actor"], obs)[0])

    def alpha(self, params, hp: SACHyperParams) -> jax.Array:
        return jnp.exp(params["log_alpha"]) if self.config.autotune else hp.alpha

    # ---------------------------------------------------------------- learning
    def critic_loss(self, critic_params, state: RunnerState, batch: Transition, key, hp: SACHyperParams):
        next_action, next_log_prob = self.sample(state.params["actor"], batch.next_obs, key)
        next_q = self.q_values(state.target_params["critic"], batch.next_obs, next_action).min(axis=0)
        soft_value = next_q - self.alpha(state.params, hp) * next_log_prob
        target = batch.reward + hp.gamma * (1.0 - batch.terminated.astype(jnp.float32)) * soft_value
        q = self.q_values(critic_params, batch.obs, batch.action)
        return ((q - jax.lax.stop_gradient(target)) ** 2).mean(axis=1).sum(), q.mean()

    def actor_loss(self, actor_params, critic_params, alpha, obs, key):
        action, log_prob = self.sample(actor_params, obs, key)
        q = self.q_values(critic_params, obs, action).min(axis=0)
        return (alpha * log_prob - q).mean(), log_prob

    def actor_and_temperature_step(self, state: RunnerState, obs, key, hp: SACHyperParams):
        alpha = self.alpha(state.params, hp)
        (loss, log_prob), grads = jax.value_and_grad(self.actor_loss, has_aux=True)(
            state.params["actor"], state.params["critic"], alpha, obs, key)
        state = self.apply_gradients("actor", state, grads, hp)
        if self.config.autotune:
            gap = jax.lax.stop_gradient(log_prob + self.target_entropy)
            grad = jax.grad(lambda log_alpha: -(log_alpha * gap).mean())(state.params["log_alpha"])
            state = self.apply_gradients("log_alpha", state, grad, hp)
        return state, loss, -log_prob.mean()

    def learn(self, state: RunnerState, batch: Transition, key, step, hp: SACHyperParams):
        critic_key, actor_key = jax.random.split(key)
        (critic_loss, q_mean), grads = jax.value_and_grad(self.critic_loss, has_aux=True)(
            state.params["critic"], state, batch, critic_key, hp)
        state = self.apply_gradients("critic", state, grads, hp)

        def actor_steps():
            def one(carry, k):
                carry, loss, entropy = self.actor_and_temperature_step(carry, batch.obs, k, hp)
                return carry, (loss, entropy)

            # Unrolled (policy_frequency is small), so XLA's cost analysis counts every actor step, not one.
            keys = jax.random.split(actor_key, self.config.policy_frequency)
            new_state, (losses, entropies) = jax.lax.scan(one, state, keys, unroll=True)
            return new_state, losses.mean(), entropies.mean()

        nan = jnp.float32(jnp.nan)
        state, actor_loss, entropy = jax.lax.cond(step % self.config.policy_frequency == 0, actor_steps,
                                                  lambda: (state, nan, nan))
        targets = {"critic": polyak(state.params["critic"], state.target_params["critic"], hp.tau)}
        info = {"critic_loss": critic_loss, "actor_loss": actor_loss, "q_value": q_mean,
                "alpha": self.alpha(state.params, hp), "entropy": entropy}
        return state._replace(target_params=targets), info


def make_train(config: SACConfig, env: envs.Env | None = None) -> SAC:
    """Build the train function for a static config: `train(key, hp, meta_params=None)`."""
    return SAC(config, env=env)
