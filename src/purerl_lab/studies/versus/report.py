"""docs/results/offpolicy.md from every env's record beside it: the summary first (`summary`), each algorithm's
settings, its evaluated returns at shared env-step marks (a verdict only where 95% CIs separate), its training
return there (censoring marked) and a figure of both against env steps (`results.draw_panels`, as every curve of
purerl is drawn), then the differences from the authors' code and the provenance (`publish.document`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from purerl import stats
from purerl.algos import registry
from purerl_lab.publish import document
from purerl.run import files, results
from purerl.run.files import slug
from purerl_lab.studies.versus.design import MARKS, Design, at_marks, evaluated_at_marks, verdict
from purerl_lab.studies.versus import summary
from purerl_lab.studies.versus.evaluation import EVAL_SEED, MODES

TITLE = "Off-policy beside on-policy: algorithms at the same env steps"
_NOT_SETTINGS = ("env", "total_timesteps", "cpu_group")  # the budget is stated apart; cpu_group changes rounding only


def record(design: Design, curves: dict[str, np.ndarray], evaluations: dict[str, dict[str, np.ndarray]],
           summaries: dict[str, dict], runs: dict[str, Path], time_limit: int, fresh: bool = False) -> dict:
    """The env's record: what each algorithm ran (`runs`: its folder under --runs-dir), how fast, its evaluated
    returns at the marks (per mode) and its training returns there (`marks`); `fresh`: the replication's."""
    algorithms = {}
    evaluated = evaluated_at_marks(design, evaluations)
    for (algo, spec), marks in zip(design.specs.items(), at_marks(design, curves, time_limit).values()):
        cfg, recorded = spec.config, spec.to_json()
        gradient_steps, samples = work_per_env_step(cfg)
        algorithms[algo] = {
            "title": registry.get(algo).title, "preset": spec.preset,
            "preset_description": registry.get(algo).presets[spec.preset].description,
            "config": {k: v for k, v in recorded["config"].items() if k not in _NOT_SETTINGS},
            "hyperparams": recorded["hyperparams"], "env_steps_per_update": cfg.batch_size,
            "num_updates": cfg.num_updates, "gradient_steps_per_env_step": gradient_steps,
            "samples_per_env_step": samples, "env_steps_per_s": summaries[algo].get("env_steps_per_s"),
            "run_dir": Path(runs[algo]).as_posix(), "evaluated": evaluated[algo], "marks": marks}
    return {"env": design.env, **({"fresh_seeds": True} if fresh else {}), "seeds": design.seeds, "env_steps_per_run": design.env_steps_per_run,
            "window_env_steps": design.window, "marks": design.marks, "time_limit": time_limit,
            "evaluation": {"episodes": design.episodes, "seed": EVAL_SEED}, "algorithms": algorithms}


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


def plot(folder: Path, design: Design, curves: dict[str, np.ndarray],
         evaluations: dict[str, dict[str, np.ndarray]], name: str) -> Path:
    """`ENV.png`: per algorithm, the greedy and the sampled evaluation at the marks and the training curve, each a
    panel against env steps (IQM over seeds; a 95% band from 10 seeds, else every seed)."""
    title = {algo: registry.get(algo).title for algo in design.specs}
    panels = {f"{mode} evaluation": [results.Curve(title[algo], np.array(design.marks), evaluations[algo][mode])
                                     for algo in design.specs] for mode in MODES}
    panels["training return"] = [
        results.Curve(title[algo], (np.arange(curve.shape[0]) + 1) * design.specs[algo].config.batch_size, curve)
        for algo, curve in curves.items()]
    figure = results.draw_panels(panels, "episode return against env steps, each algorithm at its own preset")
    return results.save_figure(figure, Path(folder) / f"{name}.png")


def write(record_: dict, folder: Path, name: str) -> None:
    files.write_atomic(Path(folder) / f"{name}.json",
                       json.dumps(results.json_safe(record_), indent=2) + "\n")


def write_report(report: Path) -> Path:
    """The markdown of every env recorded in REPORT's stem folder (generated; never edit by hand)."""
    report = Path(report)
    folder = report.parent / report.stem
    records = [files.read_json(p, "a versus record") for p in sorted(folder.glob("*.json"))]
    fresh = {r["env"]: r for r in records if r.get("fresh_seeds")}  # the replications: in the summary only
    records = [r for r in records if not r.get("fresh_seeds")]
    lines = [f"# {TITLE}", "", *document.notice(report, "offpolicy"), *summary.lines(records, fresh), *_design(), ""]
    for r in records:
        lines += _env(r, folder.name)
    lines += document.footer(report, "offpolicy")
    report.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(report, "\n".join(lines) + "\n")
    return report


def cell(mark: dict) -> str:
    """A mark's statistic in words (`stats.describe`); for a training return, how many seeds had no ended episode
    by then and the censoring."""
    if mark["return"] is None:
        return "no episode ended"
    said = stats.describe(mark["return"])
    if mark.get("missing"):
        said += f"; {mark['missing']} seed(s) without an ended episode"
    if mark.get("censored_below") is not None:
        said += f"; censored: no episode over {mark['censored_below']:,} steps could have ended"
    return said


