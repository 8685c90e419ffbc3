"""What mfos.md opens with: in each game, M-FOS against each learner it was trained to shape, judged as one family
(`publish.replication`), and the sentence answering the question named in advance.

The test: a seed's M-FOS reward per step minus its opponent's, both over the same meta-episodes of that seed (the
last 10% of training), so the difference is paired within the seed and the seeds are the sample. It asks whether
M-FOS comes out ahead of the learner it plays, which is what the paper's table reads as shaping.
"""

from __future__ import annotations

import numpy as np

from purerl_lab.publish import replication
from purerl_lab.studies.mfos.settings import GAME_NAMES, OPPONENTS

# The question the headline answers, named before any fresh seed ran: does M-FOS come out ahead of a naive learner
# in the IPD, the pairing the study was set up to match (the paper's M-FOS -0.48 against NL -2.17)?
PRIMARY = ("ipd", "nl")


def comparisons(record: dict) -> list[replication.Comparison]:
    """M-FOS against every learner in every game of a table record, on the study's seeds, judged."""
    found = []
    for game in (g for g in GAME_NAMES if g in record["games"]):
        rows = record["games"][game]["rows"]
        for opponent in (o for o in OPPONENTS if f"mfos vs {o}" in rows):
            mfos, other = np.asarray(rows[f"mfos vs {opponent}"]["final_by_seed"], np.float64).T
            who = opponent.upper()
            found.append(replication.Comparison.paired(
                (game, opponent), f"M-FOS against {who} in the {game.upper()}: M-FOS's reward minus {who}'s?",
                mfos, other, primary=(game, opponent) == PRIMARY, digits=2))
    return replication.judge(found)


def lines(record: dict) -> list[str]:
    """The summary block: every comparison a row, the primary first; the headline, the test and the command its
    replication would run."""
    judged = comparisons(record)
    words = [replication.headline(judged, "Does M-FOS come out ahead of a naive learner in the IPD (the question "
                                  "named in advance)?", {"better": "M-FOS ahead", "worse": "the NL ahead"}),
             "Each row: the mean over seeds of a seed's M-FOS reward per step minus its opponent's, both over the "
             "last 10% of that seed's training meta-episodes (paired within the seed). Seeds whose value is not "
             "finite give their row no interval.",
             f"Replication: not run yet for any row: `purerl mfos table` has no `{replication.FLAG}` yet."]
    return replication.summary(judged, [c.key for c in judged], words)
