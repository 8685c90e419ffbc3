"""`purerl pbt-study --env ENV`: train every method's repetitions (resumable), select, evaluate, and write the
task's part of docs/results/pbt.md through provenance."""

from __future__ import annotations

from purerl.checks import ConfigError


def add_arguments(sub) -> None:
    from purerl.cli.args import add_train_flags, finite_float, integer
    from purerl_lab.studies.flags import add_comparison_flags

    parser = sub.add_parser("pbt-study", help="PBT against random search and the preset's hyperparameters, R "
                            "repetitions each, into docs/results/pbt.md (docs/pbt.md)")
    add_train_flags(parser, default_seeds=8, algorithms=("ppo",), grid=False)
    parser.add_argument("--repetitions", type=integer, default=10, help="independent populations per method (10)")
    parser.add_argument("--episodes", type=integer, default=32,
                        help="fresh greedy episodes for each repetition's selected member (32)")
    parser.add_argument("--pbt-interval", type=integer, metavar="UPDATES",
                        help="updates between PBT rounds (default: a tenth of the run)")
    parser.add_argument("--pbt-fraction", type=finite_float, default=0.25, metavar="F",
                        help="bottom fraction that copies the top one (0.25)")
    parser.add_argument("--pbt-explore", metavar="NAME=LOW:HIGH,...",
                        help="the ranges PBT explores and random search samples (default: PPO's, docs/pbt.md)")
    add_comparison_flags(parser, "runs/pbt-study", replaced="this env's runs",
                         fresh_also=" and evaluation episodes of their own")
    parser.set_defaults(run=run_cli)


def design_of(args):
    """The study's `design.Design` from the flags, checked before anything compiles."""
    from purerl.cli.train import train_spec
    from purerl_lab.studies.pbt import design as study
    from purerl.run.pbt_config import PBTConfig, parse_explore

    base = train_spec(args)
    interval = args.pbt_interval if args.pbt_interval is not None else max(1, base.config.num_updates // 10)
    explore = parse_explore(args.pbt_explore) if args.pbt_explore else ()
    config = PBTConfig(interval=interval, fraction=args.pbt_fraction, explore=explore)
    design = study.Design(base, args.repetitions, config.with_defaults(type(base.hyperparams)), args.episodes)
    if args.fresh_seeds:
        design = design.with_fresh_seeds()
    design.validate()
    _check_memory(design)
    return design


RECORD_BYTES = 2048  # a run's record while the study starts, in Python's objects (measured: 2.3 KB)


def _check_memory(design) -> None:
    """One line before anything is written when the study cannot fit this machine's memory: it holds every run's
    record at once while it starts (`rundir.prepare_each`), and plays `--episodes` for each repetition's best."""
    from purerl import envs
    from purerl.algos import memory
    from purerl_lab.studies.pbt.design import METHODS

    runs = len(METHODS) * design.repetitions
    memory.refuse_beyond(runs * RECORD_BYTES, f"{runs:,} runs' records, held at once as the study starts, need at "
                         "least {gib}", "lower --repetitions")
    memory.evaluation_fits(envs.make(design.base.config.env), 1, design.episodes)


def run_cli(args) -> int:
    import numpy as np

    from purerl import stats
    from purerl_lab.publish import provenance, sessions
    from purerl.run import experiment, rundir
    from purerl_lab.studies.pbt import design as study, report as pbt_report

    if args.resume and args.overwrite:
        raise ConfigError("--resume and --overwrite exclude each other")
    design = design_of(args)
    part = design.part
    report = provenance.check_report(args.report or args.runs_dir / "report.md", "pbt",
                                     data=(f"{pbt_report.slug(part)}.json", f"{pbt_report.slug(part)}.png"))
    folder = report.parent / report.stem
    runs = [(method, rep) for rep in range(design.repetitions) for method in study.METHODS]
    continued = rundir.prepare_each({design.run_dir(args.runs_dir, method, rep): design.spec(method, rep).to_json()
                                     for method, rep in runs}, args.resume, args.overwrite, "study")
    worked = sessions.add(design.run_dir(args.runs_dir, "x", 0).parent, "pbt", args.resume, part, args.argv)
    summaries = []
    for method, rep in runs:  # repetition by repetition, so a study stopped early has every method alike
        out = design.run_dir(args.runs_dir, method, rep)
        summaries.append(experiment.run(design.spec(method, rep), out, resume=continued[out],
                                        overwrite=not continued[out], progress=not args.no_progress))
        if summaries[-1] is None:
            return 0  # cut short (a test's `stopping.cut_after`): --resume continues
    rows, curves = {m: [] for m in study.METHODS}, {}
    for method, rep in runs:
        out = design.run_dir(args.runs_dir, method, rep)
        chosen = study.selected(out)
        value, hp = study.evaluate_best(out, chosen["member"], design.episodes, design.episodes_key(rep))
        rows[method].append({**chosen, "repetition": rep, "seed": design.seeds(rep)[chosen["member"]],
                             "evaluated_return": value, "hyperparams": hp,
                             "run_dir": out.relative_to(args.runs_dir).as_posix()})  # no path of this machine
    for method, reps in rows.items():
        curves[method] = np.stack([r["population_curve"] for r in reps], axis=1)  # [updates, repetitions]
    record = study.summarize(design, rows)
    folder.mkdir(parents=True, exist_ok=True)
    pbt_report.plot(folder, part, curves, design.base.config.batch_size)
    pbt_report.write(record, folder, part)
    provenance.record("pbt", report, part, args.argv, provenance.training_seconds(summaries),
                      {"population": len(design.base.seeds), "env_steps_per_run": design.env_steps_per_member,
                       "seeds": record["seeds"]}, {"repetitions": design.repetitions},
                      sessions=worked if len(worked) > 1 else None, wall_summed=True)
    pbt_report.write_report(report)
    for method, s in record["methods"].items():
        print(f"{part} {s['label']:16s} evaluated return {stats.describe(s['evaluated_return'])}")
    print(f"report: {report}")
    return 0


