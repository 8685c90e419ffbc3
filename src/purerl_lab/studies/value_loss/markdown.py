"""docs/results/value_loss.md from the study's JSON record: every sentence with a number is generated."""

from __future__ import annotations

import json
from pathlib import Path

from purerl import stats
from purerl_lab.publish import differences, document, provenance
from purerl.run import files
from purerl_lab.studies.value_loss import published
from purerl_lab.studies.value_loss import replicated
from purerl_lab.studies.value_loss.record import TUNING, TUNING_5X
from purerl_lab.studies.value_loss.findings import (against_tuned, es_seed_shapes, evolution_lines, judge, paired_of,
                                                paired_table, paired_words, shape_tables, shape_words)

SETTING_TITLES = dict(published.TITLES)  # what `results --check --mark` finds


def _ci(s: dict) -> str:
    return f"{s['iqm']:.1f} [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}]"


def _cell(rows: dict, name: str, metric: str) -> str:
    return _ci(rows[name][metric]) if name in rows else "-"


def _held_out_table(record: dict) -> list[str]:
    candidates = record["all_candidates"]
    names = set().union(*(rows.keys() for rows in candidates.values())) - {"config"}
    others = [n for n in _learned(record) if n != "learned"]
    order = (["learned", *others, "l2", "clipped_l2", *(n for n in ("tuned_l2", "tuned_l2_5x") if n in names),
              "learned_scale_only",
              *(f"{n}_scale_only" for n in others if f"{n}_scale_only" in names)]
             + sorted(n for n in names if n.startswith("es_seed")) + sorted(n for n in names if "_es_seed" in n))
    lines = ["| setting | steps | n | " + " | ".join(order) + " |", "|---" * (len(order) + 3) + "|"]
    for setting, rows in candidates.items():
        config = rows["config"]
        lines.append(f"| {SETTING_TITLES.get(setting, setting)} | {config['total_timesteps']:,} | "
                     f"{rows['learned']['auc']['n']} | " + " | ".join(_cell(rows, n, "auc") for n in order) + " |")
    final = ["| setting | " + " | ".join(order) + " |", "|---" * (len(order) + 1) + "|"]
    for setting, rows in candidates.items():
        final.append(f"| {SETTING_TITLES.get(setting, setting)} | " + " | ".join(_cell(rows, n, "final") for n in order) + " |")
    return lines + ["", "Final return (mean of the last 10 updates), same runs:", ""] + final


def _stages(record: dict) -> list[str]:
    """Where and by which command each stage was measured (stages may run apart, on different machines)."""
    lines, commands = [], []
    measured = {setting: rows["config"].get("measured") for setting, rows in record["all_candidates"].items()}
    if record["critic_dynamics"]:
        measured["critic"] = record["critic_dynamics"].get("measured")
    if record.get("tuned_l2"):
        measured[TUNING] = record["tuned_l2"].get("measured")
    if record.get("tuned_l2_5x"):
        measured[TUNING_5X] = record["tuned_l2_5x"].get("measured")
    for stage, m in measured.items():
        if m:  # `- **part**:`, where `results --check --mark` marks a stale part
            what = {TUNING: " (tuned_l2's vf_coef grid)", TUNING_5X: " (tuned_l2_5x's grid)"}.get(stage, "")
            if m["command"] not in commands:
                commands.append(m["command"])
            lines.append(f"- **{stage}**{what}: command {commands.index(m['command']) + 1} at `{m['commit']}`"
                         f"{_dirty(m)} on {m['machine']} (jax {m['jax']}), {m['date']}.")
    if record["not_measured"]:
        lines.append(f"- **Not measured**: {', '.join(record['not_measured'])}.")
    return [f"{i}. `{command}`" for i, command in enumerate(commands, 1)] + [""] + lines


def _verdicts(record: dict) -> list[str]:
    """Each learned loss against L2 and clipped L2 at every setting, judged by both tests the document shows."""
    out = []
    for name in _learned(record):
        for setting, rows in record["all_candidates"].items():
            if name not in rows:
                continue
            learned = rows[name]["auc"]
            judged = [f"against {title} {judge(record, setting, name, baseline, rows)} (IQM {_ci(learned)} vs "
                      f"{_ci(rows[baseline]['auc'])}{paired_words(record, setting, name, baseline)})"
                      for baseline, title in (("l2", "L2"), ("clipped_l2", "clipped L2"))]
            who = "the learned loss" if name == "learned" else f"`{name}`"
            out.append(f"- {SETTING_TITLES.get(setting, setting)}: {who} {judged[0]}; {judged[1]}.")
    return out




def _learned(record: dict) -> list[str]:
    """The learned losses' names, the primary's (`learned`) first."""
    return [entry["learned"] for entry in (record.get("forms") or {}).values()] or ["learned"]


