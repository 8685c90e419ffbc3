"""Whether a population fits this machine's memory, said in one line before anything compiles or is written: a lower
bound of what an algorithm's programs hold at once (`Algorithm.check_memory`, run by `TrainSpec.validate`), of an
evaluation's (`evaluation_fits`, run by `purerl eval` and by the evaluation at the end of training) and of an
evolution's (`meta.evolve.Evolution`, from its meta-task's `run_bytes`). Only a run that cannot fit is refused; one
that might is left to XLA."""

from __future__ import annotations

import math
import os

from purerl.checks import ConfigError

FRACTION = 0.8  # of the machine's memory: the rest is the process, JAX's runtime and the OS
BYTES = 4  # a float32 or int32 number
NUMBERS_PER_STEP = 10  # a rollout step's action, log-probability, reward, value, advantage, target, flags ...
KEY_BYTES = 8  # a threefry key: two uint32


def physical_bytes() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def refuse_beyond(needed: float, what: str, advice: str, available: float | None = None) -> None:
    """A `ConfigError` when `needed` bytes exceed this machine's share for a run; `what` says what needs them, with
    `{gib}` where the amount goes."""
    available = physical_bytes() if available is None else available
    if needed > FRACTION * available:
        raise ConfigError(f"{what.format(gib=f'{needed / 2**30:.1f} GiB')}, more than this machine's "
                          f"{available / 2**30:.1f} GiB can hold; {advice}")


def mlp_parameters(inputs: int, hidden: tuple[int, ...], outputs: int) -> int:
    """Weights and biases of an MLP with these layer widths."""
    widths = (inputs, *hidden, outputs)
    return sum(a * b + b for a, b in zip(widths, widths[1:]))


def _ppo_sizes(config, env) -> tuple[int, int, int]:
    """(PPO's actor and critic parameters, env steps an update, numbers an observation) for `config` on `env`."""
    obs = math.prod(env.observation_shape)
    space = env.action_space
    actions = space.num_actions if space.discrete else 2 * math.prod(space.shape)
    hidden = tuple(config.hidden_sizes)
    return mlp_parameters(obs, hidden, actions) + mlp_parameters(obs, hidden, 1), config.num_envs * config.num_steps, obs


def ppo_bytes(config, env) -> int:
    """One PPO member: its actor and critic with their gradients and Adam's two moments, and its update's batch (the
    observations, bootstrap observations and one shuffled copy, with the step's other numbers)."""
    parameters, steps, obs = _ppo_sizes(config, env)
    return BYTES * (4 * parameters + steps * (3 * obs + NUMBERS_PER_STEP))


def ppo_fits(config, env, members: int, available: float | None = None) -> None:
    """PPO's population: `ppo_bytes` per member."""
    parameters, steps, _ = _ppo_sizes(config, env)
    refuse_beyond(ppo_bytes(config, env) * members, f"{members:,} PPO members of {parameters:,} parameters and "
                  f"{steps:,} steps an update need at least {{gib}}", "lower --hidden-sizes, --num-envs, --num-steps or "
                  "the seeds", available)


def evaluation_fits(env, members: int, episodes: int, available: float | None = None) -> None:
    """An evaluation (`policy.play`): every member's episodes run side by side for the task's time limit, each with a
    key drawn up front for every step, held twice while they are laid out step by step (16 bytes a step, measured)."""
    steps = env.max_episode_steps
    refuse_beyond(2 * KEY_BYTES * steps * episodes * members, f"{members:,} member{'s' * (members != 1)} x "
                  f"{episodes:,} episodes of up to {steps:,} steps need at least {{gib}} for their keys",
                  "lower --episodes", available)
