"""The table: every pairing in every matrix game (plain learners, M-FOS against each, M-FOS self-play)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from purerl.studies.mfos.baselines import run_baselines
from purerl.studies.mfos.markdown import write_report
from purerl.studies.mfos.report import format_cell, plot_policies, plot_rewards, provenance, pyplot, save_figure
from purerl.studies.mfos.runs import run_self_play, run_vs_learner
from purerl.studies.mfos.settings import (GAME_NAMES, HYPERPARAMS, MFOS_SEAT, OPPONENT_SEAT, OPPONENTS, Settings,
                                          mamaml_init)


def run_table(settings: Settings, seeds: list[int], report: Path, games_: tuple[str, ...] = GAME_NAMES,
              preset: str = "small", log=print) -> dict:
    """Every pairing in every game: plain learners against each other, M-FOS against each learner, and
    M-FOS self-play. Writes REPORT (markdown) and, next to it, REPORT_STEM/ (table.json and plots)."""
    from purerl import results

    results_dir = report.parent / report.stem
    results_dir.mkdir(parents=True, exist_ok=True)
    record = {"preset": preset, "settings": dataclasses.asdict(settings), "seeds": seeds,
              "hyperparams": {k: float(v) for k, v in HYPERPARAMS._asdict().items()},
              "provenance": provenance(), "games": {}}
    self_play_settings = settings.replace(meta_episodes=settings.self_play_meta_episodes or settings.meta_episodes)
    started = time.perf_counter()
    for game in games_:
        inits = {seat: mamaml_init(game, seat, settings.mamaml_steps) for seat in (OPPONENT_SEAT, MFOS_SEAT)}
        rows = run_baselines(game, settings.num_games, seeds, inits, settings.warmup_steps)
        for label, row in rows.items():
            log(f"{game} {label:18s} {format_cell(row['final']['shaper'])}  {format_cell(row['final']['opponent'])}")
        mfos_runs = {}
        for opponent in OPPONENTS:
            result = run_vs_learner(game, opponent, settings, seeds, inits[OPPONENT_SEAT])
            mfos_runs[opponent] = result
            rows[f"mfos vs {opponent}"] = {"final": {"shaper": result["final"]["mfos"],
                                                     "opponent": result["final"]["opponent"]},
                                           "final_by_seed": result["final_by_seed"], "run_s": result["run_s"]}
            log(f"{game} {'mfos vs ' + opponent:18s} {format_cell(result['final']['mfos'])}  "
                f"{format_cell(result['final']['opponent'])}  ({result['compile_s']:.0f} s compile, {result['run_s']:.0f} s)")
        self_play = run_self_play(game, self_play_settings, seeds)
        mfos_runs["self"] = self_play
        final = self_play["final"]
        rows["mfos vs mfos"] = {"final": {"shaper": final["agent1"], "opponent": final["agent0"]},
                                "final_by_seed": self_play["final_by_seed"], "run_s": self_play["run_s"]}
        log(f"{game} {'mfos vs mfos':18s} {format_cell(self_play['final']['agent1'])}  {format_cell(self_play['final']['agent0'])}"
            f"  ({self_play['compile_s']:.0f} s compile, {self_play['run_s']:.0f} s)")

        plt = pyplot()
        fig, axes = plt.subplots(2, 2, figsize=(12, 8))
        for ax, result in zip(axes.ravel(), mfos_runs.values()):
            plot_rewards(ax, result)
        fig.tight_layout()
        save_figure(fig, results_dir / f"{game}_rewards.png")
        nl_run = mfos_runs["nl"]
        plot_policies(nl_run["trajectory"], results_dir / f"{game}_nl_policies.png",
                      f"{game.upper()}: trained M-FOS vs a fresh NL")
        record["games"][game] = {"rows": rows,
                                 "mamaml_init": {str(s): np.asarray(v).tolist() for s, v in inits.items()},
                                 "analysis_vs_nl": nl_run["analysis"],
                                 "analysis_vs_nl_greedy": nl_run["analysis_greedy"]}
        record["elapsed_s"] = time.perf_counter() - started
        results.write_atomic(results_dir / "table.json", json.dumps(record, indent=2))
        write_report(record, report)
    return record
