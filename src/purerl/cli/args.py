"""Argument types and flags shared by the commands. Every bad value is an argparse error: one line, exit 2."""

from __future__ import annotations

import argparse
import copy
import datetime
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from purerl.checks import MAX_SEED, ConfigError

EXIT_USAGE = 2


class HelpFormatter(argparse.HelpFormatter):
    """Each option's help ends with its default where it has one (not None, off or empty) that the help does
    not already give: argparse's ArgumentDefaultsHelpFormatter, but also for options without help text."""

    def add_argument(self, action):
        default = action.default
        shown = default is not None and default is not False and default != [] and default is not argparse.SUPPRESS
        if shown and action.option_strings and action.help is not argparse.SUPPRESS and "default" not in (action.help or ""):
            action = copy.copy(action)
            action.help = f"{action.help} (default: %(default)s)" if action.help else "default: %(default)s"
        super().add_argument(action)


def error_line(message) -> None:
    """`purerl: error: MESSAGE` on stderr, in one line even where it quotes a name the user gave that holds a line
    break (a key in an edited record, a path)."""
    print("purerl: error: " + str(message).replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error, `--lr -1e-3` read as a (bad) value, not an option, and defaults in --help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # `--num-env 8` must not silently mean --num-envs
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
        self._deferred_help: list[tuple[argparse.Action, Callable[[], str]]] = []

    def defer_help(self, action: argparse.Action, text: Callable[[], str]) -> None:
        """Give `action` the help `text()` once help is shown, for help that is costly to work out: parsing,
        which every command does, then never pays for it."""
        self._deferred_help.append((action, text))

    def format_help(self) -> str:
        for action, text in self._deferred_help:
            action.help = text()
        self._deferred_help.clear()
        return super().format_help()

    def error(self, message: str):
        error_line(message)
        raise SystemExit(EXIT_USAGE)

    def parse_args(self, args=None, namespace=None):
        """argparse's, with the closest flag of the command suggested for one it does not know (`--lrr`: did you
        mean --lr?), as the Python API suggests a setting's name."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._suggestion(parsed, extras)}")
        return parsed

    def _suggestion(self, parsed, extras: list[str]) -> str:
        import difflib

        commands = next((a.choices for a in self._actions if isinstance(a, argparse._SubParsersAction)), {})
        parser = commands.get(getattr(parsed, "command", None), self)
        known = [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]
        for flag in (word.partition("=")[0] for word in extras if word.startswith("--")):
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
            if close:
                return f" (did you mean {close[0]}?)"
        return ""

    def _get_values(self, action, arg_strings):
        """`--seeds=--` is a flag without its value: argparse would drop the `--` and hand back an empty list."""
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            self.error(f"argument {'/'.join(action.option_strings)}: expected one argument")
        return super()._get_values(action, arg_strings)


def finite_float(text: str, kind: str = "a number") -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind}, got '{text}'") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got '{text}'")
    return value

def floats(text: str) -> list[float]:
    """Comma-separated grid values: finite, and distinct even as the float32 the program computes with."""
    values = [finite_float(v) for v in text.split(",") if v.strip()]
    seen: dict[float, float] = {}
    for value in values:
        with np.errstate(over="ignore"):
            single = np.float32(value)
        if not np.isfinite(single):
            raise argparse.ArgumentTypeError(f"{value:g} is beyond float32's range (about 3.4e38)")
        same = seen.setdefault(float(single), value)
        if same is not value:
            raise argparse.ArgumentTypeError(f"duplicate value {value:.9g} in '{text}' (equal to {same:.9g} in float32)")
    return values

def integer(text: str) -> int:
    """An integer, also written as 1e6; never inf, nan or a fraction."""
    value = finite_float(text, "an integer")
    if value != int(value):
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'")
    return int(text) if text.strip().lstrip("+-").isdigit() else int(value)

def integers(text: str) -> tuple[int, ...]:
    """Comma-separated integers, such as layer widths."""
    return tuple(integer(v) for v in text.split(","))


def seed(text: str) -> int:
    """A PRNG seed: an integer in [0, MAX_SEED] (one uint32 key)."""
    value = integer(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed must lie in [0, {MAX_SEED}], got {text}")
    return value


def at_most(limit: int, kind=None, zero: bool = False):
    """A positive integer (or with `zero` 0 too, a count that turns something off) up to `limit`: a count beyond it
    only ends in a memory error or a run that never ends."""
    def parse(text: str) -> int:
        value = (kind or integer)(text) if zero else positive(kind or integer)(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, got '{text}'")
        if value > limit:
            raise argparse.ArgumentTypeError(f"expected at most {limit:,}, got '{text}'")
        return value
    return parse


NAME_MAX = 255  # bytes in one file name on the common file systems
PATH_MAX = 4096


def path(text: str) -> Path:
    """A file or folder path: never empty (Path('') is the current folder), never longer than a file system takes."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got ''")
    long = [part for part in text.split("/") if len(part.encode(errors="surrogateescape")) > NAME_MAX]
    if long or len(text.encode(errors="surrogateescape")) >= PATH_MAX:
        raise argparse.ArgumentTypeError(f"path too long (at most {NAME_MAX} bytes a name, {PATH_MAX - 1} in all): "
                                         f"'{text[:40]}...'")
    return Path(text)


def positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
        return value
    return parse

def positive_ints(flag: str, text: str | None) -> list[int] | None:
    """A comma-separated list of positive integers (None if the flag was not given)."""
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got '{text}'") from None
    if min(values) <= 0:
        raise ConfigError(f"{flag} must be positive, got {min(values)}")
    return values

def default_text(shown: dict[str, str]) -> str:
    """'default: 0.99' when every case (algorithm, task preset) has the same default, else each case's, equal
    ones joined: 'default: ppo 4, dqn 10, pqn 32, sac/td3 1'."""
    if len(set(shown.values())) == 1:
        return f"default: {next(iter(shown.values()))}"
    groups: dict[str, list[str]] = {}
    for case, value in shown.items():
        groups.setdefault(value, []).append(case)
    return "default: " + ", ".join(f"{'/'.join(cases)} {value}" for value, cases in groups.items())


PRESET_DEFAULTS = ("Settings default to the preset's values (--preset, chosen by env family when omitted); each flag "
                   "shows its algorithm's own default, which the preset for CartPole-v1 or Pendulum-v1 keeps and the "
                   "others (minatar, brax, ...: README's preset table) change in part.")
GRID = " Several comma-separated values of a hyperparameter (X[,Y...]) sweep a grid: every setting runs every seed."


def add_train_flags(parser: argparse.ArgumentParser, default_seeds: int = 4, algorithms: tuple[str, ...] | None = None,
                    grid: bool = True) -> None:
    """Flags shared by train and compare: env, preset, seeds, and the config and hyperparameter fields of
    `algorithms` (default every registered one), each with its default."""
    from purerl.algos import registry
    from purerl.algos.ppo_config import MATMUL_DTYPES, UPDATE_KERNELS
    from purerl.nets.layers import ACTIVATIONS

    chosen = [registry.ALGORITHMS[name] for name in algorithms or registry.ALGORITHMS]
    parser.epilog = PRESET_DEFAULTS + (GRID if grid else " This command trains one setting: one value per flag.")
    parser.add_argument("--env", default="CartPole-v1", help="environment id (gymnax, or a suite's: see README)")
    presets = sorted({name for algorithm in chosen for name in algorithm.presets})
    parser.add_argument("--preset", choices=presets, help="reference settings (default: by env family)")
    parser.add_argument("--seeds", type=integer, default=default_seeds, help=f"number of seeds (default {default_seeds})")
    parser.add_argument("--seed", type=integer, default=0, help="first seed; seeds are seed..seed+N-1")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def describe(name: str) -> str:
        shown = {algo: registry.show_default(value) for algo, value in registry.defaults(name, chosen).items()}
        # a field an algorithm added without a description still gets a flag, not a KeyError for every command
        what = registry.DESCRIPTIONS.get(name, name.replace("_", " "))
        if len(chosen) > 1 and len(shown) < len(chosen):  # a flag some algorithms ignore says whose it is
            return f"[{', '.join(shown)}] {what} ({default_text(shown)})"
        return f"{what} ({default_text(shown)})"

    parser.add_argument("--hidden-sizes", type=integers, metavar="64,64", help=describe("hidden_sizes"))
    parser.add_argument("--activation", choices=list(ACTIVATIONS), help=describe("activation"))
    if any("update_kernel" in a.config.__dataclass_fields__ for a in chosen):
        parser.add_argument("--matmul-dtype", choices=list(MATMUL_DTYPES), help=describe("matmul_dtype"))
        parser.add_argument("--update-kernel", choices=list(UPDATE_KERNELS), help=describe("update_kernel"))
    for name, kind in registry.config_fields(chosen).items():  # the algorithms' configs; train_spec rejects others'
        flag = f"--{name.replace('_', '-')}"
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=describe(name))
        elif kind in (int, float):
            parser.add_argument(flag, type=integer if kind is int else finite_float, help=describe(name))
    for name in registry.hyperparam_fields(chosen):
        parser.add_argument(f"--{name.replace('_', '-')}", type=floats, metavar="X[,Y...]", help=describe(name))

