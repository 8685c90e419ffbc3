"""One JAX host device per CPU core, on by default.

XLA runs one CPU program on one device, and a population of small agents does
not fill several cores from one device. Splitting the host into one device per core
lets `population.Placement` shard the member axis over the cores: on the
2-core CI machine 64 CartPole seeds ran 1.8x faster (docs/benchmarks.md).
On a GPU the CPU devices are unused and this changes nothing.

PURERL_HOST_DEVICES=N picks the count (1 turns it off). An explicit
`--xla_force_host_platform_device_count` in XLA_FLAGS, or a `jax_num_cpu_devices`
the user already set, is left alone, and so is a JAX whose backends already
started (the count can no longer change).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from importlib.metadata import entry_points


# A bad PURERL_HOST_DEVICES cannot raise at import (the CLI could not turn it into its one-line error):
# it is kept here, the count falls back to one per core, and the CLI and `Placement` raise it.
PROBLEM: str | None = None
PER_CORE: bool = False  # `enable_default` chose the count itself, one device per core (nobody asked for one)


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def requested_count() -> int | None:
    """PURERL_HOST_DEVICES as a positive integer, None if unset; raises ValueError if it is not one."""
    value = os.environ.get("PURERL_HOST_DEVICES")
    if value is None:
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"PURERL_HOST_DEVICES must be a positive integer, got {value!r}")
    return int(value)


def enable_default() -> int | None:
    """Ask JAX for one CPU device per core (or PURERL_HOST_DEVICES) if nothing else decided; returns the
    count set, else None."""
    global PROBLEM, PER_CORE
    import jax

    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return None
    if jax.config.jax_num_cpu_devices != -1:
        return None
    try:
        requested = requested_count()
    except ValueError as error:
        PROBLEM, requested = str(error), None
    count = requested or cores()
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # backends already initialised by the caller
        return None
    PER_CORE = requested is None and PROBLEM is None
    return count


def one_core_for_one_member(members: int) -> bool:
    """Start JAX's CPU client sized for one core when a population has one member: one device, one pool thread.

    One agent is a chain of small dependent kernels, and a second pool thread only hands them from core to
    core (one CartPole agent on 2 cores ran 13-18% faster so; benchmarks/README.md, "one agent, one core").
    JAX sizes that pool by the task's CPU affinity, its one knob (jax-ml/jax#1539), so the affinity is
    narrowed while the client starts and then given back to every thread: nothing stays pinned, and runs
    side by side still spread over the cores. Only where `enable_default` chose one device per core (no
    PURERL_HOST_DEVICES, no XLA_FLAGS count) and no backend has started, on a CPU-only JAX; returns whether
    it did.
    """
    import jax

    if members != 1 or not PER_CORE or not hasattr(os, "sched_setaffinity") or not _cpu_only(jax):
        return False
    original = os.sched_getaffinity(0)
    if len(original) < 2:
        return False
    try:
        jax.config.update("jax_num_cpu_devices", 1)
    except RuntimeError:  # a backend already started
        return False
    os.sched_setaffinity(0, {min(original)})
    try:
        jax.devices()  # the CPU client starts now, its pool sized for one core
    finally:
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):  # a thread that has since ended
                os.sched_setaffinity(int(thread), original)
    return True


def _cpu_only(jax) -> bool:
    """No accelerator can start: JAX_PLATFORMS says cpu, or no GPU or TPU plugin is installed (narrowing the
    affinity while an accelerator's client starts would size its host threads too)."""
    platforms = jax.config.jax_platforms
    if platforms:
        return platforms == "cpu"
    return not entry_points(group="jax_plugins") and importlib.util.find_spec("libtpu") is None
