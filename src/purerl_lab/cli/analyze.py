"""`purerl analyze | act`: what evolution discovered (the value loss, LPO's drift) and adversarial cheap talk."""

from __future__ import annotations

import argparse
from pathlib import Path

from purerl.cli.args import at_most, integer, path, positive
from purerl.checks import ConfigError
from purerl.run import files, rundir

MAX_HELD_OUT_SEEDS = 2**12  # value-loss held-out seeds: 256 are published; far more do not fit in memory
MAX_VICTIMS = 2**12  # ACT's fresh victims per condition, all trained at once: 64 are published


def add_analyze(sub) -> None:
    analyze = sub.add_parser("analyze", help="look at what evolution discovered")
    analyze.add_argument("what", choices=["value-loss", "drift"])
    analyze.add_argument("run_dir", help="value-loss: comma-separated evolve runs (one per ES seed) or their "
                         "committed copies; drift: ppo, dpo, or comma-separated LPO runs/params paths")
    analyze.add_argument("--out", type=path, help="drift: where to write (default RUN/analysis)")
    analyze.add_argument("--report", type=path,
                         help="value-loss: markdown written here, with .json and a folder of plots and params beside it "
                         "(default FIRST_RUN/analysis/value_loss.md; docs/results/value_loss.md regenerates the docs)")
    analyze.add_argument("--seeds", type=integer, default=64, help="value-loss: held-out seeds at the training budget")
    analyze.add_argument("--transfer-seeds", type=integer, help="value-loss: held-out seeds per transfer setting (default --seeds)")
    analyze.add_argument("--stages", help="value-loss: comma-separated stages to measure (default all: training_budget, "
                         "acrobot, 2x_budget, 5x_budget, critic, their replications fresh_training_budget, "
                         "fresh_acrobot, fresh_2x_budget, fresh_5x_budget on disjoint seeds, and tuning and tuning_5x "
                         "with --tuned-l2); the others are kept from the report's JSON, all of them only beside the "
                         "same tuned L2")
    analyze.add_argument("--tuned-l2", action="store_true",
                         help="value-loss: first grid L2's vf_coef (8 values, 1/128 to 1, extended a factor 2 at a "
                         "time, up to 3 more, past an edge where the best lies) on the evolutions' own training runs "
                         "and budget, and add the best as the baseline tuned_l2; and again at 5x the budget (16 runs "
                         "each, or --tune-runs if fewer), tuned_l2_5x, the 5x stages' baseline")
    analyze.add_argument("--tune-runs", type=positive(integer),
                         help="value-loss, with --tuned-l2: training runs per vf_coef (default 128), the first of those "
                         "the evolutions' fitness trained on")
    analyze.set_defaults(run=cmd_analyze)


def add_act(sub) -> None:
    act = sub.add_parser("act", help="adversarial cheap talk: evolve an adversary that only appends messages")
    act.add_argument("phase", choices=["train-time", "test-time"])
    act.add_argument("--mode", choices=["anti", "pro"], default="anti", help="train-time: lower or raise returns")
    act.add_argument("--env", default="CartPole-v1")
    act.add_argument("--preset", default="cpu", help="cpu (default, 2-core CPU) or paper (one GPU)")
    act.add_argument("--population-size", type=integer, help="ES candidates per generation (default: the preset's)")
    act.add_argument("--generations", type=integer, help="ES generations (default: the preset's)")
    act.add_argument("--seed", type=integer, help="the ES seed (default: the preset's)")
    act.add_argument("--max-parallel", type=integer,
                     help="candidates evaluated per compiled call (default: all at once)")
    act.add_argument("--runs-dir", type=path, default=Path("runs/act"), help="evolve runs go to RUNS_DIR/ENV/...")
    act.add_argument("--report", type=path, help="evaluate every run present and regenerate this markdown, "
                     "evaluations and evolved parameters in REPORT's stem folder, provenance in manifest.json "
                     "(an evolve run without it only evolves; --from-params defaults it to RUNS_DIR/ENV/report.md)")
    act.add_argument("--from-params", type=path, help="evaluate the evolved parameters in this folder (a --runs-dir "
                     "ENV folder or a report's params/ folder) instead of evolving")
    act.defer_help(act.add_argument("--victims", type=at_most(MAX_VICTIMS)), _victims_help)
    act.add_argument("--fresh-seeds", action="store_true",
                     help="the evaluation's replication, with --report: its victims from PRNGKey(70000) on (the "
                     "study's from 20000), its record in its own part of the report, fresh_PART")
    act.add_argument("--resume", action="store_true",
                     help="continue the evolve runs under --runs-dir (and start the phase's missing ones), and a "
                          "train-time evaluation from the conditions it finished (RUNS_DIR/ENV/train-time-evaluation)")
    act.add_argument("--overwrite", action="store_true", help="replace the purerl runs under --runs-dir")
    act.add_argument("--no-progress", action="store_true")
    act.set_defaults(run=cmd_act)


