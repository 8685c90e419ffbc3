"""The meta-tasks `purerl evolve TASK` can run, open to packages outside purerl.

A meta-task is a module that gives `make_task(preset, total_timesteps, fitness, env) -> meta.evolve.MetaTask` and
`es_config(preset, **overrides) -> meta.strategies.ESConfig` and `PRESETS`, and may give `memory_budget_mb(preset)`
(value-loss's `make_task` also takes `loss_form`, `purerl evolve value-loss --loss-form`). A package offers its
meta-tasks under the entry-point group `purerl.meta_tasks` (name = "module"), as purerl's own lab does for value-loss
and lpo in pyproject.toml; `register` adds one from a running script. Names are read without importing a module, so
building the CLI's parser imports no meta-task.
"""

from __future__ import annotations

import importlib
from importlib import metadata

from purerl.checks import ConfigError

GROUP = "purerl.meta_tasks"
_REGISTERED: dict[str, str] = {}


def register(name: str, module: str) -> None:
    """Make the module named `module` (importable by that name) the meta-task `purerl evolve NAME` runs."""
    if not isinstance(name, str) or not name or not isinstance(module, str) or not module:
        raise ConfigError(f"register needs a task name and a module name, got {name!r}, {module!r}")
    _REGISTERED[name] = module


def meta_tasks() -> dict[str, str]:
    """{task name: module name}: the installed packages' entry points, then those registered here."""
    found = {point.name: point.value for point in metadata.entry_points(group=GROUP)}
    return {**found, **_REGISTERED}


def meta_task_module(name: str):
    """The module that defines meta-task `name`."""
    tasks = meta_tasks()
    if name not in tasks:
        raise ConfigError(f"unknown meta-task '{name}'; choose from {', '.join(tasks) or 'none installed'}")
    return importlib.import_module(tasks[name])
