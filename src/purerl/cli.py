"""`purerl train | eval`: the command line. Bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

from purerl import host_devices, rundir
from purerl.config import PRESETS, ConfigError, HyperParams, PPOConfig
from purerl.stopping import StopRequested

EXIT_USAGE = 2
MAX_SEED = 2**32 - 1  # a seed is one uint32 PRNG key


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error, and `--lr -1e-3` read as a (bad) value, not an option."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # `--num-env 8` must not silently mean --num-envs
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")

    def error(self, message: str):
        print(f"purerl: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _float(text: str, kind: str = "a number") -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind}, got '{text}'") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got '{text}'")
    return value


def _floats(text: str) -> list[float]:
    """Comma-separated grid values: finite, and distinct even as the float32 the program computes with."""
    values = [_float(v) for v in text.split(",") if v.strip()]
    seen: dict[float, float] = {}
    for value in values:
        with np.errstate(over="ignore"):
            single = np.float32(value)
        if not np.isfinite(single):
            raise argparse.ArgumentTypeError(f"{value:g} is beyond float32's range (about 3.4e38)")
        same = seen.setdefault(float(single), value)
        if same is not value:
            raise argparse.ArgumentTypeError(f"duplicate value {value:.9g} in '{text}' (equal to {same:.9g} in float32)")
    return values


def _int(text: str) -> int:
    """An integer, also written as 1e6; never inf, nan or a fraction."""
    value = _float(text, "an integer")
    if value != int(value):
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'")
    return int(text) if text.strip().lstrip("+-").isdigit() else int(value)


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="purerl", description="Reinforcement learning as compiled JAX programs.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    train = sub.add_parser("train", help="train PPO on many seeds (and a hyperparameter grid) in one program")
    _add_train_flags(train)
    train.add_argument("--objective", default="ppo", help="policy objective: ppo, dpo, or lpo:PATH")
    train.add_argument("--out", type=Path, help="run directory (default runs/ENV-TIMESTAMP)")
    train.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    train.add_argument("--overwrite", action="store_true", help="replace whatever run is in --out")
    train.add_argument("--checkpoint-every", type=_positive(_float), default=60.0, metavar="SECONDS",
                       help="checkpoint at most this often (and always at the end, and on SIGINT/SIGTERM)")

    _add_distributed_flags(train)

    compare = sub.add_parser("compare", help="train several policy objectives on identical seeds")
    _add_train_flags(compare, default_seeds=16)
    compare.add_argument("--objectives", default="ppo,dpo", help="comma-separated: ppo, dpo, lpo:PATH")
    compare.add_argument("--runs-dir", type=Path, default=Path("runs/compare"), help="where the full runs go")
    compare.add_argument("--results-dir", type=Path, default=Path("docs/results/dpo"), help="per-env JSON and plot")
    compare.add_argument("--report", type=Path, default=Path("docs/results/dpo.md"), help="markdown regenerated here")

    evolve = sub.add_parser("evolve", help="evolution strategies over whole training runs")
    evolve.add_argument("task", choices=["value-loss", "lpo"], help="the meta-task to evolve")
    evolve.add_argument("--env", help="environment of the inner runs (lpo; default the preset's)")
    evolve.add_argument("--preset", default="cpu", help="budget: cpu (default, 2-core CPU) or paper (one GPU)")
    evolve.add_argument("--es-preset", choices=["paper-openes"], help="the 2022 papers' OpenES settings")
    evolve.add_argument("--strategy", help="evosax strategy: open_es, snes, cma_es, ...")
    evolve.add_argument("--population-size", type=_int)
    evolve.add_argument("--generations", type=_int)
    evolve.add_argument("--rollouts", type=_int, help="training runs (seeds) per candidate")
    evolve.add_argument("--fitness-shaping", help="centered_rank, z_score, none or default")
    evolve.add_argument("--optimizer", help="adam or sgd (the ES mean's optimiser)")
    evolve.add_argument("--es-lr", type=_float, dest="lr")
    evolve.add_argument("--es-lr-final", type=_float, dest="lr_final")
    evolve.add_argument("--std", type=_float)
    evolve.add_argument("--std-final", type=_float)
    evolve.add_argument("--seed", type=_int)
    evolve.add_argument("--max-parallel", type=_int, help="candidates evaluated per compiled call (memory)")
    evolve.add_argument("--fitness", choices=["final", "auc"], help="final return or mean return over training")
    evolve.add_argument("--total-timesteps", type=_int, help="env steps of each inner training run")
    evolve.add_argument("--memory-budget-mb", type=_positive(_float),
                        help="evaluate in chunks that fit this much memory per device (XLA memory analysis)")
    _add_distributed_flags(evolve)
    evolve.add_argument("--out", type=Path, help="run directory (default runs/evolve-TASK-TIMESTAMP)")
    evolve.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    evolve.add_argument("--overwrite", action="store_true", help="replace the purerl run in --out")
    evolve.add_argument("--no-progress", action="store_true")

    act = sub.add_parser("act", help="adversarial cheap talk: evolve an adversary that only appends messages")
    act.add_argument("phase", choices=["train-time", "test-time"])
    act.add_argument("--mode", choices=["anti", "pro"], default="anti", help="train-time: lower or raise returns")
    act.add_argument("--env", default="CartPole-v1")
    act.add_argument("--preset", default="cpu", help="cpu (default, 2-core CPU) or paper (one GPU)")
    act.add_argument("--population-size", type=_int)
    act.add_argument("--generations", type=_int)
    act.add_argument("--seed", type=_int)
    act.add_argument("--max-parallel", type=_int)
    act.add_argument("--runs-dir", type=Path, default=Path("runs/act"), help="evolve runs go to RUNS_DIR/ENV/...")
    act.add_argument("--report", type=Path, default=Path("docs/results/act.md"))
    act.add_argument("--resume", action="store_true", help="continue the evolve runs under --runs-dir")
    act.add_argument("--overwrite", action="store_true", help="replace the purerl runs under --runs-dir")
    act.add_argument("--no-progress", action="store_true")

    bench = sub.add_parser("bench", help="speed: purerl vs peers, side by side; writes docs/benchmarks.md")
    bench.add_argument("--task", choices=["cartpole", "minatar", "all", "evolve"], default="cartpole",
                       help="evolve: meta-evolution throughput (value-loss study; --preset cpu, or gpu for paper)")
    bench.add_argument("--preset", choices=["cpu", "gpu"], default="cpu", help="widths per task (gpu: up to 2048)")
    bench.add_argument("--seeds", help="comma-separated widths, overriding the preset (e.g. 1,8,64)")
    bench.add_argument("--repeats", type=_int, default=3, help="timed runs per width (median reported)")
    bench.add_argument("--peers", default="sb3,rejax", help="comma-separated peers, or none")
    bench.add_argument("--total-timesteps", type=_int, help="steps per agent (default: the task's)")
    bench.add_argument("--purejaxrl", type=Path, help="a checkout of luchris429/purejaxrl: adds it as a peer")
    bench.add_argument("--devices", help="comma-separated device counts: measure scaling with devices instead")
    bench.add_argument("--out", type=Path, default=Path("docs/benchmarks.md"))

    from purerl.studies import mfos

    mfos.add_arguments(sub)

    analyze = sub.add_parser("analyze", help="look at what evolution discovered")
    analyze.add_argument("what", choices=["value-loss", "drift"])
    analyze.add_argument("run_dir", help="value-loss: an evolve run; drift: ppo, dpo, or an LPO run/params path")
    analyze.add_argument("--out", type=Path, help="where to write (default RUN/analysis)")

    evaluate = sub.add_parser("eval", help="evaluate the greedy policy of a run")
    evaluate.add_argument("run_dir", type=Path)
    evaluate.add_argument("--episodes", type=_positive(_int), default=100)
    evaluate.add_argument("--seed", type=_int, default=12345)
    evaluate.add_argument("--gif", type=Path, nargs="?", const=Path("episode.gif"),
                          help="save an animation of one episode of member 0 (default RUN/episode.gif)")
    return parser


def _add_train_flags(parser: argparse.ArgumentParser, default_seeds: int = 4) -> None:
    """Flags shared by train and compare: env, preset, seeds, config and hyperparameter overrides."""
    parser.add_argument("--env", default="CartPole-v1", help="gymnax id (default CartPole-v1)")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="reference settings; default by env family")
    parser.add_argument("--seeds", type=_int, default=default_seeds, help=f"number of seeds (default {default_seeds})")
    parser.add_argument("--seed", type=_int, default=0, help="first seed; seeds are seed..seed+N-1")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    for name in ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=_int)
    parser.add_argument("--hidden-sizes", type=lambda s: tuple(int(v) for v in s.split(",")), metavar="64,64")
    parser.add_argument("--activation", choices=["tanh", "relu"])
    for flag in ("anneal_lr", "normalize_obs", "normalize_reward"):
        parser.add_argument(f"--{flag.replace('_', '-')}", action=argparse.BooleanOptionalAction, default=None)
    for name in HyperParams._fields:
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=_floats, metavar="X[,Y...]",
            help="comma-separated values sweep a grid" if name == "lr" else None,
        )


def _add_distributed_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("multi-process (jax.distributed; SLURM and Open MPI are detected)")
    group.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0")
    group.add_argument("--num-processes", type=_int)
    group.add_argument("--process-id", type=_int)


def _default_out(name: str) -> Path:
    import jax

    if jax.process_count() > 1:  # the processes' clocks differ: they must be told where to write
        raise ConfigError("a multi-process run needs --out")
    return Path("runs") / f"{name}-{datetime.datetime.now():%Y%m%d-%H%M%S}"


def is_writer() -> bool:
    from purerl.population import is_writer as writer

    return writer()


def _join_processes(args: argparse.Namespace) -> None:
    """Before any JAX backend starts: join a multi-process run if asked to (flags or a cluster launcher)."""
    if getattr(args, "coordinator", None) is None and (args.num_processes or args.process_id is not None):
        raise ConfigError("--num-processes and --process-id need --coordinator HOST:PORT")
    if args.coordinator and (args.num_processes is None or args.process_id is None):
        raise ConfigError("--coordinator needs --num-processes and --process-id")
    if args.num_processes is not None and not 0 <= (args.process_id or 0) < args.num_processes:
        raise ConfigError(f"--process-id must be in [0, {args.num_processes - 1}], got {args.process_id}")
    from purerl.population import initialize_distributed

    initialize_distributed(args.coordinator, args.num_processes, args.process_id)


def train_spec(args: argparse.Namespace):
    """The experiment described by the flags: preset, then explicit overrides."""
    from purerl import envs
    from purerl.config import apply_preset, default_preset
    from purerl.experiment import TrainSpec

    envs.check_name(args.env)
    env = envs.make(args.env)
    discrete = env.action_space.discrete
    preset = args.preset or default_preset(args.env, discrete)
    config, hp = apply_preset(preset, args.env, discrete)
    overrides = {
        field: getattr(args, field)
        for field in PPOConfig.__dataclass_fields__
        if field != "env" and getattr(args, field, None) is not None
    }
    config = config.replace(**overrides)
    grid = {}
    for name in HyperParams._fields:
        values = getattr(args, name)
        if values is None:
            continue
        if not values:
            raise ConfigError(f"--{name.replace('_', '-')} needs a value")
        hp = hp._replace(**{name: values[0]})
        if len(values) > 1:
            grid[name] = values
    if args.seeds <= 0:
        raise ConfigError(f"--seeds must be positive, got {args.seeds}")
    if args.seed < 0 or args.seed + args.seeds - 1 > MAX_SEED:
        raise ConfigError(f"seeds must lie in [0, {MAX_SEED}], got {args.seed}..{args.seed + args.seeds - 1}")
    seeds = list(range(args.seed, args.seed + args.seeds))
    return TrainSpec(config=config, hyperparams=hp, seeds=seeds, grid=grid, preset=preset,
                     objective=getattr(args, "objective", "ppo"))


def cmd_train(args: argparse.Namespace) -> int:
    _join_processes(args)
    from purerl import experiment

    spec = train_spec(args)
    spec.validate()
    if args.resume and args.out is None:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue")
    out = args.out or _default_out(args.env)
    summary = experiment.run(
        spec, out, resume=args.resume, overwrite=args.overwrite,
        progress=not args.no_progress, checkpoint_every_s=args.checkpoint_every,
    )
    if is_writer():
        _print_summary(out, summary)
    return 0


def _print_summary(out: Path, summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary['env']}: final return (mean of last {summary['final_return_window_updates']} updates)")
    for column in ("setting", "seeds", "mean", "IQM", "95% CI"):
        table.add_column(column)
    diverged = summary.get("diverged") or []
    for label, s in summary["final_return_by_setting"].items():
        bad = sum(1 for m in diverged if label == "default" or m.startswith(f"{label},"))
        seeds = f"{s['n']} ({bad} diverged)" if bad else str(s["n"])
        if s["mean"] is None:
            table.add_row(label, seeds, "no episode ended", "", "")
        else:
            table.add_row(label, seeds, f"{s['mean']:.1f}", f"{s['iqm']:.1f}",
                          f"\\[{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]")  # escaped: rich reads [..] as markup
    console = Console()
    console.print(table)
    speed = f"{summary['env_steps_per_s']:,.0f} env steps/s" if summary.get("env_steps_per_s") else "speed not measured"
    console.print(f"{summary['members']} agents x {summary.get('env_steps_per_member', 0):,} env steps; "
                  f"compile {summary['compile_s']:.1f} s, run {summary['run_s']:.1f} s, {speed}")
    console.print(f"results in {out}/ (summary.json, metrics.csv, curves.png, checkpoint/)")
    if diverged:
        print(f"purerl: warning: {len(diverged)} of {summary['members']} members diverged (non-finite loss or "
              f"parameters): {', '.join(diverged[:4])}{', ...' if len(diverged) > 4 else ''}", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    from purerl import compare

    spec = train_spec(args)
    if spec.grid:
        raise ConfigError("compare runs one hyperparameter setting; give single values")
    objectives = [o for o in args.objectives.split(",") if o]
    if len(objectives) < 2:
        raise ConfigError(f"--objectives needs at least two objectives, got '{args.objectives}'")
    record = compare.compare(spec, objectives, args.runs_dir, args.results_dir, "PPO vs DPO vs LPO",
                             progress=not args.no_progress)
    report = compare.write_report(args.results_dir, args.report, "Policy objectives: PPO, DPO and LPO")
    for label, row in record["objectives"].items():
        s = row["final_return"]
        print(f"{record['env']} {label:4s} final return IQM {s['iqm']:.1f} [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]")
    print(f"report: {report}")
    return 0


def cmd_act(args: argparse.Namespace) -> int:
    from purerl import envs, evolve
    from purerl.studies import act

    envs.check_name(args.env)
    overrides = {k: getattr(args, k) for k in ("population_size", "generations", "seed", "max_parallel")
                 if getattr(args, k) is not None}
    es_config = act.es_config(args.preset, **overrides)
    es_config.validate()
    base = args.runs_dir / args.env
    plots_dir = args.report.parent / args.report.stem

    def evolve_into(task, out):
        evolution = evolve.Evolution(task, es_config)
        log = evolve.run(evolution, out, evolve.config_json(task, es_config, {"preset": args.preset}),
                         resume=args.resume, overwrite=args.overwrite, progress=not args.no_progress)
        print(f"{task.name}: fitness mean {log[0]['mean']:.2f} -> {log[-1]['mean']:.2f} "
              f"(best {max(r['best'] for r in log):.2f}) over {len(log)} generations; {out}")

    if args.phase == "train-time":
        evolve_into(act.train_time_task(args.mode, args.env, es_config.seed), base / args.mode)
        done = {m: base / m for m in ("anti", "pro") if (base / m / evolve.MEAN_PARAMS).exists()}
        report = act.evaluate_train_time(done, args.env, args.report, plots_dir)
        for label, s in report["mean_return_over_training"].items():
            print(f"{label:18s} mean return over training IQM {s['iqm']:6.1f} [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]")
    else:
        evolve_into(act.test_time_task(args.env, seed=es_config.seed), base / "test-time")
        evolve_into(act.test_time_task(args.env, exploiter_only=True, seed=es_config.seed), base / "test-time-exploiter")
        report = act.evaluate_test_time(base / "test-time", base / "test-time-exploiter", args.env, args.report, plots_dir)
        for label, s in report["goal_return"].items():
            print(f"{label:38s} goal return IQM {s['iqm']:6.1f} [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]")
    print(f"report: {args.report}")
    return 0


def _positive_ints(flag: str, text: str | None) -> list[int] | None:
    """A comma-separated list of positive integers (None if the flag was not given)."""
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got '{text}'") from None
    if min(values) <= 0:
        raise ConfigError(f"{flag} must be positive, got {min(values)}")
    return values


def cmd_bench(args: argparse.Namespace) -> int:
    from purerl.bench import harness, peers

    tasks = {"all": ["cartpole", "minatar"], "evolve": []}.get(args.task, [args.task])
    names = [] if args.peers == "none" else [p for p in args.peers.split(",") if p]
    if args.purejaxrl is not None:
        if not (args.purejaxrl / "purejaxrl" / "ppo.py").is_file():
            raise ConfigError(f"--purejaxrl {args.purejaxrl} is not a checkout of luchris429/purejaxrl (no purejaxrl/ppo.py)")
        args.purejaxrl = args.purejaxrl.expanduser().resolve()
        names += [] if "purejaxrl" in names else ["purejaxrl"]
    unknown = [p for p in names if p not in peers.PEERS]
    if unknown:
        raise ConfigError(f"unknown peer '{unknown[0]}'; choose from {', '.join(peers.PEERS)} or none")
    custom = _positive_ints("--seeds", args.seeds)
    device_counts = _positive_ints("--devices", args.devices)
    if args.repeats <= 0:
        raise ConfigError(f"--repeats must be positive, got {args.repeats}")
    if "purejaxrl" in names and args.purejaxrl is None:
        print(f"purejaxrl peer {harness.PUREJAXRL_SKIPPED}", file=sys.stderr)
    records = []
    if args.task == "evolve":
        records.append(harness.bench_evolve(args.preset, args.repeats))
    for task in tasks:
        if device_counts:
            widths = custom or [8, 64]
            records.append(harness.bench_devices(task, widths, device_counts, args.repeats, args.total_timesteps))
            continue
        widths = custom or harness.PRESETS[args.preset][task]
        records.append(harness.bench(task, widths, args.repeats, names, args.total_timesteps, purejaxrl=args.purejaxrl))
    command = "purerl bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else "purerl bench"
    for record in records:
        record["command"] = command
    records_path = args.out.parent / "benchmarks" / "records.json"
    kind = lambda r: (r["task"], "device_rows" in r, r.get("preset"))  # noqa: E731
    if records_path.exists():  # keep the other kinds of measurement already in the report
        fresh = {kind(r) for r in records}
        records = [r for r in json.loads(records_path.read_text()) if kind(r) not in fresh] + records
    report = harness.write_report(records, args.out)
    from purerl.results import write_atomic

    write_atomic(records_path, json.dumps(records, indent=2))
    print(f"report: {report}")
    return 0


def cmd_evolve(args: argparse.Namespace) -> int:
    _join_processes(args)
    from purerl import evolve
    from purerl.studies import lpo, value_loss
    study = {"value-loss": value_loss, "lpo": lpo}[args.task]
    es_fields = ("strategy", "population_size", "generations", "rollouts", "fitness_shaping", "optimizer", "lr",
                 "lr_final", "std", "std_final", "seed", "max_parallel")
    overrides = dict(evolve.ES_PRESETS[args.es_preset]) if args.es_preset else {}
    overrides.update({k: getattr(args, k) for k in es_fields if getattr(args, k) is not None})
    es_config = study.es_config(args.preset, **overrides)
    es_config.validate()
    task = study.make_task(args.preset, args.total_timesteps, args.fitness, args.env)
    if args.resume and args.out is None:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue")
    out = args.out or _default_out(f"evolve-{args.task}")
    config_json = evolve.config_json(task, es_config, {"preset": args.preset})
    rundir.prepare(out, config_json, args.resume, args.overwrite)  # before the memory analysis compiles
    budget = args.memory_budget_mb * 2**20 if args.memory_budget_mb else None
    evolution = evolve.Evolution(task, es_config, memory_budget_bytes=budget)
    log = evolve.run(evolution, out, config_json, resume=args.resume, overwrite=args.overwrite,
                     progress=not args.no_progress)
    if not is_writer():
        return 0
    first, last = log[0], log[-1]
    print(f"generation {first['generation']}: mean fitness {first['mean']:.2f}, best {first['best']:.2f}")
    print(f"generation {last['generation']}: mean fitness {last['mean']:.2f}, best {last['best']:.2f}")
    print(f"results in {out}/ ({evolve.GENERATIONS_CSV}, {evolve.FITNESS_PNG}, {evolve.BEST_PARAMS}, {evolve.MEAN_PARAMS})")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from purerl.studies import lpo, value_loss

    if args.what == "drift":
        sources = ["ppo", "dpo"] + ([args.run_dir] if args.run_dir not in ("ppo", "dpo") else [])
        default_out = Path(args.run_dir) / "analysis" if len(sources) > 2 else Path("runs") / "drift"
        report = lpo.analyze_drift(sources, args.out or default_out)
        for label, features in report["features"].items():
            edge = features["rollback_below_r_at_A_minus_1"]
            print(f"{label:14s} rollback: {'yes, below r = %.2f at A = -1' % edge if edge else 'none'}; "
                  f"cautious optimism (mean slope/A for A > 0, r > 1.05): {features['optimism_mean_slope_over_A']:.2f}; "
                  f"max |D - D_ppo| = {features['max_abs_difference_from_ppo']:.2f} at "
                  f"r = {features['largest_difference_at']['r']:.2f}, A = {features['largest_difference_at']['A']:.2f}")
        print(f"plot: {report['plot']}")
        return 0
    args.run_dir = Path(args.run_dir)
    if not (args.run_dir / "config.json").exists():
        raise ConfigError(f"{args.run_dir} is not a purerl run directory (no config.json)")
    report = value_loss.analyze(args.run_dir, args.out)
    shape = report["shape"]
    print(f"learned loss: asymmetric={shape['asymmetric']} (asymmetry {shape['asymmetry']:.3f}), "
          f"slope at 0 non-zero={shape['slope_at_zero_nonzero']} ({shape['slope_at_zero']:+.3f} of max), "
          f"minimum at value - target = {shape['minimum_at_error']:+.2f}")
    for name in ("learned", "l2"):
        for metric in ("mean_return_over_training", "final_return"):
            s = report[name][metric]
            print(f"{name:8s} {metric:26s} IQM {s['iqm']:7.1f}  95% CI [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]"
                  f"  mean {s['mean']:.1f} over {s['n']} fresh seeds")
    print(f"plots: {report['loss_plot']}, {report['curves_plot']}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from purerl import stats
    from purerl.policy import Policy, evaluate, load_run, render_gif

    spec, members, train, state = load_run(args.run_dir)
    key = jax.random.PRNGKey(args.seed)
    returns = jax.jit(jax.vmap(lambda p, s: evaluate(train, p, s, key, args.episodes)))(state.params, state.obs_stats)
    returns = np.asarray(returns)  # [members, episodes]
    per_member = returns.mean(axis=1)
    report = {
        "episodes": args.episodes,
        "greedy_return_by_member": {members.label(i): float(v) for i, v in enumerate(per_member)},
        "greedy_return": stats.summarize(per_member),
    }
    from purerl.results import write_atomic

    write_atomic(args.run_dir / "eval.json", json.dumps(report, indent=2))
    s = report["greedy_return"]
    print(
        f"greedy return over {args.episodes} episodes x {len(members)} members: mean {s['mean']:.2f}, "
        f"IQM {s['iqm']:.2f}, 95% CI [{s['ci95_low']:.2f}, {s['ci95_high']:.2f}]"
    )
    if args.gif is not None:
        path = args.gif if args.gif.is_absolute() or args.gif.parent != Path(".") else args.run_dir / args.gif
        pick = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731
        render_gif(Policy(train, pick(state.params), pick(state.obs_stats), members.label(0)), path)
        print(f"saved {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from purerl.studies import mfos

    commands = {"mfos": mfos.run_cli, "train": cmd_train, "eval": cmd_eval, "evolve": cmd_evolve, "analyze": cmd_analyze, "compare": cmd_compare, "act": cmd_act, "bench": cmd_bench}
    try:
        if host_devices.PROBLEM:
            raise ConfigError(host_devices.PROBLEM)
        return commands[args.command](args)
    except ConfigError as error:
        print(f"purerl: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except StopRequested as stop:
        where = f"; checkpoint saved at {stop.done} of {stop.total}, continue with the same command and --resume" \
            if stop.saved else ""
        print(f"purerl: stopped by {stop.signal_name}{where}", file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:
        print("purerl: interrupted before a checkpoint could be saved", file=sys.stderr)
        return 130
    except OSError as error:  # the disk, not the input: still one line, not a traceback
        print(f"purerl: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
