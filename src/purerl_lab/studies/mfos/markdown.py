"""The markdown report of the M-FOS table (docs/results/mfos.md), written from table.json: its summary first
(`summary`), the table per game, then the differences from the authors' code and the provenance."""

from __future__ import annotations

from pathlib import Path

from purerl_lab.publish import document, provenance
from purerl_lab.studies.mfos.baselines import SHAPERS
from purerl_lab.studies.mfos.report import PAPER, PAPER_SOURCES, POLICY_LABELS, format_cell
from purerl_lab.studies.mfos.settings import META_EPISODE, OPPONENTS, TRAIN_GAMES
from purerl.run import files

_ROW_ORDER = [f"{a} vs {b}" for b in OPPONENTS for a in SHAPERS + ("mfos",)] + ["mfos vs mfos"]


def _fresh(report: Path) -> dict | None:
    """The table's replication beside REPORT (`purerl mfos table --fresh-seeds`), None where it has not run: only
    its games that the manifest records (fresh_GAME), so that a replication still running shows no half game."""
    path = Path(report).parent / Path(report).stem / "fresh_table.json"
    if not path.is_file():
        return None
    record = files.read_json(path, "a table's replication")
    parts = provenance.read_manifest(Path(report).parent).get(Path(report).name, {}).get("parts", {})
    return {**record, "games": {game: entry for game, entry in record["games"].items() if f"fresh_{game}" in parts}}


def write_report(record: dict, report: Path, shown: Path | None = None) -> None:
    """REPORT from a table record (table.json); its data and plots are in REPORT_STEM/ beside it. `shown`: the
    path the document gives for itself in commands (default REPORT)."""
    from purerl_lab.studies.mfos import summary  # its statistics load scipy: not while `purerl mfos` parses flags

    s = record["settings"]
    data = f"{report.stem}/table.json"
    n_seeds = len(record["seeds"])
    self_play_episodes = s.get("self_play_meta_episodes") or s["meta_episodes"]
    self_play_games = s.get("self_play_num_games") or s["num_games"]
    statistic = ("mean over seeds with a 95% percentile-bootstrap CI of the mean" if n_seeds >= 10 else
                 f"mean over seeds, then every seed's value (n = {n_seeds}: too few seeds for a CI)")
    games = sorted(record["games"].items(), key=lambda item: TRAIN_GAMES.index(item[0]))
    lines = [
        "# Model-Free Opponent Shaping (M-FOS)", "", *document.notice(report, "mfos"), *summary.lines(record, _fresh(report)),
        f"The table's data: [{data}]({data}){_made_by(record, games)}"
        + (f" This text was rendered from that data by `{record['rendered']['command']}` at commit "
           f"{record['rendered']['commit']}." if "rendered" in record else ""), "",
        f"Budget: {s['num_games']} games in parallel x {s['meta_episodes']} meta-episodes of {META_EPISODE} "
        f"meta-steps (meta self-play: {self_play_games} games x {self_play_episodes} meta-episodes), M-FOS actor and critic "
        f"{'-'.join(map(str, s['hidden_sizes']))} tanh, {n_seeds} seeds ({record['seeds'][0]}..{record['seeds'][-1]}), "
        f"MAMAML initialisation from {s['mamaml_steps']} Adam steps. The paper used 4096 games x 1024 "
        "meta-episodes (`--preset paper`).", "",
        "Games and scoring, as in the authors' code: the IPD and IMP are infinitely repeated memory-one games "
        "(gamma 0.96, per-step reward (1 - gamma) V); chicken is one-shot (its payoff, no discounting). "
        + ("Every meta-episode is scored as the authors score it: the learners first take one learning step "
           "that is not counted (their `reset`), then 100 steps are scored. " if s.get("scoring", "authors") ==
           "authors" else "Every one of the 100 steps is scored, the first with the N(0, 1) policies "
           "(`--scoring count-first`; the authors do not count the first). "),
        f"Each cell: the mean reward per step over a meta-episode; the {statistic}. Plain learners (NL, LOLA, "
        "MAMAML; lr 1) learn simultaneously from N(0, 1) logits (MAMAML from its meta-learned ones); their value "
        "for a seed is exact given the seed (the mean over that seed's games). MAMAML's meta-learned start is one "
        "per game and seat, shared by every seed, so the intervals of its rows leave out how much the start "
        "varies with the key it is meta-learned from. M-FOS rows: per seed, the mean "
        "over the last 10% of training meta-episodes; for M-FOS vs M-FOS, over the last 10% of meta-episodes in "
        "which the two agents met (lambda falls linearly from 1 to 0 over the first 65% of training). The row "
        "player sits in seat 2 (player 2), the column player in seat 1. No row is called better than another "
        "here unless its interval does not overlap the other's.", "",
    ]
    for game, entry in games:
        rows = entry["rows"]
        lines += [f"## {game.upper()}", ""]
        if "provenance" in entry:  # kept from an earlier run, or merged from a separate one
            run = entry["provenance"]
            lines += [f"Kept from a separate run with the same settings: `{run['command']}` at commit "
                      f"{str(run['commit'])[:10]}"
                      f"{' (with uncommitted changes)' if run.get('uncommitted_changes') else ''}, {run['date']}, "
                      f"on {run.get('machine', 'an unrecorded machine')}; {_wall(entry)}.", ""]
        elif "elapsed_s" in entry:
            lines += [f"Made by this table's run (its command is in the provenance, below); {_wall(entry)}.", ""]
        lines += ["| row vs column | row player | column player |", "|---|---|---|"]
        for label in _ROW_ORDER:
            pretty = label.replace("mfos", "M-FOS").replace("mamaml", "MAMAML").replace("lola", "LOLA")
            cells = (format_cell(rows[label]["final"]["shaper"]), format_cell(rows[label]["final"]["opponent"])) \
                if label in rows else ("not run (the table stopped before this row)",) * 2
            lines.append(f"| {pretty.replace('nl', 'NL')} | {cells[0]} | {cells[1]} |")
        lines += [""] + [_paper_line(game, opponent) for g, opponent in PAPER_SOURCES if g == game]
        if "analysis_vs_nl" in entry:
            lines += ["", f"![M-FOS training curves]({report.stem}/{game}_rewards.png)", ""]
            lines += analysis_lines(game, entry["analysis_vs_nl"], entry.get("analysis_vs_nl_greedy"),
                                    f"{report.stem}/{game}_nl_policies.png")
            agents = f"{report.stem}/params/{game}-vs-nl.msgpack"
            if (report.parent / agents).is_file():
                lines += [f"These M-FOS agents (every seed) are committed in [{agents}]({agents}); "
                          f"`purerl mfos evaluate --report {shown or report}` replays them against the same fresh NLs and "
                          "checks every number in this section.", ""]
        lines.append("")
    lines += document.footer(report, "mfos")
    report.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(report, "\n".join(lines) + "\n")


