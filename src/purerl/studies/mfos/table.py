"""The table: every pairing in every matrix game (plain learners, M-FOS against each, M-FOS self-play)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from purerl import provenance as manifest
from purerl.studies.mfos.baselines import run_baselines
from purerl.studies.mfos.markdown import write_report
from purerl.studies.mfos.report import format_cell, plot_policies, plot_rewards, pyplot, save_figure
from purerl.studies.mfos.runs import agents_path, run_self_play, run_vs_learner, save_agents
from purerl.studies.mfos.settings import (GAME_NAMES, HYPERPARAMS, META_EPISODE, MFOS_SEAT, OPPONENT_SEAT, OPPONENTS,
                                          Settings, mamaml_init)


def run_table(settings: Settings, seeds: list[int], report: Path, games_: tuple[str, ...] = GAME_NAMES,
              preset: str = "small", argv: list[str] | None = None, log=print) -> dict:
    """Every pairing in every game: plain learners against each other, M-FOS against each learner, and
    M-FOS self-play. Writes REPORT (markdown) and, next to it, REPORT_STEM/ (table.json, plots, and in
    params/ the M-FOS agents trained against NL, which `purerl mfos evaluate` re-evaluates), again after
    every row, so a table stopped early keeps the rows it finished. Each finished game is one part of
    REPORT in the results manifest (`purerl.provenance`), recorded from `argv`."""
    from purerl import results

    results_dir = report.parent / report.stem
    results_dir.mkdir(parents=True, exist_ok=True)
    record = {"preset": preset, "settings": dataclasses.asdict(settings), "seeds": seeds,
              "hyperparams": {k: float(v) for k, v in HYPERPARAMS._asdict().items()},
              "provenance": manifest.run_facts(argv or []), "games": {}}
    self_play_settings = settings.for_self_play()
    started = time.perf_counter()

    def save():
        record["elapsed_s"] = time.perf_counter() - started
        results.write_atomic(results_dir / "table.json", json.dumps(record, indent=2))
        write_report(record, report)

    for game in games_:
        game_started = time.perf_counter()
        inits = {seat: mamaml_init(game, seat, settings.mamaml_steps) for seat in (OPPONENT_SEAT, MFOS_SEAT)}
        rows = run_baselines(game, settings.num_games, seeds, inits, settings.warmup_steps)
        for label, row in rows.items():
            log(f"{game} {label:18s} {format_cell(row['final']['shaper'])}  {format_cell(row['final']['opponent'])}")
        entry = record["games"][game] = {"rows": rows,
                                         "mamaml_init": {str(s): np.asarray(v).tolist() for s, v in inits.items()}}
        save()
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
                save_agents(agents_path(results_dir, game, opponent), result["params"])
                entry.update(analysis_vs_nl=result["analysis"], analysis_vs_nl_greedy=result["analysis_greedy"])
                plot_policies(result["trajectory"], results_dir / f"{game}_nl_policies.png",
                              f"{game.upper()}: trained M-FOS vs a fresh NL")
            plt = pyplot()
            fig, axes = plt.subplots(2, 2, figsize=(12, 8))
            for ax, run in zip(axes.ravel(), mfos_runs.values()):
                plot_rewards(ax, run)
            fig.tight_layout()
            save_figure(fig, results_dir / f"{game}_rewards.png")
            save()
        if argv is not None:
            meta_steps = settings.num_games * settings.meta_episodes * META_EPISODE
            manifest.record("mfos", report, game, argv, time.perf_counter() - game_started,
                            {"generations": settings.meta_episodes, "env_steps_per_run": meta_steps, "seeds": seeds},
                            {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: meta-steps"})
            save()
    return record
