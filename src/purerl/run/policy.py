"""Trained policies from a run directory: act in Python, evaluate greedily, render a GIF."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from purerl.run import files, rundir
from purerl.config import ConfigError


class Policy:
    """A trained member of a run. `policy(obs)` is the greedy action; `policy.sample(key, obs)` samples.

    Observations are raw environment observations (any leading batch axes); the
    run's observation normaliser is applied inside.
    """

    def __init__(self, train, params, obs_stats, label: str):
        self.train = train
        self.env = train.env
        self.params = params
        self.obs_stats = obs_stats
        self.label = label
        self._greedy = jax.jit(lambda obs: train.act(params, obs_stats, self._flat(obs)))
        self._sample = jax.jit(lambda key, obs: train.act(params, obs_stats, self._flat(obs), key))

    def _flat(self, obs):
        obs = jnp.asarray(obs, jnp.float32)
        size = self.env.observation_shape[0]
        return obs.reshape(obs.shape[: obs.ndim - len(self.env.raw_observation_shape)] + (size,))

    def __call__(self, obs) -> np.ndarray:
        return np.asarray(self._greedy(obs))

    def sample(self, key: jax.Array, obs) -> np.ndarray:
        return np.asarray(self._sample(key, obs))


def load_run(run_dir: Path) -> tuple[Any, Any, Any, Any]:
    """(spec, members, train fn, restored runner state of every member) of a run directory."""
    from purerl.run.checkpoint import Checkpointer
    from purerl.run.rerun import load_spec

    run_dir = Path(run_dir)
    if not (run_dir / rundir.CONFIG).exists():
        raise ConfigError(f"{run_dir} is not a purerl run directory (no {rundir.CONFIG})")
    config = rundir.read_config(run_dir)
    if config.get("command") != "train":
        raise ConfigError(f"{run_dir} is a purerl {config.get('command', 'unknown')} run; this needs a run of purerl train")
    spec = load_spec(run_dir, "eval")  # members in the order they were trained in
    members = spec.validate()
    train = spec.build()
    if not (run_dir / rundir.CHECKPOINT).is_dir():  # checked first: the Checkpointer would create the folder
        raise ConfigError(f"{run_dir} has no checkpoint yet")
    checkpointer = Checkpointer(run_dir / rundir.CHECKPOINT)
    if checkpointer.latest() is None:
        checkpointer.close()
        raise ConfigError(f"{run_dir} has no checkpoint yet")
    if spec.pbt is None:
        like = jax.eval_shape(jax.vmap(train.init), members.keys(), members.hyperparams.as_arrays())
    else:  # a PBT population: the runner state travels with its hyperparameters and lineage
        from purerl.run import pbt

        like = pbt.like(train, members, spec.pbt)
    state, _ = checkpointer.restore(like)
    checkpointer.close()
    return spec, members, train, state if spec.pbt is None else state.train


def load(run_dir: str | Path, member: int = 0) -> Policy:
    """The policy of one member (default the first) of a finished or checkpointed run."""
    spec, members, train, state = load_run(Path(run_dir))
    if not 0 <= member < len(members):
        raise ConfigError(f"member must be in [0, {len(members) - 1}], got {member}")
    pick = lambda tree: jax.tree.map(lambda x: x[member], tree)  # noqa: E731
    return Policy(train, pick(state.params), pick(state.obs_stats), members.label(member))


def evaluate(train, params, obs_stats, key: jax.Array, episodes: int) -> jax.Array:
    """Returns of `episodes` greedy episodes run in parallel (one per env instance)."""
    env = train.env

    def one_episode(key):
        reset_key, key = jax.random.split(key)
        obs, env_state = env.reset(reset_key)

        def step(carry, step_key):
            obs, env_state, total, alive = carry
            action = train.act(params, obs_stats, obs)
            env_state, ts = env.step(step_key, env_state, action)
            total = total + jnp.where(alive, ts.reward, 0.0)
            return (ts.obs, env_state, total, alive & ~ts.done), None

        carry = (obs, env_state, jnp.float32(0.0), jnp.bool_(True))
        (_, _, total, _), _ = jax.lax.scan(step, carry, jax.random.split(key, env.max_episode_steps))
        return total

    return jax.vmap(one_episode)(jax.random.split(key, episodes))


def check_gif(path: Path, env) -> None:
    """Refuse, before anything is evaluated, a GIF that `render_gif` could not make or write."""
    import importlib.util

    if path.suffix != ".gif":
        raise ConfigError(f"--gif must name a .gif file, got {path}")
    if path.is_dir():
        raise ConfigError(f"--gif {path} is a folder")
    rundir.check_writable(path.parent)
    missing = [m for m in ("pygame", "gymnax") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"--gif needs {missing[0]}; install it with pip install 'purerl[render]'")
    if not hasattr(env, "gymnax_env"):
        raise ConfigError(f"--gif draws gymnax tasks with gymnax's visualiser; {env.name} is not one")


def render_gif(policy: Policy, path: Path, seed: int = 0) -> Path:
    """Animate one greedy episode with gymnax's visualiser (one frame per state, the return so far on each)."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # no banner on stdout
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")  # no sound device needed (or complained about)
    try:
        import pygame  # noqa: F401  (gymnasium's classic-control renderer needs it)
        from gymnax.visualize import Visualizer
    except ModuleNotFoundError as error:
        raise ConfigError(f"--gif needs {error.name}; install it with pip install 'purerl[render]'") from None

    env = policy.env
    gymnax_env = env.gymnax_env
    keep = getattr(env, "keep", None)  # a masked task (`envs.pomdp`) shows the agent part of the flat observation
    key = jax.random.PRNGKey(seed)
    obs, state = gymnax_env.reset(key, env.params)
    states, rewards = [state], [0.0]
    for _ in range(env.max_episode_steps):
        key, step_key = jax.random.split(key)
        action = policy(np.asarray(obs) if keep is None else keep(np.ravel(obs)))
        obs, state, reward, terminated, truncated, _ = gymnax_env.step(step_key, state, action, env.params)
        if bool(terminated) or bool(truncated):
            break
        states.append(state)
        rewards.append(float(reward))
    path.parent.mkdir(parents=True, exist_ok=True)
    with files.temporary(path) as tmp:
        Visualizer(gymnax_env, env.params, states, np.cumsum(rewards)).animate(str(tmp))
    return path
