"""PQN (Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning") as one pure function:
`train(key, hyperparams, meta_params) -> TrainResult`.

A parallel Q-learner with no replay buffer and no target network: many vectorised
envs act epsilon-greedily, Q(lambda) returns are computed over the short rollout,
and a LayerNorm Q-network regresses on them for a few epochs of minibatches, as
PPO does with its advantages. Read top to bottom: config, state, initialisation,
rollout, targets, learning, one update (`loop.MinibatchEpochs` runs them). One update is one metric row;
the run is one `lax` loop, so it jits to one program and vmaps over seeds.

Settings follow the authors' purejaxql configs (CartPole and MinAtar): RAdam with
global-norm clipping 10, lr linearly decayed to 0, epsilon decayed over a fraction
of the updates, rewards scaled by `reward_scale`.

Time limits: the next state's value comes from the episode's final observation and
is dropped only on termination; any ended episode cuts the lambda-return.
The TD loss is a hook (`algos/td.py`), given the run's `meta_params`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from purerl import envs
from purerl.algos import acting, loop, td
from purerl.algos.shuffle import permutation as random_permutation
from purerl.algos.settings import Preset, RolloutShape, as_float_arrays, check_minibatches
from purerl.checks import DISCOUNT, POSITIVE, UNIT, ConfigError, check_bounds
from purerl.nets.layers import init_params

METRICS = ("episode_return", "episode_length", "episodes", "td_loss", "q_value", "epsilon", "learning_rate")


class PQNHyperParams(NamedTuple):
    """Traced scalars (defaults: purejaxql CartPole)."""

    lr: Any = 1e-4
    gamma: Any = 0.99
    td_lambda: Any = 0.95
    epsilon_start: Any = 1.0
    epsilon_finish: Any = 0.2
    max_grad_norm: Any = 10.0
    reward_scale: Any = 0.1

    def as_arrays(self) -> PQNHyperParams:
        return as_float_arrays(self)

    def validate(self) -> None:
        check_bounds(self, {"lr": POSITIVE, "gamma": DISCOUNT, "td_lambda": UNIT, "epsilon_start": UNIT,
                            "epsilon_finish": UNIT, "max_grad_norm": POSITIVE, "reward_scale": POSITIVE})


@dataclass(frozen=True)
class PQNConfig(RolloutShape):
    """Shape-fixing settings (static under jit)."""

    env: str = "CartPole-v1"
    num_envs: int = 32
    num_steps: int = 64
    total_timesteps: int = 500_000
    update_epochs: int = 4
    num_minibatches: int = 16
    hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    epsilon_decay: float = 0.2  # fraction of the updates over which epsilon reaches its final value
    anneal_lr: bool = True
    cpu_group: int = 2  # members one CPU device trains at a time (population.batched), measured best here

    def validate(self) -> None:
        self.check(("total_timesteps",), ("num_envs", "num_steps", "update_epochs", "num_minibatches"))
        check_minibatches(self)
        if not 0 < self.epsilon_decay <= 1:
            raise ConfigError(f"epsilon-decay must be in (0, 1], got {self.epsilon_decay:g}")


PRESETS = {
    "classic": Preset("purejaxql CartPole: 32 envs x 64 steps, 4 epochs x 16 minibatches, 256-256 LayerNorm, "
                      "lr 1e-4 decayed, lambda 0.95, epsilon 1 -> 0.2 over 20% of 5e5 steps, rewards x 0.1",
                      action="discrete"),
    "minatar": Preset("purejaxql MinAtar (an MLP on the flat grid instead of its conv layer): 128 envs x 32 steps, "
                      "2 epochs x 32 minibatches, 128-128 LayerNorm, lr 5e-4 decayed, lambda 0.65, "
                      "epsilon 1 -> 0.05 over 10% of 1e7 steps",
                      action="discrete",
                      config=dict(cpu_group=0, num_envs=128, num_steps=32, total_timesteps=10_000_000,
                                  update_epochs=2, num_minibatches=32, hidden_sizes=(128, 128), epsilon_decay=0.1),
                      hyperparams=dict(lr=5e-4, td_lambda=0.65, epsilon_finish=0.05, reward_scale=1.0)),
}


def default_preset(env_name: str, discrete: bool) -> str:
    td.discrete_only("PQN", env_name, discrete)
    return "minatar" if env_name.endswith("-MinAtar") else "classic"


class Transition(NamedTuple):
    obs: jax.Array
    action: jax.Array
    reward: jax.Array  # scaled by reward_scale
    terminated: jax.Array
    done: jax.Array
    next_obs: jax.Array  # the final observation where the episode ended
    episode_done: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array


class RunnerState(NamedTuple):
    """Everything a run needs to continue; it is what a checkpoint holds."""

    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    obs_stats: Any  # always None: the policy loader's interface (no observation normaliser)
    key: jax.Array
    metrics: dict[str, jax.Array]


class PQN(td.QLearner, loop.MinibatchEpochs):
    """Built once per static config; calling it runs a whole training run (see `td.QLearner`)."""

    hyperparams = PQNHyperParams
    layer_norm = True

    def optimizer(self, hp: PQNHyperParams) -> optax.GradientTransformation:
        return optax.chain(optax.clip_by_global_norm(hp.max_grad_norm),
                           optax.radam(lambda count: self.learning_rate(hp, count // self.steps_per_update)))

    def epsilon(self, hp: PQNHyperParams, update_index: jax.Array) -> jax.Array:
        progress = update_index / (self.config.epsilon_decay * self.config.num_updates)
        return td.linear_decay(hp.epsilon_start, hp.epsilon_finish, progress)

    def init(self, key: jax.Array, hp: PQNHyperParams, meta_params=None) -> RunnerState:
        cfg = self.config
        param_key, reset_key, key = jax.random.split(key, 3)
        params = init_params(self.network, param_key, self.env.observation_shape)
        obs, env_state = self.env.reset_batch(jax.random.split(reset_key, cfg.num_envs))
        metrics = loop.metric_buffers(METRICS, cfg.num_updates)
        return RunnerState(params, self.optimizer(hp).init(params), env_state, obs, None, key, metrics)

    # --------------------------------------------------------------- rollout
    def rollout(self, state: RunnerState, epsilon: jax.Array, hp: PQNHyperParams):
        """`num_steps` epsilon-greedy steps of every env."""

        def env_step(carry, _):
            env_state, obs, key = carry
            key, act_key, step_key = jax.random.split(key, 3)

            def act(act_key):
                return td.epsilon_greedy(act_key, self.network.apply(state.params, obs), epsilon), None

            env_state, action, ts, _ = acting.actor_step(self.env, env_state, act, act_key, step_key,
                                                         self.config.num_envs)
            transition = Transition(obs, action, hp.reward_scale * ts.reward, ts.terminated, ts.done, ts.final_obs,
                                    ts.info["episode_done"], ts.info["episode_return"], ts.info["episode_length"])
            return (env_state, ts.obs, key), transition

        (env_state, obs, key), trajectory = acting.unroll(env_step, (state.env_state, state.obs, state.key),
                                                          self.config.num_steps)
        return state._replace(env_state=env_state, obs=obs, key=key), trajectory

    # --------------------------------------------------------------- targets
    def targets(self, params, trajectory: Transition, hp: PQNHyperParams) -> jax.Array:
        """Q(lambda) returns [num_steps, num_envs], bootstrapping from max_a Q(next_obs, a)."""
        next_values = jnp.max(self.network.apply(params, trajectory.next_obs), axis=-1)
        return td.q_lambda_targets(trajectory.reward, next_values, trajectory.terminated, trajectory.done,
                                   hp.gamma, hp.td_lambda)

    # ---------------------------------------------------------------- learn
    def loss(self, params, obs, action, target, hp: PQNHyperParams, meta_params):
        q = self.network.apply(params, obs)
        q_taken = jnp.take_along_axis(q, action[:, None], axis=-1)[:, 0]
        return self.td_loss(q_taken, target, hp, meta_params).mean(), q_taken.mean()

    def learn(self, state: RunnerState, obs, action, target, hp: PQNHyperParams, meta_params):
        """`update_epochs` passes over the flattened batch in shuffled minibatches."""
        cfg = self.config
        optimizer = self.optimizer(hp)

        def minibatch_step(carry, minibatch):
            params, opt_state = carry
            (loss, q_mean), grads = jax.value_and_grad(self.loss, has_aux=True)(params, *minibatch, hp, meta_params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), (loss, q_mean)

        def epoch(carry, _):
            params, opt_state, key = carry
            key, perm_key = jax.random.split(key)
            permutation = random_permutation(perm_key, cfg.batch_size)
            minibatches = jax.tree.map(lambda x: x[permutation].reshape((cfg.num_minibatches, -1) + x.shape[1:]),
                                       (obs, action, target))
            (params, opt_state), stats = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
            return (params, opt_state, key), stats

        (params, opt_state, key), (loss, q_mean) = jax.lax.scan(
            epoch, (state.params, state.opt_state, state.key), None, length=cfg.update_epochs)
        return state._replace(params=params, opt_state=opt_state, key=key), loss.mean(), q_mean.mean()

    # ---------------------------------------------------------------- update
    def update(self, index: jax.Array, state: RunnerState, hp: PQNHyperParams, meta_params) -> RunnerState:
        """One PQN update: rollout, Q(lambda) targets, learning, and metric row `index`."""
        epsilon = self.epsilon(hp, index)
        state, trajectory = self.rollout(state, epsilon, hp)
        targets = self.targets(state.params, trajectory, hp)
        flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
        state, loss, q_mean = self.learn(state, flat(trajectory.obs), flat(trajectory.action), flat(targets),
                                         hp, meta_params)
        row = {
            **loop.episode_row(trajectory.episode_done, trajectory.episode_return, trajectory.episode_length),
            "td_loss": loss,
            "q_value": q_mean,
            "epsilon": epsilon,
            "learning_rate": self.learning_rate(hp, index),
        }
        return state._replace(metrics=loop.record(state.metrics, index, row))


def make_train(config: PQNConfig, env: envs.Env | None = None, td_loss=td.l2) -> PQN:
    """Build the train function for a static config: `train(key, hp, meta_params=None)`."""
    return PQN(config, env=env, td_loss=td_loss)
