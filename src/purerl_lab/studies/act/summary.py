"""What act.md opens with: every comparison its sections state (each evolved adversary against a random adversary
and against no messages, per train-time env; each test-time condition against the baselines), paired by victim,
judged as one family (`publish.replication`), and the sentence answering the question named in advance.

The pairing: every condition of an evaluation trains its victims from the same fresh seeds (PRNGKey(seed) for
the victim, and at test time the same goals and episodes), so a victim's difference compares two conditions on one
draw of a victim. The sections keep their own test (two IQMs' 95% CIs apart), uncorrected.
"""

from __future__ import annotations

from purerl import stats
from purerl_lab.publish import provenance, replication
from purerl_lab.studies import act

# The question the headline answers, named before any fresh victim of a replication ran: does the first evolved
# anti adversary (ES seed 0) lower the CartPole-v1 victim's return over its training against no messages at all,
# the paper's train-time claim on the env it starts from?
PRIMARY = ("train-time CartPole-v1", "anti (evolved), ES seed 0", "no messages")
BASELINES = ("no messages", "random adversary")  # what a train-time adversary is compared with, the first a row


def comparisons(evaluations: dict[str, tuple[str, dict]], pairs: dict[str, list[tuple[str, str]]],
                fresh: dict[str, dict | None]) -> list[replication.Comparison]:
    """Each pair of conditions of each evaluation ({name: its rows}, `pairs` per name), on the study's victims and
    on its replication's (`fresh`, {name: rows or None}), judged; below the victims a verdict on its env rests on
    (`act.Victim.victims`), a pair gives none."""
    found = []
    for name, (env_name, rows) in evaluations.items():
        enough = min(s["n"] for s in rows.values()) >= act.victim_of(env_name).victims
        again = fresh.get(name) or {}
        for a, b in pairs[name]:
            if a not in rows or b not in rows:
                continue
            x, y = rows[a]["values"], rows[b]["values"]
            difference = stats.paired_difference(x, y)
            if not enough:
                difference["verdict"] = "not distinguishable"
            repeated = (stats.paired_difference(again[a]["values"], again[b]["values"]) if {a, b} <= again.keys()
                        else None)
            found.append(replication.Comparison((name, a, b), f"{a} against {b}, {name}?", difference,
                                                stats.paired_p_value(x, y) if enough else 1.0, repeated,
                                                primary=(name, a, b) == PRIMARY))
    return replication.judge(found)


def lines(evaluations: dict[str, tuple[str, dict]], pairs: dict[str, list[tuple[str, str]]],
          fresh: dict[str, dict | None]) -> list[str]:
    """The summary block: a row per evolved run against no messages, and per test-time joint run against each
    exploiter baseline; the headline; the test; the replications still to run."""
    judged = comparisons(evaluations, pairs, fresh)
    rows = [c.key for c in judged if c.key[2] == BASELINES[0] or c.key[0] == "test-time"
            and c.key[2] != "random shaper"]
    words = [replication.headline(judged, f"Does the evolved anti adversary ({PRIMARY[1]}) lower the victim's "
                                  f"return against no messages, {PRIMARY[0]} (the question named in advance)?",
                                  {"better": "higher", "worse": "lower"}),
             "Each row: the mean over held-out victims of the per-victim difference, the first condition minus the "
             "second, on the same victim seeds (train time: the victim's mean episode return over its training; "
             "test time: its goal return).",
             replication.pending(provenance.STUDIES["act"], [_part(name) for name in evaluations
                                                             if fresh.get(name) is None])]
    return replication.summary(judged, rows, [w for w in words if w])


def _part(evaluation: str) -> str:
    """act.md's part of an evaluation: "train-time" (CartPole-v1), "train-time Pendulum-v1", "test-time"."""
    return evaluation.removesuffix(f" {act.TEST_TIME_ENV}")
