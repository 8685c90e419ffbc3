"""Run one train function over a population of seeds x hyperparameter settings.

The grid is flattened to one leading member axis and vmapped, so the whole
population is one compiled program. Member i's key depends only on its seed, so a
seed gives the same run alone or inside any batch, and a hyperparameter grid
shares seeds across its settings (common random numbers).

`Placement` spreads that member axis over every device of every process with a
`Mesh` and `NamedSharding` (JAX's own machinery, no scheduler): a population
that does not divide evenly is padded with copies of its last member, and the
padding is dropped when results come back to the host.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from purerl.runtime import host_devices
from purerl.algos.ppo_config import HyperParams
from purerl.checks import MAX_MEMBERS, ConfigError


@dataclass(frozen=True)
class Members:
    """The flattened population: per member a seed and one value per hyperparameter."""

    seeds: tuple[int, ...]
    hyperparams: HyperParams  # leaves are float arrays of shape [N]
    swept: tuple[str, ...]  # names of the hyperparameters that vary

    def __len__(self) -> int:
        return len(self.seeds)

    def keys(self) -> jax.Array:
        return jax.vmap(jax.random.PRNGKey)(jnp.asarray(self.seeds, jnp.uint32))

    def setting(self, i: int) -> dict[str, float]:
        """The swept hyperparameter values of member i."""
        return {name: float(getattr(self.hyperparams, name)[i]) for name in self.swept}

    def setting_label(self, i: int) -> str:
        """Shortest text that round-trips the float32 value, so distinct settings never share a label."""
        values = {name: getattr(self.hyperparams, name)[i] for name in self.swept}
        return ",".join(f"{k}={np.float32(v)!s}" for k, v in values.items()) or "default"

    def label(self, i: int) -> str:
        prefix = self.setting_label(i) + "," if self.swept else ""
        return f"{prefix}seed={self.seeds[i]}"

    def groups(self) -> dict[str, list[int]]:
        """Member indices per hyperparameter setting (the seeds of one setting)."""
        out: dict[str, list[int]] = {}
        for i in range(len(self)):
            out.setdefault(self.setting_label(i), []).append(i)
        return out


def make_members(seeds: list[int], base: HyperParams, grid: dict[str, list[float]] | None = None) -> Members:
    """Cartesian product of the grid values, each with every seed: a population as one member axis.

    A grid from Python, trained as one program without a run directory (`purerl.run` writes one):

        members = make_members([0, 1, 2], HyperParams(), {"lr": [1e-3, 2.5e-4]})   # 6 members
        train = jax.jit(jax.vmap(make_train(PPOConfig())))
        result = train(members.keys(), members.hyperparams.as_arrays())
        for i in range(len(members)):
            members.label(i)   # "lr=0.001,seed=0", ...: row i of every result array

    `members.groups()` gives the member indices of each setting (its seeds)."""
    if not seeds:
        raise ConfigError("need at least one seed")
    if any(s < 0 for s in seeds):
        raise ConfigError(f"seeds must be non-negative, got {min(seeds)}")
    if max(seeds) > 2**32 - 1:  # a seed is one uint32 PRNG key
        raise ConfigError(f"seeds must be at most {2**32 - 1}, got {max(seeds)}")
    if len(set(seeds)) < len(seeds):
        twice = next(s for i, s in enumerate(seeds) if s in seeds[:i])
        raise ConfigError(f"seed {twice} is given twice; each member needs its own seed")
    fields = type(base)._fields  # PPO's HyperParams or another algorithm's
    check_sweepable(grid or {}, fields)  # every name, before one-value entries (which sweep nothing) are left out
    grid = {k: list(v) for k, v in (grid or {}).items() if len(v) > 1}
    size = len(seeds) * math.prod(len(v) for v in grid.values())
    if size > MAX_MEMBERS:
        raise ConfigError(f"{size:,} members (seeds x grid settings) is more than {MAX_MEMBERS:,}")
    for name in grid:
        base._replace(**{name: grid[name]}).validate()  # as given: float32 would turn 1e39 into inf first
    rows, member_seeds = [], []
    for values in itertools.product(*grid.values()):
        setting = base._replace(**dict(zip(grid, values)))
        for seed in seeds:
            rows.append(setting)
            member_seeds.append(seed)
    hyperparams = type(base)(*(np.asarray(column, np.float32) for column in zip(*rows)))
    hyperparams.validate()
    return Members(tuple(member_seeds), hyperparams, tuple(grid))


def check_sweepable(names, fields) -> None:
    """A grid may name only hyperparameters (`fields`): any other name would be dropped, not swept."""
    for name in names:
        if name not in fields:
            raise ConfigError(f"cannot sweep '{name}'; sweepable: {', '.join(fields)}")


class Placement:
    """Where a population's members live: their leading axis split over all devices (all processes)."""

    def __init__(self, devices=None):
        if host_devices.PROBLEM:
            raise ConfigError(host_devices.PROBLEM)
        self.devices = list(devices if devices is not None else jax.devices())
        self.mesh = Mesh(np.array(self.devices), ("members",))
        self.sharding = NamedSharding(self.mesh, PartitionSpec("members"))
        self.replicated = NamedSharding(self.mesh, PartitionSpec())

    @classmethod
    def for_members(cls, n: int) -> Placement:
        """All devices, but in a single process never more devices than members (no idle padded copies)."""
        devices = jax.devices()
        return cls(devices if jax.process_count() > 1 else devices[:max(1, min(n, len(devices)))])

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    def padded(self, n: int) -> int:
        return math.ceil(n / self.num_devices) * self.num_devices

    def put(self, tree):
        """Host arrays with a leading member axis -> global arrays sharded over the devices (padded)."""

        def place(x):
            x = np.asarray(x)
            missing = self.padded(x.shape[0]) - x.shape[0]
            if missing:
                x = np.concatenate([x, np.repeat(x[-1:], missing, axis=0)])
            return jax.make_array_from_callback(x.shape, self.sharding, lambda index: x[index])

        return jax.tree.map(place, tree)

    def get(self, tree, n: int):
        """Global arrays -> host numpy arrays of the first `n` members, on every process."""

        def fetch(x):
            if jax.process_count() > 1 and not x.is_fully_addressable:
                x = multihost_utils.process_allgather(x, tiled=True)
            return np.asarray(x)[:n]

        return jax.tree.map(fetch, tree)