def final_lines(record_: dict) -> list[str]:
    return [f"{record_['env']} {algo:4s} {mode} return at the end {cell(a['evaluated'][mode][-1])}"
            for algo, a in record_["algorithms"].items() for mode in MODES]


def _design() -> list[str]:
    marks = ", ".join(f"{m:.0%}" for m in MARKS)
    return [
        "Design. Each algorithm trains at its own registered preset for the env's family, as `purerl train "
        "--algo ALGO --env ENV` chooses it, with only the budget given: the same seeds and the same env steps per "
        f"run. The updates differ in size, so the runs are compared at the same env steps, at {marks} of the budget, "
        "each a whole number of every algorithm's updates (what a verdict compares: the summary's presets "
        "sentence).",
        "",
        "At each mark every seed's policy is evaluated on fresh episodes that run to the env's time limit: greedy "
        "(its most likely action: the mean, through tanh for SAC, or the argmax; TD3's actor without noise) and "
        "sampled (its own exploration), the seed's value the mean over the episodes. An algorithm whose training "
        "envs have not yet run an episode that far (see the censoring below) is scored on the rest of the episode "
        "too. Each seed's episodes come from one key, the same for every algorithm and mark. A cell is the IQM "
        f"over seeds with its 95% percentile-bootstrap CI from {stats.MIN_SEEDS_FOR_CI} seeds, otherwise every "
        "per-seed value and n, and a verdict is stated only where two CIs separate.",
        "",
        "The training return at a mark is given too, and carries no verdict: each seed's mean return over the "
        "updates that end in the window of W env steps before the mark, one W for every algorithm (the last "
        f"{results.FINAL_WINDOW} updates of the algorithm with the largest updates, so at 100% it is that "
        "algorithm's own final return). Training returns are censored for an algorithm that steps many envs: each "
        "env has taken mark / num_envs steps by the mark, so no longer episode can have ended there, and a cell "
        "says so where that is short of the time limit (below two time limits, too, each env can have ended at "
        "most one episode of full length).",
    ]


def _settings(a: dict) -> str:
    config = ", ".join(f"{k}={_short(v)}" for k, v in a["config"].items())
    hp = ", ".join(f"{k}={v:g}" for k, v in a["hyperparams"].items())
    return f"- **{a['title']}**, preset `{a['preset']}` ({a['preset_description']}): {config}; {hp}."


def _env(r: dict, folder: str) -> list[str]:
    algorithms = r["algorithms"]
    evaluation = r["evaluation"]
    lines = [f"## {r['env']}", "",
             f"{len(r['seeds'])} seeds per algorithm, {r['env_steps_per_run']:,} env steps per run; "
             f"{evaluation['episodes']} evaluation episodes per seed, mark and mode (key seed {evaluation['seed']}), "
             f"each up to the time limit of {r['time_limit']:,} steps; window W = {r['window_env_steps']:,} env "
             "steps.", "",
             "| algorithm | env steps per update | updates | gradient steps per env step | transitions drawn per env "
             "step | env steps/s (all seeds, this machine) |", "|---|---|---|---|---|---|"]
    for a in algorithms.values():
        speed = f"{a['env_steps_per_s']:,.0f}" if a.get("env_steps_per_s") else "-"
        lines.append(f"| {a['title']} | {a['env_steps_per_update']:,} | {a['num_updates']:,} | "
                     f"{_number(a['gradient_steps_per_env_step'])} | {_number(a['samples_per_env_step'])} | {speed} |")
    lines += ["", *(_settings(a) for a in algorithms.values())]
    reference, *others = algorithms.values()
    for mode in MODES:
        lines += ["", f"**{mode.capitalize()} evaluation return.**", "", *_table(r, [a["evaluated"][mode]
                                                                                   for a in algorithms.values()]), ""]
        for a in others:
            for i, (mark, fraction) in enumerate(zip(r["marks"], MARKS)):
                said = verdict(a["evaluated"][mode][i]["return"], reference["evaluated"][mode][i]["return"],
                               a["title"], reference["title"])
                lines.append(f"- {a['title']} against {reference['title']} at {mark:,} env steps ({fraction:.0%}), "
                             f"{mode}: {said}.")
    lines += ["", "**Training return** (no verdict; see the design).", "",
              *_table(r, [a["marks"] for a in algorithms.values()]),
              "", f"![{r['env']}]({folder}/{slug(r['env'])}.png)", ""]
    return lines


def _table(r: dict, rows: list[list[dict]]) -> list[str]:
    lines = ["| algorithm | " + " | ".join(f"{m:,} env steps ({f:.0%})" for m, f in zip(r["marks"], MARKS)) + " |",
             "|---|" + "---|" * len(r["marks"])]
    for a, marks in zip(r["algorithms"].values(), rows):
        lines.append(f"| {a['title']} | " + " | ".join(cell(m) for m in marks) + " |")
    return lines


def _number(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def _short(value) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)
