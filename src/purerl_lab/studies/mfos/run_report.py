"""The published report of one matrix-game M-FOS run (`purerl mfos --game ipd --opponent nl --report PATH`):
the IPD against naive learners at the paper's scale, its final numbers next to the target ones, its curves, and
the trained policy's ZD analysis, written from the run's record (REPORT_STEM/PART.json)."""

from __future__ import annotations

import json
from pathlib import Path

from purerl.checks import ConfigError
from purerl_lab.studies.mfos.markdown import analysis_lines
from purerl_lab.studies.mfos.report import (PAPER, PAPER_SOURCES, format_cell, plot_policies, plot_rewards, pyplot,
                                        save_figure)
from purerl_lab.studies.mfos.runs import MIN_SEEDS_FOR_CI, agents_path, save_agents
from purerl_lab.studies.mfos.settings import META_EPISODE, Settings
from purerl.run import files

STUDY = "mfos_paper"
PAPER_TOLERANCE = 0.1  # how close to a target number counts as reproducing it


def part_name(game: str, opponent: str) -> str:
    return f"{game}-vs-{opponent}"


def outputs(game: str, opponent: str) -> tuple[str, ...]:
    """What a run's report writes in REPORT_STEM/: its record, its plots and its agents' folder."""
    part = part_name(game, opponent)
    return (f"{part}.json", f"{part}_rewards.png", f"{part}_policies.png", "params")


def write_report(report: Path, result: dict, settings: Settings, preset: str, argv: list[str],
                 sessions: list[dict]) -> None:
    """REPORT_STEM/PART.json, one run's record, with its plots and every seed's trained agent beside it; the part
    recorded from `argv` and the run's `sessions` (`publish.sessions.facts`) in the results manifest; then the
    document again from its records (`render`)."""
    from purerl_lab.publish import provenance

    game, opponent = result["game"], result["opponent"]
    stem, part = report.parent / report.stem, part_name(game, opponent)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    plot_rewards(ax, result)
    fig.tight_layout()
    save_figure(fig, stem / f"{part}_rewards.png")
    plot_policies(result["trajectory"], stem / f"{part}_policies.png",
                  f"{game.upper()}: trained M-FOS vs a fresh {opponent.upper()}")
    save_agents(agents_path(stem, game, opponent), result["params"])
    record = {"part": part, "preset": preset, "settings": {
        "num_games": settings.num_games, "meta_episodes": settings.meta_episodes,
        "hidden_sizes": list(settings.hidden_sizes), "scoring": settings.scoring},
        **{key: result[key] for key in ("game", "opponent", "seeds", "final_window", "final", "final_by_seed",
                                        "analysis", "analysis_greedy", "compile_s", "run_s") if key in result}}
    files.write_atomic(stem / f"{part}.json", json.dumps(record, indent=2))
    provenance.record(STUDY, report, part, argv, result["compile_s"] + result["run_s"],
                      {"generations": settings.meta_episodes, "seeds": result["seeds"],
                       "env_steps_per_run": settings.num_games * settings.meta_episodes * META_EPISODE},
                      {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: meta-steps"},
                      sessions=sessions, wall_summed=True)
    render(report)


def render(report: Path) -> Path:
    """mfos_paper.md from the run records beside it (`purerl results --render mfos_paper.md`): its summary first,
    then each run's numbers beside the targets, its curves and ZD analysis, then the differences and provenance."""
    from purerl_lab.publish import document, provenance
    from purerl_lab.studies.mfos import summary  # its statistics load scipy: not while `purerl mfos` parses flags

    report = Path(report)
    stem = report.parent / report.stem
    parts = provenance.read_manifest(report.parent).get(report.name, {}).get("parts", {})
    records = [files.read_json(stem / f"{part}.json", f"an M-FOS run's record (`purerl mfos --report {report.name}` "
                               "writes it)") for part in sorted(parts)]
    if not records:
        raise ConfigError(f"{report} has no run recorded in its {provenance.MANIFEST}: nothing to render")
    first = records[0]
    title = f"# M-FOS against {first['opponent'].upper()} in the {first['game'].upper()}, preset {first['preset']}"
    lines = [title, "", *document.notice(report, STUDY), *summary.paper_lines(records, PAPER_TOLERANCE)]
    for record in records:
        lines += _body(record, stem.name)
    files.write_atomic(report, "\n".join(lines + document.footer(report, STUDY)) + "\n")
    return report


def _body(record: dict, stem: str) -> list[str]:
    game, opponent, settings, part = record["game"], record["opponent"], record["settings"], record["part"]
    cells = [record["final"]["mfos"], record["final"]["opponent"]]
    n = min(cell["n"] for cell in cells)
    statistic = ("mean [95% percentile-bootstrap CI of the mean] over seeds" if n >= MIN_SEEDS_FOR_CI else
                 f"mean over seeds, then every seed's value (n = {n}: too few seeds for a CI)")
    if n < len(record["seeds"]):
        statistic += f"; {len(record['seeds']) - n} seed(s) with no finite value are left out"
    scoring = ("as the authors score it (one uncounted learning step, then 100 scored)"
               if settings["scoring"] == "authors" else "counting the first step (`--scoring count-first`)")
    lines = [
        f"Budget: {settings['num_games']} games in parallel x {settings['meta_episodes']} meta-episodes of "
        f"{META_EPISODE} meta-steps, M-FOS actor and critic {'-'.join(map(str, settings['hidden_sizes']))} tanh, "
        f"seeds {record['seeds']}; compile {record['compile_s']:.0f} s, training {record['run_s'] / 60:.1f} min "
        f"(summed over every session of a resumed run). Each meta-episode is scored {scoring}. The games are as "
        "in [mfos.md](mfos.md); the deliberate differences from the authors' code that apply here are listed "
        "at the end.", "",
        f"Mean reward per step over the last {record['final_window']} meta-episodes (10% of training), "
        f"{statistic}. Target: {PAPER_SOURCES[(game, opponent)]}. A verdict on closeness "
        f"(within {PAPER_TOLERANCE}) needs a CI: yes where the whole CI lies within it, no where none of it does.", "",
        f"| player | this run | target | this run - target | within {PAPER_TOLERANCE} |", "|---|---|---|---|---|",
    ]
    for label, cell, quoted in zip(("M-FOS", opponent.upper()), cells, PAPER[(game, opponent)]):
        difference = f"{cell['mean'] - quoted:+.2f}" if cell["n"] else "n/a"
        lines.append(f"| {label} | {format_cell(cell)} | {quoted:+.2f} | {difference} | {within(cell, quoted)} |")
    lines += ["", f"![training curves]({stem}/{part}_rewards.png)", ""]
    lines += analysis_lines(game, record["analysis"], record.get("analysis_greedy"), f"{stem}/{part}_policies.png")
    agents = agents_path(Path(stem), game, opponent).as_posix()
    return lines + [f"The trained M-FOS agents (every seed, flax msgpack) are in [{agents}]({agents}).", ""]


def within(cell: dict, paper: float) -> str:
    """Whether a cell's 95% CI lies within PAPER_TOLERANCE of a target, in words; never bold, since the study runs
    no replication that a bold verdict needs."""
    low, high = cell.get("ci95_low"), cell.get("ci95_high")
    if low is None:
        return "no CI, no verdict"
    if paper - PAPER_TOLERANCE <= low and high <= paper + PAPER_TOLERANCE:
        return "yes"
    return "no" if high < paper - PAPER_TOLERANCE or low > paper + PAPER_TOLERANCE else "not distinguishable"
