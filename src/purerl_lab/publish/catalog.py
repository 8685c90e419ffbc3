"""The registry of published studies. Each study declares its `Study` beside its own code (`studies/<study>/
published.py`: its document, the source files its numbers depend on, its parts, the commands that regenerate it end
to end, how those commands fingerprint, its deliberate differences from its authors' code and its renderer) and
offers it under the entry-point group `purerl_lab.studies` (pyproject.toml). The pipeline reads them from there:
adding a study touches no file of `publish/`. `provenance` checks documents against them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

from purerl.checks import ConfigError
from purerl.run import rundir

GROUP = "purerl_lab.studies"

# What every PPO-based number depends on: the algorithm, the env stack, configs, nets, the run loop and the
# statistics (globs relative to src/). cli/, checkpointing, progress bars and benchmarks are left out.
TRAINING = ("purerl/algos/*.py", "purerl/envs/__init__.py", "purerl/envs/core.py", "purerl/envs/wrappers.py",
            "purerl/checks.py", "purerl/nets/*.py", "purerl/run/population.py", "purerl/run/experiment.py",
            "purerl/run/results.py", "purerl/stats.py", "purerl/runtime/host_devices.py")
EVOLUTION = ("purerl/meta/evolve.py",)


@dataclass(frozen=True)
class Study:
    """One published document and how it is made."""

    name: str
    document: str  # relative to docs/results/; its manifest.json is the one beside it
    depends: tuple[str, ...]  # globs relative to src/
    parts: tuple[str, ...]  # every part the document must have
    commands: tuple[str, ...]  # regenerate it end to end; {runs} is a scratch folder for run directories
    # Where the study departs from its authors' code on purpose, one plain sentence each with its numbers, read
    # against `authors` (repository at commit); every document shows them (`publish.differences`).
    differences: tuple[str, ...] = ()
    authors: str = ""  # "" for a study with no authors' code to compare with
    # "module:function" that writes the document again from its committed records, with no training: run by
    # `purerl results --render` after a change to how a report words its numbers ("" where it cannot).
    render: str = ""
    # (part, the first cell of its table rows) where the document titles a part's rows otherwise than by its name:
    # `results --check --mark` marks a stale part there and beside its `- **part**:` bullet.
    row_titles: tuple[tuple[str, str], ...] = ()
    # fingerprint(fp, command, part) adds the components of one registered command's computation to a
    # `fingerprint.Fingerprint`, lowering its programs and probing its host numerics without running it; None:
    # the study's parts fall back to the source hash of `depends`.
    fingerprint: Callable | None = None
    # part_commands(study, part): the registered commands whose computation makes `part`; None: every command
    # makes every part (see `by_env`).
    part_commands: Callable | None = None
    by_part: bool = False  # whether `fingerprint` depends on the part beyond its commands (one command, many parts)
    versions: tuple[str, ...] = ()  # packages besides jax and jaxlib whose version is part of the fingerprint
    # seconds to fingerprint a part on one core, roughly (or a function of the part): the longest are computed first
    cost: float | Callable[[str], float] = 5.0
    # How its commands continue after a stop (`continuing`), by their first words: "always" (given --resume, the
    # command continues every run it finds under --runs-dir and starts the missing ones), "its --out" (only a run
    # that folder already holds) or "never" (minutes long: it starts over). Every command must match one.
    resumes: tuple[tuple[str, str], ...] = ()

    def commands_of(self, part: str) -> list[str]:
        """The registered commands whose computation makes `part` (its fingerprint's commands)."""
        if part not in self.parts:
            raise ConfigError(f"{self.name} has no part '{part}'; its parts are {', '.join(self.parts)}")
        return list(self.part_commands(self, part) if self.part_commands else self.commands)

    def resume_rule(self, command: str) -> str | None:
        """The `resumes` rule `command` follows, None where no prefix names it."""
        return next((rule for prefix, rule in self.resumes if command.startswith(f"{prefix} ")), None)


FRESH, FRESH_PART = "--fresh-seeds", "fresh_"  # a replication: the flag its registered command ends with, and
# the prefix of its part (fresh_PART beside PART; `publish.replication`)


def by_env(study: Study, part: str) -> list[str]:
    """`part_commands` of a study with a part per env: part ENV is made by the commands on ENV, and its
    replication, part fresh_ENV, by those with --fresh-seeds."""
    env = part.removeprefix(FRESH_PART)
    return [c for c in study.commands if f" --env {env} " in f"{c} " and c.endswith(FRESH) == (part != env)]


def by_fresh(study: Study, part: str) -> list[str]:
    """`part_commands` of a study whose every command makes every part: its replication's parts (fresh_PART) are
    made by the commands with --fresh-seeds, the others by the rest."""
    return [c for c in study.commands if c.endswith(FRESH) == pending_ok(part)]


def pending_ok(part: str) -> bool:
    """Whether a registered part may be absent from its document without making it stale or incomplete: a
    replication (fresh_PART) that has not run yet, which its document says is pending."""
    return part.startswith(FRESH_PART)


class _Registry(Mapping):
    """{name: Study} of every installed study, read from the entry points when first asked."""

    def __init__(self):
        self._studies: dict[str, Study] | None = None

    def _found(self) -> dict[str, Study]:
        if self._studies is None:
            found = {}
            for point in sorted(metadata.entry_points(group=GROUP), key=lambda p: p.name):
                study = point.load()
                if not isinstance(study, Study) or study.name != point.name:
                    raise ConfigError(f"the {GROUP} entry point {point.name} ({point.value}) is not a Study named so")
                found[point.name] = study
            self._studies = found
        return self._studies

    def __getitem__(self, name: str) -> Study:
        return self._found()[name]

    def __iter__(self):
        return iter(self._found())

    def __len__(self) -> int:
        return len(self._found())


STUDIES: Mapping[str, Study] = _Registry()


def continuing(command: str, study: Study) -> str:
    """`command` with --resume where that continues what an earlier, stopped run of it left."""
    rule = study.resume_rule(command)
    if rule == "its --out":
        words = shlex.split(command)
        resumes = rundir.holds_run(Path(words[words.index("--out") + 1]))
    else:
        resumes = rule == "always"
    return f"{command} --resume" if resumes else command


def commands(names: list[str], runs: str, resume: bool = False) -> list[str]:
    """The commands that regenerate the named studies (all when none is named) into scratch folder `runs`;
    with `resume`, each continues what an earlier run of the same commands into `runs` left."""
    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        raise ConfigError(f"unknown study '{unknown[0]}'; choose from {', '.join(STUDIES)}")
    chosen = [STUDIES[n] for n in (names or list(STUDIES))]
    return [continuing(c.format(runs=runs), study) if resume else c.format(runs=runs)
            for study in chosen for c in study.commands]
