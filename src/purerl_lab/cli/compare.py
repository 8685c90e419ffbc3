"""`purerl compare`: policy objectives (PPO, DPO, LPO) trained on identical seeds, the DPO/LPO study's runs."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from purerl.cli.args import add_train_flags
from purerl.cli.train import train_spec
from purerl.checks import ConfigError
from purerl.run import files
from purerl_lab.studies.flags import add_comparison_flags


def add_compare(sub) -> None:
    compare = sub.add_parser("compare", help="train several policy objectives on identical seeds")
    add_train_flags(compare, default_seeds=16, algorithms=("ppo",), grid=False)  # the objectives are PPO's
    compare.add_argument("--objectives", default="ppo,dpo", help="comma-separated: ppo, dpo, lpo:PATH")
    add_comparison_flags(compare, "runs/compare", replaced="the purerl runs of these objectives")
    compare.set_defaults(run=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from purerl import stats
    from purerl_lab.studies.dpo import compare
    from purerl_lab.publish import provenance, replication

    spec = compare_spec(args)
    if spec.grid:
        raise ConfigError("compare runs one hyperparameter setting; give single values")
    objectives = [o for o in args.objectives.split(",") if o]
    if len(objectives) < 2:
        raise ConfigError(f"--objectives needs at least two objectives, got '{args.objectives}'")
    report = provenance.check_report(args.report or args.runs_dir / "report.md", "dpo")
    results_dir = report.parent / report.stem
    part = replication.fresh_part(spec.config.env) if args.fresh_seeds else spec.config.env
    _check_compare_outputs(args, part, report)
    record = compare.compare(spec, objectives, args.runs_dir, results_dir, "PPO vs DPO vs LPO",
                             progress=not args.no_progress, resume=args.resume, overwrite=args.overwrite,
                             argv=args.argv, fresh=args.fresh_seeds)
    sessions = record["sessions"]
    provenance.record("dpo", report, part, args.argv, record["training_s"],
                      {"env_steps_per_run": record["env_steps_per_run"], "seeds": record["seeds"]},
                      sessions=sessions if len(sessions) > 1 else None, wall_summed=True)
    report = compare.write_report(results_dir, report, compare.TITLE)
    for label, row in record["objectives"].items():
        s = row["final_return"]
        print(f"{record['env']} {label:4s} final return {stats.describe(s)}")
    print(f"report: {report}")
    return 0


def compare_spec(args: argparse.Namespace):
    """The comparison's `TrainSpec` from its flags, its seeds moved past the study's with --fresh-seeds (which
    refuses --seed): what it trains and what its fingerprint lowers."""
    from purerl_lab.publish import replication

    spec = train_spec(args)
    if args.fresh_seeds:
        spec = dataclasses.replace(spec, seeds=replication.fresh_seeds(spec.seeds))
    return spec


def _check_compare_outputs(args: argparse.Namespace, part: str, report: Path) -> None:
    """Before anything compiles: no file purerl did not write is replaced (the run directories themselves are
    checked by `compare.compare`, with `rundir.prepare_each`, before the first compiles)."""
    from purerl_lab.publish import provenance, sessions

    if args.resume and args.overwrite:
        raise ConfigError("--resume and --overwrite exclude each other")
    from purerl_lab.studies.dpo import compare

    files.check_replaceable(compare.env_dir_of(args.runs_dir, part) / sessions.SESSIONS, "--runs-dir",
                            own=sessions.is_record)
    provenance.check_report(report, "dpo", data=(f"{files.slug(part)}.json", f"{files.slug(part)}.png"))
