"""What offpolicy.md opens with: each algorithm against the first one (PPO) at every env-step mark and evaluation
mode, paired by seed, judged as one family (`publish.replication`), and the sentence answering the question named
in advance.

The pairing: every algorithm trains on the same seeds and each seed's policy is evaluated on the same episodes (one
key per seed, for every algorithm and mark), so a seed's difference compares the two algorithms on one draw of
episodes. The sections below keep their own test (two IQMs' 95% CIs apart, `design.verdict`), uncorrected.
"""

from __future__ import annotations

from purerl import stats
from purerl_lab.publish import provenance, replication
from purerl_lab.studies.versus.design import MARKS
from purerl_lab.studies.versus.evaluation import MODES

# The question the headline answers, named before any fresh seed ran: is SAC ahead of PPO on hopper at the end of
# the budget, by its greedy evaluation (each algorithm's deterministic policy, the one a user deploys)?
PRIMARY = ("brax:hopper", "sac", "greedy", MARKS[-1])


def comparisons(records: list[dict], fresh: dict[str, dict]) -> list[replication.Comparison]:
    """Every algorithm but the first against the first, per env, mode and mark, on the study's seeds and on its
    env's replication (`fresh`, by env) where that has run, judged."""
    found = []
    for r in records:
        (reference, ours), *others = r["algorithms"].items()
        again = fresh.get(r["env"])
        for algo, a in others:
            for mode in MODES:
                for i, (mark, fraction) in enumerate(zip(r["marks"], MARKS)):
                    key = (r["env"], algo, mode, fraction)
                    repeated = stats.paired_difference(*_pair(again, reference, algo, mode, i)) if again else None
                    found.append(replication.Comparison.paired(
                        key, f"{a['title']} against {ours['title']} on {r['env']}, {mode} evaluation at {mark:,} env "
                        f"steps ({fraction:.0%})?", *_pair(r, reference, algo, mode, i), fresh=repeated,
                        primary=key == PRIMARY))
    return replication.judge(found)


def _pair(r: dict, reference: str, algo: str, mode: str, mark: int) -> tuple[list, list]:
    """An algorithm's and the reference's evaluated returns per seed at one mark of a record."""
    return tuple(r["algorithms"][name]["evaluated"][mode][mark]["return"]["values"] for name in (algo, reference))


def lines(records: list[dict], fresh: dict[str, dict]) -> list[str]:
    """The summary block: every comparison a row, the primary first, then the headline, the test and what its
    replication would run."""
    judged = comparisons(records, fresh)
    words = [replication.headline(judged, f"Is SAC ahead of PPO on {PRIMARY[0]} at the end of the budget, by the "
                                  f"{PRIMARY[2]} evaluation (the question named in advance)?",
                                  {"better": "SAC ahead", "worse": "PPO ahead"}),
             "Each row: the mean over seeds of the per-seed difference in evaluated return (the mean over a seed's "
             "evaluation episodes), the algorithm minus PPO, on the same seeds and the same evaluation episodes. "
             "The sections below give each mark's own test (the IQMs' 95% CIs apart), uncorrected for the family.",
             *map(presets_sentence, records),
             replication.pending(provenance.STUDIES["offpolicy"], [r["env"] for r in records if r["env"] not in fresh])]
    return replication.summary(judged, [c.key for c in judged], [w for w in words if w])


def presets_sentence(record: dict) -> str:
    """What a verdict compares: each algorithm's registered preset as a user gets it, at this budget, with how many
    updates that gives each; neither preset was tuned for the env or the budget, so not the algorithms at their best."""
    runs = ", ".join(f"{a['title']} at preset `{a['preset']}` makes {a['num_updates']:,} updates"
                     for a in record["algorithms"].values())
    return (f"On {record['env']}, in {record['env_steps_per_run']:,} env steps per run, {runs}. Neither preset is "
            "tuned for this env or budget (what each was made for: its description in the env's section below; "
            "where it comes from: the differences from the authors' code), so a verdict compares the presets as a "
            "user gets them here, not the algorithms at their best.")
