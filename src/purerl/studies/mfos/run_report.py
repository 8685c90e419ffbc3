"""The published report of one matrix-game M-FOS run (`purerl mfos --game G --report PATH`), such as the IPD
against NL at the paper's scale: final numbers next to the paper's, curves, and the trained policy's analysis."""

from __future__ import annotations

from pathlib import Path

from purerl.studies.mfos.markdown import analysis_lines
from purerl.studies.mfos.report import PAPER, format_cell, plot_policies, plot_rewards, pyplot, save_figure
from purerl.studies.mfos.runs import MIN_SEEDS_FOR_CI, agents_path, save_agents
from purerl.studies.mfos.settings import META_EPISODE, Settings

PAPER_TOLERANCE = 0.1  # how close a mean must come to the paper's number to count as reproducing it


def write_report(report: Path, result: dict, settings: Settings, preset: str, argv: list[str]) -> None:
    """REPORT for one run, its plots and every seed's trained agent in REPORT_STEM/ beside it, recorded
    from `argv` in the results manifest as part GAME-vs-OPPONENT (`purerl.provenance`)."""
    from purerl import provenance, results

    game, opponent = result["game"], result["opponent"]
    names = ("agent0", "agent1") if opponent == "self" else ("mfos", "opponent")
    stem = report.parent / report.stem
    part = f"{game}-vs-{opponent}"
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    plot_rewards(ax, result)
    fig.tight_layout()
    save_figure(fig, stem / f"{part}_rewards.png")
    if "params" in result:
        save_agents(agents_path(stem, game, opponent), result["params"])
    wall_s = result["compile_s"] + result["run_s"]
    provenance.record("mfos_paper", report, part, argv, wall_s,
                      {"generations": settings.meta_episodes, "seeds": result["seeds"],
                       "env_steps_per_run": settings.num_games * settings.meta_episodes * META_EPISODE},
                      {"unit": "generations: M-FOS meta-episodes (PPO updates); env steps: inner-game steps"})
    n = len(result["seeds"])
    statistic = ("mean [95% percentile-bootstrap CI of the mean] over seeds" if n >= MIN_SEEDS_FOR_CI else
                 f"mean over seeds, then every seed's value (n = {n}: too few seeds for a CI)")
    against = "M-FOS (meta self-play)" if opponent == "self" else opponent.upper()
    lines = [
        f"# M-FOS against {against} in the {game.upper()}, preset {preset}", "",
        *provenance.header(report, "mfos_paper"),
        f"Budget: {settings.num_games} games in parallel x {settings.meta_episodes} meta-episodes of "
        f"{META_EPISODE} meta-steps, M-FOS actor and critic {'-'.join(map(str, settings.hidden_sizes))} tanh, "
        f"seeds {result['seeds']}; compile {result['compile_s']:.0f} s, training {result['run_s'] / 60:.1f} min "
        "(summed over every session of a resumed run). Games, scoring and every deliberate difference from the "
        "authors' code are as in [mfos.md](mfos.md).", "",
        f"Mean reward per step over the last {result['final_window']} meta-episodes (10% of training), "
        f"{statistic}:", "",
        "| player | this run | the paper | within " + f"{PAPER_TOLERANCE} |", "|---|---|---|---|",
    ]
    paper = PAPER.get((game, opponent))
    for i, name in enumerate(names):
        cell = result["final"][name]
        quoted = f"{paper[i]:+.2f}" if paper else "not reported"
        close = ("yes" if abs(cell["mean"] - paper[i]) <= PAPER_TOLERANCE else "**no**") if paper else "-"
        label = {"mfos": "M-FOS", "opponent": opponent.upper()}.get(name, name)
        lines.append(f"| {label} | {format_cell(cell)} | {quoted} | {close} |")
    lines += ["", f"![training curves]({stem.name}/{part}_rewards.png)", ""]
    if "analysis" in result and opponent == "nl":  # the analysis and its words are about naive learners
        plot = f"{stem.name}/{part}_policies.png"
        plot_policies(result["trajectory"], report.parent / plot,
                      f"{game.upper()}: trained M-FOS vs a fresh {opponent.upper()}")
        lines += analysis_lines(game, result["analysis"], result.get("analysis_greedy"), plot)
        agents = agents_path(Path(stem.name), game, opponent).as_posix()
        lines += [f"The trained M-FOS agents (every seed) are in [{agents}]({agents}).", ""]
    results.write_atomic(report, "\n".join(lines) + "\n")
