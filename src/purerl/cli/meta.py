"""`purerl evolve`: meta-evolution over whole training runs, of any meta-task registered (`purerl.meta.tasks`)."""

from __future__ import annotations

import argparse

from purerl.cli.args import (add_distributed_flags, default_out, finite_float, integer, is_writer,
                             join_processes, path, positive)
from purerl.checks import ConfigError
from purerl.meta.tasks import meta_task_module, meta_tasks
from purerl.run import rundir




def add_evolve(sub) -> None:
    evolve = sub.add_parser("evolve", help="evolution strategies over whole training runs")
    evolve.add_argument("task", choices=list(meta_tasks()), help="the meta-task to evolve")
    evolve.add_argument("--env", help="environment of the inner runs (lpo; default the preset's)")
    evolve.add_argument("--preset", default="cpu", help="budget: cpu (default, 2-core CPU) or paper (one GPU)")
    evolve.add_argument("--es-preset", choices=["paper-openes"], help="the 2022 papers' OpenES settings")
    _es_option(evolve, "--strategy", "strategy")
    _es_option(evolve, "--population-size", "population_size", type=integer)
    _es_option(evolve, "--generations", "generations", type=integer)
    _es_option(evolve, "--rollouts", "rollouts", type=integer)
    evolve.add_argument("--fitness-shaping", help="open_es, pgpe: centered_rank (default), z_score or none; "
                        "the other strategies use their own rank weights (rank_weights, the default)")
    _es_option(evolve, "--optimizer", "optimizer")
    _es_option(evolve, "--es-lr", "lr", type=finite_float, dest="lr")
    _es_option(evolve, "--es-lr-final", "lr_final", type=finite_float, dest="lr_final")
    _es_option(evolve, "--std", "std", type=finite_float)
    _es_option(evolve, "--std-final", "std_final", type=finite_float)
    _es_option(evolve, "--seed", "seed", type=integer)
    _es_option(evolve, "--max-parallel", "max_parallel", type=integer)
    evolve.add_argument("--fitness", choices=["final", "auc"],
                        help="final return or mean return over training (default: the task preset's)")
    evolve.add_argument("--total-timesteps", type=positive(integer),
                        help="env steps of each inner training run (default: the task preset's)")
    evolve.add_argument("--loss-form", choices=["scaled", "mlp"],
                        help="value-loss: scaled (default), 0.5 (v - t)^2 exp(g(v, t)), L2 reweighted; or mlp, "
                        "exp(s) (0.5 e^2 + e h(e)) with h an MLP of the error e = v - t, free to have a slope at e = 0")
    evolve.add_argument("--memory-budget-mb", type=positive(finite_float),
                        help="evaluate in chunks that fit this much memory per device (XLA memory analysis)")
    add_distributed_flags(evolve)
    evolve.add_argument("--out", type=path, help="run directory (default runs/evolve-TASK-TIMESTAMP)")
    evolve.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    evolve.add_argument("--overwrite", action="store_true", help="replace the purerl run in --out")
    evolve.add_argument("--no-progress", action="store_true")
    evolve.set_defaults(run=cmd_evolve)


def _es_option(evolve, flag: str, name: str, **kwargs) -> None:
    """An ES setting's flag. Its help, with every task's default, is worked out only when help is shown: that
    imports every meta-task, which would add about 2 s to the start of every command."""
    evolve.defer_help(evolve.add_argument(flag, **kwargs), lambda: _es_help(name))


def _es_help(name: str) -> str:
    """What the ES setting means, and its default under each task and --preset ('default: value-loss cpu 32, ...')."""
    from purerl.cli.args import default_text
    from purerl.meta.strategies import ES_DESCRIPTIONS

    shown = {}
    for task in meta_tasks():
        study = meta_task_module(task)
        for preset in study.PRESETS:
            value = getattr(study.es_config(preset), name)
            shown[f"{task} {preset}"] = ("all" if name == "max_parallel" else "constant") if value is None else (
                f"{value:g}" if isinstance(value, float) else str(value))
    return f"{ES_DESCRIPTIONS[name]} ({default_text(shown)})".replace("%", "%%")


ES_FLAGS = ("strategy", "population_size", "generations", "rollouts", "fitness_shaping", "optimizer", "lr",
            "lr_final", "std", "std_final", "seed", "max_parallel")


def es_settings(args: argparse.Namespace, study):
    """The evolution's ES config: the task's preset, then `--es-preset`'s settings over it, then each ES flag
    given over both; validated."""
    from purerl.meta import strategies

    overrides = dict(strategies.ES_PRESETS[args.es_preset]) if args.es_preset else {}
    overrides.update({k: getattr(args, k) for k in ES_FLAGS if getattr(args, k) is not None})
    es_config = study.es_config(args.preset, **overrides)
    es_config.validate()
    return es_config


def cmd_evolve(args: argparse.Namespace) -> int:
    join_processes(args)
    from purerl.meta import evolve, evolve_files
    from purerl.runtime import hostinfo

    study = meta_task_module(args.task)
    es_config = es_settings(args, study)
    if args.loss_form and args.task != "value-loss":
        raise ConfigError(f"--loss-form is the value-loss task's; {args.task} has none")
    form = {"loss_form": args.loss_form} if args.loss_form else {}
    task = study.make_task(args.preset, args.total_timesteps, args.fitness, args.env, **form)
    if args.resume and args.out is None:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue")
    out = args.out or default_out(f"evolve-{args.task}")
    config_json = evolve.config_json(task, es_config, {"preset": args.preset})
    rundir.prepare(out, config_json, args.resume, args.overwrite)  # before the memory analysis compiles
    budget_mb = args.memory_budget_mb or getattr(study, "memory_budget_mb", lambda preset: None)(args.preset)
    budget = budget_mb * 2**20 if budget_mb else None
    evolution = evolve.Evolution(task, es_config, memory_budget_bytes=budget)
    log = evolve.run(evolution, out, config_json, resume=args.resume, overwrite=args.overwrite,
                     progress=not args.no_progress, session=hostinfo.run_facts(args.argv))
    if not is_writer():
        return 0
    first, last = log[0], log[-1]
    print(f"generation {first['generation']}: mean fitness {first['mean']:.2f}, best {first['best']:.2f}")
    print(f"generation {last['generation']}: mean fitness {last['mean']:.2f}, best {last['best']:.2f}")
    print(f"results in {out}/ ({evolve_files.GENERATIONS_CSV}, {evolve_files.FITNESS_PNG}, {evolve_files.BEST_PARAMS}, {evolve_files.MEAN_PARAMS})")
    return 0


