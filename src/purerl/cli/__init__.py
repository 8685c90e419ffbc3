"""`purerl`: the command line. Each command lives in a small module that adds its parser (with `run` set
to its handler); this module parses, and turns every `ConfigError` into one line on stderr with exit 2.

The library's commands are train, eval, evolve, plot and summary. Other packages add theirs through the
entry-point group `purerl.commands`: each entry is a function `add(subparsers)` that adds parsers the same way
(purerl's lab adds its studies, `results` and `bench`). A command whose parser sets `graceful=True` trains and
checkpoints: a signal stops its run at a chunk boundary, with a checkpoint. Every command holds SIGINT/SIGTERM
while it starts (`purerl.launch`, `stopping.held_from_the_start`).

Each handler imports what it runs when it runs; bad input is refused before anything compiles. Building the
parser imports the algorithms, so it loads jax (`--help` takes about 2 s); help that would import
more (the ES defaults of every meta-task) is worked out only when shown (`Parser.defer_help`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from importlib import metadata

from purerl.runtime import host_devices
from purerl.runtime.configure import configure_jax
from purerl.run import runlock
from purerl.cli import meta, tools, train
from purerl.cli.args import EXIT_USAGE, Parser, error_line
from purerl.cli.train import train_spec  # noqa: F401  (the library's way to turn flags into a TrainSpec)
from purerl.checks import ConfigError
from purerl.run.stopping import StopRequested, graceful_stop, held_from_the_start, pending, tell

COMMANDS = "purerl.commands"  # the entry-point group of other packages' commands


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Given the arguments, `purerl train --algo NAME --help` lists NAME's flags alone
    (any other parse takes every algorithm's flags, and `train_spec` refuses those of another algorithm)."""
    from purerl.algos import registry

    registry.load_plugins()  # algorithms (and meta-tasks) registered outside purerl, before their flags are made
    parser = Parser(prog="purerl", description="Reinforcement learning as compiled JAX programs.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    train.add_train(sub, _help_for_algo(argv or []))
    meta.add_evolve(sub)
    tools.add_runs(sub)
    train.add_eval(sub)
    for point in sorted(metadata.entry_points(group=COMMANDS), key=lambda p: p.name):
        point.load()(sub)
    for name in ("train", "evolve"):
        sub.choices[name].set_defaults(graceful=True)
    return parser


def _help_for_algo(argv: list[str]) -> str | None:
    """NAME when `argv` asks for `purerl train --algo NAME --help` (or `-h`), else None."""
    if argv[:1] != ["train"] or not {"--help", "-h"} & set(argv):
        return None
    for i, word in enumerate(argv):
        if word.startswith("--algo="):
            return word.partition("=")[2]
        if word == "--algo" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _refused(error: ConfigError) -> int:
    """Bad input: one line on stderr, exit 2."""
    error_line(error)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    # orbax reads a checkpoint in asyncio tasks; when a damaged one fails, purerl reports it in one line and
    # asyncio would add "Task exception was never retrieved" with a traceback once the failed task is collected
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    argv = list(sys.argv[1:] if argv is None else argv)
    with held_from_the_start():  # a signal while the parser loads is kept, not lost (`purerl.launch`)
        configure_jax()  # before anything starts JAX's backend: a CPU device per core, the compile cache
        try:
            parser = build_parser(argv)
        except ConfigError as error:  # a plugin that cannot register
            return _refused(error)
        args = parser.parse_args(argv)
    args.argv = argv  # recorded as the command by provenance
    early = pending()
    if early is not None and not getattr(args, "graceful", False):  # a command that trains stops before its run
        tell(f"purerl: stopped by {early} before the command began")
        return 128 + signal.Signals[early].value
    try:
        if host_devices.PROBLEM:
            raise ConfigError(host_devices.PROBLEM)
        # A command that trains hears SIGINT/SIGTERM from its first line on, not only once its chunks run: a signal
        # during the first compile is then neither lost (a KeyboardInterrupt raised inside a gc callback is
        # ignored) nor a silent kill (SIGTERM's default), and a second one after a graceful stop exits 128 + N.
        with graceful_stop() if getattr(args, "graceful", False) else contextlib.nullcontext(), runlock.locking():
            code = args.run(args)  # every run directory it writes is held until it returns
        heard = pending()
        if heard is not None:  # heard when no run was left to stop: the work is done, the signal still said stop
            tell(f"purerl: stopped by {heard} after the work had finished")
            return 128 + signal.Signals[heard].value
        return code
    except ConfigError as error:
        return _refused(error)
    except StopRequested as stop:
        resumable = hasattr(args, "resume")  # mfos table starts over: say so, not "--resume"
        saved = f"checkpoint saved at {stop.done} of {stop.total}" if stop.done else "before training began"
        where = "" if not stop.saved else (f"; {saved}, continue with the same command and --resume" if resumable
                                           else f" at {stop.done} of {stop.total}; this command does not resume, run it again")
        tell(f"purerl: stopped by {stop.signal_name}{where}")
        return stop.exit_code
    except KeyboardInterrupt:
        tell("purerl: interrupted before a checkpoint could be saved")
        return 130
    except OSError as error:  # the disk, not the input: still one line, not a traceback
        error_line(error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