def _paper_line(game: str, opponent: str) -> str:
    """The target number for one pairing beside the table, and where it comes from (or why there is none)."""
    who, source = opponent.upper(), PAPER_SOURCES[(game, opponent)]
    if (game, opponent) not in PAPER:
        return f"Paper, full scale, M-FOS vs {who}: {source}."
    mfos, other = PAPER[(game, opponent)]
    return f"Target, full scale: M-FOS vs {who} {mfos:+.2f}, {who} {other:+.2f} ({source})."


def _made_by(record: dict, games: list[tuple[str, dict]]) -> str:
    """Which games this table's own run made, and which it kept from other runs (the rest of the sentence)."""
    minutes = f"{record.get('elapsed_s', 0) / 60:.1f} min"
    kept = [game.upper() for game, entry in games if "provenance" in entry]
    if not kept:
        return f"; the whole table ran for {minutes}."
    own = [game.upper() for game, entry in games if "provenance" not in entry]
    run = record["provenance"]
    one = len(kept) == 1
    return (f". {_names(own) or 'No game'} {'was' if len(own) < 2 else 'were'} run by `{run['command']}` at commit "
            f"{str(run['commit'])[:10]} ({run['date']}; {minutes}); {_names(kept)} {'was' if one else 'were'} kept "
            f"with the same settings from the run{'' if one else 's'} named in "
            f"{'its section' if one else 'their sections'}.")


def _names(games: list[str]) -> str:
    return ", ".join(games[:-1]) + (" and " if len(games) > 1 else "") + (games[-1] if games else "")


def _wall(entry: dict) -> str:
    seconds = entry.get("elapsed_s")
    return "wall time not recorded" if seconds is None else f"wall time {seconds / 60:.1f} min"


