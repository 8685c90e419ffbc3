"""What mfos.md opens with: in each game, M-FOS against each learner it was trained to shape, judged as one family
(`publish.replication`), and the sentence answering the question named in advance.

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
