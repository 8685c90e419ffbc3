"""Policy objectives, value losses and the default observation: the hooks through which PPO variants plug in.

A policy objective maps per-sample `(ratio, log_ratio, advantages, hp, meta_params)`
to the per-sample objective to **maximise**; a value loss maps
`(value, old_value, target, hp, meta_params)` to a per-sample loss to minimise;
an observation hook maps `(obs, meta_params)` to what the agent sees.
`meta_params` is whatever is being meta-learned (or None), so DPO, a learned drift
or a learned value loss are new functions here and never a branch in `ppo.py`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


# Mirror learning (Kuba et al. 2022) writes a policy update as maximising
# E[r A - D(r, A)] with a drift D >= 0, D(1, A) = 0 and dD/dr(1, A) = 0.
# PPO, DPO and LPO are three drifts; `ppo_clip`, `dpo` and `lpo` below make each the objective hook.


def ppo_drift(ratio, advantages, clip_eps) -> jax.Array:
    """PPO-clip as a drift: ReLU((r - clip(r, 1-eps, 1+eps)) A)."""
    return jax.nn.relu((ratio - jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)) * advantages)


def dpo_drift(ratio, log_ratio, advantages, alpha: float = 2.0, beta: float = 0.6) -> jax.Array:
    """Discovered Policy Optimisation (Lu et al. 2022): the closed form of the LPO drift.

    A >= 0: ReLU((r-1)A - alpha tanh((r-1)A / alpha)); A < 0: ReLU(log(r)A - beta tanh(log(r)A / beta)).
    """
    positive = (ratio - 1.0) * advantages
    negative = log_ratio * advantages
    return jnp.where(
        advantages >= 0,
        jax.nn.relu(positive - alpha * jnp.tanh(positive / alpha)),
        jax.nn.relu(negative - beta * jnp.tanh(negative / beta)),
    )


def lpo_features(ratio, log_ratio, advantages) -> jax.Array:
    """[log r, (log r)^2, 1-r, (1-r)^2] and the same four times A: the LPO drift net's input."""
    base = jnp.stack([log_ratio, log_ratio**2, 1.0 - ratio, (1.0 - ratio) ** 2], axis=-1)
    return jnp.concatenate([base, base * advantages[..., None]], axis=-1)


def lpo_drift(ratio, log_ratio, advantages, meta_params, clip_eps) -> jax.Array:
    """Learned drift: ReLU(D_ppo + f(x) - 1e-4), f = Dense(128, no bias) -> tanh -> Dense(1, no bias).

    With zero weights it is PPO's drift less 1e-4 (same gradients), so ES starts at PPO.
    """
    hidden = jnp.tanh(lpo_features(ratio, log_ratio, advantages) @ meta_params["hidden"])
    learned = (hidden @ meta_params["out"])[..., 0]
    return jax.nn.relu(ppo_drift(ratio, advantages, clip_eps) + learned - 1e-4)


def init_lpo_params(hidden: int = 128) -> dict[str, jax.Array]:
    """Zero weights: the ES search starts from PPO."""
    return {"hidden": jnp.zeros((8, hidden), jnp.float32), "out": jnp.zeros((hidden, 1), jnp.float32)}


def ppo_clip(ratio, log_ratio, advantages, hp, meta_params) -> jax.Array:
    """PPO's clipped surrogate: min(r A, clip(r, 1-eps, 1+eps) A) = r A - D_ppo."""
    del log_ratio, meta_params
    clipped = jnp.clip(ratio, 1.0 - hp.clip_eps, 1.0 + hp.clip_eps)
    return jnp.minimum(ratio * advantages, clipped * advantages)


def dpo(ratio, log_ratio, advantages, hp, meta_params) -> jax.Array:
    """DPO objective r A - D_dpo (alpha = 2, beta = 0.6, as in the paper)."""
    del hp, meta_params
    return ratio * advantages - dpo_drift(ratio, log_ratio, advantages)


def lpo(ratio, log_ratio, advantages, hp, meta_params) -> jax.Array:
    """LPO objective r A - D_lpo; `meta_params` are the drift net's weights."""
    return ratio * advantages - lpo_drift(ratio, log_ratio, advantages, meta_params, hp.clip_eps)


def clipped_l2(value, old_value, target, hp, meta_params) -> jax.Array:
    """Clipped squared error (CleanRL / PureJaxRL): no value update moves far past clip_eps."""
    del meta_params
    clipped = old_value + jnp.clip(value - old_value, -hp.clip_eps, hp.clip_eps)
    return 0.5 * jnp.maximum(jnp.square(value - target), jnp.square(clipped - target))


def l2(value, old_value, target, hp, meta_params) -> jax.Array:
    """Plain squared error, the baseline a learned value loss is compared with."""
    del old_value, hp, meta_params
    return 0.5 * jnp.square(value - target)


def value_loss_features(value, target) -> jax.Array:
    """[asinh(value - target), asinh(target)] / 3: errors and returns from 0.1 to 100 on one O(1) scale."""
    return jnp.arcsinh(jnp.stack([value - target, target], axis=-1)) / 3.0


