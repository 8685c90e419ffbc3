"""The computation behind a published part, as a hash: staleness from what a command computes, not from files.

A part of a document under docs/results/ is made by registered commands (`catalog.STUDIES`). Its *fingerprint*
is a set of named components, each a hash, built from those commands without running them:

- `program ...`: a jitted program the command runs (a training run's `init` and `run` per member, an ES
  strategy's `ask` and `tell`, an evaluation), lowered to StableHLO for the CPU at the part's static
  configuration (`Lowered.as_text(debug_info=False)`: no source locations), with the names JAX derives from
  Python (the module name, private function symbols, result paths) replaced by canonical ones. Lowering traces
  and emits the program without compiling it: seconds for a 1e7-step MinAtar run. Moving a function to another
  module, renaming a file or a helper, adding an algorithm or a preset does not change it; a change to a loss,
  the shuffle, an env's dynamics, an initialiser or a constant does.
- `host ...`: host-side numerics that make published numbers (bootstrap statistics, final-return windows, the ES
  loop around ask and tell, selection of an ES seed): each is *probed*, run on fixed inputs, and its output
  hashed. A probe is exact on its inputs and indifferent to where the code lives or what it is called. Its
  floats may differ in the last bits on another CPU kind (XLA compiles for the host's instruction set), so a
  value with floats is also *sketched* (`values.sketch`: its exact parts hashed, its floats as a norm and fixed
  random projections); where a hash differs but the sketches agree to 1e-4 of the norm, the part is
  current. Records made before sketches gain them from `results --check --mark` on a machine where they are
  current to the bit.
- `input ...`: what the command reads or is given: its words (budgets, seeds, presets), the configs it builds,
  and the committed files it evaluates (meta-parameters, evolutions).
- `versions`: jax and jaxlib (lowering and XLA's compile, which rounds), and evosax where an ES runs.

`components(study, part)` builds them with the study's own builder (`Study.fingerprint`, beside the study's code,
from the pieces in `core.py` and `training.py`); `provenance` records them in the manifest beside the source hash, stamped
with what they were computed from (`parts.stamp_holds`: the purerl files loaded, the environment), and
`purerl results --check` trusts a record whose stamp holds, compares the others with fresh ones and names the
components that changed.

What this does not see: code between programs that is neither lowered nor probed (how a population is sharded
over devices and grouped per CPU device, which the docs call rounding-only and which the config's `cpu_group`
records; checkpointing, which composes exactly); a change to a probed function that its probe inputs do not
exercise.
"""

from purerl_lab.publish.fingerprint.core import Fingerprint, lowered_text, normalise, stats_probe
from purerl_lab.publish.fingerprint.parts import components, covered, environment_key, many, part_commands, stamp_holds
from purerl_lab.publish.fingerprint.training import es_programs
from purerl_lab.publish.fingerprint.values import (changed, digest, rounding_only, same_within_rounding, sketch,
                                                   unverifiable_rounding, value_hash)

__all__ = ["Fingerprint", "changed", "components", "covered", "digest", "environment_key", "es_programs",
           "lowered_text", "many", "normalise", "part_commands", "rounding_only", "same_within_rounding", "sketch",
           "stamp_holds", "stats_probe", "unverifiable_rounding", "value_hash"]