def _interpretation(record: dict) -> str:
    shape, dyn = record["shape"], record["critic_dynamics"]
    held = record["held_out"]
    learned = held["learned"]
    def met(rows):
        return rows["verdict_vs_l2"] == "better" and rows["verdict_vs_clipped_l2"] == "better"

    success, fresh = met(held), held.get("fresh_training_budget")
    lead = ("not ahead of both on the study's seeds" if not success else
            "ahead of both on the study's seeds; its replication has not run" if fresh is None else
            "ahead of both on the study's seeds and on fresh ones" if met(fresh) else
            "ahead of both on the study's seeds but not on fresh ones (not replicated)")
    text = [
        f"On CartPole-v1 at the training budget, against the baselines as PPO ships them, L2 and clipped L2 at its "
        f"default vf_coef 0.5, the learned loss is "
        f"{lead}: its IQM {_ci(learned)} "
        + ("lies entirely above" if success else "does not lie entirely above")
        + f" both L2's {_ci(held['l2'])} and clipped L2's {_ci(held['clipped_l2'])}"
        + ("" if fresh is None else f"; on fresh seeds {_ci(fresh['learned'])} against {_ci(fresh['l2'])} and "
                                    f"{_ci(fresh['clipped_l2'])}")
        + (". Whether it beats L2 with a tuned vf_coef is the summary's primary question."
           if success and record.get("tuned_l2") else ".")]
    if shape:
        weights = list(shape["weight_at_zero"].values())
        ratio10, ratio30 = shape["over_under_ratio"]["10"], shape["over_under_ratio"]["30"]
        frac = max(shape["nonconvex_fraction"].values())
        symmetric = 0.9 < ratio10 < 1.1
        text.append(
            f"What evolution changed in `learned` (the selected ES seed's loss): at v = t it weighs the squared "
            f"error by exp(g) = "
            f"{min(weights):.2f} to {max(weights):.2f} of L2 (over targets {', '.join(shape['weight_at_zero'])}); "
            + ("it is nearly symmetric" if symmetric else "it is asymmetric")
            + f": an over-estimate by 10 costs {ratio10:.2f}x an under-estimate by 10 ({ratio30:.2f}x at 30); and it is "
            + ("convex on errors in [-30, 30]." if shape["convex"] else
               f"not convex: up to {100 * frac:.0f}% of errors in [-30, 30] have negative curvature (per target: "
               f"{shape['nonconvex_errors']})."))
    seeds = es_seed_shapes(record)
    if seeds:
        text.append(seeds)
    if "learned_scale_only" in record["all_candidates"].get("training_budget", {}) and not record.get("forms"):
        # (a record with loss forms says this in each form's paragraph, `findings.against_tuned`)
        rows = record["all_candidates"]["training_budget"]
        scale = rows["learned_scale_only"]["auc"]
        judged = judge(record, "training_budget", "learned", "scale_only", rows)
        decided = paired_of(record, "training_budget", "learned", "scale_only") or {
            "verdict": stats.iqm_verdict(rows["learned"]["auc"], scale)}  # the paired test decides where recorded
        meaning = shape_words({c.key: c for c in replicated.comparisons(record)}, "learned", decided["verdict"])
        text.append(
            f"Keeping only the learned scale at v = t and dropping the shape (`learned_scale_only`) gives {_ci(scale)} "
            f"against the full learned loss's {_ci(rows['learned']['auc'])}"
            f"{paired_words(record, 'training_budget', 'learned', 'scale_only')}: the full loss is {judged}, so "
            f"{meaning}.")
    if dyn is not None:
        end = {name: dyn[name]["probes"][-1] for name in ("learned", "l2", "clipped_l2")}
        text.append(
            f"Critic ({len(dyn['seeds'])} held-out seeds): after training, mean |v - t| on a fresh rollout is "
            f"{end['learned']['abs_error']:.2f} (learned) vs {end['l2']['abs_error']:.2f} (L2) "
            f"and {end['clipped_l2']['abs_error']:.2f} (clipped L2); {_critic_fit(record.get('critic_paired'))} "
            f"Mean v - t is {end['learned']['bias']:+.2f}, {end['l2']['bias']:+.2f} and "
            f"{end['clipped_l2']['bias']:+.2f}.")
        others = [n for n in dyn if n not in ("learned", "l2", "clipped_l2", "histogram_bins", "seeds", "measured")]
        if others:
            text.append("Mean |v - t| and mean v - t of the others: " + ", ".join(
                f"`{n}` {dyn[n]['probes'][-1]['abs_error']:.2f} and {dyn[n]['probes'][-1]['bias']:+.2f}" for n in others)
                + ".")
    else:
        text.append("The critic-dynamics stage did not run (the run was cut off before it).")
    return " ".join(text)


