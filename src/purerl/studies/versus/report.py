"""docs/results/offpolicy.md from every env's record beside it: the header (`publish.document`), each algorithm's
settings, its return at shared env-step marks (a verdict only where 95% CIs separate) and the curves against env
steps (`run.side_by_side`, as `purerl plot` draws runs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from purerl import stats
from purerl.algos import registry
from purerl.publish import document
from purerl.run import files, results, side_by_side
from purerl.run.files import slug
from purerl.studies.versus.design import MARKS, Design, at_marks, verdict

TITLE = "Off-policy beside on-policy: algorithms at the same env steps"
_NOT_SETTINGS = ("env", "total_timesteps", "cpu_group")  # the budget is stated apart; cpu_group changes rounding only


def record(design: Design, curves: dict[str, np.ndarray], summaries: dict[str, dict], runs: dict[str, Path]) -> dict:
    """The env's record: what each algorithm ran, how fast, and its returns at the marks."""
    algorithms = {}
    for (algo, spec), marks in zip(design.specs.items(), at_marks(design, curves).values()):
        cfg, recorded = spec.config, spec.to_json()
        gradient_steps, samples = work_per_env_step(cfg)
        algorithms[algo] = {
            "title": registry.get(algo).title, "preset": spec.preset,
            "preset_description": registry.get(algo).presets[spec.preset].description,
            "config": {k: v for k, v in recorded["config"].items() if k not in _NOT_SETTINGS},
            "hyperparams": recorded["hyperparams"], "env_steps_per_update": cfg.batch_size,
            "num_updates": cfg.num_updates, "gradient_steps_per_env_step": gradient_steps,
            "samples_per_env_step": samples, "env_steps_per_s": summaries[algo].get("env_steps_per_s"),
            "run_dir": str(runs[algo]), "marks": marks}
    return {"env": design.env, "seeds": design.seeds, "env_steps_per_run": design.env_steps_per_run,
            "window_env_steps": design.window, "marks": design.marks, "algorithms": algorithms}


def work_per_env_step(config) -> tuple[float | None, float | None]:
    """Gradient steps, and transitions drawn into them, per env step: how hard an algorithm works its data. PPO
    takes epochs x minibatches steps per update and uses each transition once an epoch; SAC and TD3 take
    `gradient_steps` steps of `buffer_batch_size` per vectorised step of `num_envs` env steps (once learning starts)."""
    if hasattr(config, "gradient_steps"):
        per_env = config.gradient_steps / config.num_envs
        return per_env, per_env * config.buffer_batch_size
    if hasattr(config, "update_epochs") and hasattr(config, "num_minibatches"):
        return config.update_epochs * config.num_minibatches / config.batch_size, float(config.update_epochs)
    return None, None


def plot(folder: Path, runs: list[Path], env: str) -> Path:
    """`ENV.png`: every algorithm's curve against env steps (IQM over seeds; a 95% band from 10 seeds, else every
    seed)."""
    return side_by_side.plot([side_by_side.load(run) for run in runs], Path(folder) / f"{slug(env)}.png",
                             title="episode return against env steps, each algorithm at its own preset")


def write(record_: dict, folder: Path) -> None:
    files.write_atomic(Path(folder) / f"{slug(record_['env'])}.json",
                       json.dumps(results.json_safe(record_), indent=2) + "\n")


def write_report(report: Path) -> Path:
    """The markdown of every env recorded in REPORT's stem folder (generated; never edit by hand)."""
    report = Path(report)
    folder = report.parent / report.stem
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    lines = [f"# {TITLE}", "", *document.header(report, "offpolicy"), *_design(), ""]
    for r in records:
        lines += _env(r, folder.name)
    report.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(report, "\n".join(lines) + "\n")
    return report


def cell(mark: dict) -> str:
    """A mark's statistic in words (`stats.describe`), saying how many seeds had no ended episode by then."""
    if mark["return"] is None:
        return "no episode ended"
    return stats.describe(mark["return"]) + (f"; {mark['missing']} seed(s) without an ended episode"
                                             if mark["missing"] else "")


def final_lines(record_: dict) -> list[str]:
    return [f"{record_['env']} {algo:4s} final return {cell(a['marks'][-1])}"
            for algo, a in record_["algorithms"].items()]


def _design() -> list[str]:
    return [
        "Design (issue 54). Each algorithm trains at its own registered preset for the env's family, as `purerl train "
        "--algo ALGO --env ENV` chooses it, with only the budget given: the same seeds and the same env steps per "
        "run. Its curve is the episode return per update (the mean over the episodes that ended in the update) "
        "against env steps. The updates differ in size, so the curves are read at the same env steps, at "
        f"{', '.join(f'{m:.0%}' for m in MARKS)} of the budget: a cell is each seed's mean return over the updates "
        "that end in the window of W env steps before the mark, one W for every algorithm (the last "
        f"{results.FINAL_WINDOW} updates of the algorithm with the largest updates, so at 100% it is that "
        "algorithm's own final return and the others average more, smaller updates), given as the IQM over seeds "
        f"with its 95% percentile-bootstrap CI from {stats.MIN_SEEDS_FOR_CI} seeds, otherwise every per-seed value "
        "and n. A verdict is stated only where two CIs separate.",
    ]


def _settings(a: dict) -> str:
    config = ", ".join(f"{k}={_short(v)}" for k, v in a["config"].items())
    hp = ", ".join(f"{k}={v:g}" for k, v in a["hyperparams"].items())
    return f"- **{a['title']}**, preset `{a['preset']}` ({a['preset_description']}): {config}; {hp}."


def _env(r: dict, folder: str) -> list[str]:
    algorithms = r["algorithms"]
    lines = [f"## {r['env']}", "",
             f"{len(r['seeds'])} seeds per algorithm, {r['env_steps_per_run']:,} env steps per run; window W = "
             f"{r['window_env_steps']:,} env steps.", "",
             "| algorithm | env steps per update | updates | gradient steps per env step | transitions drawn per env "
             "step | env steps/s (all seeds, this machine) |", "|---|---|---|---|---|---|"]
    for a in algorithms.values():
        speed = f"{a['env_steps_per_s']:,.0f}" if a.get("env_steps_per_s") else "-"
        lines.append(f"| {a['title']} | {a['env_steps_per_update']:,} | {a['num_updates']:,} | "
                     f"{_number(a['gradient_steps_per_env_step'])} | {_number(a['samples_per_env_step'])} | {speed} |")
    lines += ["", *(_settings(a) for a in algorithms.values()), "",
              "| algorithm | " + " | ".join(f"{m:,} env steps ({f:.0%})" for m, f in zip(r["marks"], MARKS)) + " |",
              "|---|" + "---|" * len(r["marks"])]
    for a in algorithms.values():
        lines.append(f"| {a['title']} | " + " | ".join(cell(m) for m in a["marks"]) + " |")
    reference, *others = algorithms.values()
    lines += [""]
    for a in others:
        for i, (mark, fraction) in enumerate(zip(r["marks"], MARKS)):
            said = verdict(a["marks"][i]["return"], reference["marks"][i]["return"], a["title"], reference["title"])
            lines.append(f"- {a['title']} against {reference['title']} at {mark:,} env steps ({fraction:.0%}): {said}.")
    lines += ["", f"![{r['env']}]({folder}/{slug(r['env'])}.png)", ""]
    return lines


def _number(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def _short(value) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)
