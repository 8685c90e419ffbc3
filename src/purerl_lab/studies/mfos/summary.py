"""What mfos.md and mfos_coin.md open with: in each game, M-FOS against each learner it was trained to shape, judged
as one family (`publish.replication`), and the sentence answering the question named in advance.

The test: a seed's M-FOS reward per step minus its opponent's, both over the same meta-episodes of that seed (the
last 10% of training), so the difference is paired within the seed and the seeds are the sample. It asks whether
M-FOS comes out ahead of the learner it plays, which is what the paper's table reads as shaping.
"""

from __future__ import annotations

import numpy as np

from purerl import stats
from purerl_lab.publish import provenance, replication
from purerl_lab.studies.mfos.settings import GAME_NAMES, OPPONENTS

# The question the headline answers, named before any fresh seed ran: does M-FOS come out ahead of a naive learner
# in the IPD, the pairing the study was set up to match (the paper's M-FOS -0.48 against NL -2.17)?
PRIMARY = ("ipd", "nl")


def comparisons(record: dict, fresh: dict | None = None) -> list[replication.Comparison]:
    """M-FOS against every learner in every game of a table record, on the study's seeds and, where its
    replication (`fresh`, a table record on fresh seeds) has the game, on those, judged."""
    found = []
    for game in (g for g in GAME_NAMES if g in record["games"]):
        rows = record["games"][game]["rows"]
        again = ((fresh or {}).get("games", {}).get(game) or {}).get("rows", {})
        for opponent in (o for o in OPPONENTS if f"mfos vs {o}" in rows):
            label, who = f"mfos vs {opponent}", opponent.upper()
            repeated = stats.paired_difference(*_pair(again[label])) if label in again else None
            found.append(replication.Comparison.paired(
                (game, opponent), f"M-FOS against {who} in the {game.upper()}: M-FOS's reward minus {who}'s?",
                *_pair(rows[label]), fresh=repeated, primary=(game, opponent) == PRIMARY, digits=2))
    return replication.judge(found)


def _pair(row: dict) -> np.ndarray:
    """A row's (M-FOS, opponent) rewards per seed."""
    return np.asarray(row["final_by_seed"], np.float64).T


def lines(record: dict, fresh: dict | None = None) -> list[str]:
    """The summary block: every comparison a row, the primary first; the headline, the test and the replications
    still to run."""
    judged = comparisons(record, fresh)
    waiting = [game for game in GAME_NAMES if game in record["games"] and game not in (fresh or {}).get("games", {})]
    words = [replication.headline(judged, "Does M-FOS come out ahead of a naive learner in the IPD (the question "
                                  "named in advance)?", {"better": "M-FOS ahead", "worse": "the NL ahead"}),
             "Each row: the mean over seeds of a seed's M-FOS reward per step minus its opponent's, both over the "
             "last 10% of that seed's training meta-episodes (paired within the seed). Seeds whose value is not "
             "finite give their row no interval.",
             replication.pending(provenance.STUDIES["mfos"], waiting)]
    return replication.summary(judged, [c.key for c in judged], [w for w in words if w])


# mfos_coin.md's question, named before any fresh seed ran: does M-FOS come out ahead of the PPO learner it plays,
# the same test as the matrix games'? The family beside it: how each logged number changed over training.
COIN_PRIMARY = ("coin", "ahead")


def coin_comparisons(record: dict, fresh: dict | None = None) -> list[replication.Comparison]:
    """A coin-game record's comparisons (`coin_report.write_report`), on its seeds and, where its replication has
    run (`fresh`, the same record on fresh seeds), on those, judged: M-FOS's reward minus the learner's over the
    last 10% of training, then each logged column's last 10% minus its first meta-episode."""
    from purerl_lab.studies.mfos.coin import LOG_COLUMNS

    def columns(r: dict | None, key: str) -> np.ndarray | None:
        return None if r is None else np.asarray(r[key], np.float64).T  # [column, seed]

    final, first = columns(record, "final_by_seed"), columns(record, "first_by_seed")
    again, again_first = columns(fresh, "final_by_seed"), columns(fresh, "first_by_seed")
    found = [replication.Comparison.paired(
        COIN_PRIMARY, "M-FOS against the PPO learner in the coin game: M-FOS's reward per step minus the learner's?",
        final[0], final[1], fresh=None if again is None else stats.paired_difference(again[0], again[1]),
        primary=True, digits=2)]
    for j, column in enumerate(LOG_COLUMNS):
        found.append(replication.Comparison.paired(
            ("coin", column), f"Over training, {column}: last 10% minus the first meta-episode?", final[j], first[j],
            fresh=None if again is None else stats.paired_difference(again[j], again_first[j]), digits=2))
    return replication.judge(found)