def _critic_fit(paired: dict | None) -> str:
    """Whether the learned critic fits more or less tightly than L2 and clipped L2: only from the paired per-seed
    differences, and a verdict only where their CI excludes 0 (an older record has no per-seed errors: none)."""
    if not paired:
        return "this record has no per-seed errors, so which critic fits more tightly is not judged."
    fit = {"better": "looser than", "worse": "tighter than", "not distinguishable": "not distinguishable from"}

    def difference(d: dict) -> str:
        interval = f"[{d['ci95_low']:+.2f}, {d['ci95_high']:+.2f}]" if d["ci_valid"] else f"(n={d['n']}, no CI)"
        return f"{d['mean']:+.2f} {interval}"

    l2, clipped = paired["l2"], paired["clipped_l2"]
    return (f"per seed, learned minus L2 is {difference(l2)} and learned minus clipped L2 {difference(clipped)} "
            "(mean of the paired differences [95% bootstrap CI]): the learned critic's fit is "
            f"{fit[l2['verdict']]} L2's and {fit[clipped['verdict']]} clipped L2's.")


def render(record: dict, artefacts: str) -> str:
    held = record["held_out"]
    lines = [
        "# Evolved value loss vs L2 and clipped L2" if not record.get("tuned_l2") else
        "# Evolved value losses vs L2, clipped L2 and tuned L2",
        "",
        *replicated.headline(record),
        "## Method",
        "",
        *evolution_lines(record, artefacts),
        f"- **Held-out seeds**: the first n of PRNGKey({held['config']['seeds'][0]}), PRNGKey({held['config']['seeds'][0] + 1}), "
        "... (n per setting in the table; never used by evolution), the same seeds for every loss"
        + (f"; their replication, the same n again from PRNGKey({fresh['config']['seeds'][0]}) on (the `fresh` rows)."
           if (fresh := record["all_candidates"].get("fresh_training_budget")) else "."),
        f"- **Statistic**: {record['fitness_metric']}. " + (
            "A comparison is judged by two tests on the same seeds: the IQMs' 95% CIs apart, and the 95% CI of the "
            "paired mean difference clear of 0; the words say which resolved it. A conclusion drawn below (against "
            "tuned L2, of the shape against its scale) is the paired test's, the test for runs on the same seeds; "
            "the IQMs' show whether the typical seed separates too. Each interval is 95% on its own; what is a "
            "verdict is corrected for the many comparisons and replicated, as the summary says." if record.get("paired") else
            "A verdict only where the CIs do not overlap."),
        "",
        "## Held-out evaluation (mean return over training: IQM [95% CI])",
        "",
        *_held_out_table(record),
        "",
        *_verdicts(record),
        "",
        *paired_table(record, SETTING_TITLES),
        "## What the loss is, and what the agent gains",
        "",
        *against_tuned(record),
        _interpretation(record),
        "",
        *shape_tables(record),
        f"![loss]({artefacts}/loss.png)",
        "",
        *(line for form, entry in (record.get("forms") or {}).items() if entry["learned"] != "learned"
          for line in (f"![loss, {form} form]({artefacts}/loss_{form}.png)", "")),
        *([f"![critic]({artefacts}/critic.png)", ""] if record["critic_dynamics"] else []),
        f"![returns]({artefacts}/returns.png)",
        "",
    ]
    if record["shape"]:
        lines += [
            "Shape numbers of `learned` alone, the selected ES seed's loss (`shape` in value_loss.json; each ES "
            "seed's asymmetry and scale are above): over/under-estimation loss ratio L(t+m)/L(t-m) at m = "
            + ", ".join(f"{m}: {r:.2f}" for m, r in record["shape"]["over_under_ratio"].items())
            + "; share of errors with negative curvature per target: "
            + ", ".join(f"t={t}: {f:.2f}" for t, f in record["shape"]["nonconvex_fraction"].items()) + ".",
            "",
        ]
    return "\n".join(lines + _provenance(record))


def _provenance(record: dict) -> list[str]:
    """After the results: the deliberate differences from the authors' code, who made the record, and each stage's
    command (once) and session."""
    p = record["provenance"]
    return [document.FOOTER, "", *differences.block("value_loss"),
            f"Generated by `{p['command']}` at commit `{p['commit']}`{_dirty(p)} on {p['machine']} (jax {p['jax']}), "
            f"{p['date']}; {p['wall_s']:.0f} s. Do not edit by hand."
            + (f" {document.rendered_words(record['rendered'])}".rstrip() if record.get("rendered") else ""), "",
            "Measured in stages:", "", *_stages(record), ""]


def rerender(report: Path) -> Path:
    """The report again from value_loss.json beside it, which gains the manifest's `rendered` facts
    (`purerl results --render`); a regeneration (`report.analyze`) writes a record without them, and the manifest
    has none until the next render, so that the report again is the regeneration's own."""
    report = Path(report)
    data = report.with_suffix(".json")
    record = files.read_json(data, "a value-loss record")
    record.pop("rendered", None)
    rendered = provenance.read_manifest(report.parent)[report.name].get("rendered")
    if rendered:
        record["rendered"] = rendered
    files.write_atomic(data, json.dumps(record, indent=2))
    files.write_atomic(report, render(record, report.stem))
    return report


def _dirty(facts: dict) -> str:
    return " (with uncommitted changes)" if facts.get("uncommitted_changes") else ""
