"""A registered command read as `purerl` would read it, for the studies' fingerprint builders: they take their
settings from the command's own parser, so that a fingerprint cannot disagree with what the command runs."""

from __future__ import annotations

import shlex

from purerl.cli import build_parser
from purerl.checks import ConfigError
from purerl_lab.publish.fingerprint.core import RUNS


def parse_command(command: str):
    """A registered command's arguments, as `purerl` would parse them ({runs} a fixed scratch folder)."""
    words = shlex.split(command.format(runs=RUNS))
    if words[:1] != ["purerl"]:
        raise ConfigError(f"not a purerl command: {command}")
    args = build_parser().parse_args(words[1:])
    args.argv = words[1:]
    return args
