"""Whether a population fits this machine's memory, said in one line before anything compiles or is written: a lower
bound of what an algorithm's programs hold at once (`Algorithm.check_memory`, run by `TrainSpec.validate`). Only a
run that cannot fit is refused; one that might is left to XLA."""

from __future__ import annotations

import math
import os

from purerl.checks import ConfigError

FRACTION = 0.8  # of the machine's memory: the rest is the process, JAX's runtime and the OS
BYTES = 4  # a float32 or int32 number
NUMBERS_PER_STEP = 10  # a rollout step's action, log-probability, reward, value, advantage, target, flags ...


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


def ppo_fits(config, env, members: int, available: float | None = None) -> None:
    """PPO: each member's actor and critic with their gradients and Adam's two moments, and its update's batch (the
    observations, bootstrap observations and one shuffled copy, with the step's other numbers)."""
    obs = math.prod(env.observation_shape)
    space = env.action_space
    actions = space.num_actions if space.discrete else 2 * math.prod(space.shape)
    hidden = tuple(config.hidden_sizes)
    parameters = mlp_parameters(obs, hidden, actions) + mlp_parameters(obs, hidden, 1)
    steps = config.num_envs * config.num_steps
    per_member = BYTES * (4 * parameters + steps * (3 * obs + NUMBERS_PER_STEP))
    refuse_beyond(per_member * members, f"{members:,} PPO members of {parameters:,} parameters and {steps:,} steps "
                  "an update need at least {gib}", "lower --hidden-sizes, --num-envs, --num-steps or the seeds", available)
