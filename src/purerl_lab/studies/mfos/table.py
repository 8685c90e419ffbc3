"""The table: every pairing in every matrix game (plain learners, M-FOS against each, M-FOS self-play)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from purerl_lab.publish import provenance as manifest
from purerl_lab.publish.catalog import FRESH_PART
from purerl.checks import ConfigError
from purerl.run import files
from purerl_lab.studies.mfos.baselines import run_baselines
from purerl_lab.studies.mfos.markdown import write_report
from purerl_lab.studies.mfos.report import format_cell, plot_policies, plot_rewards, pyplot, save_figure
from purerl_lab.studies.mfos.runs import agents_path, run_self_play, run_vs_learner, save_agents
from purerl_lab.studies.mfos.settings import (GAME_NAMES, HYPERPARAMS, META_EPISODE, MFOS_SEAT, OPPONENT_SEAT, OPPONENTS,
                                          Settings, mamaml_init)

TABLE = "table.json"  # beside a report: the study's table record (its replication's: fresh_table.json)


def run_table(settings: Settings, seeds: list[int], report: Path, games_: tuple[str, ...] = GAME_NAMES,
              preset: str = "small", argv: list[str] | None = None, log=print, fresh: bool = False) -> dict:
    """Every pairing in every game: plain learners against each other, M-FOS against each learner, and
    M-FOS self-play. Writes REPORT (markdown) and, next to it, REPORT_STEM/ (table.json, plots, and in
    params/ the M-FOS agents trained against NL, which `purerl mfos evaluate` re-evaluates), at the start
    and again after every row, so a table stopped early keeps the rows it finished. REPORT's other games
    are kept when its table has these settings (`start_record`). Each finished game is one part of REPORT
    in the results manifest (`purerl_lab.publish.provenance`), recorded from `argv`. `fresh`: the table's
    replication (its seeds past the study's) into REPORT_STEM/fresh_table.json and parts fresh_GAME, no plots or agents,
    beside the study's table, which REPORT goes on showing."""
    name, prefix = (f"{FRESH_PART}{TABLE}", FRESH_PART) if fresh else (TABLE, "")
    record = start_record(new_record(settings, seeds, preset, argv), report, games_, name)  # may refuse: nothing written
    results_dir = report.parent / report.stem
    if fresh and not (results_dir / TABLE).is_file():
        raise ConfigError(f"--fresh-seeds replicates {report}'s table, and {results_dir / TABLE} does not exist")
    results_dir.mkdir(parents=True, exist_ok=True)
    self_play_settings = settings.for_self_play()
    started = time.perf_counter()

    def save(game: str | None = None, game_started: float = 0.0):
        now = time.perf_counter()
        record["elapsed_s"] = now - started
        if game is not None:
            record["games"][game]["elapsed_s"] = now - game_started
        files.write_atomic(results_dir / name, json.dumps(record, indent=2))
        write_report(read_table(results_dir / TABLE, "") if fresh else record, report)

    save()
    for game in games_:
        game_started = time.perf_counter()
        inits = {seat: mamaml_init(game, seat, settings.mamaml_steps) for seat in (OPPONENT_SEAT, MFOS_SEAT)}
        rows = run_baselines(game, settings.num_games, seeds, inits, settings.warmup_steps)
        for label, row in rows.items():
            log(f"{game} {label:18s} {format_cell(row['final']['shaper'])}  {format_cell(row['final']['opponent'])}")
        manifest.forget(report, prefix + game)  # the game's earlier numbers leave the report with the next save
        entry = record["games"][game] = {"rows": rows,
                                         "mamaml_init": {str(s): np.asarray(v).tolist() for s, v in inits.items()}}
        save(game, game_started)
        mfos_runs = {}
        for opponent in OPPONENTS + ("self",):
            if opponent == "self":
                result = run_self_play(game, self_play_settings, seeds)
                final = {"shaper": result["final"]["agent1"], "opponent": result["final"]["agent0"]}
            else:
                result = run_vs_learner(game, opponent, settings, seeds, inits[OPPONENT_SEAT])
                final = {"shaper": result["final"]["mfos"], "opponent": result["final"]["opponent"]}
            mfos_runs[opponent] = result
            label = f"mfos vs {'mfos' if opponent == 'self' else opponent}"
            rows[label] = {"final": final, "final_by_seed": result["final_by_seed"], "run_s": result["run_s"]}
            log(f"{game} {label:18s} {format_cell(final['shaper'])}  {format_cell(final['opponent'])}"
                f"  ({result['compile_s']:.0f} s compile, {result['run_s']:.0f} s)")
            if opponent == "nl":
                entry.update(analysis_vs_nl=result["analysis"], analysis_vs_nl_greedy=result["analysis_greedy"])
            if not fresh:  # the study's agents (`purerl mfos evaluate` replays them) and plots, which the report shows
                _keep(results_dir, game, opponent, result, mfos_runs)
            save(game, game_started)
        if argv is not None:
            meta_steps = settings.num_games * settings.meta_episodes * META_EPISODE
            manifest.record("mfos", report, prefix + game, argv, entry["elapsed_s"],
                            {"generations": settings.meta_episodes, "env_steps_per_run": meta_steps, "seeds": seeds},
                            {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: meta-steps"})
            save()
    return record


def _keep(results_dir: Path, game: str, opponent: str, result: dict, mfos_runs: dict) -> None:
    """A finished M-FOS row's files beside the report: against NL its agents and policy plot; the game's rewards."""
    if opponent == "nl":
        save_agents(agents_path(results_dir, game, opponent), result["params"])
        plot_policies(result["trajectory"], results_dir / f"{game}_nl_policies.png",
                      f"{game.upper()}: trained M-FOS vs a fresh NL")
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, run in zip(axes.ravel(), mfos_runs.values()):
        plot_rewards(ax, run)
    fig.tight_layout()
    save_figure(fig, results_dir / f"{game}_rewards.png")


def new_record(settings: Settings, seeds: list[int], preset: str, argv: list[str] | None) -> dict:
    """table.json of a run that has made no game yet."""
    return {"preset": preset, "settings": dataclasses.asdict(settings), "seeds": seeds,
            "hyperparams": {k: float(v) for k, v in HYPERPARAMS._asdict().items()},
            "provenance": manifest.run_facts(argv or []), "games": {}}


def start_record(record: dict, report: Path, games_: tuple[str, ...], name: str = TABLE) -> dict:
    """RECORD with the games of REPORT's existing table, each carrying the provenance of the run that made it,
    when that table has RECORD's settings: a one-game run then replaces its game and keeps the others (the
    rerun games' old numbers stay until their new ones arrive). An unlike table is kept only as a whole, so
    a run that would leave some of its games beside games of other settings is refused here, as is a REPORT
    that is not a table's; both are ConfigErrors before anything is written or compiled."""
    data = report.parent / report.stem / name
    if not data.is_file():
        if report.exists() and name == TABLE:
            raise ConfigError(f"{report} exists but {data} does not, so it is no table this command wrote; "
                              "pass another --report path")
        return record
    old = read_table(data, "pass another --report path")
    if not isinstance(old, dict) or not {"settings", "seeds", "games", "provenance"} <= old.keys():
        raise ConfigError(f"{data} is no table this command wrote; pass another --report path")
    if comparable(old) == comparable(record):
        return {**record, "games": {game: carried(old, game, report) for game in old["games"]}}
    left = [game for game in old["games"] if game not in games_]
    if left:
        raise ConfigError(f"{report} holds a table of other settings ({'; '.join(differences(old, record))}); "
                          f"pass another --report path, or rerun all its games ({', '.join(old['games'])}) to "
                          "replace it")
    for game in old["games"]:  # the whole table is replaced: its parts stop vouching for it now
        manifest.forget(report, game if name == TABLE else f"{FRESH_PART}{game}")
    return record


def comparable(record: dict) -> dict:
    """Every setting a table's numbers depend on, as JSON holds it (tuples are lists): the games excepted,
    and the preset's description, which is prose."""
    settings = {k: v for k, v in record["settings"].items() if k != "description"}
    return json.loads(json.dumps({"preset": record.get("preset"), "settings": settings, "seeds": record["seeds"],
                                  "hyperparams": record.get("hyperparams")}))


def differences(old: dict, new: dict) -> list[str]:
    """Where two tables' settings differ, in words: 'meta_episodes 100 there, 4 here'."""
    flat = [{**{k: v for k, v in c.items() if k != "settings"}, **c["settings"]} for c in map(comparable, (old, new))]
    return [f"{k} {flat[0].get(k)} there, {flat[1].get(k)} here" for k in {**flat[0], **flat[1]}
            if flat[0].get(k) != flat[1].get(k)]


def carried(record: dict, game: str, report: Path) -> dict:
    """RECORD's entry for GAME, ready for another table: with the provenance of the run that made it and its
    wall time (a table written before per-game times has it in the manifest of its REPORT, if the same run
    recorded it there)."""
    entry, run = record["games"][game], record["provenance"]
    part = manifest.read_manifest(report.parent).get(report.name, {}).get("parts", {}).get(game, {})
    same_run = (part.get("command"), part.get("commit")) == (run.get("command"), run.get("commit"))
    return {**entry, "provenance": entry.get("provenance", run),
            "elapsed_s": entry.get("elapsed_s", part.get("wall_s") if same_run else None)}


def read_table(path: Path, hint: str) -> dict:
    if not path.is_file():
        raise ConfigError(f"no table data at {path}; {hint}")
    return files.read_json(path, "table data")
