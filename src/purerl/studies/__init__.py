"""Case studies: thin layers on the algorithms and the ES loop, each owning its games, environments and networks.

`META_TASKS` names the modules `purerl evolve TASK` can run. Such a module gives
`make_task(preset, total_timesteps, fitness, env) -> meta.evolve.MetaTask` (value-loss also takes `loss_form`,
`purerl evolve value-loss --loss-form`) and `es_config(preset, **overrides) -> meta.strategies.ESConfig`, and may give
`memory_budget_mb(preset)`.
"""

import importlib

META_TASKS = {"value-loss": "purerl.studies.value_loss", "lpo": "purerl.studies.lpo"}


def meta_task_module(name: str):
    """The module that defines meta-task `name` (one of `META_TASKS`)."""
    return importlib.import_module(META_TASKS[name])
