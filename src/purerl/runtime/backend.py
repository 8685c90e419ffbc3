"""Whether this process's JAX will run on a GPU, known before any backend starts.

Starting a backend fixes the CPU device split (`host_devices`), so the settings chosen by platform (PPO's GPU
defaults, `registry.Algorithm.gpu_defaults`) ask here instead of calling `jax.default_backend()`: JAX runs on a
GPU when `JAX_PLATFORMS` (or `jax_platforms`) names one first, or, when it names nothing, when a CUDA plugin is
installed and `nvidia-smi` sees a GPU.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

GPU_PLATFORMS = ("cuda", "gpu", "rocm")


def platforms_named() -> list[str]:
    import jax

    named = os.environ.get("JAX_PLATFORMS") or jax.config.jax_platforms or ""
    return [p.strip().lower() for p in named.split(",") if p.strip()]


@lru_cache(maxsize=1)
def _cuda_machine() -> bool:
    from purerl.runtime import gpu_info

    try:
        plugin = any(importlib.util.find_spec(f"jax_plugins.{name}") for name in ("xla_cuda12", "xla_cuda13"))
    except ImportError:  # no jax_plugins package at all: a CPU-only install
        plugin = False
    return plugin and gpu_info.count() > 0


def will_use_gpu() -> bool:
    named = platforms_named()
    if named:
        return named[0] in GPU_PLATFORMS
    return _cuda_machine()
