"""The comparison document's LPO section, and what a comparison records for it.

An evolution's fitness curve is the mean over perturbed candidates, so its rise says nothing about PPO until PPO
is measured on the same fitness: a `compare` run on an evolution's training task (`trained_on`) records every
objective's fitness per seed (`fitness_kinds`), and the section sets PPO's beside the curves and judges each drift
by its paired difference from PPO on the same seeds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from purerl import stats
from purerl.meta import evolve_files
from purerl_lab.publish import document
from purerl.run import files, results, rundir

TASK_KEYS = ("env", "total_timesteps", "num_envs", "num_steps")  # an evolve run's task_info and a compare record


def evolution_dir(path: str | Path) -> Path:
    """The evolve run a meta-parameter path belongs to (its folder for a .msgpack file)."""
    path = Path(path)
    return path.parent if path.suffix == ".msgpack" else path


def trained_on(task: dict, setting: dict) -> bool:
    """Whether a compare run (its record) trains as the evolution's inner runs did: same env, budget and batch."""
    return all(task.get(key) == setting.get(key) for key in TASK_KEYS)


def fitness_kinds(objectives: list[str], config) -> list[str]:
    """The fitness kinds of the evolutions behind the lpo:PATH objectives whose training task a compare run at
    `config` (its PPOConfig) is."""
    setting = {key: getattr(config, key) for key in TASK_KEYS}
    kinds = set()
    for name, _, path in (objective.partition(":") for objective in objectives):
        saved = evolution_dir(path) / "config.json"
        if name == "lpo" and path and saved.is_file():
            task = rundir.read_config(saved.parent).get("task_info", {})
            if trained_on(task, setting):
                kinds.add(task["fitness"])
    return sorted(kinds)


_FEATURES = (("rollback_below_r", "rollback: r below which A = -1 pushes r up", lambda f: f["rollback_below_r"]["-1"]),
             ("optimism_mean_drift_inside_clip", "drift inside PPO's clip, A > 0", None),
             ("optimism_drift_beyond_clip_vs_ppo", "drift beyond the clip / PPO's", None),
             ("mean_abs_difference_from_ppo", "mean abs(D - D_PPO)", None),
             ("max_abs_difference_from_ppo", "max abs(D - D_PPO)", None),
             ("mean_abs_difference_from_dpo", "mean abs(D - D_DPO)", None))


def lines(folder: Path, records: list[dict]) -> list[str]:
    """What made the lpo-* columns: each committed evolve run in FOLDER (its ES budget, the sessions that ran it,
    its fitness curve beside PPO's on the same fitness), the drifts against PPO on their training task, and the
    named features of every drift (FOLDER/drift.json, `purerl analyze drift`)."""
    out = ["## LPO: the evolved drifts", ""]
    tasks = {}  # (record index, fitness kind) -> {run name: (curve start, curve end)}
    for run in sorted(p for p in folder.glob("*") if (p / "config.json").is_file()):
        config = rundir.read_config(run)
        es, task = config["es"], config["task_info"]
        rows = evolve_files.read_log(run)
        means, seconds = [row["mean"] for row in rows], sum(row["seconds"] for row in rows)
        made = evolve_files.made_by(document.portable_sessions(rundir.sessions(run)))
        start, end = np.mean(means[:10]), np.mean(means[-10:])
        at = next((i for i, r in enumerate(records) if trained_on(task, r)), None)
        ppo = None if at is None else records[at]["objectives"].get("ppo", {}).get(f"fitness_{task['fitness']}")
        beside = ("not measured, no row above is its training task" if at is None else
                  "not recorded" if ppo is None else stats.describe(ppo))
        if at is not None:
            tasks.setdefault((at, task["fitness"]), {})[run.name] = (start, end)
        out += [f"- **lpo-{run.name}**: {es['strategy']}, population {es['population_size']} x {len(rows)} "
                f"generations x {es['rollouts']} inner run(s) per candidate, lr {es['lr']} to {es['lr_final']}, "
                f"std {es['std']} to {es['std_final']}, {es['fitness_shaping']} fitness, ES seed {es['seed']}; "
                f"inner runs: {task['env']}, {task['total_timesteps']:,} steps, fitness {task['fitness']} return; "
                f"{seconds / 60:.1f} min of generations. Made by {made or 'an unrecorded command'}. Mean "
                f"candidate fitness over generations 0-9: {start:.1f} (std {np.std(means[:10]):.1f} across them), "
                f"over the last 10: {end:.1f} (std {np.std(means[-10:]):.1f}); "
                f"PPO's on the same fitness (below): {beside}. "
                f"Curve: [{run.name}/fitness.png]({folder.parent.name}/{folder.name}/{run.name}/fitness.png)."]
    for (at, kind), curves in tasks.items():
        out += ["", *_against_ppo(records[at], kind, curves)]
    drift = folder / "drift.json"
    if drift.exists():
        features = files.read_json(drift, "a drift record")
        out += ["", f"Each drift's named features on the analysis grid (`purerl analyze drift`; the maps are in "
                f"[drift.png]({folder.parent.name}/{folder.name}/drift.png)):", "",
                "| drift | " + " | ".join(title for _, title, _ in _FEATURES) + " |",
                "|---|" + "---|" * len(_FEATURES)]
        for label, f in features.items():
            cells = [(pick(f) if pick else f[key]) for key, _, pick in _FEATURES]
            out.append(f"| {label} | " + " | ".join("none" if c is None else f"{c:.3g}" for c in cells) + " |")
    return out + [""]


