"""Runs over several processes (hosts): joining them, waiting for all of them, and which one writes.

A single-process run (the usual one) passes through each of these unchanged.
"""

from __future__ import annotations

import os

import jax
from jax.experimental import multihost_utils


def barrier(name: str) -> None:
    """Wait for every process (a no-op in a single-process run)."""
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def is_writer() -> bool:
    """Only process 0 writes results and checkpoints."""
    return jax.process_index() == 0


def initialize_distributed(coordinator: str | None, num_processes: int | None, process_id: int | None) -> bool:
    """Join a multi-process run (flags, or a cluster launcher's environment such as SLURM's). Returns True if joined.

    On CPU the processes exchange data through gloo collectives.
    """
    launched = coordinator or any(v in os.environ for v in ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "JAX_COORDINATOR_ADDRESS"))
    if not launched:
        return False
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # used only by CPU devices
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)
    return True
