"""docs/results/pbt.md from every task's record beside it: the header (`publish.document`), a table per task, the
verdicts (only where 95% CIs separate) and the learning curves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from purerl import stats
from purerl_lab.publish import document
from purerl.run import files, results
from purerl.run.files import slug
from purerl_lab.studies.pbt.design import METHODS, verdict

TITLE = "Population-based training against random search and the preset's hyperparameters"


def plot(folder: Path, env: str, curves: dict[str, np.ndarray], steps_per_update: int) -> Path:
    """`ENV.png`: per method, the IQM over repetitions of each repetition's population-mean training return."""
    return results.plot_labelled_curves(folder, {METHODS[m]: c for m, c in curves.items()}, steps_per_update,
                                        f"{env}: population mean training return per repetition",
                                        f"{slug(env)}.png")


def write(record: dict, folder: Path) -> None:
    files.write_atomic(Path(folder) / f"{slug(record['env'])}.json", json.dumps(record, indent=2) + "\n")


def write_report(report: Path) -> Path:
    """The markdown of every task recorded in REPORT's stem folder (generated; never edit by hand)."""
    report = Path(report)
    folder = report.parent / report.stem
    records = [files.read_json(p, "a PBT study record") for p in sorted(folder.glob("*.json"))]
    lines = [f"# {TITLE}", "", *document.header(report, "pbt"), *_design(records), ""]
    for r in records:
        lines += _task(r, folder.name)
    report.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(report, "\n".join(lines) + "\n")
    return report


def _design(records: list[dict]) -> list[str]:
    return [
        "Design. Three ways of choosing PPO's hyperparameters, at equal env steps per member and "
        "equal population size: **PBT** (`purerl train --pbt`: exploit and explore within the population), "
        "**random search** over the same ranges (`--pbt-fraction 0`: each member's values drawn once from the same "
        "priors and kept; on the same seeds its first draws are PBT's), and the **preset defaults** for every member. "
        "Each method runs R independent repetitions, each a population of N members on seeds no other repetition "
        "uses (PBT's rounds act within a repetition only). Each repetition keeps its best member by final training "
        f"return (the mean over the last {results.FINAL_WINDOW} updates, the rule PBT ranks on), evaluated greedily "
        "(the policy's mean or argmax) on fresh episodes, the same episodes for every method in a repetition. A cell "
        "is the IQM over repetitions of that evaluated return with its 95% percentile-bootstrap CI (per-repetition "
        f"values below {stats.MIN_SEEDS_FOR_CI} repetitions); a verdict is stated only where the CIs separate.",
        "",
        "Deliberate differences from Jaderberg et al. (2017): the perturbation factors are 1.2 and 1/1.2 (not 0.8 "
        "and 1.2), members are ranked on training returns rather than a separate evaluation, and the budgets are "
        "CPU-sized (far below the paper's); docs/pbt.md states the rest.",
    ]


def _task(r: dict, folder: str) -> list[str]:
    methods = r["methods"]
    pbt = r["pbt"]
    explore = ", ".join(f"{name}={low:g}:{high:g}" for name, low, high in pbt["explore"])
    defaults = ", ".join(f"{name}={r['defaults'][name]:g}" for name, _, _ in pbt["explore"])
    lines = [f"## {r['env']}", "",
             f"PPO, preset `{r['preset']}`; {r['repetitions']} repetitions x {r['members']} members x "
             f"{r['env_steps_per_member']:,} env steps ({r['num_updates']} updates) per method; explored {explore} "
             f"(the defaults: {defaults}); PBT every {pbt['interval']} updates, fraction {pbt['fraction']:g}, "
             f"perturb {pbt['perturb']:g}, resample {pbt['resample']:g}; {r['episodes']} greedy evaluation episodes "
             "per selected member.", "",
             "| method | evaluated return of the selected member, IQM [95% CI] | its final training return | "
             "mean evaluated |", "|---|---|---|---|"]
    for s in methods.values():
        lines.append(f"| {s['label']} | {stats.describe(s['evaluated_return'])} | "
                     f"{stats.describe(s['selected_final_training_return'])} | {s['evaluated_return']['mean']:.1f} |")
    pairs = [("pbt", "random"), ("pbt", "default"), ("random", "default")]
    said = [verdict(methods[a]["evaluated_return"], methods[b]["evaluated_return"], methods[a]["label"],
                    methods[b]["label"]) for a, b in pairs if a in methods and b in methods]
    lines += ["", *[f"- {line}." for line in said], "",
              f"![{r['env']}]({folder}/{slug(r['env'])}.png)", ""]
    return lines
