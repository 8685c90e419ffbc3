"""A plugin as a user's script would be one: a module outside purerl that registers its algorithm on import, named
in PURERL_PLUGINS so that `purerl train --algo toy` finds it."""

from toy_algorithm import ENTRY

from purerl.algos import register

register(ENTRY)
