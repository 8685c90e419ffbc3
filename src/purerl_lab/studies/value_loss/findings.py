"""The value-loss document's sections for what a newer analysis records: each loss form's evolution, the tuned-L2
baseline, paired differences on the held-out seeds, the verdict against tuned L2 and the loss-shape numbers.

Each returns no lines for a record without the data (an older record renders exactly as it did), and every
sentence with a number is generated from the record.
"""

from __future__ import annotations

from purerl import stats
from purerl.meta import evolve_files
from purerl_lab.publish import document, replication
from purerl_lab.studies.value_loss import replicated, tuning

# The walkthrough's evolution (luchris429/purejaxrl examples/walkthrough.ipynb): population 128 x 512 generations x
# 2 runs of 5e5 env steps; each report's own budget is compared with it, from the report's inputs
WALKTHROUGH_ENV_STEPS = 128 * 512 * 2 * 500_000

SHAPE_COLUMNS = ("slope at v = t, left / right (L2: 0)", "curvature at v = t (L2: 1)", "as L2 near v = t at vf_coef",
                 "minimum at v - t", "over/under-estimation ratio at 10 / 30", "share of errors with negative curvature",
                 "distance from L2 after dividing by the curvature (any scaled L2: 0)")


def _number(value, digits: int = 2, sign: bool = False) -> str:
    return "-" if value is None else f"{value:{'+' if sign else ''}.{digits}f}"


def _interval(d: dict, bold: bool = False) -> str:
    text = stats.describe_paired(d)
    return f"**{text}**" if bold else text


def judge(record: dict, setting: str, name: str, other: str, rows: dict) -> str:
    """`name` against `other` (a row of `rows`, or `scale_only`) by both tests on the same seeds (`stats.both_tests`)."""
    by_iqm = stats.iqm_verdict(rows[name]["auc"], rows[replicated.row_of(name, other)]["auc"])
    return stats.both_tests(by_iqm, paired_of(record, setting, name, other))


def paired_of(record: dict, setting: str, name: str, other: str) -> dict | None:
    return (record.get("paired") or {}).get(setting, {}).get(name, {}).get(other)


def paired_words(record: dict, setting: str, name: str, other: str) -> str:
    difference = paired_of(record, setting, name, other)
    return f"; paired mean {stats.describe_paired(difference)}" if difference else ""


def _both(record: dict, name: str, other: str) -> str:
    """`name` against `other` at the training budget in both tests' words, with both tests' numbers."""
    rows = record["all_candidates"]["training_budget"]
    row = replicated.row_of(name, other)
    return (f"{judge(record, 'training_budget', name, other, rows)} (IQM {stats.describe(rows[name]['auc'])} vs "
            f"{stats.describe(rows[row]['auc'])}{paired_words(record, 'training_budget', name, other)})")


def evolution_lines(record: dict, artefacts: str) -> list[str]:
    """The evolution, loss and selection bullets: once for a record of the scaled form alone, else per form;
    and the tuned-L2 baseline's."""
    if not record.get("forms"):
        evo = record["evolution"]
        return _evolution(record, evo["task"], evo["es_seeds"], evo["selected"], "learned", "", artefacts)
    lines = []
    for form, entry in record["forms"].items():
        lines += _evolution(record, entry["task"], entry["es_seeds"], entry["selected"], entry["learned"], form,
                            artefacts)
    tuned = record.get("tuned_l2")
    if tuned:
        lines.append(
            f"- **Tuned L2** (`tuned_l2`): L2 at the value coefficient with the highest mean fitness over "
            f"{tuned['runs']} training runs of {tuned['total_timesteps']:,} env steps on the keys the evolutions' "
            f"fitness trained on (ES seeds {', '.join(map(str, tuned['es_seeds']))}, generation by generation; no "
            f"held-out seed), chosen before any held-out run from vf_coef = "
            f"{', '.join(f'{c:g}' for c in tuned['grid'])}"
            f"{_extended(tuned)}: **{tuned['vf_coef']:g}**{_edge(tuned)} (PPO's default is 0.5). Mean fitness per "
            "coefficient: "
            + ", ".join(f"{c:g}: {m:.1f}" for c, m in zip(tuned["grid"], tuned["mean_fitness"])) + ".")
    again = record.get("tuned_l2_5x")
    if again:
        lines.append(
            f"- **L2 tuned at 5x the budget** (`tuned_l2_5x`, the 5x stages' baseline): the same grid on the first "
            f"{again['runs']} of those keys at {again['total_timesteps']:,} env steps{_extended(again)}: "
            f"**{again['vf_coef']:g}**{_edge(again)}. Mean fitness per coefficient: "
            + ", ".join(f"{c:g}: {m:.1f}" for c, m in zip(again["grid"], again["mean_fitness"])) + ".")
    return lines


