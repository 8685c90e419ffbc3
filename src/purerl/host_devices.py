"""One JAX host device per CPU core, on by default.

XLA runs one CPU program on one device, and a population of small agents does
not fill several cores from one device (shared NOTES: 64 seeds vmapped reach
only ~1.2x the steps/s of one). Splitting the host into one device per core
lets `population.Placement` shard the member axis over the cores: on the
2-core CI machine 64 CartPole seeds ran 1.8x faster (docs/benchmarks.md).
On a GPU the CPU devices are unused and this changes nothing.

PURERL_HOST_DEVICES=N picks the count (1 turns it off). An explicit
`--xla_force_host_platform_device_count` in XLA_FLAGS, or a `jax_num_cpu_devices`
the user already set, is left alone, and so is a JAX whose backends already
started (the count can no longer change).
"""

from __future__ import annotations

import os


# A bad PURERL_HOST_DEVICES cannot raise at import (the CLI could not turn it into its one-line error):
# it is kept here, the count falls back to one per core, and the CLI and `Placement` raise it.
PROBLEM: str | None = None


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
    global PROBLEM
    import jax

    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return None
    if jax.config.jax_num_cpu_devices != -1:
        return None
    try:
        count = requested_count() or cores()
    except ValueError as error:
        PROBLEM, count = str(error), cores()
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # backends already initialised by the caller
        return None
    return count
