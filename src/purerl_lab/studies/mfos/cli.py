"""`purerl mfos`: argument parsing and the train / table / coin commands."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

from purerl_lab.publish import provenance, sessions
from purerl.run import files, rundir
from purerl.cli.args import path
from purerl.checks import ConfigError
from purerl_lab.studies.mfos import run_report
from purerl_lab.studies.mfos.markdown import write_report
from purerl_lab.studies.mfos.report import format_cell, run_config, write_run
from purerl_lab.studies.mfos.runs import (agents_path, largest_difference, replay_table_agents, run_self_play,
                                      run_vs_learner)
from purerl_lab.studies.mfos.settings import (GAME_NAMES, OPPONENTS, PRESETS, SCORING, TRAIN_GAMES, check_pairing,
                                          resolve)
from purerl_lab.studies.mfos.table import carried, comparable, read_table, run_table


def add_arguments(subparsers) -> None:
    """Add `mfos` to an argparse subparsers object (`purerl mfos [train|table] ...`)."""
    parser = subparsers.add_parser(
        "mfos", help="model-free opponent shaping in iterated matrix games and the coin game",
        description="Train M-FOS against a learner (train, the default) or run every pairing (table).")
    parser.add_argument("what", nargs="?", choices=["train", "table", "report", "evaluate"], default="train",
                        help="train (default); table: every pairing; report: rewrite --report's markdown from the "
                             "table.json beside it, without training; evaluate: replay the M-FOS agents a table "
                             "committed (REPORT_STEM/params/) and check its numbers against fresh NLs")
    parser.add_argument("--game", choices=TRAIN_GAMES + ("coin",),
                        help="train: ipd (default), imp, chicken (one-shot, as the authors play it), "
                             "chicken_repeated (memory-one, gamma 0.96; not in the paper), or coin (the coin game "
                             "against a PPO learner); table: that matrix game only (with --report: the report's "
                             "other games are kept if its table has the same settings)")
    parser.add_argument("--opponent", choices=OPPONENTS + ("self", "ppo"),
                        help="nl (the default in matrix games), lola, mamaml, self (meta self-play), "
                             "or ppo (the coin game's, and its only, opponent)")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="matrix games: " + "; ".join(f"{k}: {v.description}" for k, v in PRESETS.items())
                        + " (default: cpu for train, small for table). The coin game: paper (512 boards x 1000 "
                        "meta-episodes, one GPU), cpu (32 boards x 12 meta-episodes, 2 seeds; the default), tiny")
    parser.add_argument("--seeds", type=int, help="number of seeds (default: the preset's)")
    parser.add_argument("--seed", type=int, default=0, help="first seed; seeds are SEED..SEED+N-1")
    parser.add_argument("--num-games", type=int, help="games (coin: boards) in parallel (default: the preset's)")
    parser.add_argument("--meta-episodes", type=int, help="meta-episodes (default: the preset's)")
    parser.add_argument("--self-play-meta-episodes", type=int,
                        help="table: meta self-play's meta-episodes (default: the preset's)")
    parser.add_argument("--self-play-num-games", type=int,
                        help="table: meta self-play's games in parallel (default: the preset's)")
    parser.add_argument("--scoring", choices=SCORING,
                        help="authors (default): one unscored learning step before the 100 scored ones, as in the "
                             "authors' reset; count-first: score all 100 steps from the N(0, 1) start")
    parser.add_argument("--out", type=path, help="run directory (default runs/mfos-GAME-OPPONENT-TIME, "
                                                  "table: runs/mfos-table-TIME); everything is written under it")
    parser.add_argument("--overwrite", action="store_true", help="train: replace a non-empty --out")
    parser.add_argument("--fresh-seeds", action="store_true",
                        help="with --report, a published table's or coin-game run's replication, on seeds from "
                             "PRNGKey(70000) on: the table's into REPORT_STEM/fresh_table.json and a part per game, "
                             "fresh_GAME; the coin game's into REPORT_STEM/fresh_coin.json, part fresh_coin")
    parser.add_argument("--resume", action="store_true",
                        help="train: continue the run in --out from its last checkpoint (same settings)")
    parser.add_argument("--merge", type=path, nargs="+",
                        help="report: first add the games of these table.json files (table runs of single games "
                             "with the same settings and seeds) to the report's data, with their plots")
    parser.add_argument("--report", type=path,
                        help="regenerate a published report: table: write the markdown here instead of under --out, "
                             "its data and plots in REPORT_STEM/ beside it (docs/results/mfos.md); train (a matrix "
                             "game, or coin): also write this report of the run, its plots and agents in "
                             "REPORT_STEM/ (docs/results/mfos_paper.md, docs/results/mfos_coin.md)")


def run_cli(args) -> int:
    """Run `purerl mfos`; bad input raises ConfigError (one line) before anything compiles."""
    what = getattr(args, "what", "train")
    if what == "report":
        return _rerender(args.report, getattr(args, "merge", None) or [], args.argv)
    if getattr(args, "merge", None):
        raise ConfigError("--merge belongs to `purerl mfos report`")
    if what == "evaluate":
        return _evaluate(args.report, args.game)
    if args.game == "coin" or args.opponent == "ppo":
        return _run_coin_cli(args, what)
    preset = args.preset or ("small" if what == "table" else "cpu")
    settings = resolve(preset, args.seeds, args.num_games, args.meta_episodes, args.scoring)
    self_play = {k: v for k, v in dict(self_play_meta_episodes=args.self_play_meta_episodes,
                                       self_play_num_games=args.self_play_num_games).items() if v is not None}
    if self_play:
        settings = settings.replace(**self_play)
        settings.validate()
    seeds = seeds_of(args, settings.seeds)
    if args.fresh_seeds and (what != "table" or args.report is None):
        raise ConfigError("--fresh-seeds replicates a published table or coin-game run: it needs `purerl mfos "
                          "table --report PATH` or `purerl mfos --game coin --report PATH`")
    if what == "table":
        if args.resume or args.overwrite:
            raise ConfigError("the table neither resumes nor replaces a run directory: give a new or empty --out "
                              "(or --report PATH to regenerate that report)")
        chosen = (args.game,) if args.game else GAME_NAMES
        for game in chosen:
            check_pairing(game, "nl")
        report = _table_report(args)
        record = run_table(settings, seeds, report, chosen, preset, args.argv, fresh=args.fresh_seeds)
        print(f"report: {report} ({record['elapsed_s'] / 60:.1f} min)")
        return 0
    game, opponent = args.game or "ipd", args.opponent or "nl"
    check_pairing(game, opponent)
    report = _published_run_report(args.report, game, opponent)
    out = _prepare_out(args, game, opponent, run_config(game, opponent, settings, seeds, preset))
    rundir.record_session(out, sessions.facts(run_report.STUDY, run_report.part_name(game, opponent), args.argv))  # at the start: a killed one counts
    chunking = dict(checkpoint_dir=out / "checkpoint", resume=args.resume)
    if opponent == "self":
        result = run_self_play(game, settings, seeds, **chunking)
        names = ("agent0", "agent1")
    else:
        result = run_vs_learner(game, opponent, settings, seeds, **chunking)
        names = ("mfos", "opponent")
    write_run(out, result, settings, preset)
    if report:
        run_report.write_report(report, result, settings, preset, args.argv, rundir.sessions(out))
        print(f"report: {report}")
    window = result["final_window"]
    if result["resumed_from_meta_episode"]:
        print(f"resumed after meta-episode {result['resumed_from_meta_episode']}")
    print(f"{game.upper()} M-FOS vs {opponent.upper()}, preset {preset}: {settings.num_games} games x "
          f"{settings.meta_episodes} meta-episodes, {len(seeds)} seeds "
          f"(compile {result['compile_s']:.1f} s, run {result['run_s']:.1f} s)")
    for name in names:
        s = result["final"][name]
        print(f"  {name:9s} mean reward per step over the last {window} meta-episodes: {format_cell(s)} (n={s['n']})")
    for mode in ("analysis", "analysis_greedy"):
        if mode not in result:
            continue
        a, label = result[mode], "sampled" if mode == "analysis" else "greedy"
        policy = ", ".join(f"{k} {v:.2f}" for k, v in a["mfos_policy"].items())
        print(f"  M-FOS late policy P(C|.), {label}: {policy}")
        if game == "ipd":
            t, f = a["policy_test"], a["payoff_fit"]
            print(f"  ZD extortion ({label}): policy chi {t['chi']:.2f} (error {t['residual']:.3f}) -> "
                  f"{'extortionate' if t['extortionate'] else 'not extortionate'}; payoff fit chi {f['chi']:.2f} "
                  f"R^2 {f['r2']:.2f} -> {'extortionate' if f['extortionate'] else 'not extortionate'}")
    plots = "rewards.png, policies.png" if "analysis" in result else "rewards.png"
    print(f"results in {out}/ (summary.json, metrics.csv, {plots})")
    return 0


def render(report: Path) -> Path:
    """The table's document again from REPORT_STEM/table.json (`purerl results --render mfos.md`); its header
    names the render from the manifest, so the record carries none of its own."""
    report = Path(report)
    published = provenance.RESULTS_DIR.relative_to(provenance.REPO) / report.name  # wherever this copy is
    write_report(read_table(report.parent / report.stem / "table.json", "a table run writes it"), report, published)
    return report


def _rerender(report: Path | None, merge: list[Path], argv: list[str]) -> int:
    """`purerl mfos report --report PATH [--merge T.json ...]`: PATH's markdown again from PATH_STEM/table.json
    (a table run), after adding the games of other table runs of the same settings and seeds."""
    if report is None:
        raise ConfigError("report needs --report PATH, a table report with its PATH_STEM/table.json")
    data = report.parent / report.stem / "table.json"
    record = read_table(data, f"run `purerl mfos table --report {report}` first")
    others = [(table, read_table(table, "give the table.json of a table run")) for table in merge]
    for table, other in others:
        if comparable(other) != comparable(record):
            raise ConfigError(f"{table} has other settings or seeds than {data}; only like runs can be merged")
    for table, other in others:
        for game in other["games"]:
            record["games"][game] = carried(other, game, table.parent.parent / f"{table.parent.name}.md")
            for plot in (f"{game}_rewards.png", f"{game}_nl_policies.png"):
                if (table.parent / plot).is_file():
                    shutil.copyfile(table.parent / plot, data.parent / plot)
    if others:
        files.write_atomic(data, json.dumps(record, indent=2))
    provenance.drop_render(report)  # the words below name this render themselves
    write_report({**record, "rendered": provenance.run_facts(argv)}, report)
    print(f"report: {report} (from {data})")
    return 0


def _evaluate(report: Path | None, game: str | None) -> int:
    """`purerl mfos evaluate --report PATH [--game G]`: the table's M-FOS agents against NL, replayed from
    PATH_STEM/params/ without training; exit 1 if any number differs from PATH_STEM/table.json (exact on
    the machine kind that made it, float rounding elsewhere: the manifest names that machine)."""
    if report is None:
        raise ConfigError("evaluate needs --report PATH, a table report with its PATH_STEM/table.json")
    data = report.parent / report.stem / "table.json"
    record = read_table(data, f"run `purerl mfos table --report {report}` first")
    chosen = [game] if game else list(record["games"])
    missing = [str(agents_path(data.parent, g, "nl")) for g in chosen
               if g not in record["games"] or not agents_path(data.parent, g, "nl").is_file()]
    if missing:
        raise ConfigError(f"no committed M-FOS agents at {', '.join(missing)}; rerun the table to save them")
    worst = 0.0
    for g in chosen:
        again = replay_table_agents(record, data.parent, g)
        published = {"analysis": record["games"][g]["analysis_vs_nl"],
                     "analysis_greedy": record["games"][g]["analysis_vs_nl_greedy"]}
        difference = largest_difference(published, again)
        worst = max(worst, difference)
        late = again["analysis"]["late_rewards"]
        print(f"{g}: M-FOS {late['mfos']:+.3f}, NL {late['opponent']:+.3f} per late step against fresh NLs; "
              f"largest difference from the table {difference:.2g}")
    print("the committed agents reproduce the table" if worst <= 1e-6 else "the replay differs from the table")
    return 0 if worst <= 1e-6 else 1


def _table_report(args) -> Path:
    """Where the table's markdown goes: --report PATH (a published report), else RUN_DIR/mfos.md under --out
    (default runs/mfos-table-TIME), which must be new or empty; its data and plots go beside it."""
    if args.report and args.out:
        raise ConfigError("give --out (a run directory) or --report (a published report), not both")
    if args.report:
        return provenance.check_report(args.report, "mfos")
    out = args.out or Path("runs") / f"mfos-table-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out} exists and is not an empty directory; choose another")
    rundir.check_writable(out)
    return out / "mfos.md"


def _published_run_report(report: Path | None, game: str, opponent: str) -> Path | None:
    """A train run's --report: only for the pairings the mfos_paper study publishes (its analysis and words are
    about naive learners), and never another study's document."""
    if report is None:
        return None
    parts = provenance.STUDIES[run_report.STUDY].parts
    if run_report.part_name(game, opponent) not in parts:
        raise ConfigError(f"--report publishes the {run_report.STUDY} study's pairings ({', '.join(parts)}), not "
                          f"{game} vs {opponent}; this run's own files are under --out")
    return provenance.check_report(report, run_report.STUDY, run_report.outputs(game, opponent))


