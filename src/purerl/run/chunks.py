"""The one chunk-and-checkpoint loop every long program runs through: training, PBT and the M-FOS studies.

A member program advances the whole population from update `start` to `stop` in one call; `run_chunks` calls it
chunk by chunk, checkpoints the members between chunks, and stops cleanly on SIGINT or SIGTERM. Chunks compose
exactly, so a run resumed from a checkpoint ends bit-identical to an uninterrupted one.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.run.population import Placement
from purerl.runtime.distributed import is_writer


class Checkpoints(NamedTuple):
    """Where `run_chunks` checkpoints the members, whether it continues from the last checkpoint there, and how
    often it saves besides at the end and on a stop request (0: after every chunk)."""

    folder: Path
    resume: bool = False
    every_s: float = 0.0


def run_chunks(advance, runs, placement: Placement, num_members: int, total: int, shared: tuple = (),
               chunk: int | None = None, checkpoints: Checkpoints | None = None,
               on_chunk=None, breaks: tuple[int, ...] = ()) -> tuple[Any, dict] | None:
    """Drive a member program `advance(runs, *shared, start, stop)` (from `batched` or `one_by_one`) over
    steps 0..total-1 in chunks, with an orbax checkpoint of the members (gathered to the host) in
    `checkpoints.folder` at most every `checkpoints.every_s` seconds, at the end, and when SIGINT or SIGTERM
    asks the run to stop (then `stopping.StopRequested` is raised, before the next chunk; a request already
    pending, left by an earlier run of the same command, stops this one before it compiles).

    `checkpoints.resume` continues from the last checkpoint; chunks compose exactly, so the result is the one an
    uninterrupted run gives. `on_chunk(start, stop, runs, timing)` reports progress. Returns (runs, timing):
    compile_s of this process, run_s summed over every session of the run (it travels in the
    checkpoint), and the step this session started from; or None when a test cut the run short
    (`stopping.cut_after`; it checkpoints first). The `timing` that `on_chunk` gets is that dict, current, with
    `chunk_s`, the last chunk's seconds (the loggers' speed series). A chunk also ends at each step in `breaks`,
    and is checkpointed there: what `on_chunk` records at a break (an evaluation) then agrees with the checkpoint.
    """
    from purerl.run.checkpoint import Checkpointer, latest_step
    from purerl.run.stopping import StopRequested, cut, graceful_stop

    int32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    timing = dict(compile_s=0.0, run_s=0.0, first=0, chunk_s=0.0)
    checkpoint_dir = checkpoints.folder if checkpoints is not None else None
    resume = checkpoints is not None and checkpoints.resume  # so a resume always has a checkpointer
    checkpointer, done = None, 0

    def save():
        host = placement.get(runs, num_members)  # every process joins the gather; process 0 writes
        if is_writer():
            checkpointer.save(done, host, extra={"run_s": timing["run_s"]})

    def stop_if_requested(stop_signal):
        if stop_signal.requested and done < total:
            if checkpointer is not None:
                checkpointer.close()
            raise StopRequested(stop_signal.requested, done, total, saved=checkpoint_dir is not None)

    chunk = chunk or max(1, total // 20)
    chunks_done = 0
    with graceful_stop() as stop_signal:
        if stop_signal.requested:  # left by an earlier run of this command: stop before compiling
            done = (latest_step(checkpoint_dir) or 0) if resume else 0
            stop_if_requested(stop_signal)
        tick = time.perf_counter()
        compiled = advance.lower(runs, *shared, int32(0), int32(0)).compile()
        timing["compile_s"] = time.perf_counter() - tick
        checkpointer = Checkpointer(checkpoint_dir) if checkpoint_dir is not None else None
        if resume and checkpointer.latest() is not None:
            host, progress = checkpointer.restore(placement.get(runs, num_members))
            runs, done = placement.put(host), progress["step"]
            timing["first"], timing["run_s"] = done, progress.get("run_s", 0.0)
        last_checkpoint = time.perf_counter()
        while done < total:
            stop_if_requested(stop_signal)  # heard during the compile or the last chunk, which it checkpointed
            # the next multiple of `chunk` (so a break between them leaves the grid PBT rounds end on), or a break
            stop = min([(done // chunk + 1) * chunk, total, *(b for b in breaks if b > done)])
            tick = time.perf_counter()
            runs = jax.block_until_ready(compiled(runs, *shared, int32(done), int32(stop)))
            timing["chunk_s"] = time.perf_counter() - tick
            timing["run_s"] += timing["chunk_s"]
            if on_chunk is not None:
                on_chunk(done, stop, runs, timing)
            done, chunks_done = stop, chunks_done + 1
            stopping = cut(chunks_done)
            if checkpointer is not None and (done == total or done in breaks or stopping or stop_signal.requested
                                             or time.perf_counter() - last_checkpoint >= checkpoints.every_s):
                save()
                last_checkpoint = time.perf_counter()
            if stopping and done < total:
                break
    if checkpointer is not None:
        checkpointer.close()
    return (runs, timing) if done == total else None
