"""docs/results/pbt.md from every task's record beside it: the summary first (the methods compared in pairs, on the
study's seeds and on fresh ones, `publish.replication`), the design, a table per task and seed set, the learning
curves, then the provenance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from purerl import stats
from purerl_lab.publish import document, replication
from purerl.run import files, results
from purerl.run.files import slug
from purerl_lab.studies.pbt.design import METHODS

TITLE = "Population-based training against random search and the preset's hyperparameters"
PAIRS = (("pbt", "default"), ("pbt", "random"), ("random", "default"))
# The question the document's headline answers, named before any fresh seed ran: does PBT beat the preset's values
# on Acrobot-v1 (the task at its preset's own budget)?
PRIMARY = ("Acrobot-v1", "pbt", "default")


def title(part: str) -> str:
    return f"{part.removeprefix('fresh_')}, fresh seeds" if part.startswith("fresh_") else part


def plot(folder: Path, part: str, curves: dict[str, np.ndarray], steps_per_update: int) -> Path:
    """`PART.png`: per method, the IQM over repetitions of each repetition's population-mean training return."""
    return results.plot_labelled_curves(folder, {METHODS[m]: c for m, c in curves.items()}, steps_per_update,
                                        f"{title(part)}: population mean training return per repetition",
                                        f"{slug(part)}.png")


def write(record: dict, folder: Path, part: str) -> None:
    """`PART.json`: the record of one part (`design.Design.part`)."""
    files.write_atomic(Path(folder) / f"{slug(part)}.json", json.dumps(record, indent=2) + "\n")


def _evaluated(record: dict, method: str) -> np.ndarray:
    """The method's evaluated return per repetition, in repetition order (the pairing of every comparison)."""
    reps = sorted(record["methods"][method]["repetitions"], key=lambda r: r["repetition"])
    return np.array([r["evaluated_return"] for r in reps])


def comparisons(records: list[dict]) -> list[replication.Comparison]:
    """Every pair of methods per task, paired by repetition (the same seeds and evaluation episodes), on the
    study's seeds and, where its record exists, on fresh seeds; judged as one family (`replication.judge`)."""
    study = {r["env"]: r for r in records if not r.get("fresh_seeds")}
    fresh = {r["env"]: r for r in records if r.get("fresh_seeds")}
    found = []
    for env in sorted(study, key=lambda e: (e != PRIMARY[0], e)):
        for a, b in PAIRS:
            x, y = _evaluated(study[env], a), _evaluated(study[env], b)
            again = fresh.get(env)
            found.append(replication.Comparison.paired(
                (env, a, b), f"{METHODS[a]} against {METHODS[b]} on {env}?", x, y,
                fresh=stats.paired_difference(_evaluated(again, a), _evaluated(again, b)) if again else None,
                primary=(env, a, b) == PRIMARY))
    return replication.judge(found)


def headline(judged: list[replication.Comparison]) -> str:
    """The plain sentence under the summary table: the primary question's answer, then what else replicated."""
    question = (f"Does PBT beat the preset's hyperparameters on {PRIMARY[0]} (the question named in advance; the "
                "selected member's evaluated return, paired by repetition)?")
    return replication.headline(judged, question, {"better": "yes", "worse": "no, the preset's values do better"})


def write_report(report: Path) -> Path:
    """The markdown of every task recorded in REPORT's stem folder (generated; never edit by hand)."""
    report = Path(report)
    folder = report.parent / report.stem
    records = [files.read_json(p, "a PBT study record") for p in sorted(folder.glob("*.json"))]
    judged = comparisons(records)
    lines = [f"# {TITLE}", "", *document.notice(report, "pbt"),
             *replication.summary(judged, [c.key for c in judged], [headline(judged)]), *_design(), ""]
    fresh = {r["env"]: r for r in records if r.get("fresh_seeds")}
    for r in records:
        if not r.get("fresh_seeds"):
            lines += _task(r, fresh.get(r["env"]), folder.name)
    lines += ["## Provenance", "", *document.provenance_lines(report, "pbt")]
    report.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(report, "\n".join(lines) + "\n")
    return report


def _design() -> list[str]:
    return [
        "Design. Three ways of choosing PPO's hyperparameters, at equal env steps per member and "
        "equal population size: **PBT** (`purerl train --pbt`: exploit and explore within the population), "
        "**random search** over the same ranges (`--pbt-fraction 0`: each member's values drawn once from the same "
        "priors and kept; on the same seeds its first draws are PBT's), and the **preset defaults** for every member. "
        "Each method runs R independent repetitions, each a population of N members on seeds no other repetition "
        "uses (PBT's rounds act within a repetition only). Each repetition keeps its best member by final training "
        f"return (the mean over the last {results.FINAL_WINDOW} updates, the rule PBT ranks on), evaluated greedily "
        "(the policy's mean or argmax) on fresh episodes, the same episodes for every method in a repetition. A table "
        "cell is the IQM over repetitions of that evaluated return with its 95% percentile-bootstrap CI "
        f"(per-repetition values below {stats.MIN_SEEDS_FOR_CI} repetitions). The summary compares two methods "
        "paired by repetition (the same seeds and episodes): the mean over repetitions of the difference. The same "
        "command with `--fresh-seeds` runs the replication: every seed from PRNGKey(70000) on, with evaluation "
        "episodes of its own.",
        "",
        "Deliberate differences from Jaderberg et al. (2017): the perturbation factors are 1.2 and 1/1.2 (not 0.8 "
        "and 1.2), members are ranked on training returns rather than a separate evaluation, and the budgets are "
        "CPU-sized (far below the paper's); docs/pbt.md states the rest.",
    ]


def _task(r: dict, fresh: dict | None, folder: str) -> list[str]:
    pbt = r["pbt"]
    explore = ", ".join(f"{name}={low:g}:{high:g}" for name, low, high in pbt["explore"])
    defaults = ", ".join(f"{name}={r['defaults'][name]:g}" for name, _, _ in pbt["explore"])
    lines = [f"## {r['env']}", "",
             f"PPO, preset `{r['preset']}`; {r['repetitions']} repetitions x {r['members']} members x "
             f"{r['env_steps_per_member']:,} env steps ({r['num_updates']} updates) per method; explored {explore} "
             f"(the defaults: {defaults}); PBT every {pbt['interval']} updates, fraction {pbt['fraction']:g}, "
             f"perturb {pbt['perturb']:g}, resample {pbt['resample']:g}; {r['episodes']} greedy evaluation episodes "
             "per selected member.", ""]
    for record in (r, fresh):
        if record is None:
            continue
        seeds = record["seeds"]
        lines += [f"{'Fresh seeds' if record is fresh else 'Study seeds'} ({seeds[0]}-{seeds[-1]}):", "",
                  "| method | evaluated return of the selected member, IQM [95% CI] | its final training return | "
                  "mean evaluated |", "|---|---|---|---|"]
        for s in record["methods"].values():
            lines.append(f"| {s['label']} | {stats.describe(s['evaluated_return'])} | "
                         f"{stats.describe(s['selected_final_training_return'])} | "
                         f"{s['evaluated_return']['mean']:.1f} |")
        lines.append("")
    lines += [f"![{r['env']}]({folder}/{slug(r['env'])}.png)", ""]
    if fresh is not None:
        lines += [f"![{title('fresh_' + r['env'])}]({folder}/{slug('fresh_' + r['env'])}.png)", ""]
    return lines