def coin_lines(record: dict, fresh: dict | None = None) -> list[str]:
    """mfos_coin.md's summary block: the primary comparison first, then the changes over training; the headline,
    the test, and the replication's command until it has run."""
    judged = coin_comparisons(record, fresh)
    words = [replication.headline(judged, "Does M-FOS come out ahead of the PPO learner it plays in the coin game "
                                  "(the question named in advance)?", {"better": "M-FOS ahead", "worse": "the learner ahead"}),
             "Each row is paired within a seed: the primary row, a seed's M-FOS reward per step minus its learner's, "
             "both over the last 10% of its training meta-episodes; the others, a seed's number over those "
             "meta-episodes minus its number in the first (an untrained M-FOS against a fresh learner).",
             "" if fresh else replication.pending(provenance.STUDIES["mfos_coin"], ["coin"])]
    return replication.summary(judged, [c.key for c in judged], [w for w in words if w])


def paper_lines(records: list[dict], tolerance: float) -> list[str]:
    """mfos_paper.md's summary block: per run (one so far, the IPD against NL), M-FOS's reward minus its learner's
    (the question named in advance, as in mfos.md), then in words how the run stands against the target numbers and
    Press & Dyson's extortion test. The study registers no replication: its four seeds give no CI, so no verdict to
    replicate, and mfos.md asks the same question on 10 seeds, replicated."""
    from purerl_lab.studies.mfos.report import PAPER
    from purerl_lab.studies.mfos.run_report import within

    judged = replication.judge([replication.Comparison.paired(
        (r["game"], r["opponent"]), f"M-FOS against {r['opponent'].upper()} in the {r['game'].upper()}, preset "
        f"{r['preset']}: M-FOS's reward per step minus {r['opponent'].upper()}'s?", *_pair(r), primary=i == 0,
        digits=2) for i, r in enumerate(records)])
    words = [replication.headline(judged, f"Does M-FOS come out ahead of a naive learner in the IPD at preset "
                                  f"{records[0]['preset']} (the question named in advance)?",
                                  {"better": "M-FOS ahead", "worse": "the NL ahead"})]
    for r in records:
        who, targets = r["opponent"].upper(), PAPER[(r["game"], r["opponent"])]
        cells = (r["final"]["mfos"], r["final"]["opponent"])
        reached = [f"{label} {cell['mean']:+.2f} (target {target:+.2f}, {cell['mean'] - target:+.2f}; within "
                   f"{tolerance}: {within(cell, target)})" for label, cell, target in zip(("M-FOS", who), cells, targets)]
        words.append(f"Against the target numbers, which have no traced source (as the results below say), this run "
                     f"reaches {' and '.join(reached)}, over n={cells[0]['n']} seeds.")
        if r["game"] == "ipd":
            tests = [f"{mode} {sum(a['policy_test']['extortionate'] for a in r[key].get('by_seed', []))} of "
                     f"{len(r[key].get('by_seed', []))} seeds" for mode, key in (("sampled", "analysis"),
                                                                                 ("greedy", "analysis_greedy")) if key in r]
            words.append(f"Press & Dyson's extortion test, on the trained M-FOS's late policy against a fresh {who}, "
                         f"passes on {', '.join(tests)}; an observation on these seeds, not a verdict.")
    fewest = min(len(r["seeds"]) for r in records)
    if fewest < stats.MIN_SEEDS_FOR_CI:
        words.append(f"With {fewest} seeds there is no 95% CI, so no comparison here is a verdict and none has a "
                     "replication to run; [mfos.md](mfos.md) answers the same question on 10 seeds at the small "
                     "preset, with its replication.")
    return replication.summary(judged, [c.key for c in judged], words,
                               no_fresh="none: no CI to replicate" if fewest < stats.MIN_SEEDS_FOR_CI else "none registered")
