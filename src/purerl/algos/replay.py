"""A pure ring replay buffer: a pytree of fixed-size arrays, so it lives inside one compiled program.

`add` writes a batch of transitions (one per env) over the oldest ones; `sample`
draws uniformly among the transitions written so far. Both are pure functions of
the buffer state, so the buffer vmaps over seeds and checkpoints with the run.
(flashbax does the same and more; this is the few lines DQN, SAC and TD3 need, without a dependency.)
`check_fits` refuses, before anything compiles, buffers the machine cannot hold for every member.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.algos import memory


class Buffer(NamedTuple):
    data: Any  # a pytree of arrays [capacity, ...]
    position: jax.Array  # index the next transition goes to
    size: jax.Array  # transitions stored (at most capacity)


def init(example: Any, capacity: int) -> Buffer:
    """An empty buffer for transitions shaped like `example` (one transition, no batch axis)."""
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example)
    return Buffer(data, jnp.int32(0), jnp.int32(0))


def capacity(buffer: Buffer) -> int:
    return jax.tree.leaves(buffer.data)[0].shape[0]


def add(buffer: Buffer, batch: Any) -> Buffer:
    """Write a batch of transitions [n, ...] over the oldest slots (n <= capacity)."""
    size = capacity(buffer)
    n = jax.tree.leaves(batch)[0].shape[0]
    slots = (buffer.position + jnp.arange(n)) % size
    data = jax.tree.map(lambda stored, new: stored.at[slots].set(new), buffer.data, batch)
    return Buffer(data, (buffer.position + n) % size, jnp.minimum(buffer.size + n, size))


def sample(buffer: Buffer, key: jax.Array, batch_size: int) -> Any:
    """`batch_size` transitions drawn uniformly, with replacement, from those stored."""
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda stored: stored[index], buffer.data)


PEAK_COPIES = 3  # a chunk's input state, its output (chunks do not donate their input) and a checkpoint's host copy


def check_fits(config, env, members: int, available: float | None = None) -> None:
    """One line before any compile when the members' replay buffers cannot fit this machine's memory at their
    peak, `PEAK_COPIES` copies of them (four bytes a number: observation, next observation, action, reward,
    termination). A replay learner's `Algorithm.check_memory`: `config.buffer_size` transitions per member, of
    `env`'s shapes."""
    per_transition = 4 * (2 * math.prod(env.observation_shape) + math.prod(env.action_space.shape) + 2)
    needed = PEAK_COPIES * per_transition * config.buffer_size * members
    memory.refuse_beyond(needed, f"{members} replay buffers of {config.buffer_size:,} transitions need {{gib}} at their "
                         f"peak ({PEAK_COPIES} copies)", "lower --buffer-size or the seeds", available)
