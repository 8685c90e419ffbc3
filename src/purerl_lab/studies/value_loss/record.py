"""The value-loss study's JSON record (docs/results/value_loss.json): what `markdown` renders, built from the
held-out stages measured now and those an earlier run of the same evolutions left in it.

Names: the first loss form present (scaled before mlp) is the primary, its learned loss `learned` and its runs
`es_seedS`, so a record of the scaled form alone reads as it always did; another form's are `learned_FORM` and
`FORM_es_seedS`. Keys a newer analysis adds (`forms`, `loss_shapes`, `tuned_l2`, `paired`, `critic_paired`) are
absent from older records, and `markdown` renders their sections (and the critic's comparison) only when present.
"""

from __future__ import annotations

from pathlib import Path

from purerl import stats
from purerl.run import files
from purerl_lab.studies import value_loss
from purerl_lab.studies.value_loss import published

SELECTION_WINDOW = 10  # generations whose mean fitness picks the ES seed
STAGES = published.STAGES  # each stage is one part of the published document
TUNING = "tuning"  # the tuned-L2 grid: a stage every part compares with, so not a part of its own
TUNING_5X = "tuning_5x"  # the same grid at 5x the budget, for the 5x stages' `tuned_l2_5x` (`TUNE_RUNS_5X` runs each)
TUNE_RUNS_5X = 16
ALL_STAGES = (*STAGES, TUNING, TUNING_5X)
MAIN = ("learned", "l2", "clipped_l2")
COMPARED = ("l2", "clipped_l2", "tuned_l2", "tuned_l2_5x")  # the baselines each learned loss is paired with


def learned_name(form: str, primary: str) -> str:
    return "learned" if form == primary else f"learned_{form}"


def run_name(form: str, primary: str, seed: int) -> str:
    return f"es_seed{seed}" if form == primary else f"{form}_es_seed{seed}"


def selections(record: dict) -> dict[str, str]:
    """The ES run each form's learned loss came from ({form: run name}); a record without `forms` is of the
    scaled form alone."""
    if record.get("forms"):
        return {form: entry["selected"] for form, entry in record["forms"].items()}
    return {value_loss.DEFAULT_FORM: record.get("evolution", {}).get("selected")}


def previous_stages(report: Path, selected: dict[str, str], stages: tuple[str, ...]) -> tuple[dict, dict | None, dict]:
    """Held-out settings and critic dynamics already in `report`'s JSON for the same learned losses, minus the
    stages to measure again, and its L2 tuning (whether or not it is measured again: `same_tuned_l2` decides
    what may stay beside a new one), and its tuning at 5x the budget: so stages can be measured apart (on
    different machines), each with its own provenance."""
    path = report.with_suffix(".json")
    if not path.is_file():
        return {}, None, {}
    record = files.read_json(path, "a value-loss record")
    if selections(record) != selected:
        return {}, None, {}
    held = {k: v for k, v in record.get("all_candidates", {}).items() if k not in stages}
    dynamics = None if "critic" in stages else record.get("critic_dynamics")
    for stage in [rows["config"] for rows in held.values()] + ([dynamics] if dynamics else []):
        stage.setdefault("measured", record.get("provenance"))  # a record from one run: its own provenance
    return held, dynamics, {"tuned_l2": record.get("tuned_l2"), "tuned_l2_5x": record.get("tuned_l2_5x")}


TUNING_DESIGN = ("grid", "runs", "es_seeds", "total_timesteps")  # what a tuning trains: the keys come from the ES seeds


def _design_of(tuned: dict) -> list:
    """A recorded tuning's design: the grid it was asked for (`start_grid`; an older record's grid was never
    extended), its runs, keys and budget."""
    return [tuned.get("start_grid", tuned.get("grid")), *(tuned.get(key) for key in TUNING_DESIGN[1:])]


def kept_tuning(previous: dict | None, design: dict | None, stages: tuple[str, ...], stage: str = TUNING) -> dict | None:
    """The recorded tuning where this run tunes the same `design` (`TUNING_DESIGN`) and does not measure its `stage`
    again (a full regeneration does: the choice is a measurement of the code that makes it, like every stage)."""
    if previous is None or design is None or stage in stages:
        return None
    return previous if _design_of(previous) == [design[key] for key in TUNING_DESIGN] else None