def _extended(tuned: dict) -> str:
    """How far a tuning's grid grew past the one asked for, where its best lay at an edge ('' where it did not)."""
    added = [c for c in tuned["grid"] if c not in tuned.get("start_grid", tuned["grid"])]
    return (f", extended past its edge, where the best lay, to {', '.join(f'{c:g}' for c in added)} (a factor 2 at "
            f"a time, until the best lies inside or {tuning.EXTEND} were added)" if added else "")


def _edge(tuned: dict) -> str:
    edge = replicated.grid_edge(tuned)
    beyond = {"smallest": "smaller", "largest": "larger"}.get(edge)
    return f" (the {edge} tried: a {beyond} one might do better still)" if edge else ""


def _evolution(record: dict, task: dict, seeds: dict, selected: str, name: str, form: str, artefacts: str) -> list[str]:
    es = next(iter(seeds.values()))["es"]
    inner = task["total_timesteps"] * es["population_size"] * es["rollouts"] * es["generations"]
    label = f", {form} form" if form else ""
    flag = f" --loss-form {form}" if form and form != "scaled" else ""
    runs = "es_seed*" if name == "learned" else f"{form}_es_seed*"
    return [
        f"- **Evolution{label}** (preset `{record['preset']}`, `purerl evolve value-loss{flag} --seed S`, S = "
        f"{', '.join(str(s['es']['seed']) for s in seeds.values())}): {es['strategy']} population {es['population_size']} "
        f"x {es['rollouts']} rollouts x {es['generations']} generations, std {es['std']:g}, Adam lr {es['lr']:g}, "
        f"{es['fitness_shaping']} shaping; each inner run is PPO on {task['env']}, {task['num_envs']} envs x "
        f"{task['num_steps']} steps, {task['total_timesteps']:,} env steps; {inner:.2e} env steps per ES seed, "
        f"1/{WALKTHROUGH_ENV_STEPS / inner:,.0f} of the walkthrough's {WALKTHROUGH_ENV_STEPS:.1e}. "
        "Generation times (s, summed): " + ", ".join(f"{run} {s['seconds']:.0f}" for run, s in seeds.items()) + ". "
        "Made by: " + "; ".join(f"{run}: {_made_by(s)}" for run, s in seeds.items()) + ".",
        f"- **Loss{label}**: {task['value_loss']}.",
        (f"- **Learned** = the ES mean of `{selected}`" if not form else f"- **`{name}`** = the ES mean of `{selected}`")
        + f" ({record['evolution']['selection']}); the other ES seeds' means are "
        f"evaluated too. Meta-parameters: `{artefacts}/{name}_meta_params.msgpack` and `{artefacts}/{runs}/`.",
    ]


def _made_by(summary: dict) -> str:
    """Each session of one evolution (its provenance.json), or that it has none: an evolution made before
    `purerl evolve` recorded its sessions cannot say which commit and machine made it."""
    return (evolve_files.made_by(document.portable_sessions(summary.get("made_by", [])))
            or "no provenance.json (made before `purerl evolve` recorded its sessions: commit and machine unknown)")


