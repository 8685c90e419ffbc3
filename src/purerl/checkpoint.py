"""Orbax checkpoints of a whole runner state, so that a run resumes bit-for-bit.

The state pytree (parameters, optimiser, environment, normalisers, RNG keys and
the metric buffer) is saved with the index of the next update to run. Orbax
writes to a temporary directory and renames it on success, so a killed save
leaves the previous checkpoint intact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp


class Checkpointer:
    """Saves host (numpy) pytrees. In a multi-process run each process uses it on its own, with no
    barriers: process 0 alone saves, and every process may restore (from a shared filesystem)."""

    def __init__(self, directory: Path, max_to_keep: int = 1):
        solo = ocp.options.MultiprocessingOptions(primary_host=jax.process_index(),
                                                  active_processes={jax.process_index()})
        directory = Path(directory).absolute()
        directory.mkdir(parents=True, exist_ok=True)
        self.manager = ocp.CheckpointManager(
            directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=False,
                                                 multiprocessing_options=solo),
        )

    def latest(self) -> int | None:
        return self.manager.latest_step()

    def save(self, step: int, state: Any, extra: dict | None = None) -> None:
        progress = {"step": int(step), **(extra or {})}
        state = jax.tree.map(np.asarray, state)  # host copies: multi-process orbax refuses host-local jax.Arrays
        self.manager.save(
            int(step), args=ocp.args.Composite(state=ocp.args.StandardSave(state), progress=ocp.args.JsonSave(progress))
        )

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict]:
        """Restore into the structure of `like` (arrays or ShapeDtypeStructs). Returns (state, progress):
        progress holds "step" and whatever `extra` was saved with it."""
        step = self.latest() if step is None else step
        target = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), like)
        restored = self.manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target), progress=ocp.args.JsonRestore())
        )
        return restored.state, dict(restored.progress)

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def latest_step(directory: Path) -> int | None:
    """The step of the last checkpoint in `directory`, None if there is none; creates nothing."""
    if not Path(directory).is_dir():
        return None
    checkpointer = Checkpointer(directory)
    step = checkpointer.latest()
    checkpointer.close()
    return step
