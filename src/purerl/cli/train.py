"""`purerl train | eval`: training experiments on many seeds, and what they trained."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from purerl.cli.args import (add_distributed_flags, add_pbt_flags, add_train_flags, at_most, default_out,
                             default_text, finite_float, is_writer, join_processes, path, positive, seed, with_pbt)
from purerl.checks import MAX_EPISODES, ConfigError, seed_range
from purerl.run import files, rundir

EVAL_REPORT = "eval.json"
DEFAULT_GIF = "episode.gif"
rundir.register_files(EVAL_REPORT, DEFAULT_GIF)


def add_train(sub, algo: str | None = None) -> None:
    """`purerl train`, with every algorithm's flags, or with `algo`'s alone (`purerl train --algo sac --help`)."""
    from purerl.algos.registry import ALGORITHMS

    train = sub.add_parser("train", help=f"train {', '.join(a.title for a in ALGORITHMS.values())} on many seeds (and a "
                                          "hyperparameter grid) in one program")
    add_train_flags(train, algorithms=(algo,) if algo in ALGORITHMS else None)
    if algo not in ALGORITHMS:
        train.epilog += " `purerl train --algo NAME --help` shows one algorithm's flags alone."
    train.add_argument("--algo", default="ppo", choices=list(ALGORITHMS), help="algorithm")
    networks = list(dict.fromkeys(name for algorithm in ALGORITHMS.values() for name in algorithm.networks))
    train.add_argument("--network", default="mlp", choices=networks, help="gru: a recurrent agent (ppo)")
    train.add_argument("--objective", default="ppo", help="policy objective: ppo, dpo, or lpo:PATH")
    train.add_argument("--out", type=path, help="run directory (default runs/ENV-TIMESTAMP)")
    train.add_argument("--resume", action="store_true",
                       help="continue the run in --out from its checkpoint (alone: with the settings it recorded)")
    train.add_argument("--overwrite", action="store_true", help="replace whatever run is in --out")
    train.add_argument("--checkpoint-every", type=positive(finite_float), default=60.0, metavar="SECONDS",
                       help="checkpoint at most this often (and always at the end, and on SIGINT/SIGTERM)")
    train.add_argument("--log", action="append", choices=["tensorboard", "wandb"], default=[],
                       help="also log every member and the aggregate once per chunk (repeatable)")
    wandb = train.add_argument_group("--log wandb: one W&B run per member, grouped by experiment (each flag's "
                                     "default is W&B's variable, WANDB_PROJECT ...)")
    wandb.add_argument("--wandb-project", metavar="NAME", help="W&B project (WANDB_PROJECT)")
    wandb.add_argument("--wandb-entity", metavar="NAME", help="W&B user or team (WANDB_ENTITY)")
    wandb.add_argument("--wandb-group", metavar="NAME",
                       help="W&B group of the members' runs (WANDB_RUN_GROUP, else the run directory's name)")
    wandb.add_argument("--wandb-tags", metavar="A,B", help="comma-separated W&B tags (WANDB_TAGS)")
    train.add_argument("--config", type=path, metavar="RUN/config.json",
                       help="rerun exactly the experiment recorded there; other flags replace single fields")
    chosen = [ALGORITHMS[algo]] if algo in ALGORITHMS else list(ALGORITHMS.values())
    train.defer_help(train.add_argument("--final-eval-episodes", type=at_most(MAX_EPISODES, zero=True), metavar="N"),
                     lambda: final_eval_help(chosen))  # its rule's module loads scipy: only when help is shown

    add_pbt_flags(train)
    add_distributed_flags(train)
    train.set_defaults(run=cmd_train)


def final_eval_help(algorithms) -> str:
    """--final-eval-episodes' help, with each algorithm's default by `final_eval.default_episodes`."""
    from purerl.run import final_eval

    defaults = default_text({a.name: str(final_eval.default_episodes(a.config)) for a in algorithms})
    return ("when training ends, play every agent's greedy policy on N fresh full-length episodes and record their "
            "mean return in summary.json (final_eval) and the table beside the training window's; 0: none. By "
            "default a replay learner's run (one with --learning-starts) is evaluated, since its training episodes "
            f"are its exploration's and, in a short run, early learning's ({defaults})")


def add_eval(sub) -> None:
    evaluate = sub.add_parser("eval", help="evaluate the policy of every member of a run, greedy or sampled")
    evaluate.add_argument("run_dir", type=path)
    evaluate.add_argument("--policy", choices=["greedy", "sample"], default="greedy",
                          help="greedy: the most likely action (the mean, the argmax of Q); sample: the policy's own "
                               "sampling (PPO and SAC their distribution, TD3 its exploration noise, DQN and PQN "
                               "epsilon-greedy at --epsilon-finish), drawn from --seed")
    evaluate.add_argument("--episodes", type=at_most(MAX_EPISODES), default=100,
                          help=f"episodes per member (at most {MAX_EPISODES:,})")
    evaluate.add_argument("--seed", type=seed, default=12345, help="the episodes' (and the sampled actions') seed")
    evaluate.add_argument("--gif", type=path, nargs="?", const=Path(DEFAULT_GIF),
                          help="save an animation of one episode of member 0, played the same way "
                               "(default RUN/episode.gif)")
    evaluate.set_defaults(run=cmd_eval)


def train_spec(args: argparse.Namespace):
    """The experiment described by the flags: preset, then explicit overrides (`trainspec.make_spec`, which
    `purerl.make_train` shares)."""
    from purerl.algos import registry
    from purerl.run.trainspec import make_spec

    seeds = seed_range(args.seed, args.seeds)
    settings = {name: getattr(args, name) for name in [*registry.config_fields(), *registry.hyperparam_fields()]
                if getattr(args, name, None) is not None}
    return make_spec(args.env, getattr(args, "algo", "ppo"), args.preset, settings,
                     seeds=seeds, network=getattr(args, "network", "mlp"),
                     objective=getattr(args, "objective", "ppo"), cli=True)


def members_in_flags(args: argparse.Namespace) -> int:
    """Seeds x grid points, as `train_spec` will build them, known before any backend starts."""
    from purerl.algos import registry

    count = args.seeds
    for name in registry.hyperparam_fields():
        count *= max(1, len(getattr(args, name, None) or ()))
    return count


# Flags that say how this session runs, not what it trains: `--resume` with no others continues the run as recorded.
WANDB_FLAGS = ("project", "entity", "group", "tags")
SESSION_FLAGS = {"out", "resume", "no_progress", "checkpoint_every", "log", "final_eval_episodes", "coordinator",
                 "num_processes", "process_id", *(f"wandb_{name}" for name in WANDB_FLAGS)}


def cmd_train(args: argparse.Namespace) -> int:
    wandb_flags = {name: getattr(args, f"wandb_{name}") for name in WANDB_FLAGS}
    given = [name for name, value in wandb_flags.items() if value is not None]
    if given and "wandb" not in args.log:
        raise ConfigError(f"--wandb-{given[0]} needs --log wandb")
    join_processes(args)
    from purerl.run import experiment, rerun
    from purerl.runtime import host_devices

    if args.resume and args.out is None:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue")
    if args.config is not None:
        spec = rerun.apply_flags(rerun.load_spec(args.config), args, rerun.given_flags(args.argv))
    elif args.resume and (args.out / "config.json").is_file() and not rerun.given_flags(args.argv) - SESSION_FLAGS:
        spec = rerun.load_spec(args.out, "--resume")  # `train --out RUN --resume`: the run as recorded
    else:
        host_devices.one_core_for_one_member(members_in_flags(args))  # before train_spec starts a backend
        spec = train_spec(args)
    spec = with_pbt(spec, args)
    if args.resume:
        spec = rerun.in_recorded_order(spec, args.out)
    spec.validate()
    out = args.out or default_out(spec.config.env)
    summary = experiment.run(
        spec, out, resume=args.resume, overwrite=args.overwrite,
        progress=not args.no_progress, checkpoint_every_s=args.checkpoint_every, log=args.log,
        wandb_flags=wandb_flags, final_eval_episodes=args.final_eval_episodes,
    )
    if is_writer():
        print_summary(out, summary)
    return 0


def print_summary(out: Path, summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    window = summary.get("final_return_window_env_steps")
    steps = f", env steps {window[0]:,}-{window[1]:,} of each agent" if window else ""
    table = Table(title=f"{summary['env']}: final return (mean of the last {summary['final_return_window_updates']} "
                        f"updates{steps})")
    evaluated = summary.get("final_eval")
    columns = ("mean", "IQM [95% CI] or per seed")
    for column in ("setting", "seeds", *columns, *(f"{evaluated['policy']} eval {c}" for c in columns if evaluated)):
        table.add_column(column)
    diverged = summary.get("diverged") or []
    for label, s in summary["final_return_by_setting"].items():
        bad = sum(1 for m in diverged if label == "default" or m.startswith(f"{label},"))
        seeds = f"{s['n']} ({bad} diverged)" if bad else str(s["n"])
        table.add_row(label, seeds, *_cells(s, no_episode=not bad), *(_cells(evaluated["return_by_setting"][label]) if evaluated else ()))
    console = Console()
    console.print(table)
    if evaluated:
        console.print(f"{evaluated['policy']} eval: each agent's policy after its {evaluated['after_env_steps']:,} "
                      f"env steps, {evaluated['episodes']:,} fresh episodes each (to their end or the time limit "
                      f"of {evaluated['time_limit']:,} steps)")
    speed = f"{summary['env_steps_per_s']:,.0f} env steps/s" if summary.get("env_steps_per_s") else "speed not measured"
    console.print(f"{summary['members']} agents x {summary.get('env_steps_per_member', 0):,} env steps; "
                  f"compile {summary['compile_s']:.1f} s, run {summary['run_s']:.1f} s, {speed}")
    pbt = summary.get("pbt")
    if pbt:
        values = ", ".join(f"{name}={schedule[-1]:.3g}" for name, schedule in pbt["schedule_of_best"].items())
        console.print(f"PBT: {pbt['copies']} copies in {pbt['rounds']} rounds; the final best is member "
                      f"{pbt['best_member']} (seed {pbt['best_seed']}), last trained with {values}")
    console.print(f"results in {out}/ (summary.json, metrics.csv, curves.png, {'pbt.csv, pbt.png, ' if pbt else ''}"
                  "checkpoint/)")
    starts = summary.get("learning_starts")
    if window and starts is not None and window[0] < 3 * starts:  # a short off-policy run: early learning's returns
        played = "the eval columns play" if evaluated else f"`purerl eval {out}` plays"
        console.print(f"note: learning began at env step {starts:,}, so this window's returns are still those of "
                      f"early learning (and of its exploration); {played} the trained policy")
    if diverged:
        print(f"purerl: warning: {len(diverged)} of {summary['members']} members diverged (non-finite loss, episode "
              f"return or parameters): {', '.join(diverged[:4])}{', ...' if len(diverged) > 4 else ''}", file=sys.stderr)


def _cells(s: dict, no_episode: bool = False) -> tuple[str, str]:
    """A summarised return's mean and 'IQM [CI]' (or per-seed values) cells; where its mean is None, "no episode
    ended" (`no_episode`) or "not finite" beside the per-seed values that say which seed."""
    from rich.markup import escape

    from purerl import stats

    if s["mean"] is None:
        return ("no episode ended", "") if no_episode else ("not finite", escape(stats.describe(s)))
    return f"{s['mean']:.1f}", escape(stats.describe(s))


