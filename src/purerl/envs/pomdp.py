"""Partially observable versions of gymnax tasks: purerl ids whose observations keep only some entries.

Hiding part of a familiar task's observation is the standard test of an agent's memory. CartPole
with the velocities hidden (POPGym's "StatelessCartPole") shows only the cart position and the
pole angle: a feed-forward policy sees no motion and cannot balance for long, while a recurrent
one (`--network gru`) can infer the velocities from successive observations. The task is otherwise
the gymnax one (dynamics, rewards, time limit), so a return is comparable with the full task's.
"""

from __future__ import annotations

import numpy as np

from purerl.checks import ConfigError
from purerl.envs.core import Env
from purerl.envs.wrappers import Wrapper

# purerl id: (the gymnax id it is built from, the indices of the flat observation the agent sees).
# One line per task; `envs.make`, `envs.check_name` and `envs.available` read this table.
MASKED: dict[str, tuple[str, tuple[int, ...]]] = {
    "CartPole-NoVel-v1": ("CartPole-v1", (0, 2)),  # gymnax observes (x, x_dot, theta, theta_dot): keep x, theta
}


class KeepObservation(Wrapper):
    """Keeps the entries `indices` of a flat observation, in `obs` and `final_obs` alike.

    Everything else (rewards, termination, truncation, the time limit) is the wrapped env's,
    so the masked task differs from the full one only in what the agent sees.
    """

    def __init__(self, env: Env, indices: tuple[int, ...], name: str | None = None):
        if len(env.observation_shape) != 1:
            raise ConfigError(f"KeepObservation needs flat observations; {env.name} has {env.observation_shape}")
        size = env.observation_shape[0]
        if not indices or len(set(indices)) != len(indices) or not all(0 <= i < size for i in indices):
            raise ConfigError(f"observation indices must be distinct and in [0, {size}), got {tuple(indices)}")
        super().__init__(env)
        self.indices = tuple(int(i) for i in indices)
        self._take = np.asarray(self.indices)
        self.name = name or env.name
        self.observation_shape = (len(self.indices),)

    @property
    def raw_observation_shape(self) -> tuple[int, ...]:
        return self.observation_shape  # the masked task's own observation, not the full one it hides

    def keep(self, obs):
        """The agent's view of flat observations (any leading axes)."""
        return obs[..., self._take]

    def reset(self, key):
        obs, state = self.env.reset(key)
        return self.keep(obs), state

    def step(self, key, state, action):
        state, ts = self.env.step(key, state, action)
        return state, ts._replace(obs=self.keep(ts.obs), final_obs=self.keep(ts.final_obs))