def _victims_help() -> str:
    from purerl_lab.studies.act import VICTIMS

    return (f"fresh victims the evaluation trains per condition (default: the env's own, "
            f"{', '.join(f'{env} {v.victims}' for env, v in VICTIMS.items())}; the report gives no verdict from fewer)")


def cmd_analyze(args: argparse.Namespace) -> int:
    from purerl_lab.studies.dpo import lpo

    if args.what == "drift":
        learned = [p for p in args.run_dir.split(",") if p and p not in ("ppo", "dpo")]
        sources = ["ppo", "dpo", *learned]
        default_out = Path(learned[0]) / "analysis" if learned else Path("runs") / "drift"
        out = args.out or default_out
        _check_drift_out(out)
        report = lpo.analyze_drift(sources, out)
        files.mark_written(Path(report["plot"]))
        for label, f in report["features"].items():
            edges = ", ".join(f"A = {a}: r < {r:.2f}" for a, r in f["rollback_below_r"].items() if r is not None)
            print(f"{label:14s} rollback: {edges or 'none'}; cautious optimism: drift {f['optimism_mean_drift_inside_clip']:.4f} "
                  f"inside the clip (PPO 0), {f['optimism_drift_beyond_clip_vs_ppo']:.2f}x PPO's beyond it; "
                  f"|D - D_ppo| mean {f['mean_abs_difference_from_ppo']:.3f} max {f['max_abs_difference_from_ppo']:.2f}; "
                  f"|D - D_dpo| mean {f['mean_abs_difference_from_dpo']:.3f} max {f['max_abs_difference_from_dpo']:.2f}")
        print(f"plot: {report['plot']}")
        return 0
    from purerl_lab.publish import provenance
    from purerl_lab.studies.value_loss import record as value_loss_record, report as value_loss_report, tuning

    sources = [Path(p) for p in args.run_dir.split(",") if p.strip()]
    if not sources:
        raise ConfigError(f"value-loss needs at least one evolve run, got '{args.run_dir}'")
    for source in sources:
        if not (source / "config.json").is_file():
            raise ConfigError(f"{source} is not a purerl run directory (no config.json)")
    for flag, value in (("--seeds", args.seeds), ("--transfer-seeds", args.transfer_seeds)):
        if value is not None and value < 10:
            raise ConfigError(f"{flag} must be at least 10 (a 95% CI needs 10 seeds), got {value}")
        if value is not None and value > MAX_HELD_OUT_SEEDS:  # beyond it, a MemoryError after the first files
            raise ConfigError(f"{flag} must be at most {MAX_HELD_OUT_SEEDS:,}, got {value:,}")
    stages = tuple(value_loss_record.ALL_STAGES if args.stages is None else [s for s in args.stages.split(",") if s])
    unknown = [s for s in stages if s not in value_loss_record.ALL_STAGES]
    if unknown or not stages:
        raise ConfigError(f"unknown stage '{unknown[0] if unknown else args.stages}'; choose from "
                          f"{', '.join(value_loss_record.ALL_STAGES)}")
    if args.tune_runs is not None and not args.tuned_l2:
        raise ConfigError("--tune-runs needs --tuned-l2")
    for tuning_stage in (value_loss_record.TUNING, value_loss_record.TUNING_5X):
        if args.stages is not None and tuning_stage in stages and not args.tuned_l2:
            raise ConfigError(f"--stages {tuning_stage} needs --tuned-l2")
    tune_runs = (args.tune_runs or tuning.RUNS) if args.tuned_l2 else None
    args.report = provenance.check_report(args.report or sources[0] / "analysis" / "value_loss.md", "value_loss")
    record = value_loss_report.analyze(sources, args.report, args.seeds, args.argv, args.transfer_seeds, stages,
                                       tune_runs)
    shape = record["shape"]
    if shape:
        print(f"learned loss: over/under-estimation loss ratio {shape['over_under_ratio']}, convex={shape['convex']} "
              f"(non-convex share per target {shape['nonconvex_fraction']}), weight at v=t {shape['weight_at_zero']}")
    for name, numbers in (record.get("loss_shapes") or {}).items():
        s = numbers["summary"]
        print(f"{name}: slope at v=t {s['slope_left']:+.3f} / {s['slope_right']:+.3f}, as L2 at vf_coef "
              f"{s['effective_vf_coef']:.3f}, shape beyond scale {s['shape_distance']}")
    held = record["held_out"]
    if "verdict_vs_l2" in held:
        print(f"held-out, training budget: learned {held['verdict_vs_l2']} vs L2, {held['verdict_vs_clipped_l2']} vs clipped L2")
    for name, others in (record.get("paired") or {}).get("training_budget", {}).items():
        print(f"paired, training budget: {name} " + ", ".join(f"{d['verdict']} vs {other} ({d['mean']:+.1f})"
                                                            for other, d in others.items()))
    print(f"report: {args.report}")
    return 0