def _against_ppo(record: dict, kind: str, curves: dict[str, tuple[float, float]]) -> list[str]:
    """Every objective's fitness on the evolutions' training task, each drift minus PPO on the same seeds, and the
    verdict those differences give; for a record made before compare recorded the fitness, what to regenerate."""
    key, rows = f"fitness_{kind}", record["objectives"]
    where = f"{record['env']} at {record['env_steps_per_run']:,} env steps per run"
    if "ppo" not in rows:
        return [f"The record of {where} has no PPO column: no drift is compared with PPO on its training task."]
    if key not in rows["ppo"]:
        return [f"The fitness the evolutions maximised ({kind}) is not in the record of {where}: it was made before "
                f"`purerl compare` recorded it. Regenerate the {record['env']} part (`purerl results --commands dpo` "
                "lists its command) to show each objective's fitness on the training task, PPO's beside the curves "
                "above, and whether LPO is ahead of PPO there."]
    updates = record["env_steps_per_run"] // (record["num_envs"] * record["num_steps"])
    statistic = {"auc": f"each seed's mean return over all {updates} updates of its run, the area under its curve",
                 "final": f"each seed's mean return over its last {results.FINAL_WINDOW} updates"}[kind]
    ppo = rows["ppo"][key]
    paired = {f"lpo-{name}": stats.paired_difference(rows[f"lpo-{name}"][key]["values"], ppo["values"])
              for name in curves if key in rows.get(f"lpo-{name}", {})}
    text = [f"On the evolutions' training task ({where}, the comparison's {ppo['n']} seeds), the fitness they "
            f"maximised ({kind}: {statistic}), IQM over seeds [95% CI], and each drift minus PPO on the same seeds "
            "(the mean of the per-seed differences [95% CI]):", "",
            "| objective | fitness | minus PPO, same seeds |", "|---|---|---|"]
    text += [f"| {label} | {stats.describe(row[key])} | "
             f"{stats.describe_paired(paired[label]) if label in paired else '-'} |"
             for label, row in rows.items() if key in row]
    ahead = [label for label, d in paired.items() if d["verdict"] == "better"]
    differences = ", ".join(f"{label} {stats.describe_paired(d)}" for label, d in paired.items())
    curve = ", ".join(f"lpo-{name} from {start:.1f} to {end:.1f}" for name, (start, end) in curves.items())
    if not any(d["ci_valid"] for d in paired.values()):
        verdict = (f"LPO, not judged: below {stats.MIN_SEEDS_FOR_CI} seeds a difference has no CI ({differences})."
                   if paired else "LPO, not judged: no drift's column holds the fitness.")
    elif ahead:
        verdict = (f"LPO ahead of PPO on its training task, on the study's seeds: {', '.join(ahead)} (paired 95% "
                   "CI above zero" + (f" for {len(ahead)} of the {len(paired)} drifts, each interval 95% on its own, "
                                      f"not widened for testing {len(paired)}" if len(paired) > 1 else "")
                   + f"; {differences}).")
    else:
        verdict = (f"LPO, not reproduced at this budget: no evolved drift is ahead of PPO on its own training "
                   f"task (no paired 95% CI above zero: {differences}).")
    return text + ["", f"{verdict} The evolution curves above run (mean candidate fitness over generations 0-9, "
                       f"then over the last 10) {curve}; PPO itself scores {stats.describe(ppo)} on the same "
                       "fitness."]
