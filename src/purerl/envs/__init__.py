"""Environment layer: `make(name)` returns a purerl `Env` with episode statistics."""

from __future__ import annotations

import difflib

from purerl.checks import ConfigError
from purerl.envs.core import ActionSpace, Env, GymnaxEnv, Timestep, narrower_observations
from purerl.envs.pomdp import MASKED, KeepObservation
from purerl.envs.wrappers import ClipAction, EpisodeStats, FlattenObservation

# Ids that need data from the internet, which gymnax downloads on construction.
_NEEDS_DOWNLOAD = {"MNISTBandit-bsuite": "it downloads MNIST when built"}


class UnknownEnvError(ConfigError):
    """An environment id that no registry knows."""


def available() -> list[str]:
    """Every id `make` accepts: the gymnax registry, purerl's masked (partially observable) gymnax
    tasks (`pomdp.MASKED`) and `brax:NAME` (needs purerl[brax])."""
    import gymnax

    from purerl.envs.brax import BRAX_ENVS

    return list(gymnax.registered_envs) + list(MASKED) + [f"brax:{name}" for name in BRAX_ENVS]


def check_name(name: str) -> None:
    """Raise `UnknownEnvError` with close matches, without building anything."""
    from purerl.envs import suites

    if suites.is_suite_id(name):  # navix:, xminigrid:, craftax:, jumanji: (optional extras)
        return suites.check(name)
    names = available()
    if name.startswith("brax:") and name in names:
        try:
            import brax  # noqa: F401
        except ImportError:
            raise UnknownEnvError(f"{name} needs Brax: pip install 'purerl[brax]'") from None
    if name in names:
        return
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"known ids: {', '.join(names)}"
    raise UnknownEnvError(f"unknown environment '{name}'; {hint}")


def make(name: str, max_episode_steps: int | None = None, **env_kwargs) -> Env:
    """Build an environment by id, with flat float observations and episode stats.

    gymnax ids build gymnax envs; the ids of `pomdp.MASKED` (such as `CartPole-NoVel-v1`, CartPole
    without its velocities) build a gymnax env that shows only some observation entries;
    `brax:NAME` builds a Brax env (kwargs: backend);
    `navix:`, `xminigrid:`, `craftax:` and `jumanji:` ids build those suites' envs (see `suites`).
    `max_episode_steps` replaces the env's time limit (for example CartPole capped
    at 200 steps, as in v0). Continuous action spaces also get `ClipAction`.
    """
    from purerl.envs import suites

    check_name(name)
    if suites.is_suite_id(name):
        return EpisodeStats(FlattenObservation(suites.make(name, max_episode_steps)))
    if name.startswith("brax:"):
        from purerl.envs.brax import BraxEnv

        if max_episode_steps is not None:
            env_kwargs["episode_length"] = max_episode_steps
        return EpisodeStats(ClipAction(BraxEnv(name.removeprefix("brax:"), **env_kwargs)))
    if name in MASKED:
        base, indices = MASKED[name]
        return EpisodeStats(KeepObservation(_gymnax(base, max_episode_steps, env_kwargs), indices, name))
    return EpisodeStats(_gymnax(name, max_episode_steps, env_kwargs))


def _gymnax(name: str, max_episode_steps: int | None, env_kwargs: dict) -> Env:
    """A gymnax env with flat float observations (and clipped actions if continuous), without episode stats."""
    import gymnax

    try:
        gymnax_env, params = gymnax.make(name, **env_kwargs)
    except OSError as error:  # urllib errors subclass OSError
        reason = _NEEDS_DOWNLOAD.get(name, "it could not be built")
        raise UnknownEnvError(f"environment '{name}' is unavailable: {reason} ({error})") from error
    if max_episode_steps is not None:
        params = params.replace(max_steps_in_episode=max_episode_steps)
    env: Env = FlattenObservation(GymnaxEnv(name, gymnax_env, params))
    return env if env.action_space.discrete else ClipAction(env)


__all__ = [
    "ClipAction",
    "EpisodeStats",
    "FlattenObservation",
    "GymnaxEnv",
    "KeepObservation",
    "ActionSpace",
    "Env",
    "Timestep",
    "UnknownEnvError",
    "available",
    "check_name",
    "make",
    "narrower_observations",
]
