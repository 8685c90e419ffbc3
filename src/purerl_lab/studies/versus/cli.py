"""`purerl versus --algos ppo,sac --env ENV`: train each algorithm at its own preset on the same seeds and env steps
(resumable), evaluate every seed's policy at shared env-step marks as it trains, read the training curves there
too, and write the env's part of docs/results/offpolicy.md through provenance."""

from __future__ import annotations

import argparse
import dataclasses

from purerl.checks import ConfigError

STUDY = "offpolicy"  # the catalog's name for the document this command writes


def add_arguments(sub) -> None:
    from purerl.cli.args import add_train_flags, integer
    from purerl_lab.studies.flags import add_comparison_flags

    parser = sub.add_parser("versus", help="algorithms side by side at the same env steps, each at its own preset, "
                            "into docs/results/offpolicy.md")
    add_train_flags(parser, default_seeds=10, grid=False)
    parser.epilog += (" A flag sets its field in every algorithm that has it (--num-envs in both PPO and SAC, "
                      "--buffer-size in SAC only); each field left out keeps its algorithm's preset value.")
    parser.set_defaults(env="brax:hopper")
    parser.add_argument("--algos", default="ppo,sac", help="comma-separated algorithms to compare, at least two")
    parser.add_argument("--episodes", type=integer, default=16,
                        help="evaluation episodes per seed at each mark, greedy and sampled each (16)")
    add_comparison_flags(parser, "runs/versus", replaced="this env's runs")
    parser.set_defaults(run=run_cli)


def design_of(args):
    """The study's `design.Design` from the flags, checked before anything compiles: each algorithm's spec as
    `purerl train --algo ALGO` would build it from the flags that are its own."""
    from purerl.algos import registry
    from purerl.cli.train import train_spec
    from purerl_lab.publish import replication
    from purerl_lab.studies.versus import design as study

    algos = [name.strip() for name in args.algos.split(",") if name.strip()]
    chosen = [registry.get(name) for name in algos]  # an unknown one: one line naming the registered ones
    twice = sorted({name for name in algos if algos.count(name) > 1})
    if twice:
        raise ConfigError(f"--algos names {twice[0]} twice; give each algorithm once")
    if len(algos) < 2:
        raise ConfigError(f"--algos needs at least two algorithms to compare, got '{args.algos}'")
    fields = [*registry.config_fields(), *registry.hyperparam_fields()]
    owned = set(registry.config_fields(chosen)) | set(registry.hyperparam_fields(chosen))
    stray = [name for name in fields if getattr(args, name, None) is not None and name not in owned]
    if stray:
        raise ConfigError(f"--{stray[0].replace('_', '-')} applies to none of {', '.join(algos)}")
    specs = {}
    for algorithm in chosen:
        own = set(registry.config_fields([algorithm])) | set(registry.hyperparam_fields([algorithm]))
        flags = {**vars(args), **{name: None for name in fields if name not in own}, "algo": algorithm.name}
        specs[algorithm.name] = spec = train_spec(argparse.Namespace(**flags))
        if args.fresh_seeds:
            specs[algorithm.name] = dataclasses.replace(spec, seeds=replication.fresh_seeds(spec.seeds))
    design = study.Design(specs, args.episodes)
    design.validate()
    return design


def run_cli(args) -> int:
    from purerl_lab.publish import provenance, replication, sessions
    from purerl.run import experiment, results, rundir
    from purerl.run.files import slug
    from purerl_lab.studies.versus import evaluation, report as versus_report

    if args.resume and args.overwrite:
        raise ConfigError("--resume and --overwrite exclude each other")
    design = design_of(args)
    env = design.env
    part = replication.fresh_part(env) if args.fresh_seeds else env
    name = replication.run_folder(slug(env), args.fresh_seeds)
    report = provenance.check_report(args.report or args.runs_dir / "report.md", STUDY,
                                     data=(f"{slug(part)}.json", f"{slug(part)}.png"))
    folder = report.parent / report.stem
    runs = {algo: args.runs_dir / name / algo for algo in design.specs}
    if args.resume:
        for out in runs.values():
            evaluation.check(out, design.episodes)
    continued = rundir.prepare_each({runs[algo]: spec.to_json() for algo, spec in design.specs.items()},
                                    args.resume, args.overwrite, "comparison")
    worked = sessions.add(args.runs_dir / name, STUDY, args.resume, part, args.argv)
    summaries = {}
    for algo, out in runs.items():
        evaluator = evaluation.Evaluator(design.specs[algo].build(), design.seeds, design.episodes, out)
        summaries[algo] = experiment.run(design.specs[algo], out, resume=continued[out], overwrite=not continued[out],
                                         progress=not args.no_progress, evaluate_at=tuple(design.mark_updates(algo)),
                                         on_evaluate=evaluator)
        if summaries[algo] is None:
            return 0  # cut short (a test's `stopping.cut_after`): --resume continues
    curves = {algo: results.read_member_metric(out) for algo, out in runs.items()}
    evaluations = {algo: evaluation.read(out, design.mark_updates(algo), len(design.seeds))
                   for algo, out in runs.items()}
    record = versus_report.record(design, curves, evaluations, summaries,
                                  {algo: out.relative_to(args.runs_dir) for algo, out in runs.items()},
                                  evaluator.time_limit, args.fresh_seeds)
    folder.mkdir(parents=True, exist_ok=True)
    versus_report.plot(folder, design, curves, evaluations, slug(part))
    versus_report.write(record, folder, slug(part))
    provenance.record(STUDY, report, part, args.argv, provenance.training_seconds(summaries.values()),
                      {"env_steps_per_run": design.env_steps_per_run, "seeds": design.seeds},
                      {"algorithms": list(design.specs), "evaluation_episodes": design.episodes},
                      sessions=worked if len(worked) > 1 else None, wall_summed=True)
    versus_report.write_report(report)
    for line in versus_report.final_lines(record):
        print(line)
    print(f"report: {report}")
    return 0
