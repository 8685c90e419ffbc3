"""The published report of one matrix-game M-FOS run (`purerl mfos --game ipd --opponent nl --report PATH`):
the IPD against naive learners at the paper's scale, its final numbers next to the paper's, its curves, and
the trained policy's ZD analysis."""

from __future__ import annotations

from pathlib import Path

from purerl_lab.studies.mfos.markdown import analysis_lines
from purerl_lab.studies.mfos.report import (PAPER, PAPER_SOURCES, format_cell, plot_policies, plot_rewards, pyplot,
                                        save_figure)
from purerl_lab.studies.mfos.runs import MIN_SEEDS_FOR_CI, agents_path, save_agents
from purerl_lab.studies.mfos.settings import META_EPISODE, Settings
from purerl.run import files

STUDY = "mfos_paper"
PAPER_TOLERANCE = 0.1  # how close to the paper's number counts as reproducing it


def part_name(game: str, opponent: str) -> str:
    return f"{game}-vs-{opponent}"


def write_report(report: Path, result: dict, settings: Settings, preset: str, argv: list[str],
                 sessions: list[dict]) -> None:
    """REPORT for one run, its plots and every seed's trained agent in REPORT_STEM/ beside it, recorded
    from `argv` and the run's `sessions` (`publish.sessions.facts`) in the results manifest."""
    from purerl_lab.publish import document, provenance

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
    body = _body(result, settings, stem.name, part)
    provenance.record(STUDY, report, part, argv, result["compile_s"] + result["run_s"],
                      {"generations": settings.meta_episodes, "seeds": result["seeds"],
                       "env_steps_per_run": settings.num_games * settings.meta_episodes * META_EPISODE},
                      {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: meta-steps"},
                      sessions=sessions, wall_summed=True)
    title = f"# M-FOS against {opponent.upper()} in the {game.upper()}, preset {preset}"
    files.write_atomic(report, "\n".join([title, "", *document.header(report, STUDY), *body]) + "\n")


def _body(result: dict, settings: Settings, stem: str, part: str) -> list[str]:
    game, opponent = result["game"], result["opponent"]
    cells = [result["final"]["mfos"], result["final"]["opponent"]]
    n = min(cell["n"] for cell in cells)
    statistic = ("mean [95% percentile-bootstrap CI of the mean] over seeds" if n >= MIN_SEEDS_FOR_CI else
                 f"mean over seeds, then every seed's value (n = {n}: too few seeds for a CI)")
    if n < len(result["seeds"]):
        statistic += f"; {len(result['seeds']) - n} seed(s) with no finite value are left out"
    scoring = ("as the authors score it (one uncounted learning step, then 100 scored)"
               if settings.scoring == "authors" else "counting the first step (`--scoring count-first`)")
    lines = [
        f"Budget: {settings.num_games} games in parallel x {settings.meta_episodes} meta-episodes of "
        f"{META_EPISODE} meta-steps, M-FOS actor and critic {'-'.join(map(str, settings.hidden_sizes))} tanh, "
        f"seeds {result['seeds']}; compile {result['compile_s']:.0f} s, training {result['run_s'] / 60:.1f} min "
        f"(summed over every session of a resumed run). Each meta-episode is scored {scoring}. The games are as "
        "in [mfos.md](mfos.md); the deliberate differences from the authors' code that apply here are listed above.",
        "",
        f"Mean reward per step over the last {result['final_window']} meta-episodes (10% of training), "
        f"{statistic}. Target: full-scale numbers, {PAPER_SOURCES[(game, opponent)]}. A verdict on closeness "
        f"(within {PAPER_TOLERANCE}) needs a CI: yes where the whole CI lies within it, no where none of it does.", "",
        f"| player | this run | target | this run - target | within {PAPER_TOLERANCE} |", "|---|---|---|---|---|",
    ]
    paper = PAPER[(game, opponent)]
    for label, cell, quoted in zip(("M-FOS", opponent.upper()), cells, paper):
        difference = f"{cell['mean'] - quoted:+.2f}" if cell["n"] else "n/a"
        lines.append(f"| {label} | {format_cell(cell)} | {quoted:+.2f} | {difference} | {_within(cell, quoted)} |")
    lines += ["", f"![training curves]({stem}/{part}_rewards.png)", ""]
    lines += analysis_lines(game, result["analysis"], result.get("analysis_greedy"), f"{stem}/{part}_policies.png")
    agents = agents_path(Path(stem), game, opponent).as_posix()
    return lines + [f"The trained M-FOS agents (every seed, flax msgpack) are in [{agents}]({agents}).", ""]


def _within(cell: dict, paper: float) -> str:
    low, high = cell.get("ci95_low"), cell.get("ci95_high")
    if low is None:
        return "no CI, no verdict"
    if paper - PAPER_TOLERANCE <= low and high <= paper + PAPER_TOLERANCE:
        return "yes"
    return "**no**" if high < paper - PAPER_TOLERANCE or low > paper + PAPER_TOLERANCE else "not distinguishable"
