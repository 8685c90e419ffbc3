"""What SAC and TD3 share: continuous actions, twin critics, a replay buffer in the program, Polyak targets.

An off-policy actor-critic here is a `loop.UpdateLoop` whose update steps every env `num_steps` times; each
vectorised step stores `num_envs` transitions and, once `learning_starts` env steps are stored, takes
`gradient_steps` gradient steps (`learn`, the algorithm's own). Before that, actions are uniform, as in
CleanRL. Control flow comes from the loop counters, which are the same for every member, never from a
member's state: a `lax.cond` on them stays a branch under `vmap` instead of becoming a select that runs
both sides for every seed.

Actions live in [-1, 1] inside the agent and the buffer, and are mapped affinely onto the env's box when
they reach the env. Time limits: a transition stores the episode's final observation and `terminated`, so
a truncated episode bootstraps from where it stopped and only a real termination drops the bootstrap
(Pendulum-v1 ends only by truncation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from purerl import envs
from purerl.algos import acting, loop, replay
from purerl.algos.settings import Preset, RolloutShape
from purerl.checks import ConfigError
from purerl.nets.layers import init_params
from purerl.nets.qnets import QNetwork

EPISODE_METRICS = ("episode_return", "episode_length", "episodes")


@dataclass(frozen=True)
class OffPolicyConfig(RolloutShape):
    """Shape-fixing settings (static under jit). `num_steps` steps of every env make one update (a metric row)."""

    env: str = "Pendulum-v1"
    num_envs: int = 1
    num_steps: int = 200
    total_timesteps: int = 20_000
    buffer_size: int = 100_000
    buffer_batch_size: int = 256
    learning_starts: int = 5_000  # env steps, over all envs, of uniform actions before learning
    gradient_steps: int = 1  # per vectorised env step: the update-to-data ratio is gradient_steps / num_envs
    policy_frequency: int = 2  # gradient steps per actor (and target) update
    hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    cpu_group: int = 0

    def validate(self) -> None:
        self.check(("total_timesteps", "gradient_steps", "policy_frequency"),
                   ("num_envs", "num_steps", "buffer_size", "buffer_batch_size"))
        self.check_learning_starts()
        if self.buffer_size < self.num_envs:
            raise ConfigError(f"buffer-size={self.buffer_size} is smaller than num-envs={self.num_envs}")


BRAX_PRESET = Preset(
    "Brax on a CPU budget (not a paper's): 16 envs x 64 steps, 1e6 steps, buffer 1e6, 4 gradient steps per "
    "vectorised step (update-to-data 1/4), learning from 1e4 steps",
    action="continuous",
    config=dict(num_envs=16, num_steps=64, total_timesteps=1_000_000, buffer_size=1_000_000, learning_starts=10_000,
                gradient_steps=4))


def default_preset(env_name: str, discrete: bool) -> str:
    """Continuous actions only: a discrete env is refused here, naming the real reason (not a preset)."""
    if discrete:
        raise ConfigError(f"SAC and TD3 need continuous actions; {env_name} has discrete ones")
    return "brax" if env_name.startswith("brax:") else "continuous"


class TwinCritic(nn.Module):
    """Two independent Q(s, a) MLPs on the concatenated [obs, action], run as one batched network. flax's
    default (LeCun-normal) initialisation, as the Q-networks: no QR decomposition to deadlock under vmap."""

    hidden_sizes: tuple[int, ...]
    activation: str

    @nn.compact
    def __call__(self, obs_action):
        twins = nn.vmap(QNetwork, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=None,
                        out_axes=0, axis_size=2)
        return twins(1, self.hidden_sizes, self.activation)(obs_action)[..., 0]  # [2, ...]


class Transition(NamedTuple):
    obs: jax.Array
    action: jax.Array  # in [-1, 1]
    reward: jax.Array
    next_obs: jax.Array  # the final observation where the episode ended
    terminated: jax.Array


class RunnerState(NamedTuple):
    """Everything a run needs to continue; it is what a checkpoint holds."""

    params: Any  # {"actor", "critic"} and what else the algorithm learns (SAC's "log_alpha")
    target_params: Any
    opt_state: Any
    buffer: replay.Buffer
    env_state: Any
    obs: jax.Array
    obs_stats: Any  # always None: the policy loader's interface (no observation normaliser)
    key: jax.Array
    metrics: dict[str, jax.Array]


def polyak(online, target, tau):
    """target <- tau * online + (1 - tau) * target, leaf by leaf."""
    return jax.tree.map(lambda o, t: tau * o + (1.0 - tau) * t, online, target)


class OffPolicyActorCritic(loop.UpdateLoop):
    """The shared loop. An algorithm supplies `actor` (a flax module), `optimizers(hp)` (one per learned part),
    `extra_params()` (learned parts beyond actor and critic), `explore(params, obs, key, hp) -> action in [-1, 1]`, `deterministic(params, obs)`,
    `learn(state, batch, key, step, hp) -> (state, info)` with `step` the gradient step's index, and
    `LEARN_METRICS`, the names of `info`; `TARGETS`, the parts with Polyak targets; `hyperparams`, its traced
    class (whose defaults a sampled `act` uses)."""

    LEARN_METRICS: tuple[str, ...] = ()
    TARGETS: tuple[str, ...] = ("actor", "critic")

    def __init__(self, config: OffPolicyConfig, env: envs.Env | None = None):
        super().__init__(config, env)
        space = self.env.action_space
        if space.discrete:
            raise ConfigError(f"{type(self).__name__} needs continuous actions; {config.env} has discrete ones")
        self.action_dim = math.prod(space.shape)
        low, high = (np.broadcast_to(np.asarray(b, np.float32), space.shape) for b in (space.low, space.high))
        self.action_scale, self.action_bias = (high - low) / 2.0, (high + low) / 2.0
        self.critic = TwinCritic(tuple(config.hidden_sizes), config.activation)

    def extra_params(self) -> dict[str, Any]:
        return {}

    def apply_gradients(self, name: str, state: RunnerState, grads, hp) -> RunnerState:
        """One optimiser step of one learned part (`name`)."""
        updates, opt = self.optimizers(hp)[name].update(grads, state.opt_state[name], state.params[name])
        params = {**state.params, name: optax.apply_updates(state.params[name], updates)}
        return state._replace(params=params, opt_state={**state.opt_state, name: opt})

    def to_env(self, action: jax.Array) -> jax.Array:
        return self.action_bias + self.action_scale * action

    def q_values(self, critic_params, obs, action) -> jax.Array:
        """[2, batch] twin Q-values."""
        return self.critic.apply(critic_params, jnp.concatenate([obs, action], axis=-1))

    def init(self, key: jax.Array, hp, meta_params=None) -> RunnerState:
        cfg = self.config
        actor_key, critic_key, reset_key, key = jax.random.split(key, 4)
        obs_size = math.prod(self.env.observation_shape)
        params = {"actor": init_params(self.actor, actor_key, (obs_size,)),
                  "critic": init_params(self.critic, critic_key, (obs_size + self.action_dim,)),
                  **self.extra_params()}
        opt_state = {name: opt.init(params[name]) for name, opt in self.optimizers(hp).items()}
        obs, env_state = self.env.reset_batch(jax.random.split(reset_key, cfg.num_envs))
        example = Transition(obs[0], jnp.zeros(self.action_dim, jnp.float32), jnp.float32(0), obs[0],
                             jnp.bool_(False))
        return RunnerState(params=params, target_params={k: params[k] for k in self.TARGETS},
                           opt_state=opt_state, buffer=replay.init(example, cfg.buffer_size), env_state=env_state,
                           obs=obs, obs_stats=None, key=key,
                           metrics=loop.metric_buffers(EPISODE_METRICS + self.LEARN_METRICS, cfg.num_updates))

    def act(self, params, obs_stats, raw_obs: jax.Array, key: jax.Array | None = None, hp=None) -> jax.Array:
        """The env action: the deterministic policy without a key, the exploration policy with one (at the
        member's hyperparameters `hp`, or the defaults)."""
        action = (self.deterministic(params, raw_obs) if key is None
                  else self.explore(params, raw_obs, key, hp if hp is not None else self.hyperparams().as_arrays()))
        return self.to_env(action)

    # -------------------------------------------------------------- one step
    def env_step(self, state: RunnerState, vector_step: jax.Array, hp):
        """Act in every env, store the transitions, then learn `gradient_steps` times once enough is stored.
        `vector_step` counts vectorised steps since the run began (a loop counter, equal for every member)."""
        cfg = self.config
        key, act_key, step_key, learn_key = jax.random.split(state.key, 4)
        stored = (vector_step + 1) * cfg.num_envs  # env steps once this one is stored

        def act(act_key):
            return jax.lax.cond(
                stored > cfg.learning_starts,
                lambda: self.explore(state.params, state.obs, act_key, hp),
                lambda: jax.random.uniform(act_key, (cfg.num_envs, self.action_dim), minval=-1.0, maxval=1.0)), None

        env_state, action, ts, _ = acting.actor_step(self.env, state.env_state, act, act_key, step_key, cfg.num_envs,
                                                     self.to_env)
        buffer = replay.add(state.buffer, Transition(state.obs, action, ts.reward, ts.final_obs, ts.terminated))
        state = state._replace(buffer=buffer, env_state=env_state, obs=ts.obs, key=key)

        def learn_all():
            first = (vector_step - cfg.learning_starts // cfg.num_envs) * cfg.gradient_steps

            def one(carry, i):
                batch_key, step_key = jax.random.split(jax.random.fold_in(learn_key, i))
                batch = replay.sample(carry.buffer, batch_key, cfg.buffer_batch_size)
                return self.learn(carry, batch, step_key, first + i, hp)

            new_state, infos = jax.lax.scan(one, state, jnp.arange(cfg.gradient_steps))
            return new_state, {name: jnp.nanmean(value) for name, value in infos.items()}

        nan_info = {name: jnp.float32(jnp.nan) for name in self.LEARN_METRICS}
        state, info = jax.lax.cond(stored > cfg.learning_starts, learn_all, lambda: (state, nan_info))
        episode = {"episode_done": ts.info["episode_done"], "episode_return": ts.info["episode_return"],
                   "episode_length": ts.info["episode_length"]}
        return state, {**episode, **info}

    # ---------------------------------------------------------------- update
    def update(self, index: jax.Array, state: RunnerState, hp, meta_params) -> RunnerState:
        """`num_steps` steps of every env, and metric row `index`."""
        steps = index * self.config.num_steps + jnp.arange(self.config.num_steps)
        state, info = acting.unroll(lambda s, t: self.env_step(s, t, hp), state, xs=steps)
        row = {**loop.episode_row(info["episode_done"], info["episode_return"], info["episode_length"]),
               **{name: jnp.nanmean(info[name]) for name in self.LEARN_METRICS}}  # NaN before learning starts
        return state._replace(metrics=loop.record(state.metrics, index, row))