def _drift_record(path: Path) -> bool:
    """`path` is a drift.json that `analyze drift` wrote: each drift's named features."""
    try:
        record = files.read_json(path, "a drift record")
    except ConfigError:
        return False
    return bool(record) and all(isinstance(f, dict) and "rollback_below_r" in f for f in record.values())


def _check_drift_out(out: Path) -> None:
    """Refuse to replace a drift.json or drift.png in OUT that `analyze drift` did not write."""
    if not out.is_dir():
        return
    files.check_replaceable(out / "drift.json", "--out", own=_drift_record)
    ours = _drift_record(out / "drift.json")  # the maps beside a drift record are its own
    files.check_replaceable(out / "drift.png", "--out", own=lambda path: ours or files.written_by_purerl(path))


def cmd_act(args: argparse.Namespace) -> int:
    from purerl_lab.studies.act import cli as act_cli

    if args.resume and args.overwrite:
        raise ConfigError("--resume and --overwrite exclude each other")
    if args.victims is not None and args.report is None and args.from_params is None:
        raise ConfigError("--victims sets an evaluation's victims: it needs --report or --from-params")
    if args.fresh_seeds and args.report is None:
        raise ConfigError("--fresh-seeds replicates a report's evaluation on fresh victims: it needs --report")
    if args.from_params is not None:
        _check_evolved(act_cli, args.from_params, args.phase)
    return act_cli.run_cli(args)


def _check_evolved(act_cli, source: Path, phase: str) -> None:
    """Every evolved run that `act --from-params` would copy beside the report and evaluate reads back (its
    config.json, generations.csv and parameters), before anything is copied or compiled."""
    from flax import serialization

    for *_, run in act_cli.evolved_runs(source, phase):
        try:
            config = rundir.read_config(run)
            if not isinstance(config.get("es"), dict):
                raise ValueError("its config.json holds no ES settings")
            act_cli._generations(run)
            serialization.msgpack_restore((run / act_cli.MEAN_PARAMS).read_bytes())
        except Exception as error:  # noqa: BLE001  whatever a damaged file raises (msgpack, csv, JSON)
            raise ConfigError(f"--from-params: {run} is not an evolved run purerl can read "
                              f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})") from None
