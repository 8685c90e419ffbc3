"""Output of a coin-game run: its metrics, summary, learning plot and markdown report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from purerl_lab.studies.mfos.coin import INNER_EPISODES, INNER_STEPS, LOG_COLUMNS, CoinSettings
from purerl_lab.studies.mfos.report import format_cell, pyplot, save_figure
from purerl_lab.studies.mfos.runs import MIN_SEEDS_FOR_CI, summaries
from purerl.run import files


def write_results(out: Path, result: dict, preset: str) -> None:
    """metrics.csv (per meta-episode and seed), summary.json and learning.png."""
    log = result["log"]
    header = ["meta_episode"] + [f"{c}[seed={s}]" for s in result["seeds"] for c in LOG_COLUMNS]
    rows = [",".join(header)]
    for e in range(log.shape[1]):
        rows.append(",".join([str(e)] + [f"{log[i, e, j]:.6g}" for i in range(log.shape[0]) for j in range(4)]))
    files.write_atomic(out / "metrics.csv", "\n".join(rows) + "\n")
    summary = {k: v for k, v in result.items() if k != "log"} | {"preset": preset}
    files.write_atomic(out / "summary.json", json.dumps(summary, indent=2))

    plot_learning(log, out / "learning.png", preset)


def plot_learning(log: np.ndarray, path: Path, preset: str) -> None:
    """Rewards per step and own-coin rates of both players over meta-episodes (band: min-max over seeds)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    episodes = np.arange(log.shape[1])
    for ax, columns, ylabel in ((axes[0], (0, 1), "reward per step"), (axes[1], (2, 3), "own-coin rate")):
        for j in columns:
            mean = log[:, :, j].mean(axis=0)
            ax.plot(episodes, mean, label=LOG_COLUMNS[j].split("_")[0])
            if log.shape[0] > 1:
                ax.fill_between(episodes, log[:, :, j].min(axis=0), log[:, :, j].max(axis=0), alpha=0.2)
        ax.set_xlabel("meta-episode")
        ax.set_ylabel(ylabel)
        ax.legend()
    fig.suptitle(f"coin game: M-FOS vs a PPO learner ({preset}; band: min-max over {log.shape[0]} seeds)")
    fig.tight_layout()
    save_figure(fig, path)


def write_report(report: Path, result: dict, settings: CoinSettings, preset: str, argv: list[str],
                 sessions: list[dict]) -> None:
    """A markdown page for one run (settings, first and final numbers, the learning plot), with its plot
    in REPORT_STEM/ beside it, recorded from `argv` and the run's `sessions` in the results manifest."""
    from purerl_lab.publish import document, provenance

    plots = report.parent / report.stem
    plots.mkdir(parents=True, exist_ok=True)
    plot_learning(result["log"], plots / "learning.png", preset)
    first = summaries(result["log"][:, 0], LOG_COLUMNS)
    board_steps = settings.num_boards * settings.meta_episodes * INNER_EPISODES * INNER_STEPS
    provenance.record("mfos_coin", report, "coin", argv, result["compile_s"] + result["run_s"],
                      {"generations": settings.meta_episodes, "env_steps_per_run": board_steps, "seeds": result["seeds"]},
                      {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: board steps"},
                      sessions=sessions, wall_summed=True)
    n = len(result["seeds"])
    statistic = "mean [95% CI] over seeds" if n >= MIN_SEEDS_FOR_CI else f"mean over seeds (n={n}: every seed, no CI)"
    lines = [
        "# M-FOS in the coin game", "", *document.header(report, "mfos_coin"),
        f"M-FOS (conv + GRU, the library's PPO) plays red against a PPO learner that updates after every inner "
        f"episode, on {settings.num_boards} boards for {settings.meta_episodes} meta-episodes of {INNER_EPISODES} "
        f"inner episodes x {INNER_STEPS} steps; seeds {result['seeds']}. Compile {result['compile_s']:.0f} s (the "
        f"last session's); training {result['run_s']:.0f} s{speed_note(result)}, summed over every session of a "
        "resumed run.", "",
        f"| per meta-episode, {statistic} | first (untrained M-FOS) | last {result['final_window']} | change |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {format_cell(first[name])} | {format_cell(result['final'][name])} | "
              f"{change(first[name], result['final'][name])} |" for name in LOG_COLUMNS]
    lines += [
        "", "Rewards are per step and per board; an own-coin rate is the share of the coins a player took that "
        "were its own (1: it never takes the other's coin; 0.5: it does not care whose coin it takes). Every "
        "meta-episode starts a fresh opponent, so a change in the opponent's numbers is M-FOS shaping how it "
        "learns. A change is named only where the two 95% CIs separate.", "",
        f"![learning]({plots.name}/learning.png)", "",
    ]
    files.write_atomic(report, "\n".join(lines))


def change(first: dict, last: dict) -> str:
    """"rose" or "fell" where the 95% CIs separate, else "not distinguishable" (no verdict without CIs)."""
    if first.get("ci95_low") is None or last.get("ci95_low") is None:
        return "no CI"
    if last["ci95_low"] > first["ci95_high"]:
        return "rose"
    return "fell" if last["ci95_high"] < first["ci95_low"] else "not distinguishable"


def speed_note(result: dict) -> str:
    return f" ({result['steps_per_s']:,.0f} board steps/s)" if result["steps_per_s"] else ""
