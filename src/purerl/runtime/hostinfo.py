"""The machine and packages a number came from, as published results (`provenance`) and benchmarks (`bench`)
record them. The processor is named down to its model and vector extension: XLA compiles for the exact CPU
it runs on, so both the speed and the rounding of a result depend on it."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path


def cpu() -> str:
    """The processor's model name, with its family, model and widest vector extension where Linux says them."""
    fields = _cpuinfo()
    name = fields.get("model name", platform.processor() or platform.machine())
    if "cpu family" in fields:  # "AMD EPYC" names several generations
        name += f" (family {fields['cpu family']} model {fields.get('model', '?')}, {_widest_simd(fields)})"
    return name


def _cpuinfo() -> dict:
    """The first processor's fields in /proc/cpuinfo (empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines()) if _}


def _widest_simd(fields: dict) -> str:
    """The widest vector extension XLA's CPU backend may use here. Code generated for another extension rounds
    differently, and training amplifies rounding: the same commit and jax gave other per-seed Acrobot returns
    at 500k steps on another "AMD EPYC" machine (same IQM)."""
    flags = set(fields.get("flags", "").split())
    return next((name for name in ("avx512f", "avx2", "avx", "sse4_2") if name in flags), "no AVX")


def versions(packages: tuple[str, ...]) -> dict:
    """The version of each of `packages` that is installed (the others are left out)."""
    found = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found