def cmd_eval(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from purerl import stats
    from purerl.algos import memory
    from purerl.run.policy import Policy, check_gif, load_run, members_evaluator, render_gif

    _hold_for_reading(args.run_dir)
    spec, members, train, state = load_run(args.run_dir)
    memory.evaluation_fits(train.env, len(members), args.episodes)  # all checked before evaluating
    files.check_replaceable(args.run_dir / EVAL_REPORT, None, own=_eval_record)
    gif = None
    if args.gif is not None:
        gif = args.gif if args.gif.is_absolute() or args.gif.parent != Path(".") else args.run_dir / args.gif
        check_gif(gif, train.env)
        files.check_replaceable(gif, "--gif")  # RUN/episode.gif too: it carries the mark when purerl wrote it
    sample = args.policy == "sample"
    key = jax.random.PRNGKey(args.seed)
    hps = members.hyperparams.as_arrays()  # an exploration policy reads the member's own (DQN's final epsilon)
    keys = np.tile(np.asarray(key)[None], (len(members), 1))  # every member meets the same episodes
    returns = members_evaluator(train, args.episodes, sample)(state.params, state.obs_stats, keys, hps)
    returns = np.asarray(returns)  # [members, episodes]
    per_member = returns.mean(axis=1)
    mode = "sampled" if sample else "greedy"
    report = {
        "policy": args.policy,
        "seed": args.seed,
        "episodes": args.episodes,
        f"{mode}_return_by_member": {members.label(i): float(v) for i, v in enumerate(per_member)},
        f"{mode}_return": stats.summarize(per_member),
    }
    from purerl.run.files import write_atomic
    from purerl.run.results import json_safe

    write_atomic(args.run_dir / EVAL_REPORT, json.dumps(json_safe(report), indent=2))
    s = report[f"{mode}_return"]
    print(f"{mode} return over {args.episodes} episodes x {len(members)} members (seed {args.seed}): "
          f"mean {s['mean']:.2f}, IQM {stats.describe(s, digits=2)}")
    if gif is not None:
        pick = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731
        policy = Policy(train, pick(state.params), pick(state.obs_stats), members.label(0), pick(hps))
        _, steps, total = render_gif(policy, gif, key, sample)
        files.mark_written(gif)  # a later `eval --gif` may replace it
        print(f"saved {gif} ({members.label(0)}, {mode}: {steps} steps, return {total:.2f})")
    return 0


def _hold_for_reading(run_dir: Path) -> None:
    """Refuse a run another live process is writing (its checkpoints rotate as they are read, and what eval writes
    would land in it), and hold it while evaluating, so that no writer starts meanwhile. A stale lock is taken
    over. A folder that holds no run gets no lock: `load_run` says what it is."""
    from purerl.run import runlock

    if rundir.holds_run(run_dir) and runlock.inside_block():
        runlock.lock(run_dir)
    else:
        runlock.check_unlocked(run_dir)


def _eval_record(path: Path) -> bool:
    """`path` is an eval.json that `purerl eval` wrote: the policy, seed and episodes, and the returns they gave."""
    try:
        report = files.read_json(path, "an evaluation")
    except ConfigError:
        return False
    return {"policy", "seed", "episodes"} <= report.keys() and any(key.endswith("_return_by_member") for key in report)
