"""Other JAX environment suites, as optional extras: `navix:`, `xminigrid:`, `craftax:`, `jumanji:` ids.

Each suite has its own step API and its own way of ending episodes (navix and XLand-MiniGrid
reset one step late, Craftax and Jumanji not at all, and each marks a time limit differently).
`SuiteEnv.step` gives them all purerl's contract: the reset happens inside the step, a
time limit is `truncated` and never `terminated`, and `final_obs` is the observation the step
reached before the reset, so PPO bootstraps from it after a truncation.
"""

from __future__ import annotations

import difflib
import importlib.util

import jax
import jax.numpy as jnp

from purerl.checks import ConfigError
from purerl.envs.core import ActionSpace, Env, Timestep



def is_suite_id(name: str) -> bool:
    return name.partition(":")[0] in SUITES


def check(name: str) -> None:
    """One line naming the extra to install, or the suite's close matches, before anything is built."""
    prefix, _, task = name.partition(":")
    suite = SUITES[prefix]
    if importlib.util.find_spec(suite.module) is None:
        raise ConfigError(f"{name} needs {suite.module}: pip install 'purerl[{prefix}]'")
    known = suite.task_ids()
    if task not in known:
        close = difflib.get_close_matches(task, known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(f'{prefix}:{c}' for c in close)}?" if close else f"known: {', '.join(known)}"
        raise ConfigError(f"unknown {prefix} environment '{task}'; {hint}")


def make(name: str, max_episode_steps: int | None = None) -> Env:
    check(name)
    prefix, _, task = name.partition(":")
    return SUITES[prefix](name, task, max_episode_steps)