def learned_log_weight(meta_params, value, target) -> jax.Array:
    """g(value, target) = out . tanh(W x + b) + c on the features x: the log of the loss's weight on L2."""
    hidden = jnp.tanh(value_loss_features(value, target) @ meta_params["hidden"]["kernel"] + meta_params["hidden"]["bias"])
    return (hidden @ meta_params["out"]["kernel"])[..., 0] + meta_params["out"]["bias"][0]


def learned_value_loss(value, old_value, target, hp, meta_params) -> jax.Array:
    """A meta-learned distance 0.5 (v - t)^2 exp(g(v, t)): >= 0, zero only at v = t, and exactly L2 where g = 0.

    The net sees value and target (through the error and the target), so the loss may be asymmetric in
    the error, non-convex, and may weigh errors differently at different returns.
    """
    del old_value, hp
    return 0.5 * jnp.square(value - target) * jnp.exp(learned_log_weight(meta_params, value, target))


def init_value_loss_params(key: jax.Array, hidden: int = 16) -> dict:
    """Random tanh features (weights N(0, 1), biases U(-2, 2)) and a zero output layer: the search starts at L2."""
    kernel_key, bias_key = jax.random.split(key)
    return {
        "hidden": {"kernel": jax.random.normal(kernel_key, (2, hidden)),
                   "bias": jax.random.uniform(bias_key, (hidden,), minval=-2.0, maxval=2.0)},
        "out": {"kernel": jnp.zeros((hidden, 1)), "bias": jnp.zeros((1,))},
    }


def mlp_shape(meta_params, error) -> jax.Array:
    """h(e) = out . tanh(W2 tanh(W1 x + b1) + b2) + c on x = asinh(e) / 3: the mlp form's learned term per unit error."""
    x = jnp.arcsinh(error)[..., None] / 3.0
    first = jnp.tanh(x @ meta_params["hidden"]["kernel"] + meta_params["hidden"]["bias"])
    second = jnp.tanh(first @ meta_params["hidden2"]["kernel"] + meta_params["hidden2"]["bias"])
    return (second @ meta_params["out"]["kernel"])[..., 0] + meta_params["out"]["bias"][0]


def mlp_value_loss(value, old_value, target, hp, meta_params) -> jax.Array:
    """An unconstrained meta-learned loss of the error e = v - t: exp(s) (0.5 e^2 + e h(e)), h a small tanh MLP.

    Any smooth loss of the error is 0.5 e^2 + e h(e) up to a constant (which no gradient sees), so h is free: the
    loss may have a slope exp(s) h(0) at e = 0 (the critic then settles off the target), be asymmetric, non-convex,
    or negative. h is bounded, so far from the target the loss is L2 at the scale exp(s): the form contains every
    scaled L2, and a learned shape is what it adds to a learned scale. The error alone, as in the PureJaxRL
    walkthrough this study follows: the scaled form, which also sees the target, weighs errors nearly alike at
    every target (docs/results/value_loss.md).
    """
    del old_value, hp
    error = value - target
    scale = jnp.exp(meta_params["log_scale"][0])
    return scale * (0.5 * jnp.square(error) + error * mlp_shape(meta_params, error))


def init_mlp_value_loss_params(key: jax.Array, hidden: int = 16) -> dict:
    """Two random tanh layers, a zero output layer and a zero log-scale: the search starts exactly at L2.

    Two layers as the walkthrough's 64-64 net, a quarter as wide: one input needs no width for a flexible curve,
    and OpenES estimates its gradient from the same 32 candidates whatever the dimension (322 numbers, not 4,353).
    The first layer's random slopes and offsets spread its units over asinh(e) / 3 in [-2, 2]; not zeros, because
    a net odd in its layers gives each antithetic pair the same loss, and OpenES no gradient.
    """
    first_key, bias_key, second_key = jax.random.split(key, 3)
    return {
        "hidden": {"kernel": jax.random.normal(first_key, (1, hidden)),
                   "bias": jax.random.uniform(bias_key, (hidden,), minval=-2.0, maxval=2.0)},
        "hidden2": {"kernel": jax.random.normal(second_key, (hidden, hidden)) / jnp.sqrt(hidden),
                    "bias": jnp.zeros((hidden,))},
        "out": {"kernel": jnp.zeros((hidden, 1)), "bias": jnp.zeros((1,))},
        "log_scale": jnp.zeros((1,)),
    }


class FullObservation:
    """The default `observe` hook: the agent sees the environment's observation unchanged."""

    def shape(self, env_shape: tuple[int, ...]) -> tuple[int, ...]:
        return env_shape

    def __call__(self, obs: jax.Array, meta_params) -> jax.Array:
        return obs


POLICY_OBJECTIVES = {"ppo": ppo_clip, "dpo": dpo, "lpo": lpo}
# Objectives whose meta-parameters come from a file (`lpo:PATH`), with their templates.
OBJECTIVE_META_TEMPLATES = {"lpo": init_lpo_params}
VALUE_LOSSES = {"clipped_l2": clipped_l2, "l2": l2, "learned": learned_value_loss}
