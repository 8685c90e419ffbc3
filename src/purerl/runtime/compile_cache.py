"""A persistent XLA compilation cache, on by default.

A second process that compiles the same program loads it from disk instead
in seconds. It lives under the user's cache dir
($PURERL_CACHE_DIR, else ~/.cache/purerl); PURERL_NO_COMPILE_CACHE=1 turns it
off, and a cache dir the user configured for jax is left alone.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("PURERL_CACHE_DIR") or Path.home() / ".cache" / "purerl")


def enable_default() -> str | None:
    """Point jax at purerl's cache unless disabled or already configured; returns the directory in use."""
    import jax

    if os.environ.get("PURERL_NO_COMPILE_CACHE"):
        return None
    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    import warnings

    # A full disk or a cache entry cut short only costs a compile: not two lines of warning before the error.
    warnings.filterwarnings("ignore", message="Error (reading|writing) persistent compilation cache entry")
    path = cache_root() / "jax"
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return str(path)