def seeds_of(args, count: int) -> list[int]:
    """The run's seeds from --seed and the count, moved past the study's with --fresh-seeds (which refuses --seed)."""
    from purerl_lab.publish import replication  # its statistics load scipy: not while `purerl mfos` parses flags

    seeds = _seeds(args.seed, count)
    return replication.fresh_seeds(seeds) if args.fresh_seeds else seeds


def _seeds(first: int, count: int) -> list[int]:
    """SEED..SEED+N-1, each a valid PRNG seed (uint32), checked before anything is written."""
    if first < 0 or first + count > 2**32:
        raise ConfigError(f"--seed must be in [0, 2^32 - {count}] for {count} seeds, got {first}")
    return list(range(first, first + count))


def _prepare_out(args, game: str, opponent: str, config: dict) -> Path:
    """The run directory, under the rules every purerl command shares (`purerl.run.rundir`): --resume
    needs this run with the same settings, --overwrite replaces only a purerl run; config.json is
    written before anything trains."""
    if args.resume and args.out is None:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue")
    out = args.out or Path("runs") / f"mfos-{game}-{opponent}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    config = json.loads(json.dumps(config))  # as config.json holds it (lists, not tuples)
    resumed = rundir.prepare(out, config, args.resume, args.overwrite)
    rundir.start(out, config, resumed)
    return out


