"""A toy algorithm written as a contributor would add one (docs/architecture.md, "An algorithm"): this module
and one registry entry (`ENTRY`), nothing else. REINFORCE (Williams 1992) with reward-to-go inside each rollout
and no critic, on the shared base (`loop.UpdateLoop`), so the CLI, populations, checkpoints, resume, the run
directory and `eval` must serve it unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from purerl.algos import loop
from purerl.algos.registry import Algorithm
from purerl.algos.settings import Preset, RolloutShape, as_float_arrays
from purerl.checks import DISCOUNT, POSITIVE, ConfigError, check_bounds
from purerl.nets.layers import MLP, init_params

METRICS = ("episode_return", "episode_length", "episodes", "policy_loss")


@dataclass(frozen=True)
class ToyConfig(RolloutShape):
    env: str = "CartPole-v1"
    num_envs: int = 4
    num_steps: int = 32
    total_timesteps: int = 4096
    hidden_sizes: tuple[int, ...] = (32,)
    activation: str = "tanh"
    cpu_group: int = 0

    def validate(self) -> None:
        self.check(("total_timesteps",), ("num_envs", "num_steps"))


class ToyHyperParams(NamedTuple):
    lr: float = 1e-2
    gamma: float = 0.99

    def as_arrays(self):
        return as_float_arrays(self)

    def validate(self) -> None:
        check_bounds(self, {"lr": POSITIVE, "gamma": DISCOUNT})


PRESETS = {"classic": Preset("the class defaults: 4 envs x 32 steps, lr 1e-2", action="discrete")}


def default_preset(env_name: str, discrete: bool) -> str:
    if not discrete:
        raise ConfigError(f"toy needs discrete actions; {env_name} has continuous ones")
    return "classic"


class State(NamedTuple):
    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    obs_stats: Any
    key: jax.Array
    metrics: dict[str, jax.Array]


class Toy(loop.UpdateLoop):
    def __init__(self, config: ToyConfig, env=None):
        super().__init__(config, env)
        self.policy = MLP(tuple(config.hidden_sizes), config.activation, self.env.action_space.num_actions, 0.01)

    def init(self, key, hp, meta_params=None) -> State:
        param_key, reset_key, key = jax.random.split(key, 3)
        params = init_params(self.policy, param_key, self.env.observation_shape)
        obs, env_state = self.env.reset_batch(jax.random.split(reset_key, self.config.num_envs))
        return State(params, optax.adam(hp.lr).init(params), env_state, obs, (), key,
                     loop.metric_buffers(METRICS, self.config.num_updates))

    def update(self, index, state: State, hp, meta_params) -> State:
        def env_step(carry, _):
            env_state, obs, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            action = jax.random.categorical(act_key, self.policy.apply(state.params, obs))
            env_state, ts = self.env.step_batch(jax.random.split(step_key, self.config.num_envs), env_state, action)
            return (env_state, ts.obs, key), (obs, action, ts.reward, ts.done, ts.info)

        (env_state, obs, key), (observations, actions, rewards, dones, info) = jax.lax.scan(
            env_step, (state.env_state, state.obs, state.key), None, length=self.config.num_steps)

        def reward_to_go(future, step):
            reward, done = step
            value = reward + hp.gamma * future * (1.0 - done)
            return value, value

        _, returns = jax.lax.scan(reward_to_go, jnp.zeros_like(rewards[0]), (rewards, dones.astype(jnp.float32)),
                                  reverse=True)

        def loss(params):
            log_probs = jax.nn.log_softmax(self.policy.apply(params, observations))
            taken = jnp.take_along_axis(log_probs, actions[..., None], axis=-1)[..., 0]
            return -(taken * (returns - returns.mean())).mean()

        policy_loss, grads = jax.value_and_grad(loss)(state.params)
        updates, opt_state = optax.adam(hp.lr).update(grads, state.opt_state, state.params)
        row = loop.episode_row(info["episode_done"], info["episode_return"], info["episode_length"])
        metrics = loop.record(state.metrics, index, row | {"policy_loss": policy_loss})
        return state._replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state,
                              env_state=env_state, obs=obs, key=key, metrics=metrics)

    def act(self, params, obs_stats, raw_obs, key=None, hp=None):
        logits = self.policy.apply(params, raw_obs)
        return jnp.argmax(logits, axis=-1) if key is None else jax.random.categorical(key, logits)


ENTRY = Algorithm("toy", "Toy REINFORCE", ToyConfig, ToyHyperParams, PRESETS, default_preset, ("mlp",),
                  ("policy_loss",), lambda config, network, objective, value_loss: Toy(config))
