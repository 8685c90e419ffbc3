"""The machine, packages and commit a number came from, as a run's provenance.json, published results and
benchmarks record them. The processor is named down to its model and vector extension: XLA compiles for the exact CPU
it runs on, so both the speed and the rounding of a result depend on it."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[3]  # the repository holding src/purerl, when installed from one


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


def git(*args: str) -> str | None:
    """`git ARGS` in the checkout purerl runs from: its output, or None where git or the checkout is missing."""
    try:
        done = subprocess.run(["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state() -> tuple[str | None, bool]:
    """(HEAD commit, whether the source differs from it). Outside a git checkout: (None, True)."""
    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, True
    changes = git("status", "--porcelain", "--", "src", "pyproject.toml")
    return commit, changes is None or bool(changes)


def machine() -> dict:
    import jax

    from purerl.runtime import host_devices

    info = {"cpu": cpu(), "cores": os.cpu_count(), "cores_in_use": host_devices.cores(),
            "backend": jax.default_backend(), "load_average_1m": round(os.getloadavg()[0], 1)}
    if jax.default_backend() != "cpu":
        info["accelerator"] = jax.devices()[0].device_kind
    return info


def cores_text(machine_info: dict) -> str:
    """"2" or "1 of 2": the cores the process could use, which XLA's CPU thread pool is sized to. A large
    reduction's rounding depends on it, so a bit-exact rerun needs the same count (docs/results/README.md)."""
    in_use, cores = machine_info.get("cores_in_use"), machine_info["cores"]
    return f"{cores}" if in_use in (None, cores) else f"{in_use} of {cores}"


def command_line(argv: list[str]) -> str:
    return " ".join(["purerl", *map(shlex.quote, argv)])


def run_facts(argv: list[str]) -> dict:
    """What a study writes beside its own data: the command, the commit (PURERL_SOURCE_COMMIT when the
    source was copied out of its checkout, as on a device machine), whether the source had uncommitted
    changes, the machine, jax's version and the date. A published document's provenance is its manifest
    entry (`record`)."""
    import jax

    commit, dirty = os.environ.get("PURERL_SOURCE_COMMIT"), False
    if commit is None:
        commit, dirty = git_state()
    info = machine()
    where = info.get("accelerator") or f"{info['cpu']} CPU"
    return {"command": command_line(argv), "commit": commit or "?", "uncommitted_changes": dirty,
            "machine": f"{where}, {cores_text(info)} CPU cores", "jax": jax.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
