"""The fingerprint of `purerl versus`: each algorithm's member programs at its own config and its evaluation programs,
the design's inputs, and the reading of the curves at the env-step marks on the host."""

from __future__ import annotations

import numpy as np

from purerl_lab.publish.fingerprint.core import Fingerprint, abstract, host_common
from purerl_lab.publish.fingerprint.training import first_member, member_keys, member_programs
from purerl_lab.studies.commands import parse_command


def versus_part(fp: Fingerprint, command: str, part: str | None = None) -> None:
    """One env of the comparison: every algorithm's init and run (named by the algorithm, so a change to SAC moves
    only `program sac ...`), what the programs take as data (hyperparameters; the configs are static and in the
    programs), the seeds' keys, the evaluation (one member's greedy and sampled episodes, their keys and count;
    the study vmaps that program over members), the marks and their window, and the host numerics of the table."""
    import jax
    import jax.numpy as jnp

    from purerl.run.policy import evaluate
    from purerl_lab.studies.versus import cli as study_cli, evaluation

    design = study_cli.design_of(parse_command(command))
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    for algo, spec in design.specs.items():
        members = spec.validate()
        train, hp = spec.build(), first_member(members.hyperparams)
        state = member_programs(fp, algo, train, hp)
        for mode, sample in evaluation.MODES.items():
            def one_member(p, s, k, h, sample=sample):
                return evaluate(train, p, s, k, design.episodes, sample, h)

            fp.program(f"{algo} {mode} evaluation", one_member, state.params, state.obs_stats, key, abstract(hp))
    fp.input("design", {"hyperparameters": {algo: spec.to_json()["hyperparams"] for algo, spec in design.specs.items()},
                        "marks": design.marks, "window": design.window, "episodes": design.episodes,
                        "evaluation keys": evaluation.episode_keys(design.seeds).tolist(),
                        "updates evaluated": {algo: design.mark_updates(algo) for algo in design.specs}})
    member_keys(fp, design.first.validate())  # the same seeds, so the same keys, for every algorithm
    fp.probe("marks", _marks_probe)
    host_common(fp)


def _marks_probe() -> dict:
    """Returns at the marks from curves with NaNs of two update sizes (a window wider than one of them), their
    censoring, and a verdict from their statistics."""
    from purerl import stats
    from purerl_lab.studies.versus import design as study

    rng = np.random.default_rng(54)
    curves = {size: np.where(rng.random((updates, 12)) < 0.2, np.nan, rng.normal(900.0, 300.0, (updates, 12)))
              for size, updates in ((1024, 400), (20480, 20))}
    values = {size: [study.return_at(curve, size, round(f * 409_600), 204_800) for f in study.MARKS]
              for size, curve in curves.items()}
    a, b = (stats.summarize(v[-1]) for v in values.values())
    censored = [study.censored_below(mark, envs, 1000) for mark in (102_400, 409_600) for envs in (16, 2048)]
    return {"values": values, "marks": study.MARKS, "verdict": study.verdict(a, b, "A", "B"), "censored": censored}
