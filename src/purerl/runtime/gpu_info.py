"""The GPUs of this machine, read from `nvidia-smi` so that the harness's own process never starts JAX.

A process that starts JAX on a GPU takes 75% of its memory up front; the harness
parent must leave the device to its worker processes.
"""

from __future__ import annotations

import subprocess


def _query(*args: str) -> list[str]:
    try:
        proc = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()] if proc.returncode == 0 else []


def describe() -> dict | None:
    """Name, memory and driver of the first GPU (and how many there are); None without an NVIDIA GPU."""
    rows = _query("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits")
    if not rows:
        return None
    name, memory_mib, driver = (cell.strip() for cell in rows[0].split(","))
    return {"name": name, "memory_mib": int(float(memory_mib)), "driver": driver, "count": len(rows)}


def count() -> int:
    return len(_query("-L"))