def add_pbt_flags(parser: argparse.ArgumentParser) -> None:
    """`train --pbt` and its settings (`run/pbt_config.PBTConfig`); `with_pbt` applies them."""
    from purerl.algos import registry

    defaults = "; ".join(f"{a.name} " + ",".join(f"{n}={low:g}:{high:g}" for n, low, high in a.pbt_explore)
                         for a in registry.ALGORITHMS.values())
    pbt = parser.add_argument_group("population-based training (Jaderberg et al. 2017; docs/pbt.md)")
    pbt.add_argument("--pbt", action="store_true", help="train the seeds as one PBT population: every "
                     "--pbt-interval updates the worst copy the best and explore their hyperparameters")
    pbt.add_argument("--pbt-interval", type=integer, metavar="UPDATES",
                     help="updates between PBT rounds (default: a twentieth of the run)")
    pbt.add_argument("--pbt-fraction", type=finite_float, metavar="F",
                     help="bottom fraction that copies the top one (0.25; 0: random search, "
                          "each member's values drawn once from the ranges and kept)")
    pbt.add_argument("--pbt-explore", metavar="NAME=LOW:HIGH,...",
                     help="hyperparameters to explore and their ranges; a positive range is a log scale "
                          f"(default by --algo: {defaults})")
    pbt.add_argument("--pbt-perturb", type=finite_float, metavar="FACTOR",
                     help="explore multiplies by this or its inverse (1.2)")
    pbt.add_argument("--pbt-resample", type=finite_float, metavar="P",
                     help="probability of resampling instead (0.25)")
    pbt.add_argument("--pbt-window", type=integer, metavar="UPDATES",
                     help="updates of return a member is ranked on (default 0: the whole interval)")
    pbt.add_argument("--pbt-init", choices=["sample", "given"],
                     help="sample: draw the members' explored values from their ranges (default); given: start "
                          "from --lr etc.")


PBT_OPTIONS = ("interval", "fraction", "explore", "perturb", "resample", "window", "init")


def with_pbt(spec, args: argparse.Namespace):
    """`spec` with the --pbt flags applied: a new PBT config (the defaults but what the flags set), or the
    recorded one of a `--config` rerun with single fields replaced."""
    import dataclasses

    from purerl.run.pbt_config import PBTConfig, parse_explore

    given = {name: getattr(args, f"pbt_{name}") for name in PBT_OPTIONS if getattr(args, f"pbt_{name}") is not None}
    if not args.pbt and spec.pbt is None:
        if given:
            raise ConfigError(f"--pbt-{next(iter(given))} needs --pbt")
        return spec
    if "explore" in given:
        given["explore"] = parse_explore(given["explore"])
    base = spec.pbt or PBTConfig(interval=max(1, spec.config.num_updates // 20))
    return dataclasses.replace(spec, pbt=dataclasses.replace(base, **given))


def add_distributed_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("multi-process (jax.distributed; SLURM and Open MPI are detected)")
    group.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0")
    group.add_argument("--num-processes", type=integer)
    group.add_argument("--process-id", type=integer)

def default_out(name: str) -> Path:
    import jax

    if jax.process_count() > 1:  # the processes' clocks differ: they must be told where to write
        raise ConfigError("a multi-process run needs --out")
    return Path("runs") / f"{name}-{datetime.datetime.now():%Y%m%d-%H%M%S}"

def is_writer() -> bool:
    from purerl.runtime.distributed import is_writer as writer

    return writer()

def join_processes(args: argparse.Namespace) -> None:
    """Before any JAX backend starts: join a multi-process run if asked to (flags or a cluster launcher)."""
    if getattr(args, "coordinator", None) is None and (args.num_processes or args.process_id is not None):
        raise ConfigError("--num-processes and --process-id need --coordinator HOST:PORT")
    if args.coordinator and (args.num_processes is None or args.process_id is None):
        raise ConfigError("--coordinator needs --num-processes and --process-id")
    if args.num_processes is not None and not 0 <= (args.process_id or 0) < args.num_processes:
        raise ConfigError(f"--process-id must be in [0, {args.num_processes - 1}], got {args.process_id}")
    from purerl.runtime.distributed import initialize_distributed

    initialize_distributed(args.coordinator, args.num_processes, args.process_id)