def paired_table(record: dict, titles: dict[str, str]) -> list[str]:
    """Each learned loss minus each baseline (and minus its own scale-only ablation) on the same seeds."""
    paired = record.get("paired")
    if not paired:
        return []
    columns = []
    for rows in paired.values():
        columns += [(name, other) for name, others in rows.items() for other in others if (name, other) not in columns]
    verdicts = {c.key: c for c in replicated.comparisons(record)}
    lines = ["## Paired differences (learned minus baseline on the same held-out seeds: mean of the per-seed "
             "differences in mean return over training [95% CI])", "",
             "| setting | n | " + " | ".join(f"`{name} - {replicated.row_of(name, other)}`" for name, other in columns) + " |",
             "|---" * (len(columns) + 2) + "|"]
    for setting, rows in paired.items():
        n = next((d["n"] for others in rows.values() for d in others.values()), 0)
        lines.append(f"| {titles.get(setting, setting)} | {n} | " + " | ".join(
            _interval(rows[name][other], replication.bold(verdicts[(setting, name, other)])
                      if (setting, name, other) in verdicts else False)
            if other in rows.get(name, {}) else "-" for name, other in columns) + " |")
    return lines + ["", "Bold: a verdict that replicates (above 0: the learned loss is better; below: worse), by the rule "
                        "under the summary table: its study seeds' test passes, Holm-corrected, and its row on fresh "
                        "seeds gives the same. Anywhere else the difference is not a verdict.", ""]


def against_tuned(record: dict) -> list[str]:
    """Does any learned loss beat L2 with its value coefficient tuned beforehand, at the training budget; and what
    each learned loss is, in the numbers that separate scale from shape."""
    tuned, paired = record.get("tuned_l2"), (record.get("paired") or {}).get("training_budget", {})
    rows = {name: d["tuned_l2"] for name, d in paired.items() if "tuned_l2" in d}
    if not tuned or not rows:
        return []
    family = {c.key: c for c in replicated.comparisons(record)}  # the family once, not once per learned loss
    verdicts = {name: family.get(("training_budget", name, "tuned_l2")) for name in rows}
    held = [f"`{name}`" for name, c in verdicts.items() if c and c.verdict == "better"]
    n = next(iter(rows.values()))["n"]
    judged = "; ".join(f"`{name}` {_both(record, name, 'tuned_l2')}" + _replicated_words(verdicts[name])
                       for name in rows)
    waiting = [f"`{name}`" for name, c in verdicts.items() if c and c.verdict == "replication pending"]
    baseline = (f"L2 with a tuned value coefficient (vf_coef {tuned['vf_coef']:g}, chosen on the evolutions' training "
                "runs)")
    text = [(f"**Yes: {', '.join(held)} {'beats' if len(held) == 1 else 'beat'} {baseline}, on the study's seeds and "
             "on fresh ones**" if held else
             f"On the study's seeds {', '.join(waiting)} {'beats' if len(waiting) == 1 else 'beat'} {baseline} (the "
             "replication on fresh seeds has not run)" if waiting else
             f"No learned loss beats {baseline} on both seed sets")
            + f", on {n} held-out seeds at the training budget, each learned loss against tuned L2: {judged}."]
    for form, entry in record["forms"].items():
        name, shape = entry["learned"], entry["loss_shape"]["summary"]
        scale_only = paired[name].get("scale_only") if name in paired else None
        text.append(
            f"What the search learned in `{name}` ({form} form): near v = t it pulls the critic as L2 at vf_coef "
            f"{_number(shape['effective_vf_coef'], 3)} would (tuned L2: {tuned['vf_coef']:g}); its slope at v = t is "
            f"{_number(shape['slope_left'], sign=True)} from the left and {_number(shape['slope_right'], sign=True)} from "
            f"the right (L2: 0), its minimum lies at v - t = {_number(shape['minimum_at'], 1, sign=True)}, "
            f"{100 * shape['negative_curvature_share']:.0f}% of errors in [-30, 30] have negative curvature, and divided "
            f"by its own curvature at v = t it is {_number(shape['shape_distance'])} away from L2 (0 for any scaled L2)."
            + ("" if scale_only is None else
               f" The whole loss against its scale alone (`{name}_scale_only`, L2 at its curvature at v = t): "
               + _both(record, name, "scale_only") + f": {shape_words(family, name, scale_only['verdict'])}."))
    return [" ".join(text), ""]