class SuiteEnv(Env):
    """A suite env under purerl's contract. Subclasses name the package they need (`module`, also the extra's
    name) and the task ids it offers (`task_ids`), and give `_reset(key) -> (obs, inner)` and
    `_step(key, inner, action) -> (inner, obs, reward, terminated, truncated)`, neither resetting.

    `envs_per_reset` > 1 makes a vmapped `step` build one fresh state per that many envs instead of one per
    env, and hand them to the envs that ended this step, the k-th to end taking fresh state k modulo their
    number. That is for suites whose reset costs many steps (Craftax generates a world). Envs that end together
    beyond the pool's size share a start, whose play then diverges with their own keys; Craftax's baseline PPO
    (Craftax_Baselines' `OptimisticResetVecEnvWrapper`, reset ratio 16) makes the same trade. The batch rule is a
    `custom_vmap`, so it applies however the wrappers above vmap `step`; an unbatched `step` resets exactly.
    """

    module: str
    envs_per_reset = 1

    @staticmethod
    def task_ids() -> list[str]:
        """The ids the suite accepts after its prefix (it is installed)."""
        raise NotImplementedError

    def _init_spaces(self, num_actions: int) -> None:
        obs = jax.eval_shape(lambda key: self._reset(key)[0], jax.random.PRNGKey(0))
        self.observation_shape = tuple(obs.shape)
        self.action_space = ActionSpace(discrete=True, num_actions=int(num_actions))

    def reset(self, key):
        return self._reset(key)

    def step(self, key, state, action):
        if self.envs_per_reset == 1:
            return self._exact_step(key, state, action)
        pooled = jax.custom_batching.custom_vmap(self._exact_step)
        pooled.def_vmap(self._pooled_step_batch)
        return pooled(key, state, action)

    def _exact_step(self, key, state, action):
        step_key, reset_key = jax.random.split(key)
        return self._finish(*self._reset(reset_key), *self._step(step_key, state, action))

    def _pooled_step_batch(self, axis_size, in_batched, keys, states, actions):
        keys, states, actions = jax.tree.map(
            lambda x, batched: x if batched else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))),
            (keys, states, actions), tuple(in_batched))
        step_keys, reset_keys = jnp.unstack(jax.vmap(jax.random.split)(keys), axis=1)
        inner, obs, reward, terminated, truncated = jax.vmap(self._step)(step_keys, states, actions)
        pool = max(1, axis_size // self.envs_per_reset)
        fresh = jax.vmap(self._reset)(reset_keys[:pool])
        done = jnp.logical_or(jnp.asarray(terminated, bool), jnp.asarray(truncated, bool))
        slot = (jnp.cumsum(done) - 1) % pool
        reset_obs, reset_inner = jax.tree.map(lambda x: x[slot], fresh)
        out = jax.vmap(self._finish)(reset_obs, reset_inner, inner, obs, reward, terminated, truncated)
        return out, jax.tree.map(lambda _: True, out)

    @staticmethod
    def _finish(reset_obs, reset_inner, inner, obs, reward, terminated, truncated):
        """One env's step under purerl's contract: a time limit is never a termination, and an ended env
        continues from its fresh state while `final_obs` keeps what the step reached."""
        terminated = jnp.asarray(terminated, bool)
        truncated = jnp.logical_and(jnp.asarray(truncated, bool), jnp.logical_not(terminated))
        done = jnp.logical_or(terminated, truncated)
        keep_dtype = lambda fresh, old: jnp.where(done, fresh, old).astype(old.dtype)  # noqa: E731
        timestep = Timestep(obs=keep_dtype(reset_obs, obs), reward=jnp.asarray(reward, jnp.float32),
                            terminated=terminated, truncated=truncated, final_obs=obs, info={})
        return jax.tree.map(keep_dtype, reset_inner, inner), timestep


class Navix(SuiteEnv):
    """navix MiniGrid: its timestep's `step_type` is 1 for a time limit and 2 for a real end."""

    module = "navix"

    @staticmethod
    def task_ids():
        import navix

        return list(navix.registry())

    def __init__(self, name, task, max_episode_steps):
        import navix

        self.name, self.navix = name, navix.make(task, **({"max_steps": max_episode_steps} if max_episode_steps else {}))
        self.max_episode_steps = int(self.navix.max_steps)
        self._init_spaces(int(self.navix.action_space.maximum) + 1)

    def _reset(self, key):
        timestep = self.navix.reset(key)
        return timestep.observation, timestep

    def _step(self, key, timestep, action):
        stepped = self.navix.step(timestep, action)  # never given an ended timestep, so it never resets itself
        return stepped, stepped.observation, stepped.reward, stepped.step_type == 2, stepped.step_type == 1


class XMiniGrid(SuiteEnv):
    """XLand-MiniGrid: a last step with discount 0 is a real end, with discount 1 a time limit."""

    module = "xminigrid"

    @staticmethod
    def task_ids():  # XLand tasks need a downloaded benchmark of rules; the MiniGrid ports do not
        import xminigrid

        return [name for name in xminigrid.registered_environments() if name.startswith("MiniGrid-")]

    def __init__(self, name, task, max_episode_steps):
        import xminigrid

        self.name = name
        self.env, self.params = xminigrid.make(task)
        if max_episode_steps:
            self.params = self.params.replace(max_steps=max_episode_steps)
        self.max_episode_steps = int(self.params.max_steps)
        self._init_spaces(self.env.num_actions(self.params))

    def _reset(self, key):
        timestep = self.env.reset(self.params, key)
        return timestep.observation, timestep

    def _step(self, key, timestep, action):
        stepped = self.env.step(self.params, timestep, action)
        last = stepped.last()
        return stepped, stepped.observation, stepped.reward, last & (stepped.discount == 0), last & (stepped.discount != 0)


class Craftax(SuiteEnv):
    """Craftax (symbolic observations), built without its own auto-reset. Its `done` mixes death and the
    time limit; here the time limit alone is a truncation. Its world generation is pooled (`envs_per_reset`)."""

    module = "craftax"
    envs_per_reset = 16

    @staticmethod
    def task_ids():
        return ["Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1"]

    def __init__(self, name, task, max_episode_steps):
        from craftax.craftax_env import make_craftax_env_from_name

        self.name = name
        self.env = make_craftax_env_from_name(task, auto_reset=False)
        self.params = self.env.default_params
        if max_episode_steps:
            self.params = self.params.replace(max_timesteps=max_episode_steps)
        self.max_episode_steps = int(self.params.max_timesteps)
        self._init_spaces(self.env.num_actions)

    def _reset(self, key):
        obs, state = self.env.reset_env(key, self.params)
        return obs, state

    def _step(self, key, state, action):
        obs, state, reward, done, _ = self.env.step_env(key, state, action, self.params)
        time_up = state.timestep >= self.params.max_timesteps
        ended_by_play = state.player_health <= 0
        return state, obs, reward, done & (ended_by_play | ~time_up), done & time_up


class Jumanji(SuiteEnv):
    """Jumanji: purerl keeps the time limit itself, with its own step counter, and gives Jumanji's env one step
    more. Most tasks (Snake among them) end a time limit with discount 0, as they end a death, so a snake that
    dies on the limit's step would read as a time limit; with Jumanji's own limit out of reach, its last step
    is a real end (discount 0) or the task's own truncation (discount 1), and purerl's counter is the limit.
    The observation's arrays (grid, counters, action mask) are flattened and joined into one vector."""

    module = "jumanji"

    @staticmethod
    def task_ids():
        import jumanji

        return list(jumanji.registered_environments())

    def __init__(self, name, task, max_episode_steps):
        import jumanji
        import jumanji.specs

        self.name = name
        try:
            limit = max_episode_steps or getattr(jumanji.make(task), "time_limit", 0) or 0
            self.env = jumanji.make(task, **({"time_limit": limit + 1} if limit else {}))
        except TypeError:
            raise ConfigError(f"{name} takes no time limit; leave out max_episode_steps") from None
        spec = self.env.action_spec
        if not isinstance(spec, jumanji.specs.DiscreteArray):
            raise ConfigError(f"{name} has a {type(spec).__name__} action space; purerl's PPO takes one discrete action")
        self.max_episode_steps = int(limit)
        self._init_spaces(spec.num_values)

    def _reset(self, key):
        state, timestep = self.env.reset(key)
        return _flat(timestep.observation), (state, jnp.zeros((), jnp.int32))

    def _step(self, key, state, action):
        state, steps = state
        state, timestep = self.env.step(state, action)
        steps = steps + 1
        last = timestep.last()
        terminated = last & (timestep.discount == 0)
        truncated = (last & ~terminated) | (steps >= self.max_episode_steps if self.max_episode_steps else False)
        return (state, steps), _flat(timestep.observation), timestep.reward, terminated, truncated


def _flat(observation) -> jax.Array:
    return jnp.concatenate([jnp.ravel(jnp.asarray(leaf, jnp.float32)) for leaf in jax.tree.leaves(observation)])


SUITES = {"navix": Navix, "xminigrid": XMiniGrid, "craftax": Craftax, "jumanji": Jumanji}  # id prefix: suite
