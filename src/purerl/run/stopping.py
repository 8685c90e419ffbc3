"""Stop a long run cleanly on SIGINT or SIGTERM (what Ctrl-C and cluster schedulers send before preemption).

The first signal only asks the run to stop at the next chunk boundary, where it saves a checkpoint and
raises `StopRequested`; the same command with `--resume` then continues bit-for-bit. A second signal ends
the process at once, so a user is never stuck waiting for a long chunk.

Python runs a signal handler on the main thread only between bytecodes, and a chunk is one compiled call
that can last minutes, so a handler alone would hear neither signal until the chunk ends. The C-level
handler also writes each signal's number to a wakeup pipe at once, and a watcher thread reads it there: it
records the request and says so as the signal arrives, and ends the process on the second.

The request belongs to the process, not to one run: a command that trains several runs one after another
(`compare`'s objectives, an analysis's held-out stages) would otherwise start the next run when the signal
landed in a run's last chunk. Until a `StopRequested` leaving a `graceful_stop` block honours it, every later
run stops before it compiles, and the next signal ends the process at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: str | None = None  # the name of a signal no `StopRequested` has honoured yet
_heard = 0  # signals heard by the open blocks; the second one ends the process, even after the first was honoured
_depth = 0  # graceful_stop blocks open now (the CLI opens one around a whole command, runs open their own inside)
_cut_after: int | None = None  # `cut_after`: chunks after which every run ends, as if killed


def pending() -> str | None:
    """The signal that asked this process to stop and that no `StopRequested` has honoured yet, if any."""
    return _pending


@contextlib.contextmanager
def cut_after(chunks: int):
    """For resume tests: within the block, a chunked run (`chunks.run_chunks`) ends after `chunks` chunks,
    checkpointed, as a kill right after that checkpoint would end it, and returns None; an evolve run ends its
    session after `chunks` generations, checkpointed, and writes what it has."""
    global _cut_after
    previous, _cut_after = _cut_after, chunks
    try:
        yield
    finally:
        _cut_after = previous


def cut(chunks_done: int) -> bool:
    """A `cut_after` block asks the run to end after `chunks_done` chunks."""
    return _cut_after is not None and chunks_done >= _cut_after


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


def _stop_at_once(name: str, note: str = "") -> None:
    """A second signal: the process ends now, with 128 + N and one line."""
    tell(f"purerl: {name} again; stopping at once{note}")
    os._exit(128 + signal.Signals[name].value)


@contextlib.contextmanager
def held_from_the_start():
    """While the command line loads (JAX's import, the parser), a first SIGINT/SIGTERM is kept as the pending
    request (`pending`), which the command's `graceful_stop` then honours, and a second one exits at once with
    128 + N. On leaving, the previous handlers are back."""
    def hold(signum, frame):
        global _pending
        name = signal.Signals(signum).name
        if _pending is not None:
            _stop_at_once(name)
        _pending = name
        tell(f"purerl: {name} received while starting; stopping before any run begins (send it again to stop at once)")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, hold) for s in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class graceful_stop:
    """Within the block, the first SIGINT/SIGTERM sets `requested` (the signal's name) instead of killing,
    and the next one exits with 128 + its number. A `StopRequested` leaving the block honours the request;
    a block that ends otherwise passes it on. Off the main thread, where handlers cannot live, it does nothing."""

    def __init__(self):
        self._previous: dict = {}
        self._pipe: tuple[int, int] | None = None

    @property
    def requested(self) -> str | None:
        return _pending

    def __enter__(self) -> graceful_stop:
        global _heard, _depth
        if threading.current_thread() is not threading.main_thread():
            return self
        if _depth == 0:  # the outermost block: a request carried over makes the next signal the second
            _heard = 0 if _pending is None else 1
        _depth += 1
        self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        read, write = os.pipe()
        os.set_blocking(write, False)  # the C handler must never block on it
        self._pipe, self._previous_wakeup = (read, write), signal.set_wakeup_fd(write)
        self._watcher = threading.Thread(target=self._watch, args=(read,), name="purerl-stop", daemon=True)
        self._watcher.start()
        return self

    def _handle(self, signum, frame) -> None:
        """The Python handler, late during a compiled call: it only makes `requested` exact once it runs."""
        global _pending
        _pending = _pending or signal.Signals(signum).name

    def _watch(self, read: int) -> None:
        numbers = {s.value for s in SIGNALS}
        while data := os.read(read, 64):  # empty once the block closes the pipe's other end
            for number in data:
                if number in numbers:
                    self._heard_one(signal.Signals(number).name)

    def _heard_one(self, name: str) -> None:
        global _pending, _heard
        _heard += 1
        if _heard > 1:
            _stop_at_once(name, " (a run resumes from its last checkpoint)")
        _pending = _pending or name
        tell(f"purerl: {name} received; stopping after this chunk with a checkpoint (send it again to stop at once)")

    def __exit__(self, exc_type, exc, traceback) -> None:
        global _pending, _depth
        if self._pipe is not None:
            _depth -= 1
            signal.set_wakeup_fd(self._previous_wakeup)
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            os.close(self._pipe[1])
            self._watcher.join()  # it has read every signal the block heard
            os.close(self._pipe[0])
            self._pipe, self._previous = None, {}
        if exc_type is not None and issubclass(exc_type, StopRequested):
            _pending = None
