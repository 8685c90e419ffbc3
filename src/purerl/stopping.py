"""Stop a long run cleanly on SIGINT or SIGTERM (what Ctrl-C and cluster schedulers send before preemption).

The first signal only asks the run to stop at the next chunk boundary, where it saves a checkpoint and
raises `StopRequested`; the same command with `--resume` then continues bit-for-bit. A second signal
acts as usual (interrupts at once), so a user is never stuck waiting for a long chunk.

The request belongs to the process, not to one run: a command that trains several runs one after another
(`compare`'s objectives, an analysis's held-out stages) would otherwise start the next run when the signal
landed in a run's last chunk. Until a `StopRequested` leaving a `graceful_stop` block honours it, every later
run stops after its first chunk, and the default handlers stay in place, so the next signal still interrupts
at once.
"""

from __future__ import annotations

import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: str | None = None  # the name of a signal no `StopRequested` has honoured yet


class StopRequested(Exception):
    """The run stopped early at `done` of `total` on a signal; its state is checkpointed when `saved`."""

    def __init__(self, signal_name: str, done: int, total: int, saved: bool):
        super().__init__(f"stopped by {signal_name} at {done} of {total}")
        self.signal_name, self.done, self.total, self.saved = signal_name, done, total, saved

    @property
    def exit_code(self) -> int:
        return 128 + signal.Signals[self.signal_name].value


def tell(message: str) -> None:
    """A line on stderr that cannot stop the stop: under `purerl ... | tee log`, Ctrl-C ends tee too, and a
    BrokenPipeError raised here would abort the run before its checkpoint."""
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:
        pass


class graceful_stop:
    """Within the block, the first SIGINT/SIGTERM sets `requested` (the signal's name) instead of killing.
    A `StopRequested` leaving the block honours the request; a block that ends otherwise passes it on."""

    def __init__(self):
        self._previous: dict = {}

    @property
    def requested(self) -> str | None:
        return _pending

    def __enter__(self) -> graceful_stop:
        if _pending is None and threading.current_thread() is threading.main_thread():  # handlers live there
            self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        return self

    def _handle(self, signum, frame) -> None:
        global _pending
        _pending = signal.Signals(signum).name
        self._restore()
        tell(f"purerl: {_pending} received; stopping after this chunk with a checkpoint "
             "(send it again to stop at once)")

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def __exit__(self, exc_type, exc, traceback) -> None:
        global _pending
        self._restore()
        if exc_type is not None and issubclass(exc_type, StopRequested):
            _pending = None
