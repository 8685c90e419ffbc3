"""Compare policy objectives (PPO, DPO, LPO) on identical seeds and hyperparameters.

Each objective is an ordinary `purerl train` run directory under `runs_dir`.
The small results (one JSON and one curve plot per env) go to `results_dir`,
and the markdown report is regenerated from every JSON there, so runs on
different envs, with budgets chosen per env, accumulate into one table. The report
opens with its summary (`summary`) and ends with the provenance (`publish.document`),
which says which command, commit and machine made each row.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from purerl import stats
from purerl_lab.studies.dpo import lpo_report, summary
from purerl.meta.evolve import curve_fitness
from purerl.run import experiment, files, results, rundir
from purerl_lab.publish import document, provenance, replication, sessions
from purerl.algos.ppo_config import PRESETS, HyperParams, PPOConfig
from purerl.checks import ConfigError
from purerl.run.trainspec import TrainSpec


def compare(base: TrainSpec, objectives: list[str], runs_dir: Path, results_dir: Path, title: str,
            progress: bool = True, resume: bool = False, overwrite: bool = False,
            argv: list[str] | None = None, fresh: bool = False) -> dict:
    """Train `base` once per objective (same seeds), then write `<env>.json` and `<env>.png` (`fresh`: the
    replication, on seeds moved past the study's, runs under RUNS_DIR/fresh-ENV and writes `fresh_<env>.*`).

    `resume` continues each objective's run under `runs_dir` from its checkpoint (a finished run is read back,
    not retrained), so that an hour-long comparison survives being stopped; a run found there is refused
    without `resume` or `overwrite`. The record's `sessions` lists every
    session that trained it (`argv`, the command, lets a registered one record its computation's fingerprint), so
    that `provenance.record` can tell a comparison resumed across computation changes.
    """
    specs = [TrainSpec(**{**base.__dict__, "objective": objective}) for objective in objectives]
    env = base.config.env
    labels = [_label(spec.objective) for spec in specs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"--objectives names the column {twice[0]} twice (an lpo: column is named by its run's "
                          "folder); give each objective once")
    part = replication.fresh_part(env) if fresh else env
    env_dir = env_dir_of(runs_dir, part)
    for spec in specs:  # every objective checked, then every run directory, before the first compile
        spec.validate()
    runs = {label: env_dir / label for label in labels}
    continued = rundir.prepare_each({runs[label]: spec.to_json() for spec, label in zip(specs, labels)}, resume,
                                    overwrite, "comparison")
    worked = sessions.add(env_dir, "dpo", resume, part, argv)
    cfg = base.config
    kinds = lpo_report.fitness_kinds(objectives, cfg)  # on an LPO evolution's training task: its fitness too
    curves, rows, summaries = {}, {}, []
    for spec, label in zip(specs, labels):
        run_dir = runs[label]
        summary = experiment.run(spec, run_dir, resume=continued[run_dir], overwrite=not continued[run_dir],
                                 progress=progress)
        summaries.append(summary)
        curves[label] = results.read_member_metric(run_dir)
        episodes = results.read_member_metric(run_dir, "episodes") if kinds else None
        rows[label] = {"final_return": summary["final_return"], "run_dir": run_dir.relative_to(runs_dir).as_posix(),
                       "return_at_80pct": stats.summarize(_return_at(curves[label], LATE_FRACTION)),
                       "env_steps_per_s": summary["env_steps_per_s"],
                       **{f"fitness_{kind}": stats.summarize(curve_fitness(curves[label], kind, episodes=episodes))
                          for kind in kinds}}
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "env": env,
        **({"fresh_seeds": True} if fresh else {}),
        "preset": base.preset,
        "seeds": base.seeds,
        "total_timesteps": cfg.total_timesteps,
        "env_steps_per_run": cfg.env_steps,
        "num_envs": cfg.num_envs,
        "num_steps": cfg.num_steps,
        "hyperparams": {k: float(v) for k, v in base.hyperparams._asdict().items()},
        "objectives": rows,
    }
    shown = f"{env}, fresh seeds" if fresh else env
    results.plot_labelled_curves(results_dir, curves, cfg.batch_size, f"{shown}: {title}", f"{files.slug(part)}.png")
    files.write_atomic(results_dir / f"{files.slug(part)}.json", json.dumps(record, indent=2))
    return {**record, "sessions": worked, "training_s": provenance.training_seconds(summaries)}


def env_dir_of(runs_dir: Path, part: str) -> Path:
    """Where a part's runs go: RUNS_DIR/ENV, and a replication's in RUNS_DIR/fresh-ENV."""
    env = part.removeprefix(replication.PREFIX)
    return Path(runs_dir) / replication.run_folder(env, env != part)


LATE_FRACTION = 0.8  # has PPO's curve flattened? Its return at 80% of the budget against its final return


def _return_at(curve: np.ndarray, fraction: float) -> np.ndarray:
    """Per member, the final-return statistic of a run stopped after `fraction` of its updates."""
    return results.final_returns(curve[:max(results.FINAL_WINDOW, round(fraction * len(curve)))])


TITLE = "Policy objectives: PPO, DPO and LPO"


def render(report: Path) -> Path:
    """The report again from the records beside it (`purerl results --render`)."""
    report = Path(report)
    return write_report(report.parent / report.stem, report, TITLE)


def _at_preset(record: dict) -> bool:
    """Whether an env's runs trained at their preset's own settings (whatever the budget)."""
    preset = PRESETS.get(record.get("preset"))
    if preset is None:
        return False
    config, hp = PPOConfig(**preset.config), HyperParams(**preset.hyperparams)._asdict()
    return ((record.get("num_envs"), record.get("num_steps")) == (config.num_envs, config.num_steps)
            and all(math.isclose(value, hp[name]) for name, value in record.get("hyperparams", {}).items()))


def write_report(results_dir: Path, report: Path, title: str) -> Path:
    """The markdown table of every `<env>.json` in `results_dir` (generated; do not edit by hand)."""
    results_dir = Path(results_dir)
    records = [files.read_json(p, "a results record", object) for p in sorted(results_dir.glob("*.json"))]
    records = [r for r in records if "objectives" in r]  # other analyses (drift.json) share the folder
    fresh = {r["env"]: r for r in records if r.get("fresh_seeds")}  # the replications: in the summary only
    records = [r for r in records if not r.get("fresh_seeds")]
    objectives = sorted({label for r in records for label in r["objectives"]}, key=_objective_order)
    settings = ("each env family's preset, PPO's settings, with DPO's alpha 2 and beta 0.6, as PureJaxRL's "
                "dpo_continuous_action.py runs DPO on its PPO's" if all(map(_at_preset, records)) else
                "each row's, in its record (not every one its preset's own)")
    lines = [f"# {title}", "", *document.notice(report, "dpo"), *summary.lines(records, fresh, LATE_FRACTION),
             f"Statistic: each seed's final return is its mean episode return over the last {results.FINAL_WINDOW} "
             "updates; a cell gives the IQM over seeds and its 95% percentile-bootstrap CI when there are at least "
             f"{stats.MIN_SEEDS_FOR_CI} seeds, otherwise every per-seed value and n. Every objective uses the same "
             f"seeds and hyperparameters: {settings}; no objective is tuned on its own, so settings made for PPO may "
             "favour it. A run on the same CPU (family, model and SIMD extension, in the manifest) reproduces these "
             "numbers exactly; on another, float rounding moves the per-seed values.", "",
             "| env | budget (env steps/seed) | seeds | " + " | ".join(objectives) + " |",
             "|---|---|---|" + "---|" * len(objectives)]
    for r in records:
        cells = [stats.describe(r["objectives"][label]["final_return"]) if label in r["objectives"] else "-"
                 for label in objectives]
        lines.append(f"| {r['env']} | {r['env_steps_per_run']:,} | {len(r['seeds'])} | " + " | ".join(cells) + " |")
    lines += ["", "Per env: the best objective (named only where its IQM's 95% CI lies above every other's); DPO "
              "against PPO by two tests on the same seeds, the IQMs' 95% CIs apart and the paired mean difference "
              "(DPO minus PPO per seed) with its 95% CI clear of 0, the words saying which resolved what; "
              f"whether PPO's curve had flattened (its final return minus its return at {LATE_FRACTION:.0%} of the "
              "budget, the mean of the per-seed differences with its 95% CI), and what Lu et al. (2022) claim for "
              "that setting:", ""]
    lines += [f"- {r['env']}: best: {_verdict(r['objectives'])}; DPO against PPO: {_dpo_verdict(r['objectives'])}; "
              f"PPO's curve: {_flatness(r['objectives'].get('ppo'))}; paper: {paper_claim(r['env'])}." for r in records]
    lines += ["", _versus_ppo(records, "dpo"), ""]
    learned = [label for label in objectives if label.startswith("lpo")]
    if learned:
        lines += [_versus_ppo(records, label) + " The LPO section below says which row is its training task."
                  for label in learned]
        lines += ["", *lpo_report.lines(results_dir / "lpo", records)]
    else:
        lines += ["LPO has no column: no LPO drift evolved at a stated budget is committed yet, and a drift from "
                  "an unrecorded run is not a reproducible result.", ""]
    for r in records:  # each env's curves, then its replication's where that has run, a figure a paragraph
        again = files.slug(replication.fresh_part(r["env"]))
        lines += [f"![{r['env']}]({results_dir.name}/{files.slug(r['env'])}.png)", ""] + (
            [f"{r['env']} again on fresh seeds (from PRNGKey({replication.FRESH_SEED_START})):", "",
             f"![{r['env']}, fresh seeds]({results_dir.name}/{again}.png)", ""]
            if (Path(results_dir) / f"{again}.png").exists() else [])
    lines += ["", *document.footer(report, "dpo")]
    report = Path(report)
    report.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(report, "\n".join(lines) + "\n")
    return report


def _versus_ppo(records: list[dict], label: str) -> str:
    """One objective against PPO over every env that has both, grouped by what the two tests resolved."""
    outcome: dict[str, list[str]] = {}
    for r in records:
        judged = _against_ppo(r["objectives"], label)
        if judged is not None:
            outcome.setdefault(judged[0], []).append(r["env"])
    parts = [f"{words} on {len(envs)} ({', '.join(envs)})" for words, envs in outcome.items()]
    return (f"{label.upper()} against PPO at these budgets (the IQMs' 95% CIs and the paired mean difference, on "
            "the same seeds): " + "; ".join(parts) + ".")


def _against_ppo(rows: dict, label: str) -> tuple[str, dict] | None:
    """`label` against PPO by both tests on the same seeds (`stats.both_tests`), and the paired difference."""
    if not {"ppo", label} <= set(rows):
        return None
    ours, ppo = rows[label]["final_return"], rows["ppo"]["final_return"]
    paired = stats.paired_difference(np.asarray(ours["values"], np.float64), np.asarray(ppo["values"], np.float64))
    if why := stats.no_ci_reason(ours, ppo):  # neither test can run: say why rather than "not resolved"
        return f"not tested ({why})", paired
    return stats.both_tests(stats.iqm_verdict(ours, ppo), paired), paired


# What Lu et al. (2022) claim, per setting. Their abstract claims state-of-the-art performance of LPO and DPO in
# Brax and transfer to unseen settings; the budgets are those of the authors' code (dpo/main_drift_brax.py).
_BRAX_CLAIM = "DPO and LPO ahead of PPO in Brax (the abstract's claim; the authors' code trains {env} for {steps})"
_PAPER_BUDGETS = {"brax:ant": "3e7 steps", "brax:halfcheetah": "1e8 steps", "brax:humanoid": "5e7 steps",
                  "brax:walker2d": "5e7 steps"}


def paper_claim(env: str) -> str:
    if env in _PAPER_BUDGETS:
        return _BRAX_CLAIM.format(env=env.partition(":")[2], steps=_PAPER_BUDGETS[env])
    if env.startswith("brax:"):
        return "not one of the paper's Brax tasks, which claim DPO and LPO ahead of PPO in Brax generally"
    return "none found for this env (the paper's stated experiments are in Brax)"


def _dpo_verdict(rows: dict) -> str:
    judged = _against_ppo(rows, "dpo")
    if judged is None:
        return "-"
    words, paired = judged
    return f"{words}, paired mean {stats.describe_paired(paired)}"


def _flatness(ppo: dict | None) -> str:
    """Has PPO's curve flattened: its final return minus its return at LATE_FRACTION of the budget, paired on the
    seeds (both come from the same runs). A budget where PPO is still rising compares the objectives' speed, not
    what they reach; a difference whose CI includes 0 is not resolved, which is not the same as flat."""
    if ppo is None or "return_at_80pct" not in ppo:
        return "not recorded"
    late, final = ppo["return_at_80pct"], ppo["final_return"]
    if stats.not_finite(late, final):
        return f"{stats.describe(late)} at {LATE_FRACTION:.0%}, {stats.describe(final)} at the end (a seed diverged)"
    if not (late["ci_valid"] and final["ci_valid"]):
        return f"{late['iqm']:.1f} at {LATE_FRACTION:.0%}, {final['iqm']:.1f} at the end (too few seeds to judge)"
    rise = stats.paired_difference(final["values"], late["values"])
    judged = {"better": "still rising", "worse": "falling",
              "not distinguishable": "no change resolved"}[rise["verdict"]]
    return (f"{stats.describe(late)} at {LATE_FRACTION:.0%}, {stats.describe(final)} at the end; final minus "
            f"{LATE_FRACTION:.0%} per seed {stats.describe_paired(rise)}: {judged}")


def _verdict(rows: dict) -> str:
    """The objective with the highest IQM, named only where its CI lies above every other objective's."""
    if len(rows) < 2:
        return "-"
    ranked = sorted(rows.items(), key=lambda kv: -np.inf if kv[1]["final_return"]["iqm"] is None
                    else kv[1]["final_return"]["iqm"], reverse=True)  # None: a JSON record's NaN
    (best, b), others = ranked[0], ranked[1:]
    if all(stats.separation(b["final_return"], o["final_return"]) > 0 for _, o in others):
        return f"{best} (CI clear of {', '.join(name for name, _ in others)})"
    return stats.NOT_DISTINGUISHABLE


def _label(objective: str) -> str:
    """ppo, dpo, or lpo-RUN (one column per evolved drift: lpo:runs/es0 is lpo-es0)."""
    name, _, path = objective.partition(":")
    if not path:
        return name
    return f"{name}-{run_name(path)}"


def run_name(path: str | Path) -> str:
    """The evolve run a meta-parameter path belongs to: names LPO's columns."""
    return lpo_report.evolution_dir(path).name


def _objective_order(label: str) -> tuple:
    return ({"ppo": 0, "dpo": 1, "lpo": 2}.get(label.partition("-")[0], 3), label)


