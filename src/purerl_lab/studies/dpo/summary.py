"""What dpo.md opens with: every paired comparison the document states (each objective against PPO per env, the
drifts against PPO on the fitness they were evolved for, and whether PPO's curve still rises), judged as one family
(`publish.replication`), the table of the questions it answers and the sentence answering the one named in advance.

Every comparison is paired on the seeds: the objectives of an env train on the same seeds and hyperparameters, and
PPO's return late in the budget comes from the same runs as its final one.
"""

from __future__ import annotations

from purerl import stats
from purerl.run import results
from purerl_lab.publish import provenance, replication

# The question the headline answers, named before any fresh seed ran: DPO against PPO on Brax ant, where the paper
# makes its claim and the task the authors evolved LPO on and read DPO from (dpo/main_drift_brax.py).
PRIMARY = ("brax:ant", "dpo", "ppo")
LATE = "return_at_80pct"  # the record's name for PPO's return at `late` (compare.LATE_FRACTION) of the budget


def comparisons(records: list[dict], fresh: dict[str, dict], late: float) -> list[replication.Comparison]:
    """Each comparison of the records on the study's seeds, and again on the fresh seeds of its env's replication
    record (`fresh`, by env) where that has run, judged."""
    found = []
    for r in records:
        again = fresh.get(r["env"])
        for key, question, pick in _pairs(r, late):
            repeated = _paired(again, pick) if again else None
            found.append(replication.Comparison.paired(
                key, question, *_paired(r, pick), primary=key == PRIMARY,
                fresh=stats.paired_difference(*repeated) if repeated else None))
    return replication.judge(found)


def _pairs(r: dict, late: float):
    """(key, question, (objective, statistic, objective, statistic)) of each comparison an env's record makes."""
    rows, env = r["objectives"], r["env"]
    ppo = rows.get("ppo")
    if ppo is None:
        return
    for label, row in rows.items():
        if label == "ppo":
            continue
        yield ((env, label, "ppo"), f"{label.upper()} against PPO on {env}, final return?",
               (label, "final_return", "ppo", "final_return"))
        for key in (key for key in row if label.startswith("lpo") and key.startswith("fitness_") and key in ppo):
            kind = key.removeprefix("fitness_")
            yield ((env, label, "ppo", kind), f"{label} against PPO on its training task ({env}), the fitness it "
                   f"was evolved for ({kind})?", (label, key, "ppo", key))
    if LATE in ppo:
        yield ((env, "ppo", LATE), f"PPO still rising on {env}: its final return against its return at {late:.0%} "
               "of the budget?", ("ppo", "final_return", "ppo", LATE))


def _paired(r: dict, pick: tuple) -> tuple[list, list] | None:
    """The per-seed values a comparison pairs, from one record (None where it lacks them)."""
    a, a_stat, b, b_stat = pick
    rows = r["objectives"]
    if a_stat not in rows.get(a, {}) or b_stat not in rows.get(b, {}):
        return None
    return rows[a][a_stat]["values"], rows[b][b_stat]["values"]


def lines(records: list[dict], fresh: dict[str, dict], late: float) -> list[str]:
    """The summary block: a row per question (DPO against PPO per env, the primary first, then each drift on its
    training task), the headline, what each row tests and the replications still to run."""
    judged = comparisons(records, fresh, late)
    keys = [c.key for c in judged]
    rows = [k for k in keys if k[1:] == ("dpo", "ppo")] + [k for k in keys if len(k) == 4]
    said = {"better": "DPO ahead", "worse": "PPO ahead"}
    waiting = sorted((r["env"] for r in records if r["env"] not in fresh), key=lambda env: env != PRIMARY[0])
    words = [replication.headline(judged, f"Does DPO beat PPO on {PRIMARY[0]}, the task the authors evolved "
                                  "LPO on (the question named in advance)?", said),
             "Each row: the mean over seeds of the per-seed difference, the objective minus PPO on the same seeds "
             f"and hyperparameters, in final return (the mean episode return over the last {results.FINAL_WINDOW} "
             "updates) or, for a drift on its training task, in the fitness it was evolved for (the LPO section). "
             "The family also holds each drift's final return against PPO's on every env it ran, and per env "
             f"PPO's final return against its return at {late:.0%} of the budget (is its curve still rising?).",
             replication.pending(provenance.STUDIES["dpo"], waiting)]
    return replication.summary(judged, rows, [w for w in words if w])
