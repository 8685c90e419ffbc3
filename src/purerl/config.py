"""The names `purerl.config` held before each algorithm kept its own settings, kept so that code written against
them still imports: PPO's config, hyperparameters and presets are `purerl.algos.ppo_config`'s, the limits and
bounds every check uses `purerl.checks`', and what every algorithm's settings share `purerl.algos.settings`'.

Nothing in purerl imports this module (a test), so it may import them all without an import circle.
"""

from purerl.algos import settings
from purerl.algos.ppo_config import (LEVERS, MATMUL_DTYPES, PRESETS, UPDATE_KERNELS, HyperParams, PPOConfig,
                                     recorded)
from purerl.algos.settings import (SUITE_PRESETS, Preset, RolloutShape, as_float_arrays, check_minibatches,
                                   default_preset, validate_concrete)
from purerl.checks import (DISCOUNT, MAX_DIMENSION, MAX_INT32, MAX_MEMBERS, MAX_SEED, NON_NEGATIVE, POSITIVE, UNIT,
                           ConfigError, check_bounds, check_choice, check_counts, check_field_types, seed_range)

__all__ = ["DISCOUNT", "LEVERS", "MATMUL_DTYPES", "MAX_DIMENSION", "MAX_INT32", "MAX_MEMBERS", "MAX_SEED",
           "NON_NEGATIVE", "POSITIVE", "PRESETS", "SUITE_PRESETS", "UNIT", "UPDATE_KERNELS", "ConfigError",
           "HyperParams", "PPOConfig", "Preset", "RolloutShape", "apply_preset", "as_float_arrays", "check_bounds",
           "check_choice", "check_counts", "check_field_types", "check_minibatches", "default_preset", "recorded",
           "seed_range", "settings", "validate_concrete"]


def apply_preset(name: str, env_name: str, discrete: bool, presets: dict[str, Preset] | None = None,
                 config_class: type = PPOConfig, hyperparams_class: type = HyperParams):
    """`settings.apply_preset`, with PPO's presets and classes unless others are given, as it was here."""
    return settings.apply_preset(name, env_name, discrete, PRESETS if presets is None else presets, config_class,
                                 hyperparams_class)