def same_tuned_l2(a: dict | None, b: dict | None) -> bool:
    """Whether two tunings give the same `tuned_l2` baseline (the same design and coefficient chosen), so stages
    measured beside one can stand beside the other; no tuning on either side is the same only as none."""
    def baseline(tuned):
        return tuned and [*_design_of(tuned), tuned.get("vf_coef")]

    return baseline(a) == baseline(b)


def paired(held: dict, learned: list[str]) -> dict:
    """Per setting, each learned loss minus each baseline, and minus its own scale-only ablation (`scale_only`), on
    the same held-out seeds (`stats.paired_difference` of the per-seed fitness)."""
    out = {}
    for setting, rows in held.items():
        out[setting] = {}
        for name in (n for n in learned if n in rows):
            others = {baseline: baseline for baseline in COMPARED} | {"scale_only": f"{name}_scale_only"}
            out[setting][name] = {key: stats.paired_difference(rows[name]["auc_per_seed"], rows[other]["auc_per_seed"])
                                  for key, other in others.items() if other in rows}
    return out


def critic_paired(dynamics: dict | None) -> dict | None:
    """The learned critic's final mean |v - t| minus L2's and clipped L2's on the same seeds
    (`stats.paired_difference`: a 95% bootstrap CI of the mean difference, a verdict only where it excludes 0;
    > 0 is a looser fit). None without per-seed errors (a record made before they were kept)."""
    final = {name: (dynamics or {}).get(name, {}).get("probes", [{}])[-1].get("abs_error_per_seed") for name in MAIN}
    if any(values is None for values in final.values()):
        return None
    return {baseline: stats.paired_difference(final["learned"], final[baseline]) for baseline in MAIN[1:]}


def build_record(held: dict, summaries: dict, selected: str, shape: dict | None, dynamics: dict, preset: str,
                 evolve_config: dict, forms: dict | None = None, loss_shapes: dict | None = None,
                 tuned: dict | None = None, tuned_5x: dict | None = None) -> dict:
    """The JSON document: `held_out` maps learned / l2 / clipped_l2 to summaries of the fitness metric at
    the training budget, and each transfer setting to the same; `forms` gives each form's evolutions and
    learned loss, `loss_shapes` each learned loss's and L2's `shape.loss_numbers`, `tuned_l2` the tuning
    (`tuning.tune`), `tuned_l2_5x` the same at 5x the budget, and `paired` every learned loss's paired differences
    from the baselines."""

    def table(setting):
        rows = {name: held[setting][name]["auc"] for name in MAIN}
        rows["verdict_vs_l2"] = stats.iqm_verdict(rows["learned"], rows["l2"])
        rows["verdict_vs_clipped_l2"] = stats.iqm_verdict(rows["learned"], rows["clipped_l2"])
        rows["config"] = held[setting]["config"]
        return rows

    held_out = table("training_budget") if "training_budget" in held else {}
    held_out |= {setting: table(setting) for setting in held if setting != "training_budget"}
    missing = [stage for stage in STAGES if stage not in held and (stage != "critic" or dynamics is None)]
    record = {
        "fitness_metric": "per seed: mean episode return over all updates of training (the evolution's fitness, "
                          "'auc'); summaries are mean, IQM and a 95% percentile-bootstrap CI of the IQM over seeds",
        "preset": preset,
        "evolution": {"selected": selected, "selection": f"highest population-mean fitness over the last "
                      f"{SELECTION_WINDOW} generations", "task": evolve_config["task_info"], "es_seeds": summaries},
        "held_out": held_out,
        "all_candidates": held,
        "shape": shape,
        "critic_dynamics": dynamics,
        "critic_paired": critic_paired(dynamics),
        "not_measured": missing,
    }
    if forms is not None:
        learned = [entry["learned"] for entry in forms.values()]
        record |= {"forms": forms, "loss_shapes": loss_shapes, "tuned_l2": tuned, "paired": paired(held, learned)}
        if tuned_5x:
            record["tuned_l2_5x"] = tuned_5x
    return record