def analysis_lines(game: str, sampled: dict, greedy: dict | None, plot: str) -> list[str]:
    """The trained M-FOS's late policy against a fresh NL and, in the IPD, Press & Dyson's extortion tests,
    for its sampled actions (as in training) and for the mean of its policy (greedy)."""
    late = sampled["late_meta_steps"]
    lines = [f"### The trained M-FOS against a fresh NL ({game.upper()})", "",
             f"Memory-one policies averaged over the last {late} meta-steps of a meta-episode, over games and "
             "seeds:", "",
             "| | P(C\\|start) | P(C\\|CC) | P(C\\|CD) | P(C\\|DC) | P(C\\|DD) |", "|---|---|---|---|---|---|"]
    modes = [("sampled", sampled)] + ([("greedy", greedy)] if greedy else [])
    for mode, analysis in modes:
        mfos, opp = analysis["mfos_policy"], analysis["opponent_policy"]
        lines += [f"| M-FOS ({mode}) | " + " | ".join(f"{mfos[k]:.2f}" for k in POLICY_LABELS) + " |",
                  f"| NL (vs {mode}) | " + " | ".join(f"{opp[k]:.2f}" for k in POLICY_LABELS) + " |"]
    lines.append("")
    if game == "ipd":
        lines += ["Press & Dyson extortion tests (`src/purerl_lab/studies/mfos/analysis.py`; sampled: M-FOS's actions "
                  "drawn from its Gaussian as in training; greedy: the Gaussian's mean):", ""]
        for mode, analysis in modes:
            test, fit = analysis["policy_test"], analysis["payoff_fit"]
            by_seed = analysis.get("by_seed", [])
            passed = sum(a["policy_test"]["extortionate"] for a in by_seed)
            lines += [
                f"- {mode}, policy vector: p~ = phi[(S_X - P) - chi (S_Y - P)] fits with chi = {test['chi']:.2f}, "
                f"phi = {test['phi']:.3f}, largest error {test['residual']:.3f} (tolerance {test['tolerance']}); "
                f"extortionate: {'yes' if test['extortionate'] else 'no'}"
                + (f" (per seed: {passed} of {len(by_seed)} pass)." if by_seed else "."),
                f"- {mode}, reached payoffs: s_X - P = chi (s_Y - P) with P = {fit['kappa']:g} gives "
                f"chi = {fit['chi']:.2f}, R^2 = {fit['r2']:.2f} over {fit['points']} (game, meta-step) points; "
                f"M-FOS {fit['own_mean']:.2f}, NL {fit['other_mean']:.2f} per step; extortionate: "
                f"{'yes' if fit['extortionate'] else 'no'}."]
        lines += ["", _why_no_extortion(sampled, greedy)]
        lines.append("")
    lines += [f"![policies over the meta-episode]({plot})", ""]
    return lines


def _why_no_extortion(sampled: dict, greedy: dict | None) -> str:
    """The evidence, in words, for whether the payoffs reached can come from an extortioner at all."""
    p = sampled["payoffs_RSTP"][3]
    late = {mode: a["late_rewards"] for mode, a in (("sampled", sampled), ("greedy", greedy)) if a}
    below = [f"{mode} {r['opponent']:+.2f} (M-FOS {r['mfos']:+.2f})" for mode, r in late.items()]
    return (
        f"Can these payoffs come from extortion at all? In this IPD every feasible payoff pair has s_X + s_Y >= "
        f"2P = {2 * p:g}, so no inner game leaves both players below P = {p:g}; an extortioner (chi >= 1) keeps "
        "each inner game on s_X - P = chi (s_Y - P), so while M-FOS is above P its opponent cannot be below P, "
        "and neither can an average over inner games. The full-scale target averages (M-FOS -0.48, NL -2.17 < P; "
        "no traced source in the paper) therefore cannot come from one extortionate policy played through the meta-episode: they "
        "need inner games in which M-FOS defects against a still-cooperating NL, which is exploitation, not "
        "extortion (the discounted game, gamma 0.96, enforces the ZD line only approximately, which does not "
        "change the sign). Extortion could at most describe the end of a meta-episode, which is what the tests "
        f"above look at. Over those last {sampled['late_meta_steps']} meta-steps the NL gets "
        + ", ".join(below) + " per step.")
