"""Output of a coin-game run: its metrics, summary and learning plot, and the published report (mfos_coin.md)
written from the records of its runs: the study's seeds and their replication on fresh seeds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from purerl_lab.studies.mfos.coin import INNER_EPISODES, INNER_STEPS, LOG_COLUMNS, CoinSettings
from purerl_lab.studies.mfos.report import format_cell, pyplot, save_figure
from purerl_lab.studies.mfos.runs import MIN_SEEDS_FOR_CI, summarize_seeds
from purerl.run import files
from purerl_lab.publish.catalog import FRESH_PART

STUDY, PART = "mfos_coin", "coin"  # its replication on fresh seeds is the part fresh_coin
OUTPUTS = (f"{PART}.json", f"{FRESH_PART}{PART}.json", "learning.png")  # what a report's run writes in REPORT_STEM/


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
                 sessions: list[dict], fresh: bool = False) -> None:
    """REPORT_STEM/PART.json, the run's record (PART: coin, or fresh_coin for its replication on fresh seeds),
    and for the study's seeds its learning plot beside it; the part recorded from `argv` and the run's `sessions` in
    the results manifest; then the document again from every record it has (`render`)."""
    from purerl_lab.publish import provenance

    part = f"{FRESH_PART}{PART}" if fresh else PART
    stem = report.parent / report.stem
    stem.mkdir(parents=True, exist_ok=True)
    if not fresh:
        plot_learning(result["log"], stem / "learning.png", preset)
    record = {"part": part, "preset": preset, "settings": {"num_boards": settings.num_boards,
                                                           "meta_episodes": settings.meta_episodes},
              **{key: result[key] for key in ("seeds", "final_window", "compile_s", "run_s", "steps_per_s",
                                              "first_by_seed", "final_by_seed")}}
    files.write_atomic(stem / f"{part}.json", json.dumps(record, indent=2))
    board_steps = settings.num_boards * settings.meta_episodes * INNER_EPISODES * INNER_STEPS
    provenance.record(STUDY, report, part, argv, result["compile_s"] + result["run_s"],
                      {"generations": settings.meta_episodes, "env_steps_per_run": board_steps, "seeds": result["seeds"]},
                      {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: board steps"},
                      sessions=sessions, wall_summed=True)
    render(report)


def render(report: Path) -> Path:
    """mfos_coin.md from the records beside it (`purerl results --render mfos_coin.md`): its summary first, then
    each seed set's first and final numbers, the learning plot, and the differences and provenance. A replication
    shows only once the manifest records its part, so a run still going shows nothing half made."""
    from purerl_lab.publish import document, provenance
    from purerl_lab.studies.mfos import summary  # its statistics load scipy: not while `purerl mfos` parses flags

    report = Path(report)
    stem = report.parent / report.stem
    parts = provenance.read_manifest(report.parent).get(report.name, {}).get("parts", {})
    study_path, fresh_path = stem / f"{PART}.json", stem / f"{FRESH_PART}{PART}.json"
    study = files.read_json(study_path, "a coin-game run's record (`purerl mfos --game coin --report` writes it)")
    fresh = (files.read_json(fresh_path, "a coin-game replication's record")
             if f"{FRESH_PART}{PART}" in parts and fresh_path.is_file() else None)
    s = study["settings"]
    lines = [
        "# M-FOS in the coin game", "", *document.notice(report, STUDY), *summary.coin_lines(study, fresh),
        f"M-FOS (conv + GRU, the library's PPO) plays red against a PPO learner that updates after every inner "
        f"episode, on {s['num_boards']} boards for {s['meta_episodes']} meta-episodes of {INNER_EPISODES} inner "
        f"episodes x {INNER_STEPS} steps. Compile {study['compile_s']:.0f} s (the last session's); training "
        f"{study['run_s']:.0f} s{speed_note(study)}, summed over every session of a resumed run.", "",
    ]
    for name, record in (("the study's seeds", study), ("fresh seeds", fresh)):
        if record is not None:
            lines += _table(record, name)
    lines += [
        "Rewards are per step and per board; an own-coin rate is the share of the coins a player took that "
        "were its own (1: it never takes the other's coin; 0.5: it does not care whose coin it takes). Every "
        "meta-episode starts a fresh opponent, so a change in the opponent's numbers over training is M-FOS's "
        "doing, but these numbers do not say how: by shaping how the opponent learns, or by its own play "
        "within each episode (reaching coins of either colour first). A change is the mean over seeds of a seed's "
        "last minus its first, with its paired 95% CI; the summary above says which changes hold.", "",
        f"![learning]({stem.name}/learning.png)", "", *document.footer(report, STUDY),
    ]
    files.write_atomic(report, "\n".join(lines) + "\n")
    return report


def _table(record: dict, name: str) -> list[str]:
    """One seed set's first and final numbers per column, and the paired change."""
    from purerl import stats

    seeds = record["seeds"]
    n = len(seeds)
    statistic = "mean [95% CI] over seeds" if n >= MIN_SEEDS_FOR_CI else f"mean over seeds (n={n}: every seed, no CI)"
    first, final = (np.asarray(record[key], float) for key in ("first_by_seed", "final_by_seed"))
    lines = [f"On {name} ({seeds[0]}..{seeds[-1]}):", "",
             f"| per meta-episode, {statistic} | first (untrained M-FOS) | last {record['final_window']} | "
             "last - first, paired |", "|---|---|---|---|"]
    for j, column in enumerate(LOG_COLUMNS):
        change = stats.describe_paired(stats.paired_difference(final[:, j], first[:, j]), 2)
        lines.append(f"| {column} | {format_cell(summarize_seeds(first[:, j]))} | "
                     f"{format_cell(summarize_seeds(final[:, j]))} | {change} |")
    return lines + [""]


def speed_note(result: dict) -> str:
    return f" ({result['steps_per_s']:,.0f} board steps/s)" if result.get("steps_per_s") else ""
