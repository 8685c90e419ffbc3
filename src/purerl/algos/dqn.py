"""DQN as one pure function: `train(key, hyperparams, meta_params) -> TrainResult`.

Read top to bottom: config, state, initialisation, one environment step (act
epsilon-greedily, store the transition, maybe learn, maybe refresh the target
network), one update (`num_steps` such steps and a metric row); `loop.UpdateLoop` runs the updates.
As in `ppo.py`, the whole run is one `lax` loop: `jax.jit(train)` is one XLA
program and `jax.vmap(train)` trains many seeds or a hyperparameter grid in it.

Settings follow PureJaxRL's gymnax DQN (after CleanRL): 10 envs, a 10,000-transition
replay buffer, batches of 128, a gradient step every 10 env steps after 10,000, a hard
target update every 500 env steps, epsilon 1 -> 0.05 over 250,000 steps. `double_dqn`
picks the next action with the online network (van Hasselt et al. 2016).

Time limits: the stored next observation is the episode's final one and the
target keeps its bootstrap after a truncation, dropping it only on termination.
The TD loss is a hook (`algos/td.py`), given the run's `meta_params`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from purerl import envs
from purerl.algos import acting, loop, replay, td
from purerl.algos.settings import Preset, RolloutShape, as_float_arrays
from purerl.checks import DISCOUNT, POSITIVE, UNIT, ConfigError, check_bounds
from purerl.nets.layers import init_params

METRICS = ("episode_return", "episode_length", "episodes", "td_loss", "q_value", "epsilon", "learning_rate")


class DQNHyperParams(NamedTuple):
    """Traced scalars (defaults: PureJaxRL CartPole DQN)."""

    lr: Any = 2.5e-4
    gamma: Any = 0.99
    tau: Any = 1.0  # target update: target <- tau * online + (1 - tau) * target (1 = hard copy)
    epsilon_start: Any = 1.0
    epsilon_finish: Any = 0.05

    def as_arrays(self) -> DQNHyperParams:
        return as_float_arrays(self)

    def validate(self) -> None:
        check_bounds(self, {"lr": POSITIVE, "gamma": DISCOUNT, "tau": (0.0, 1.0, "in (0, 1]"),
                            "epsilon_start": UNIT, "epsilon_finish": UNIT})


@dataclass(frozen=True)
class DQNConfig(RolloutShape):
    """Shape-fixing settings (static under jit). Intervals count env steps over all envs, as in PureJaxRL."""

    env: str = "CartPole-v1"
    num_envs: int = 10
    num_steps: int = 50  # steps of every env per update (one metric row)
    total_timesteps: int = 500_000
    buffer_size: int = 10_000
    buffer_batch_size: int = 128
    learning_starts: int = 10_000
    train_interval: int = 10
    target_update_interval: int = 500
    epsilon_anneal_time: int = 250_000
    hidden_sizes: tuple[int, ...] = (120, 84)
    activation: str = "relu"
    double_dqn: bool = False
    anneal_lr: bool = False
    cpu_group: int = 4  # members one CPU device trains at a time (population.batched), measured best here

    def validate(self) -> None:
        self.check(("total_timesteps", "train_interval", "target_update_interval", "epsilon_anneal_time"),
                   ("num_envs", "num_steps", "buffer_size", "buffer_batch_size"))
        self.check_learning_starts()
        for name in ("train_interval", "target_update_interval"):
            if getattr(self, name) % self.num_envs:
                raise ConfigError(f"{name.replace('_', '-')}={getattr(self, name)} must be a multiple of "
                                  f"num-envs={self.num_envs} (the env steps of one step of every env)")
        if self.buffer_size < self.num_envs:
            raise ConfigError(f"buffer-size={self.buffer_size} is smaller than num-envs={self.num_envs}")


PRESETS = {
    "classic": Preset("PureJaxRL/CleanRL CartPole DQN: 10 envs, buffer 1e4, batch 128, learn every 10 steps "
                      "after 1e4, target every 500, epsilon 1 -> 0.05 over 2.5e5, lr 2.5e-4, 5e5 steps",
                      action="discrete"),
}


def default_preset(env_name: str, discrete: bool) -> str:
    td.discrete_only("DQN", env_name, discrete)
    return "classic"


class Transition(NamedTuple):
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array  # the final observation where the episode ended
    terminated: jax.Array


class RunnerState(NamedTuple):
    """Everything a run needs to continue; it is what a checkpoint holds."""

    params: Any
    target_params: Any
    opt_state: Any
    buffer: replay.Buffer
    env_state: Any
    obs: jax.Array
    timestep: jax.Array  # env steps so far, over all envs
    obs_stats: Any  # always None: the policy loader's interface (no observation normaliser)
    key: jax.Array
    metrics: dict[str, jax.Array]


class DQN(td.QLearner):
    """Built once per static config; calling it runs a whole training run (see `td.QLearner`)."""

    hyperparams = DQNHyperParams

    def optimizer(self, hp: DQNHyperParams) -> optax.GradientTransformation:
        return optax.adam(lambda count: self.learning_rate(hp, count))

    def learning_rate(self, hp: DQNHyperParams, gradient_steps: jax.Array) -> jax.Array:
        """Constant (PureJaxRL), or linear to 0 over the run's gradient steps."""
        if not self.config.anneal_lr:
            return hp.lr * jnp.ones_like(gradient_steps, jnp.float32)
        cfg = self.config
        total = max(1, (cfg.env_steps - cfg.learning_starts) // cfg.train_interval)
        return hp.lr * jnp.clip(1.0 - gradient_steps / total, 0.0, 1.0)

    def epsilon(self, hp: DQNHyperParams, timestep: jax.Array) -> jax.Array:
        return td.linear_decay(hp.epsilon_start, hp.epsilon_finish, timestep / self.config.epsilon_anneal_time)

    def init(self, key: jax.Array, hp: DQNHyperParams, meta_params=None) -> RunnerState:
        cfg = self.config
        param_key, reset_key, key = jax.random.split(key, 3)
        params = init_params(self.network, param_key, self.env.observation_shape)
        obs, env_state = self.env.reset_batch(jax.random.split(reset_key, cfg.num_envs))
        example = Transition(obs[0], jnp.int32(0), jnp.float32(0), obs[0], jnp.bool_(False))
        return RunnerState(
            params=params,
            target_params=params,
            opt_state=self.optimizer(hp).init(params),
            buffer=replay.init(example, cfg.buffer_size),
            env_state=env_state,
            obs=obs,
            timestep=jnp.int32(0),
            obs_stats=None,
            key=key,
            metrics=loop.metric_buffers(METRICS, cfg.num_updates),
        )

    # ---------------------------------------------------------------- learning
    def loss(self, params, target_params, batch: Transition, hp: DQNHyperParams, meta_params):
        q = self.network.apply(params, batch.obs)
        q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
        next_q_target = self.network.apply(target_params, batch.next_obs)
        next_q_online = self.network.apply(params, batch.next_obs) if self.config.double_dqn else next_q_target
        target = td.one_step_targets(batch.reward, batch.terminated, next_q_online, next_q_target, hp.gamma,
                                     self.config.double_dqn)
        loss = self.td_loss(q_taken, jax.lax.stop_gradient(target), hp, meta_params).mean()
        return loss, q_taken.mean()

    def gradient_step(self, state: RunnerState, key: jax.Array, hp: DQNHyperParams, meta_params):
        """One Adam step on a batch sampled from the buffer: (params, opt_state, loss, mean Q)."""
        batch = replay.sample(state.buffer, key, self.config.buffer_batch_size)
        (loss, q_mean), grads = jax.value_and_grad(self.loss, has_aux=True)(
            state.params, state.target_params, batch, hp, meta_params)
        updates, opt_state = self.optimizer(hp).update(grads, state.opt_state, state.params)
        return optax.apply_updates(state.params, updates), opt_state, loss, q_mean

    # -------------------------------------------------------------- one step
    def env_step(self, state: RunnerState, hp: DQNHyperParams, meta_params):
        """Act in every env, store the transitions, learn every `train_interval` env steps after
        `learning_starts`, refresh the target every `target_update_interval`."""
        cfg = self.config
        key, act_key, step_key, learn_key = jax.random.split(state.key, 4)
        epsilon = self.epsilon(hp, state.timestep)

        def act(act_key):
            return td.epsilon_greedy(act_key, self.network.apply(state.params, state.obs), epsilon), None

        env_state, action, ts, _ = acting.actor_step(self.env, state.env_state, act, act_key, step_key, cfg.num_envs)
        buffer = replay.add(state.buffer, Transition(state.obs, action, ts.reward, ts.final_obs, ts.terminated))
        timestep = state.timestep + cfg.num_envs
        state = state._replace(buffer=buffer, env_state=env_state, obs=ts.obs, timestep=timestep, key=key)

        learns = (timestep > cfg.learning_starts) & (timestep % cfg.train_interval == 0)
        params, opt_state, loss, q_mean = jax.lax.cond(
            learns,
            lambda: self.gradient_step(state, learn_key, hp, meta_params),
            lambda: (state.params, state.opt_state, jnp.float32(jnp.nan), jnp.float32(jnp.nan)),
        )
        refresh = timestep % cfg.target_update_interval == 0
        target_params = jax.tree.map(
            lambda online, target: jnp.where(refresh, hp.tau * online + (1.0 - hp.tau) * target, target),
            params, state.target_params)
        state = state._replace(params=params, opt_state=opt_state, target_params=target_params)
        info = {"episode_done": ts.info["episode_done"], "episode_return": ts.info["episode_return"],
                "episode_length": ts.info["episode_length"], "td_loss": loss, "q_value": q_mean,
                "epsilon": epsilon}
        return state, info

    # ---------------------------------------------------------------- update
    def update(self, index: jax.Array, state: RunnerState, hp: DQNHyperParams, meta_params) -> RunnerState:
        """`num_steps` steps of every env, and metric row `index`."""
        state, info = acting.unroll(lambda s, _: self.env_step(s, hp, meta_params), state, self.config.num_steps)
        gradient_steps = (state.timestep - self.config.learning_starts) // self.config.train_interval
        row = {
            **loop.episode_row(info["episode_done"], info["episode_return"], info["episode_length"]),
            "td_loss": jnp.nanmean(info["td_loss"]),  # NaN before learning starts
            "q_value": jnp.nanmean(info["q_value"]),
            "epsilon": info["epsilon"][-1],
            "learning_rate": self.learning_rate(hp, jnp.maximum(gradient_steps, 0)),
        }
        return state._replace(metrics=loop.record(state.metrics, index, row))


def make_train(config: DQNConfig, env: envs.Env | None = None, td_loss=td.l2) -> DQN:
    """Build the train function for a static config: `train(key, hp, meta_params=None)`."""
    return DQN(config, env=env, td_loss=td_loss)
