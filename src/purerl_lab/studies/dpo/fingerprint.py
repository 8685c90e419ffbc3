"""The fingerprint of `purerl compare` (the DPO/LPO study): each objective's training at the env's config, on the
same seeds, the LPO evolutions' training fitness, and the statistics."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from purerl_lab.publish.fingerprint.core import REPO, Fingerprint, host_common
from purerl_lab.publish.fingerprint.training import first_member, member_keys, member_programs, paired_probe
from purerl_lab.studies.commands import parse_command


def compare_part(fp: Fingerprint, command: str, part: str | None = None) -> None:
    """`purerl compare`: each objective's training at the env's config, on the same seeds, and the statistics."""
    from purerl_lab.cli.compare import compare_spec
    from purerl_lab.studies.dpo import lpo_report
    from purerl.run.trainspec import TrainSpec

    args = parse_command(command)
    base = compare_spec(args)
    objectives = [o for o in args.objectives.split(",") if o]
    for objective in objectives:
        spec = TrainSpec(**{**base.__dict__, "objective": objective})
        members = spec.validate()
        name, _, path = objective.partition(":")
        label = name if not path else f"{name}:{Path(path).parent.name}"
        member_programs(fp, label, spec.build(), first_member(members.hyperparams), spec.meta_params())
        if path:
            fp.files(f"{label} meta-parameters", [REPO / path])
    # What the programs take as data: the hyperparameter values (the seeds are constants of the keys' program).
    # The rest of the spec is static and in the programs, so a new config field with a default stales nothing.
    fp.input("hyperparameters", {"hyperparams": base.to_json()["hyperparams"], "grid": base.to_json()["grid"]})
    member_keys(fp, base.validate())
    fp.probe("compare curves", _compare_probe)
    kinds = lpo_report.fitness_kinds(objectives, base.config)
    if kinds:  # an LPO evolution's training task: each objective's fitness per seed, and the drifts paired with PPO
        fp.probe("lpo training fitness", _lpo_fitness_probe, kinds)
    host_common(fp)


def _compare_probe() -> dict:
    from purerl_lab.studies.dpo import compare

    rng = np.random.default_rng(3)
    curve = rng.normal(20.0, 5.0, (60, 12))
    return {"late": compare._return_at(curve, compare.LATE_FRACTION), "fraction": compare.LATE_FRACTION}


def _lpo_fitness_probe(kinds: list[str]) -> dict:
    """The evolutions' fitness per seed from curves with NaNs (`evolve.curve_fitness`), and paired differences."""
    from purerl.meta.evolve import curve_fitness

    rng = np.random.default_rng(17)
    curves = [np.where(rng.random((n, 16)) < 0.3, np.nan, rng.normal(150.0, 40.0, (n, 16))) for n in (12, 128)]
    return {"fitness": {kind: [curve_fitness(c, kind) for c in curves] for kind in kinds},
            "paired": paired_probe()}
