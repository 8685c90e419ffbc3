"""The rollout every agent shares, after Brax's `acting.py`: act in every env, step them all, scan that over time.

PPO's and PQN's rollouts, DQN's and the off-policy actor-critics' steps between gradient steps, and the
evaluation of a trained policy (`run/policy.py`) are all `unroll` over `actor_step`; each brings its own `act`
(PPO samples its policy through the network's memory, DQN and PQN act epsilon-greedily, SAC and TD3 explore or
act at random before learning starts, evaluation acts greedily or by sampling) and its own use of the step (a
transition kept for GAE, a replay insert and gradient steps, a running return).

Keys are drawn in one order everywhere: the action's before the envs' step keys, so a rollout is the same program
whichever algorithm runs it.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax


class Step(NamedTuple):
    """What one step of every env gives its rollout: the envs' new state, the action taken in each (as the agent
    chose it, before any `to_env`), their `envs.TimeStep`, and what `act` returned beside the action."""

    env_state: Any
    action: jax.Array
    timestep: Any
    extras: Any


def actor_step(env, env_state, act: Callable, act_key: jax.Array | None, step_key: jax.Array,
               num_envs: int | None = None, to_env: Callable | None = None) -> Step:
    """One step of every env: `act(act_key) -> (action, extras)`, then `env.step_batch`.

    `step_key` is split into `num_envs` keys, one per env, after the action is drawn; with `num_envs=None` it is
    already those keys (evaluation draws every step's keys up front). `to_env` maps the agent's action to the
    env's (a squashed action to the env's bounds); the step keeps the agent's.
    """
    action, extras = act(act_key)
    step_keys = step_key if num_envs is None else jax.random.split(step_key, num_envs)
    env_state, timestep = env.step_batch(step_keys, env_state, action if to_env is None else to_env(action))
    return Step(env_state, action, timestep, extras)


def unroll(step: Callable, carry, steps: int | None = None, xs=None, unroll: int = 1):
    """`step(carry, x) -> (carry, record)` for `steps` steps (or along `xs`), in one `lax.scan`: the final carry and
    every step's record, time-major. `unroll` steps per loop iteration: the same numbers, and on a GPU fewer kernel
    launches (`--rollout-unroll`)."""
    return jax.lax.scan(step, carry, xs, length=steps, unroll=unroll)
