"""The fingerprint of `purerl pbt-study`: the programs each method runs, the evaluation, and the host selection."""

from __future__ import annotations

import numpy as np

from purerl_lab.publish.fingerprint.core import Fingerprint, abstract, host_common
from purerl_lab.publish.fingerprint.training import first_member, member_keys, member_programs
from purerl_lab.studies.commands import parse_command


def pbt_study_part(fp: Fingerprint, command: str, part: str | None = None) -> None:
    """One task of the PBT study: a member's init and run (every method's chunks), PBT's and random search's start
    of a population (the priors' draws), PBT's round, the greedy evaluation of a selected member, the design's
    inputs (defaults, ranges, seeds, episodes) and the selection and statistics on the host."""
    import jax
    import jax.numpy as jnp

    from purerl.run import pbt
    from purerl.run.policy import evaluate
    from purerl_lab.studies.pbt import cli as study_cli, design as study

    design = study_cli.design_of(parse_command(command))
    train = design.base.build()
    hp = first_member(design.spec("default", 0).validate().hyperparams)
    state = member_programs(fp, "member", train, hp)
    size = len(design.base.seeds)
    keys = jax.ShapeDtypeStruct((size, 2), jnp.uint32)
    hps = abstract(jax.tree.map(lambda x: np.zeros(size, np.float32), hp))
    step = jax.ShapeDtypeStruct((), jnp.int32)
    for method in ("pbt", "random"):
        config = design.spec(method, 0).pbt
        start = jax.vmap(pbt.member_start(train.init, config, train.config.num_updates))
        population = fp.program(f"{method} start", start, keys, hps, keys)
        if method == "pbt":
            fp.program("pbt round", lambda runs, stop: pbt.exploit_and_explore(runs, stop, config, size),
                       population, step)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    fp.program("greedy evaluation", lambda p, s, k, h: evaluate(train, p, s, k, design.episodes, False, h),
               state.params, state.obs_stats, key, abstract(hp))
    fp.input("design", {"defaults": design.base.to_json()["hyperparams"], "pbt": design.pbt.to_json(),
                        "seeds": [design.seeds(r) for r in range(design.repetitions)], "episodes": design.episodes,
                        "evaluation seed": study.EVAL_SEED})
    first = design.spec("pbt", 0).validate()
    member_keys(fp, first)
    fp.program("explore keys", lambda: pbt.member_keys(first.seeds))
    fp.probe("selection", _selection_probe)
    host_common(fp)


def _selection_probe() -> dict:
    """Each repetition's selected member on fixed curves with NaNs, and the summary's judgement of fixed returns."""
    from purerl.run import pbt_files, results
    from purerl_lab.studies.pbt import report

    rng = np.random.default_rng(5)
    curves = np.where(rng.random((12, 40, 8)) < 0.2, np.nan, rng.normal(-300.0, 80.0, (12, 40, 8)))
    picks = [pbt_files.best_member(results.final_returns(c)) for c in curves]

    def record(env: str, fresh: bool, shift: float) -> dict:
        reps = {m: [{"repetition": r, "evaluated_return": float(v)} for r, v in enumerate(rng.normal(mean, 30.0, 12))]
                for m, mean in (("pbt", -200.0 + shift), ("random", -230.0), ("default", -260.0))}
        return {"env": env, "fresh_seeds": fresh, "methods": {m: {"repetitions": r} for m, r in reps.items()}}

    judged = report.comparisons([record(report.PRIMARY[0], False, 0.0), record(report.PRIMARY[0], True, -50.0),
                                 record("Pendulum-v1", False, 20.0)])
    return {"picks": picks, "verdicts": [(c.key, c.verdict, c.adjusted_p) for c in judged]}