def vmapped(train, placement: Placement):
    """The population versions of a train function's `init` and `run`, jitted with members sharded.

    Fixing the shardings (rather than letting XLA infer them) keeps every chunk's state on the
    same layout, so one compiled `run` serves the whole training. On CPU devices the members of
    each device run `train.config.cpu_group` at a time (see `batched`).
    """
    group = train.config.cpu_group
    return (batched(train.init, placement, num_member_args=2, cpu_group=group),
            batched(train.run, placement, 3, num_member_args=2, cpu_group=group))


def _per_device(program, placement: Placement, num_member_args: int, num_shared_args: int):
    """`program(*member_args, *shared)` run by each device on its own members (`shard_map`), jitted."""
    members, shared = PartitionSpec("members"), PartitionSpec()
    # check_vma=False: a member's code may build fresh constants (a re-initialised opponent) in one
    # branch of a cond; they are per-member values all the same.
    return jax.jit(jax.shard_map(program, mesh=placement.mesh,
                                 in_specs=(members,) * num_member_args + (shared,) * num_shared_args,
                                 out_specs=members, check_vma=False),
                   in_shardings=(placement.sharding,) * num_member_args + (placement.replicated,) * num_shared_args,
                   out_shardings=placement.sharding)


def one_by_one(fn, placement: Placement, num_shared_args: int = 0):
    """`fn(member, *shared)` over the member axis, jitted: the members are sharded over the
    devices and each device runs its own one after another (`lax.map`).

    For programs that branch on state shared inside one member (a `lax.cond`), which
    `vmap` would turn into a select that runs both branches every time.
    """

    def per_device(tree, *args):
        return jax.lax.map(lambda member: fn(member, *args), tree)

    return _per_device(per_device, placement, 1, num_shared_args)


def in_groups(fn, group: int, num_member_args: int = 1):
    """`vmap(fn)` over the leading axis of the first `num_member_args` arguments (the rest shared), run at
    most `group` members at a time, the groups (as equal as possible) one after another."""

    def program(*args):
        member_args, shared = args[:num_member_args], args[num_member_args:]
        count = jax.tree.leaves(member_args)[0].shape[0]
        if count <= group:
            return jax.vmap(lambda *member: fn(*member, *shared))(*member_args)
        size = math.ceil(count / math.ceil(count / group))
        return jax.lax.map(lambda member: fn(*member, *shared), member_args, batch_size=size)

    return program


def batched(fn, placement: Placement, num_shared_args: int = 0, num_member_args: int = 1, cpu_group: int = 0):
    """`fn(*member_args, *shared)` vmapped over the member axis and jitted, the members sharded over the devices.

    With `cpu_group` > 0, a CPU device runs its members that many at a time (`in_groups`). A core is
    fastest on a few small agents vmapped together: one is all kernel launches, many outgrow its caches
    (32 CartPole agents ran 15-20% faster in groups of 8, benchmarks/README.md). A GPU wants them all.
    Grouping changes float rounding, as any batch size does, so the group is part of a run's config.
    """
    group = cpu_group if placement.devices[0].platform == "cpu" else 0
    if group:
        return _per_device(in_groups(fn, group, num_member_args), placement, num_member_args, num_shared_args)
    in_axes = (0,) * num_member_args + (None,) * num_shared_args
    return jax.jit(jax.vmap(fn, in_axes=in_axes),
                   in_shardings=(placement.sharding,) * num_member_args + (placement.replicated,) * num_shared_args,
                   out_shardings=placement.sharding)
