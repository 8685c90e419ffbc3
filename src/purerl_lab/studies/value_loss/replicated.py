"""The value-loss document's verdicts: every paired comparison of its record, judged as one family against its
replication on fresh seeds (`publish.replication`), and the questions its summary table answers."""

from __future__ import annotations

from purerl import stats
from purerl_lab.publish import replication
from purerl_lab.studies.value_loss import published

# Named before any replication ran: the question the document's headline answers
PRIMARY = ("training_budget", "learned", "tuned_l2")
# The summary's rows: the primary; the other baselines; the budget beyond training against L2 tuned there; the
# transfer to another env; the shape beyond its scale; the other loss form
QUESTIONS = (PRIMARY, ("training_budget", "learned", "l2"), ("5x_budget", "learned", "tuned_l2_5x"),
             ("acrobot", "learned", "tuned_l2"), ("training_budget", "learned", "scale_only"),
             ("training_budget", "learned_mlp", "tuned_l2"))
FRESH = {setting: fresh for fresh, setting in published.REPLICATIONS.items()}
SETTINGS = {"training_budget": "CartPole-v1 at the training budget (100k steps)", "acrobot": "on Acrobot-v1",
            "2x_budget": "CartPole-v1 at 2x the budget", "5x_budget": "CartPole-v1 at 5x the budget"}


def row_of(name: str, other: str) -> str:
    """The row `name` is compared with: `other`, or for `scale_only` the row of `name`'s scale alone, as L2."""
    return f"{name}_scale_only" if other == "scale_only" else other


def baseline_words(record: dict, other: str) -> str:
    tuned = {"tuned_l2": record.get("tuned_l2"), "tuned_l2_5x": record.get("tuned_l2_5x")}.get(other)
    if other == "tuned_l2":
        return f"L2 with vf_coef tuned beforehand ({tuned_value(tuned)})" if tuned else "tuned L2"
    if other == "tuned_l2_5x":
        return f"L2 with vf_coef tuned at 5x the budget ({tuned_value(tuned)})" if tuned else "L2 tuned at 5x"
    return {"l2": "L2 at PPO's vf_coef 0.5", "clipped_l2": "clipped L2",
            "scale_only": "its own scale alone (L2 at its curvature at v = t)"}.get(other, f"`{other}`")


def grid_edge(tuned: dict) -> str | None:
    """'smallest' or 'largest' where a tuning chose the first or last coefficient it tried (a baseline tuned only
    as far as its grid reaches), else None."""
    return {tuned["grid"][0]: "smallest", tuned["grid"][-1]: "largest"}.get(tuned["vf_coef"])


def tuned_value(tuned: dict) -> str:
    """The chosen value coefficient, and whether it is at the edge of the coefficients tried."""
    edge = grid_edge(tuned)
    return f"{tuned['vf_coef']:g}" + (f", the grid's {edge}" if edge else "")


def comparisons(record: dict) -> list[replication.Comparison]:
    """Every learned loss against every baseline at every setting on the study's seeds, with its replication where
    the fresh seeds have run, judged (`replication.judge`); [] for a record without paired differences."""
    paired = record.get("paired") or {}
    found = []
    for setting, rows in paired.items():
        if setting in published.REPLICATIONS:
            continue
        seeds = record["all_candidates"][setting]
        fresh = paired.get(FRESH.get(setting), {})
        for name, others in rows.items():
            for other, difference in others.items():
                p = stats.paired_p_value(seeds[name]["auc_per_seed"], seeds[row_of(name, other)]["auc_per_seed"])
                found.append(replication.Comparison(
                    (setting, name, other), f"`{name}` against {baseline_words(record, other)}, "
                    f"{SETTINGS.get(setting, setting)}?", difference, p, fresh.get(name, {}).get(other),
                    primary=(setting, name, other) == PRIMARY))
    return replication.judge(found)


def headline(record: dict) -> list[str]:
    """The summary table and its sentence: the primary question's answer and how many others replicate."""
    judged = comparisons(record)
    if not judged:
        return []
    by_key = {c.key: c for c in judged}
    primary = by_key.get(PRIMARY)
    sentence = []
    if primary is not None:
        answer = {"better": "yes, and it replicates", "worse": "no: it is worse, on both seed sets",
                  "not replicated": "not on fresh seeds: the study's seeds say so, the fresh ones do not",
                  "not resolved": "not resolved on the study's seeds",
                  "replication pending": "so the study's seeds say; their replication has not run yet"}[primary.verdict]
        sentence.append(f"Does the evolved value loss beat L2 with a tuned value coefficient? {answer[0].upper()}"
                        f"{answer[1:]}.")
    sentence.append(replication.others_sentence([c for c in judged if not c.primary]))
    return replication.summary(judged, [key for key in QUESTIONS if key in by_key], [" ".join(sentence)])