def _run_coin_cli(args, what: str) -> int:
    """`purerl mfos --game coin`: M-FOS (conv + GRU) against a PPO learner in the coin game."""
    from purerl_lab.studies.mfos import coin, coin_report

    if what == "table":
        raise ConfigError("the table covers the matrix games; train the coin game with `purerl mfos --game coin`")
    if args.game not in (None, "coin") or args.opponent not in (None, "ppo"):
        raise ConfigError("the coin game's opponent is ppo, and ppo plays only the coin game "
                          f"(got --game {args.game} --opponent {args.opponent})")
    preset = args.preset or "cpu"
    if preset not in coin.PRESETS:
        raise ConfigError(f"unknown coin-game preset '{preset}'; choose from {', '.join(coin.PRESETS)}")
    changes = {k: v for k, v in dict(seeds=args.seeds, num_boards=args.num_games,
                                     meta_episodes=args.meta_episodes).items() if v is not None}
    settings = coin.PRESETS[preset].replace(**changes)
    settings.validate()
    if args.fresh_seeds and args.report is None:
        raise ConfigError("--fresh-seeds replicates a published run: it needs --report PATH")
    seeds = seeds_of(args, settings.seeds)
    report = (provenance.check_report(args.report, coin_report.STUDY, coin_report.OUTPUTS) if args.report
              else None)
    study_record = report.parent / report.stem / f"{coin_report.PART}.json" if report else None
    if args.fresh_seeds and not study_record.is_file():
        raise ConfigError(f"--fresh-seeds replicates the run recorded in {study_record}: run the study's command "
                          "(without --fresh-seeds) first")
    out = _prepare_out(args, "coin", "ppo", coin.run_config(settings, seeds, preset))
    rundir.record_session(out, sessions.facts("mfos_coin", "coin", args.argv))  # at the start: a killed one counts
    result = coin.run(settings, seeds, out / "checkpoint", resume=args.resume)
    coin_report.write_results(out, result, preset)
    if result["resumed_from_meta_episode"]:
        print(f"resumed after meta-episode {result['resumed_from_meta_episode']}")
    if report:
        coin_report.write_report(report, result, settings, preset, args.argv, rundir.sessions(out), args.fresh_seeds)
        print(f"report: {report}")
    print(f"coin game, M-FOS vs PPO, preset {preset}: {settings.num_boards} boards x {settings.meta_episodes} "
          f"meta-episodes, {len(seeds)} seeds (compile {result['compile_s']:.1f} s, run {result['run_s']:.1f} s)"
          f"{coin_report.speed_note(result)}")
    for name in coin.LOG_COLUMNS:
        print(f"  {name:23s} over the last {result['final_window']} meta-episodes: {format_cell(result['final'][name])}")
    print(f"results in {out}/ (summary.json, metrics.csv, learning.png)")
    return 0
