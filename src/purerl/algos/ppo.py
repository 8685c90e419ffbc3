"""PPO as one pure function: `train(key, hyperparams, meta_params) -> TrainResult`.

Read top to bottom: state, initialisation, one update (rollout, GAE, epochs of
minibatch steps, metrics); `loop.MinibatchEpochs` runs the updates in one `lax`
loop, so `jax.jit(train)` is a single XLA program and `jax.vmap(train)` trains
many seeds or a hyperparameter grid in that program.

Variants plug in through hooks (`objectives.py`): `objective` for the policy,
`value_loss` for the critic, and `observe` for what the agent sees (an
adversary's cheap-talk messages, see `studies/act/cheap_talk.py`). Each hook
receives the run's `hp` and `meta_params`. The network is a hook too: anything with
the sequence contract of `nets/actor_critic.py`, with or without memory (a GRU core
keeps whole sequences in its minibatches). This file has no per-variant branches.

Time limits: the value is bootstrapped from the final observation of a
truncated episode, and not after a real termination.

Observations are stored and carried in `obs_dtype`: float32, or with `compact_obs` the env's narrower exact
dtype (int8 for MinAtar), which the network casts back to float32 as they enter it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from purerl import envs
from purerl.algos import acting, loop, shuffle
from purerl.algos.update_rules import XlaUpdate, fused_update
from purerl.algos.objectives import FullObservation, clipped_l2, ppo_clip
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.algos.td import gae
from purerl.checks import ConfigError
from purerl.envs.core import narrower_observations
from purerl.envs.wrappers import IdentityObs, IdentityReward, ObsNormalizer, RewardNormalizer
from purerl.nets.actor_critic import ActorCritic
from purerl.nets.layers import compute_dtype, init_params

ADAM_EPS = 1e-5  # CleanRL's and PureJaxRL's
METRICS = ("episode_return", "episode_length", "episodes", "policy_loss", "value_loss", "entropy", "approx_kl",
           "clip_fraction", "learning_rate")


class RunnerState(NamedTuple):
    """Everything a run needs to continue; it is what a checkpoint holds."""

    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array  # normalised observation of every env, to act on next (in `PPO.obs_dtype`)
    reset: jax.Array  # [num_envs] `obs` begins an episode (a recurrent network zeroes its memory)
    carry: Any  # the network's memory of every env (`()` without memory)
    obs_stats: Any  # observation normaliser statistics (None when off)
    reward_stats: Any  # reward normaliser state (None when off)
    key: jax.Array
    metrics: dict[str, jax.Array]  # one row per update, preallocated: O(updates) memory


class Transition(NamedTuple):
    obs: jax.Array
    reset: jax.Array  # obs begins an episode
    action: jax.Array
    log_prob: jax.Array
    reward: jax.Array  # normalised if reward normalisation is on
    terminated: jax.Array
    done: jax.Array
    bootstrap_obs: jax.Array | None  # next observation, or the final one if the episode ended
    episode_done: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array
    bootstrap_value: jax.Array | None = None  # its value, where the rollout computed it (`rollout_bootstrap`)


class Batch(NamedTuple):
    """Time-major sequences [T, N, ...] and the network memory `carry` [N, ...] they start from."""

    carry: Any
    obs: jax.Array
    reset: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


class PPO(loop.MinibatchEpochs):
    """Built once per static config; calling it runs a whole training run (`loop.UpdateLoop`)."""

    metric_names = METRICS  # a subclass whose loss returns more statistics names them here to record them

    def __init__(self, config: PPOConfig, env: envs.Env | None = None, objective=ppo_clip, value_loss=clipped_l2,
                 observe=None, network=None):
        super().__init__(config, env)
        self.objective = objective
        self.value_loss = value_loss
        self.observe = observe if observe is not None else FullObservation()
        self.observation_shape = self.observe.shape(self.env.observation_shape)
        if network is None:
            network = ActorCritic(self.env.action_space, tuple(config.hidden_sizes), config.activation,
                                  compute_dtype(config.matmul_dtype))
        self.network = network
        self.update_rule = XlaUpdate(self.gradient_step)
        if config.update_kernel == "fused":
            self.update_rule = fused_update(self, objective, value_loss, ADAM_EPS)
        if self.network.recurrent and config.num_envs % config.num_minibatches:
            raise ConfigError(f"a recurrent network keeps whole sequences in a minibatch: num-envs={config.num_envs} "
                              f"is not divisible by num-minibatches={config.num_minibatches}")
        self.obs_norm = ObsNormalizer(self.observation_shape) if config.normalize_obs else IdentityObs()
        self.reward_norm = RewardNormalizer(config.num_envs) if config.normalize_reward else IdentityReward()
        # the dtype observations are stored and carried in: the env's own where `compact_obs` and it is narrower
        # (normalised observations are refused by the config; a hook's may hold anything, so they stay float32)
        compact = config.compact_obs and narrower_observations(self.env) and isinstance(self.observe, FullObservation)
        self.obs_dtype = jnp.dtype(self.env.observation_dtype if compact else jnp.float32)

    # ----------------------------------------------------------------- setup
    def optimizer(self, hp: HyperParams) -> optax.GradientTransformation:
        """Global-norm clipping and Adam, on all parameters flattened into one vector: a handful of
        fused ops per step instead of several per parameter array (7% more env steps/s at 1 seed)."""
        return optax.flatten(optax.chain(
            optax.clip_by_global_norm(hp.max_grad_norm),
            optax.adam(lambda count: self.learning_rate(hp, count // self.steps_per_update), eps=ADAM_EPS),
        ))

    def init(self, key: jax.Array, hp: HyperParams, meta_params=None) -> RunnerState:
        cfg = self.config
        param_key, reset_key, key = jax.random.split(key, 3)
        params = init_params(self.network, param_key, self.observation_shape)
        opt_state = self.optimizer(hp).init(params)
        env_obs, env_state = self.env.reset_batch(jax.random.split(reset_key, cfg.num_envs))
        raw_obs = self.observe(env_obs, meta_params)
        obs_stats = self.obs_norm.update(self.obs_norm.init(), raw_obs)
        metrics = loop.metric_buffers(self.metric_names, cfg.num_updates)
        return RunnerState(params=params, opt_state=opt_state, env_state=env_state,
                           obs=self.stored(self.obs_norm.normalize(obs_stats, raw_obs)),
                           reset=jnp.ones(cfg.num_envs, bool), carry=self.network.initial_carry(cfg.num_envs),
                           obs_stats=obs_stats, reward_stats=self.reward_norm.init(), key=key, metrics=metrics)

    # --------------------------------------------------------------- rollout
    def rollout(self, state: RunnerState, hp: HyperParams, meta_params=None) -> tuple[RunnerState, Transition]:
        """`num_steps` steps of every env under the current policy."""

        def env_step(carry, _):
            env_state, obs, reset, memory, obs_stats, reward_stats, key = carry
            key, action_key, step_key = jax.random.split(key, 3)

            def act(action_key):
                next_memory, pi = self.network.apply(state.params, memory, obs, reset, method="step")
                action = pi.sample(action_key)
                return action, (next_memory, pi.log_prob(action))

            env_state, action, ts, (memory, log_prob) = acting.actor_step(self.env, env_state, act, action_key,
                                                                          step_key, self.config.num_envs)
            seen_obs = self.observe(ts.obs, meta_params)
            obs_stats = self.obs_norm.update(obs_stats, seen_obs)
            next_obs = self.stored(self.obs_norm.normalize(obs_stats, seen_obs))
            final_obs = self.stored(self.obs_norm.normalize(obs_stats, self.observe(ts.final_obs, meta_params)))
            reward_stats, reward = self.reward_norm.update_and_normalize(reward_stats, ts, hp.gamma)
            done = ts.done
            bootstrap_obs, bootstrap_value = jnp.where(_expand_like(done, next_obs), final_obs, next_obs), None
            if self.config.rollout_bootstrap:  # its value now, from the memory the step reached: no stored copy
                bootstrap_value = self.network.apply(state.params, memory, bootstrap_obs, method="bootstrap_value")
                bootstrap_obs = None
            transition = Transition(obs=obs, reset=reset, action=action, log_prob=log_prob, reward=reward,
                                    terminated=ts.terminated, done=done, bootstrap_obs=bootstrap_obs,
                                    episode_done=ts.info["episode_done"], episode_return=ts.info["episode_return"],
                                    episode_length=ts.info["episode_length"], bootstrap_value=bootstrap_value)
            return (env_state, next_obs, done, memory, obs_stats, reward_stats, key), transition

        carry = (state.env_state, state.obs, state.reset, state.carry, state.obs_stats, state.reward_stats, state.key)
        carry, trajectory = acting.unroll(env_step, carry, self.config.num_steps, unroll=self.config.rollout_unroll)
        env_state, obs, reset, memory, obs_stats, reward_stats, key = carry
        state = state._replace(env_state=env_state, obs=obs, reset=reset, carry=memory, obs_stats=obs_stats,
                               reward_stats=reward_stats, key=key)
        return state, trajectory

    def stored(self, obs: jax.Array) -> jax.Array:
        """Observations as PPO stores and carries them (`obs_dtype`); unchanged, with no op, where it is float32."""
        return obs if self.obs_dtype == jnp.float32 else obs.astype(self.obs_dtype)

    # ------------------------------------------------------------------- GAE
    def advantages(self, params, trajectory: Transition, carry, hp: HyperParams):
        """(values, advantages, targets), each [num_steps, num_envs], for a rollout begun from memory `carry`.

        The next-state value comes from `bootstrap_obs`, so a truncated step
        bootstraps from its final observation and a terminated one from zero.
        """
        carries, _, values = self.network.apply(params, carry, trajectory.obs, trajectory.reset, method="unroll")
        next_values = trajectory.bootstrap_value
        if next_values is None:
            next_values = self.network.apply(params, carries, trajectory.bootstrap_obs, method="bootstrap_value")
        advantages = gae(trajectory.reward, values, next_values, trajectory.terminated, trajectory.done, hp.gamma,
                         hp.gae_lambda, unroll=self.config.rollout_unroll)
        return values, advantages, advantages + values

    # ---------------------------------------------------------------- update
    def loss(self, params, batch: Batch, hp: HyperParams, meta_params):
        _, pi, value = self.network.apply(params, batch.carry, batch.obs, batch.reset, method="unroll")
        log_prob = pi.log_prob(batch.action)
        log_ratio = log_prob - batch.log_prob
        ratio = jnp.exp(log_ratio)
        advantage = batch.advantage
        if self.config.normalize_advantages:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        policy_objective = self.objective(ratio, log_ratio, advantage, hp, meta_params).mean()
        value_loss = self.value_loss(value, batch.value, batch.target, hp, meta_params).mean()
        entropy = pi.entropy().mean()
        total = -policy_objective + hp.vf_coef * value_loss - hp.ent_coef * entropy
        stats = {
            "policy_loss": -policy_objective,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
            "clip_fraction": jnp.mean(jnp.abs(ratio - 1.0) > hp.clip_eps),
        }
        return total, stats

    def gradient_step(self, params, opt_state, minibatch: Batch, hp: HyperParams, meta_params):
        """One optimiser step on one minibatch: (params, opt_state, loss statistics)."""
        grads, stats = jax.grad(self.loss, has_aux=True)(params, minibatch, hp, meta_params)
        updates, opt_state = self.optimizer(hp).update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, stats

    def learn(self, state: RunnerState, batch: Batch, hp: HyperParams, meta_params):
        """`update_epochs` passes over the batch in shuffled minibatches; with one minibatch, each epoch is the
        whole batch in order (a shuffle could not change its mean loss). A recurrent network's batch is
        sequences [T, N, ...], shuffled along axis 1; any other's is samples [T * N, ...], shuffled along axis 0."""
        cfg = self.config
        sample_axis = 1 if self.network.recurrent else 0
        rule = self.update_rule

        def minibatch_step(packed, minibatch):
            return rule.step(packed, minibatch, hp, meta_params)

        def epoch(carry, _):
            packed, key = carry
            key, shuffle_key = jax.random.split(key)
            if cfg.minibatch_gather and cfg.num_minibatches > 1:  # the same minibatches, each read from the batch
                # where it lies: one pass over the data an epoch instead of a shuffled copy and then its slices
                order = shuffle.permutation(shuffle_key, batch.obs.shape[sample_axis]).reshape(cfg.num_minibatches, -1)
                step = lambda packed, indices: minibatch_step(  # noqa: E731
                    packed, rule.take(batch, indices, lambda i: shuffle.take(batch, i, sample_axis)))
                packed, stats = jax.lax.scan(step, packed, order)
            else:
                minibatches = shuffle.minibatches(batch, shuffle_key, cfg.num_minibatches, sample_axis)
                packed, stats = jax.lax.scan(minibatch_step, packed, minibatches)
            return (packed, key), stats

        carry = (rule.pack(state.params, state.opt_state), state.key)
        (packed, key), stats = jax.lax.scan(epoch, carry, None, length=cfg.update_epochs)
        params, opt_state = rule.unpack(packed, state.params)
        state = state._replace(params=params, opt_state=opt_state, key=key)
        return state, jax.tree.map(jnp.mean, stats)

    def batch(self, params, trajectory: Transition, carry, hp: HyperParams) -> Batch:
        """What `learn` learns from: a rollout that began from network memory `carry`, with its advantages."""
        values, advantages, targets = self.advantages(params, trajectory, carry, hp)
        batch = Batch(carry, trajectory.obs, trajectory.reset, trajectory.action, trajectory.log_prob, values,
                      advantages, targets)
        if not self.network.recurrent:  # samples, not sequences: shuffle all T x N of them (CleanRL). One sample
            # axis, not [1, T x N]: the weight gradients then contract one axis, and XLA's CPU runs such dots
            # 1.3-2.5x faster (benchmarks/README.md, "one-sequence minibatches")
            batch = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batch)
        return batch

    def learn_from(self, state: RunnerState, trajectory: Transition, carry, hp: HyperParams, meta_params):
        """Advantages, then `learn`, on a rollout that began from network memory `carry`."""
        return self.learn(state, self.batch(state.params, trajectory, carry, hp), hp, meta_params)

    def update(self, index: jax.Array, state: RunnerState, hp: HyperParams, meta_params) -> RunnerState:
        """One PPO update: rollout, GAE, learning, and metric row `index`."""
        start_carry = state.carry
        state, trajectory = self.rollout(state, hp, meta_params)
        state, stats = self.learn_from(state, trajectory, start_carry, hp, meta_params)
        row = {
            **stats,
            **loop.episode_row(trajectory.episode_done, trajectory.episode_return, trajectory.episode_length),
            "learning_rate": self.learning_rate(hp, index),
        }
        return state._replace(metrics=loop.record(state.metrics, index, row))

    # ---------------------------------------------------------------- acting
    def act(self, params, obs_stats, raw_obs: jax.Array, key: jax.Array | None = None, hp=None) -> jax.Array:
        """Action for an observation as the agent sees it (after `observe`): greedy without a key, sampled with one
        (`hp` is unused: the policy's distribution is all it samples from).

        For networks without memory (`policy(obs)`); `act_step` serves every network.
        """
        pi = self.network.apply(params, self.obs_norm.normalize(obs_stats, raw_obs), method="policy")
        return pi.mode() if key is None else pi.sample(key)

    def act_step(self, params, obs_stats, carry, raw_obs: jax.Array, reset: jax.Array, key: jax.Array | None = None):
        """`(carry, action)` for a batch of observations, through the network's memory as the rollout acts: the
        memory is zeroed where `reset` marks an observation that begins an episode. Greedy without a key."""
        carry, pi = self.network.apply(params, carry, self.obs_norm.normalize(obs_stats, raw_obs), reset, method="step")
        return carry, pi.mode() if key is None else pi.sample(key)


def _expand_like(flag: jax.Array, x: jax.Array) -> jax.Array:
    return flag.reshape(flag.shape + (1,) * (x.ndim - flag.ndim))


def make_train(config: PPOConfig, env: envs.Env | None = None, objective=ppo_clip, value_loss=clipped_l2,
               observe=None, network=None) -> PPO:
    """Build the train function for a static config: `train(key, hp, meta_params=None)`."""
    return PPO(config, env=env, objective=objective, value_loss=value_loss, observe=observe, network=network)
