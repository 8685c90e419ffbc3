"""Temporal-difference pieces: PPO's GAE, and what the value-based learners (DQN, PQN) share: exploration,
TD targets, TD losses.

GAE and the targets take `terminated` and `done` apart: the next state's
value is dropped only after a real termination, so a time-limit truncation
bootstraps from the episode's final observation; any ended episode stops a
multi-step (lambda) return from reaching into the next episode.

A TD loss is a hook `td_loss(q, target, hp, meta_params) -> per-sample loss`,
the value-based counterpart of PPO's `value_loss`: meta-evolution can replace it
with a learned function of (q - target) the way it learns PPO's value loss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from purerl import envs
from purerl.algos.loop import UpdateLoop
from purerl.checks import ConfigError
from purerl.nets.qnets import QNetwork


def epsilon_greedy(key: jax.Array, q_values: jax.Array, epsilon: jax.Array) -> jax.Array:
    """argmax of `q_values` [..., actions], replaced by a uniform action with probability `epsilon`."""
    explore_key, action_key = jax.random.split(key)
    greedy = jnp.argmax(q_values, axis=-1)
    random = jax.random.randint(action_key, greedy.shape, 0, q_values.shape[-1])
    return jnp.where(jax.random.uniform(explore_key, greedy.shape) < epsilon, random, greedy)


def linear_decay(start, finish, progress) -> jax.Array:
    """`start` moving linearly to `finish` as `progress` goes 0 -> 1, then `finish`."""
    return start + (finish - start) * jnp.clip(progress, 0.0, 1.0)


def one_step_targets(reward, terminated, next_q_online, next_q_target, gamma, double: bool) -> jax.Array:
    """r + gamma * Q_target(s', a*) with a* = argmax of Q_target (DQN) or of Q_online (Double DQN)."""
    chooser = next_q_online if double else next_q_target
    best = jnp.argmax(chooser, axis=-1)
    next_value = jnp.take_along_axis(next_q_target, best[..., None], axis=-1)[..., 0]
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * next_value


def gae(rewards, values, next_values, terminated, done, gamma, gae_lambda, unroll: int = 1) -> jax.Array:
    """GAE(lambda) over a time-major rollout [T, ...].

    `next_values[t]` is the value of the state reached at step t (before any
    reset); it is dropped where the episode terminated. Any ended episode,
    terminated or truncated, stops the recursion. `unroll` steps per loop
    iteration, as the rollout's (the same numbers; on a GPU, fewer launches).
    """
    not_terminated = 1.0 - terminated.astype(jnp.float32)
    deltas = rewards + gamma * next_values * not_terminated - values
    continues = gamma * gae_lambda * (1.0 - done.astype(jnp.float32))

    def backward(next_advantage, step):
        delta, cont = step
        advantage = delta + cont * next_advantage
        return advantage, advantage

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[0]), (deltas, continues), reverse=True,
                                 unroll=unroll)
    return advantages


def q_lambda_targets(rewards, next_values, terminated, done, gamma, td_lambda) -> jax.Array:
    """Peng's Q(lambda) returns over a time-major rollout [T, ...] (PQN's targets).

    G_t = r_t + gamma * (1 - terminated_t) * ((1 - lambda) * V_{t+1} + lambda * G_{t+1}),
    where V_{t+1} = max_a Q(s_{t+1}, a) is `next_values[t]` (the final observation's
    value when the episode ended), G_{t+1} is replaced by V_{t+1} after the last step
    and after a truncation (the next step belongs to another episode).
    """
    not_terminated = 1.0 - terminated.astype(jnp.float32)
    lam = td_lambda * (1.0 - done.astype(jnp.float32))

    def backward(next_return, step):
        reward, next_value, alive, lam_t = step
        value = reward + gamma * alive * ((1.0 - lam_t) * next_value + lam_t * next_return)
        return value, value

    _, returns = jax.lax.scan(backward, next_values[-1], (rewards, next_values, not_terminated, lam), reverse=True)
    return returns


def l2(q, target, hp, meta_params) -> jax.Array:
    """0.5 (q - target)^2, the DQN/PQN loss."""
    return 0.5 * jnp.square(q - target)



def discrete_only(algorithm: str, env_name: str, discrete: bool) -> None:
    """A value-based learner's preset choice starts here: a continuous env is refused for the real reason, not
    because no preset fits it."""
    if not discrete:
        raise ConfigError(f"{algorithm} needs discrete actions; {env_name} has continuous ones")


class QLearner(UpdateLoop):
    """What DQN and PQN share: a discrete-action env, a Q-network, the TD-loss hook, greedy acting.

    Built once per static config; calling it (`UpdateLoop`) runs a whole training run.
    """

    layer_norm = False  # PQN's Q-network normalises every hidden layer
    hyperparams: type  # the traced hyperparameter class, whose defaults a sampled `act` without `hp` uses

    def __init__(self, config, env: envs.Env | None = None, td_loss=l2):
        super().__init__(config, env)
        if not self.env.action_space.discrete:
            raise ConfigError(f"{type(self).__name__} needs discrete actions; {config.env} has continuous ones")
        self.td_loss = td_loss
        self.network = QNetwork(self.env.action_space.num_actions, tuple(config.hidden_sizes), config.activation,
                                layer_norm=self.layer_norm)

    def act(self, params, obs_stats, raw_obs: jax.Array, key: jax.Array | None = None, hp=None) -> jax.Array:
        """The greedy action; with a key, epsilon-greedy at the final epsilon (`hp.epsilon_finish`, the defaults'
        without `hp`): the policy as it acted when exploration ended, as SB3's `predict(deterministic=False)`."""
        q_values = self.network.apply(params, raw_obs)
        if key is None:
            return jnp.argmax(q_values, axis=-1)
        return epsilon_greedy(key, q_values, (hp if hp is not None else self.hyperparams()).epsilon_finish)