def shape_words(family: dict, name: str, verdict: str) -> str:
    """What `name`'s shape adds to its scale alone at the training budget, in words: as the document's family
    (`replicated.comparisons` by key) judges it, Holm-corrected, then replicated on fresh seeds, where it has it, else
    by `verdict`, its paired test alone (an older record's)."""
    judged = family.get(("training_budget", name, "scale_only"))
    if judged is not None:
        if replication.bold(judged):
            verdict = judged.verdict
        else:
            size = sum(not c.primary for c in family.values())
            study = ("its paired CI is clear of 0 uncorrected, but" if judged.study["verdict"] != "not distinguishable"
                     else "its paired CI includes 0;")
            fresh = (f"; fresh seeds: {stats.describe_paired(judged.fresh)}" if judged.fresh is not None
                     else "; its fresh seeds have not run")
            return (f"the shape's own contribution is {judged.verdict} ({study} Holm p {judged.adjusted_p:.3g} over "
                    f"the family's {size}{fresh})")
    return {"better": "the shape adds to the scale", "worse": "the shape costs return"}.get(
        verdict, "the shape's own contribution is not resolved")


def _replicated_words(comparison) -> str:
    """What the fresh seeds said of a comparison, in a clause."""
    if comparison is None or comparison.fresh is None:
        return ""
    return f"; on fresh seeds {stats.describe_paired(comparison.fresh)}, so {comparison.verdict}"


def es_seed_shapes(record: dict) -> str:
    """Each ES seed's evolved loss in two numbers, its asymmetry and its scale: whether a shape is the search's or
    one seed's ('' where the record has only the selected seed's)."""
    shapes = record.get("loss_shapes") or {}
    runs = [(entry["learned"], entry["selected"], form, entry["es_seeds"]) for form, entry in
            (record.get("forms") or {}).items()]
    parts = []
    for learned, selected, form, seeds in runs:
        names = [(run, learned if run == selected else run) for run in seeds]
        if not all(key in shapes for _, key in names):
            return ""
        parts.append(f"{form} form: " + "; ".join(
            f"{run} over/under {_number(shapes[key]['summary']['over_under_ratio'].get('10'))} at 10 and "
            f"{_number(shapes[key]['summary']['over_under_ratio'].get('30'))} at 30, as L2 at vf_coef "
            f"{_number(shapes[key]['summary']['effective_vf_coef'], 3)}" for run, key in names))
    return ("Each ES seed's evolved loss (its mean), asymmetry and scale: " + ". ".join(parts) + "." if parts else "")


def shape_tables(record: dict) -> list[str]:
    """The loss-shape numbers of L2, tuned L2 and each learned loss (means over the probe targets), and each one
    divided by its curvature at v = t, relative to L2, at a few errors."""
    shapes = record.get("loss_shapes")
    if not shapes:
        return []
    order = [n for n in ("l2", "tuned_l2") if n in shapes] + [n for n in shapes if n not in ("l2", "tuned_l2")]
    lines = ["| loss | " + " | ".join(SHAPE_COLUMNS) + " |", "|---" * (len(SHAPE_COLUMNS) + 1) + "|"]
    for name in order:
        s = shapes[name]["summary"]
        cells = [f"{_number(s['slope_left'], sign=True)} / {_number(s['slope_right'], sign=True)}",
                 _number(s["curvature_at_zero"]), _number(s["effective_vf_coef"], 3), _number(s["minimum_at"], 1, sign=True),
                 f"{_number(s['over_under_ratio'].get('10'))} / {_number(s['over_under_ratio'].get('30'))}",
                 _number(s["negative_curvature_share"]), _number(s["shape_distance"])]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    sizes = list(next(iter(shapes.values()))["summary"]["normalised"])
    normalised = ["| loss | " + " | ".join(f"v - t = {m}" for m in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for name in order:
        values = shapes[name]["summary"]["normalised"]
        normalised.append(f"| `{name}` | " + " | ".join(_number(values[m]) for m in sizes) + " |")
    targets = ", ".join(f"{t:g}" for t in next(iter(shapes.values()))["targets"])
    return (["Loss shape (`loss_shapes` in value_loss.json, per target there; here means over targets t = "
             f"{targets}, ratios geometric, the largest share):", "", *lines, "",
             "Each loss minus its value at v = t, divided by its curvature there and by L2 (1 wherever it is a scaled "
             "L2; '-' where the curvature is not positive):", "", *normalised, ""])
