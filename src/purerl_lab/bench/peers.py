"""Peer PPO implementations run side by side with purerl, each in its own virtualenv.

Each peer gets `<cache_dir>/peers/<name>/venv`, built with `python3 -m venv` and the
pinned requirements in `PEERS`, so a peer's pins (torch, an older gymnax) never touch
purerl's environment. `run_peer` runs the peer's script from `peer_scripts/` in that
venv as a subprocess and returns one flat dict of timings and returns:

    >>> from purerl_lab.bench.peers import run_peer
    >>> run_peer("rejax", seeds=8, total_timesteps=500_000)["env_steps_per_s"]

Both peers train PPO on CartPole-v1 with the CleanRL defaults that purerl's "classic"
preset uses (4 envs x 128 steps, lr 2.5e-4 annealed, 4 epochs x 4 minibatches, ...).
`Peer.mapping` says how each setting is spelled in the peer and `Peer.mismatches`
what the peer cannot express. A peer that cannot run returns a result whose `error`
is a one-line reason and whose measurements are None; nothing is skipped silently.

Command line: python -m purerl_lab.bench.peers {sb3,sbx,rejax,purejaxrl} --seeds N --total-timesteps T [-- SCRIPT ARGS]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from purerl_lab.bench.peer_table import PEERS, SCRIPTS_DIR, Peer

MARKER = "purerl-peer-requirements.json"
DEFAULT_TIMEOUT_S = 3600.0
INSTALL_TIMEOUT_S = 1800.0

# Keys of every run_peer result; the measurements are None when `error` is set.
RESULT_KEYS = (
    "peer", "seeds", "total_timesteps", "compile_s", "run_s", "env_steps_per_s", "agents_per_hour",
    "final_return", "peak_rss_mb", "versions", "error", "measured_seeds", "extrapolated",
)


class PeerError(RuntimeError):
    """A peer could not be installed or run; the message is one line."""


# --------------------------------------------------------------------------- venvs
def default_cache_dir() -> Path:
    return Path(os.environ.get("PURERL_CACHE_DIR") or Path.home() / ".cache" / "purerl").expanduser()


def _peer(name: str | Peer) -> Peer:
    if isinstance(name, Peer):  # a venv of its own that is not a timed peer (the GPU proxy's compiler)
        return name
    if name not in PEERS:
        raise ValueError(f"unknown peer '{name}'; choose from {', '.join(PEERS)}")
    return PEERS[name]


def _base_python() -> str:
    return os.environ.get("PURERL_PEER_PYTHON") or shutil.which("python3") or sys.executable


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _python_version(python: str | Path) -> str:
    out = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    for line in reversed(lines):  # pip's summary line is the most useful one
        if line.startswith("ERROR:"):
            return line
    return lines[-1] if lines else "(no output)"


def _run_logged(cmd: list[str], log: Path, timeout_s: float, what: str) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise PeerError(f"{what} timed out after {timeout_s:.0f} s (log: {log})") from None
    if proc.returncode != 0:
        raise PeerError(f"{what} failed (exit {proc.returncode}): {_last_line(log.read_text())[-300:]} (log: {log})")


@contextlib.contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_venv(
    name: str | Peer, cache_dir: str | Path | None = None, *, install_timeout_s: float = INSTALL_TIMEOUT_S
) -> Path:
    """The peer's venv at `<cache_dir>/peers/<name>/venv`, created and installed if needed.

    Idempotent: a marker file in the venv records the requirements and Python version it
    was built with; when they match, nothing is done. Otherwise the venv is rebuilt from
    scratch. Concurrent callers wait on a file lock. Raises PeerError (one line) when
    `python3 -m venv` or pip fails; the full output is in `<cache_dir>/peers/<name>/install.log`.
    """
    peer = _peer(name)
    name = peer.name
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    home = root / "peers" / name
    venv = home / "venv"
    base = _base_python()
    try:
        wanted = {"requirements": [list(stage) for stage in peer.requirements], "python": _python_version(base)}
    except (OSError, subprocess.SubprocessError) as exc:
        raise PeerError(f"cannot run {base}: {exc}") from None
    with _lock(home / ".lock"):
        marker = venv / MARKER
        if marker.is_file() and _venv_python(venv).exists():
            try:
                if json.loads(marker.read_text()) == wanted:
                    return venv
            except (OSError, ValueError):
                pass
        if venv.exists():
            shutil.rmtree(venv)
        log = home / "install.log"
        log.write_text(f"# {name} peer venv, {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        _run_logged([base, "-m", "venv", str(venv)], log, 300, f"python3 -m venv for {name}")
        pip = [str(_venv_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        for stage in peer.requirements:
            _run_logged(pip + list(stage), log, install_timeout_s, f"pip install {' '.join(stage)}")
        marker.write_text(json.dumps(wanted, indent=1))
    return venv


# --------------------------------------------------------------------------- running
def _failed(name: str, seeds: int, total_timesteps: int, error: str, **extra) -> dict[str, Any]:
    result: dict[str, Any] = {key: None for key in RESULT_KEYS}
    result.update(peer=name, seeds=seeds, total_timesteps=total_timesteps, error=" ".join(error.split()), **extra)
    return result


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the script was started in its own session: pgid == pid


def run_peer(
    name: str,
    seeds: int,
    total_timesteps: int,
    cache_dir: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    max_measured_seeds: int | None = None,
    install_timeout_s: float = INSTALL_TIMEOUT_S,
    peer_args: Sequence[str] = (),
    python: str | Path | None = None,
    task: str = "cartpole",
) -> dict[str, Any]:
    """Train `seeds` agents of peer `name` for `total_timesteps` env steps each; one flat dict.

    Keys: peer, seeds, total_timesteps, compile_s (0 for SB3), run_s (steady-state training
    wall time for all seeds), env_steps_per_s (env steps of all seeds / run_s),
    agents_per_hour (seeds / (compile_s + run_s) * 3600), final_return (mean over seeds),
    peak_rss_mb (peak RSS of the peer process), versions, error (None, or a one-line
    reason, with every measurement None), measured_seeds, extrapolated; plus details
    (num_updates, env_steps_per_agent, final_return_by_seed, ..., venv, wall_s).

    `max_measured_seeds` (SB3 and sbx only, which run seeds one after another) trains only that
    many seeds and scales the wall time linearly to `seeds`: `extrapolated` is then True
    and final_return is the mean over the measured seeds. `timeout_s` bounds the training
    subprocess; installing the venv (first call only) has its own `install_timeout_s`.
    rejax always trains all seeds in one vmapped program, so it ignores `max_measured_seeds`.
    `peer_args` are appended to the script's command line (e.g. ["--torch-threads", "0"] for SB3).
    `python` runs the script in that interpreter instead of the peer's venv (a machine without network,
    whose own Python has the peer's packages); nothing is installed then. `task` picks the peer's script
    for a harness task (a task script is told `--task TASK`).
    """
    peer = _peer(name)
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
    if not isinstance(total_timesteps, int) or total_timesteps < 512:
        raise ValueError(f"total_timesteps must be an integer >= 512 (one batch), got {total_timesteps!r}")
    if max_measured_seeds is not None and (not isinstance(max_measured_seeds, int) or max_measured_seeds < 1):
        raise ValueError(f"max_measured_seeds must be a positive integer or None, got {max_measured_seeds!r}")

    if python is None:
        try:
            venv = ensure_venv(name, cache_dir, install_timeout_s=install_timeout_s)
        except PeerError as exc:
            return _failed(name, seeds, total_timesteps, f"install failed: {exc}")
        python = _venv_python(venv)
    else:
        venv = Path(python)

    cmd = [str(python), str(peer.script_path(task)), "--seeds", str(seeds),
           "--total-timesteps", str(total_timesteps)]
    cmd += ["--task", task] if task in peer.task_scripts else []
    if max_measured_seeds is not None and peer.sequential_seeds:
        cmd += ["--max-measured-seeds", str(max_measured_seeds)]
    cmd += [str(arg) for arg in peer_args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, env=env, cwd=str(SCRIPTS_DIR), start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return _failed(name, seeds, total_timesteps, f"timed out after {timeout_s:.0f} s", venv=str(venv))
    except BaseException:
        _kill_group(proc)
        proc.communicate()
        raise
    wall_s = time.perf_counter() - started

    if proc.returncode != 0:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        return _failed(name, seeds, total_timesteps, f"crashed ({how}): {_last_line(stderr)[-300:]}",
                       venv=str(venv), wall_s=wall_s)
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    try:
        raw = json.loads(lines[-1])
    except (IndexError, ValueError):
        return _failed(name, seeds, total_timesteps, f"no JSON result on stdout: {_last_line(stdout + stderr)[-300:]}",
                       venv=str(venv), wall_s=wall_s)
    return _finish(raw, name, seeds, total_timesteps, venv, wall_s)


def _finish(raw: dict, name: str, seeds: int, total_timesteps: int, venv: Path, wall_s: float) -> dict[str, Any]:
    """Derive the rate keys from the script's raw timings, the same way for every peer."""
    try:
        compile_s, run_s = float(raw["compile_s"]), float(raw["run_s"])
        steps = int(raw["env_steps_per_agent"]) * seeds
    except (KeyError, TypeError, ValueError) as exc:
        return _failed(name, seeds, total_timesteps, f"malformed result from the peer script: {exc!r}",
                       venv=str(venv), wall_s=wall_s)
    result = dict(raw)
    result.update(
        peer=name,
        seeds=seeds,
        total_timesteps=total_timesteps,
        compile_s=compile_s,
        run_s=run_s,
        env_steps_per_s=steps / run_s if run_s > 0 else None,
        agents_per_hour=seeds / (compile_s + run_s) * 3600 if compile_s + run_s > 0 else None,
        measured_seeds=int(raw.get("measured_seeds", seeds)),
        extrapolated=bool(raw.get("extrapolated", False)),
        error=None,
        venv=str(venv),
        wall_s=wall_s,
    )
    if result.get("final_return") is None:
        return _failed(name, seeds, total_timesteps, "the peer finished but reported no episode return",
                       venv=str(venv), wall_s=wall_s)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m purerl_lab.bench.peers", description=__doc__.splitlines()[0])
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--total-timesteps", type=int, default=500_000)
    parser.add_argument("--max-measured-seeds", type=int, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S)
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    argv, peer_args = argv[:split], argv[split + 1:]  # after "--": passed on to the peer script
    args = parser.parse_args(argv)
    result = run_peer(args.peer, args.seeds, args.total_timesteps, args.cache_dir, args.timeout_s,
                      max_measured_seeds=args.max_measured_seeds, peer_args=peer_args)
    print(json.dumps(result, sort_keys=True))
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
