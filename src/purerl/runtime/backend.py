"""Whether this process's JAX will run on a GPU, known before any backend starts.

Starting a backend fixes the CPU device split (`host_devices`), so the settings chosen by platform (PPO's GPU
defaults, `registry.Algorithm.gpu_defaults`) ask here instead of calling `jax.default_backend()`: JAX runs on a
GPU when `jax_platforms` (set by `JAX_PLATFORMS`) names one first, or, when it names nothing, when a CUDA plugin
is installed and `nvidia-smi` sees a GPU that `CUDA_VISIBLE_DEVICES` does not hide. `programs_for("cpu")` makes
the answer the CPU's whatever the machine, for code that builds a CPU's programs anywhere (the published
documents' fingerprints).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import os
from functools import lru_cache

GPU_PLATFORMS = ("cuda", "gpu", "rocm")
_BUILDING_FOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("building_for", default=None)


@contextlib.contextmanager
def programs_for(platform: str):
    """Settings chosen by platform are `platform`'s inside the block, whatever this machine would run."""
    token = _BUILDING_FOR.set(platform)
    try:
        yield
    finally:
        _BUILDING_FOR.reset(token)


def platforms_named() -> list[str]:
    import jax

    named = jax.config.jax_platforms or os.environ.get("JAX_PLATFORMS") or ""
    return [p.strip().lower() for p in named.split(",") if p.strip()]


@lru_cache(maxsize=1)
def _cuda_machine() -> bool:
    from purerl.runtime import gpu_info

    if os.environ.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1"):
        return False  # every GPU hidden: JAX falls back to the CPU
    try:
        plugin = any(importlib.util.find_spec(f"jax_plugins.{name}") for name in ("xla_cuda12", "xla_cuda13"))
    except ImportError:  # no jax_plugins package at all: a CPU-only install
        plugin = False
    return plugin and gpu_info.count() > 0


def will_use_gpu() -> bool:
    forced = _BUILDING_FOR.get()
    if forced is not None:
        return forced in GPU_PLATFORMS
    named = platforms_named()
    if named:
        return named[0] in GPU_PLATFORMS
    return _cuda_machine()
