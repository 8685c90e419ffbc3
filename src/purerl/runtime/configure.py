"""`configure_jax`: the process-wide JAX settings purerl's command line and `purerl.train` choose, in one call.

Importing purerl changes none of them; a script that jits purerl's programs itself calls this first to run them as
the command line does.
"""

from __future__ import annotations


def configure_jax(devices: bool = True, compile_cache: bool = True, fast_threefry: bool = True) -> dict:
    """Set what purerl runs under, each only where the user has not decided it already, and return what was set:

    - `devices`: one JAX CPU device per core (`host_devices.enable_default`; PURERL_HOST_DEVICES=N picks the count),
      so a population shards over the cores. It takes effect only before JAX's backend starts: call this first.
    - `compile_cache`: the persistent compile cache under ~/.cache/purerl (`compile_cache.enable_default`;
      PURERL_NO_COMPILE_CACHE=1 turns it off, PURERL_CACHE_DIR moves it).
    - `fast_threefry`: threefry lowered for the CPU as straight-line code (`envs.core.unroll_threefry_on_cpu`):
      the same random bits, faster; published fingerprints are of programs lowered so. Only on jax 0.10: XLA's
      CPU compiler from jax 0.11 on spends minutes on the straight-line code (a 20k-step CartPole PPO run through
      the command line: over 3 minutes to compile, against 34 s rolled, on jax 0.11.2), so there it is left rolled.

    Calling it again changes nothing that is set.
    """
    from purerl.runtime import compile_cache as cache, host_devices

    done = {}
    if devices:
        done["cpu_devices"] = host_devices.enable_default()
    if compile_cache:
        done["compile_cache"] = cache.enable_default()
    if fast_threefry and unrolled_threefry_pays():
        from purerl.envs.core import unroll_threefry_on_cpu

        unroll_threefry_on_cpu()
        done["fast_threefry"] = True
    return done


def unrolled_threefry_pays() -> bool:
    """Whether the installed jax is one the straight-line threefry was measured faster on (0.10; see above)."""
    import jax

    return jax.__version_info__ < (0, 11)
