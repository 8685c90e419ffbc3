"""`purerl analyze value-loss`: held-out evaluation, shape and critic dynamics of evolved value losses,
written as docs/results/value_loss.{md,json} with plots and the evolved meta-parameters beside them.

Sources are evolve run directories (or the committed copies of them in docs/results/value_loss/), one
per ES seed, of one loss form or several. Each form's learned loss is the ES mean of its seed with the highest
population-mean fitness over its last 10 generations: chosen from evolution's own numbers, before any held-out
run (`record` names them). With `tune_runs`, L2's value coefficient is tuned first on the evolutions' own
training runs (`tuning`), and the result, `tuned_l2`, is a baseline in every stage.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from flax import serialization

from purerl.meta import evolve_files
from purerl.run import files, results, rundir
from purerl_lab.publish import provenance as manifest
from purerl.algos.objectives import l2, learned_log_weight
from purerl.algos.ppo_config import HyperParams
from purerl.checks import ConfigError
from purerl_lab.studies import value_loss
from purerl_lab.studies.value_loss import published, shape as value_loss_shape, tuning
from purerl_lab.studies.value_loss.record import (ALL_STAGES, SELECTION_WINDOW, TUNE_RUNS_5X, TUNING_5X, build_record,
                                              kept_tuning, learned_name, previous_stages, run_name, same_tuned_l2)

DYNAMICS_SEEDS = 16


def load_evolution(source: Path) -> dict:
    """config, per-generation log and ES-mean meta-parameters of one value-loss evolve run."""
    config_path = source / rundir.CONFIG
    if not config_path.is_file():
        raise ConfigError(f"{source} is not a value-loss evolve run (no {rundir.CONFIG})")
    config = rundir.read_config(source)
    if config.get("task") != "value-loss":
        raise ConfigError(f"{source} is not a value-loss evolve run")
    log = evolve_files.read_log(source)
    if not log:
        raise ConfigError(f"{source} has no {evolve_files.GENERATIONS_CSV}")
    form = value_loss.form_of(config)
    params = evolve_files.load_meta_params(source / evolve_files.MEAN_PARAMS, value_loss.initial_params(form=form))
    return {"source": source, "config": config, "log": log, "params": params, "form": form,
            "sessions": rundir.sessions(source)}


def save_artefacts(evolutions: dict[str, dict], directory: Path) -> None:
    """Copy what re-evaluation needs (config, log, ES mean) and who made it (provenance.json, where the run has
    one) to `directory`/NAME, unless already there."""
    for name, evolution in evolutions.items():
        target = directory / name
        if target.resolve() == Path(evolution["source"]).resolve():
            continue
        target.mkdir(parents=True, exist_ok=True)
        for entry in (rundir.CONFIG, evolve_files.GENERATIONS_CSV, evolve_files.MEAN_PARAMS):
            shutil.copyfile(Path(evolution["source"]) / entry, target / entry)
        if (Path(evolution["source"]) / rundir.PROVENANCE).is_file():  # its sessions, without the runner's paths
            sessions = [{**s, "command": manifest.portable_command(s["command"])} for s in evolution["sessions"]]
            files.write_atomic(target / rundir.PROVENANCE, json.dumps(sessions, indent=2) + "\n")


def evolution_summary(evolution: dict) -> dict:
    means = [row["mean"] for row in evolution["log"]]
    return {"generations": len(means), "first_generation_mean_fitness": means[0],
            "last_generations_mean_fitness": float(np.mean(means[-SELECTION_WINDOW:])),
            "seconds": float(sum(row["seconds"] for row in evolution["log"])), "es": evolution["config"]["es"],
            "made_by": [{**{key: session.get(key) for key in ("command", "commit", "machine", "date")},
                         **({"command": manifest.portable_command(session["command"])} if session.get("command") else {})}
                        for session in evolution.get("sessions", [])]}


def constant_weight_params(meta_params) -> dict:
    """L2 times the learned loss's own weight at v = t (geometric mean over the probe targets): the ablation
    that keeps the learned scale and drops the shape."""
    targets = jnp.asarray(value_loss_shape.PROBE_TARGETS)
    log_weight = float(jnp.mean(learned_log_weight(meta_params, targets, targets)))
    return {"hidden": meta_params["hidden"],
            "out": {"kernel": jnp.zeros_like(meta_params["out"]["kernel"]), "bias": jnp.full((1,), log_weight)}}


def scale_only_params(form: str, meta_params) -> dict | None:
    """The same ablation for any form: L2 times the learned loss's curvature at v = t (the mlp form with h = 0
    and exp(s) at that curvature); None where the curvature is not positive (no L2 has it)."""
    if form == "scaled":
        return constant_weight_params(meta_params)
    curvature = value_loss_shape.curvature_at_zero(value_loss.FORMS[form].loss, meta_params, 0.0)
    if not curvature > 0:
        return None
    zero = {name: jnp.zeros_like(meta_params["out"][name]) for name in ("kernel", "bias")}
    return {**meta_params, "out": zero, "log_scale": jnp.full((1,), float(np.log(curvature)))}




def load_evolutions(sources: list[Path]) -> tuple[dict[str, dict], list[str]]:
    """The evolve runs by their names in the record (`record.run_name`), and the forms present, primary first."""
    loaded = [load_evolution(Path(source)) for source in sources]
    forms = [form for form in value_loss.FORMS if any(e["form"] == form for e in loaded)]
    evolutions = {run_name(e["form"], forms[0], e["config"]["es"]["seed"]): e for e in loaded}
    if len(evolutions) < len(sources):
        raise ConfigError("two sources are runs of the same ES seed")
    for what, key in (("presets", lambda e: e["config"]["preset"]),
                      ("budgets", lambda e: int(e["config"]["task_info"]["total_timesteps"]))):
        found = {key(e) for e in loaded}
        if len(found) != 1:
            raise ConfigError(f"the sources were evolved with different {what}: {sorted(found)}")
    return evolutions, forms


def learned_losses(evolutions: dict[str, dict], forms: list[str], summaries: dict) -> tuple[dict, dict]:
    """Per form, the ES mean of its best run (`learned_name`), its scale-only ablation and its other runs' means,
    as `value_loss.Loss`es; and per form, which run was selected and its learned loss's name."""
    candidates, chosen = {}, {}
    for form in forms:
        runs = [name for name, e in evolutions.items() if e["form"] == form]
        selected = max(runs, key=lambda name: summaries[name]["last_generations_mean_fitness"])
        name, loss = learned_name(form, forms[0]), value_loss.FORMS[form].loss
        chosen[form] = {"learned": name, "selected": selected}
        candidates[name] = value_loss.Loss(loss, evolutions[selected]["params"])
        ablation = scale_only_params(form, evolutions[selected]["params"])
        if ablation is not None:
            candidates[f"{name}_scale_only"] = value_loss.Loss(loss, ablation)
        candidates |= {run: value_loss.Loss(loss, evolutions[run]["params"]) for run in runs if run != selected}
    return candidates, chosen


def tuned_l2(evolutions: dict[str, dict], config, runs: int) -> dict:
    """`tuning.tune` on the first `runs` training keys of the evolutions, at their budget (`config`)."""
    keys = tuning.tuning_keys([e["config"]["es"] for e in evolutions.values()], runs)
    tuned = tuning.tune(config, keys, tuning.GRID)
    print(f"tuned L2: vf_coef {tuned['vf_coef']:g} (mean fitness over {runs} training runs: "
          + ", ".join(f"{c:g}: {m:.1f}" for c, m in zip(tuned["grid"], tuned["mean_fitness"])) + ")", flush=True)
    return tuned


def analyze(sources: list[Path], report: Path, seeds: int, argv: list[str], transfer_seeds: int | None = None,
            stages: tuple[str, ...] = ALL_STAGES, tune_runs: int | None = None) -> dict:
    """Measure `stages`; each held-out setting and `critic` is one part of `report` in the results manifest,
    recorded from `argv`. With `tune_runs`, tune L2 on that many of the evolutions' training runs first (stage
    `tuning`; without it in `stages`, the recorded tuning of the same grid and runs is kept)."""
    tick = time.perf_counter()
    evolutions, forms = load_evolutions(sources)
    preset = next(iter(evolutions.values()))["config"]["preset"]
    artefacts = report.parent / report.stem
    artefacts.mkdir(parents=True, exist_ok=True)
    save_artefacts(evolutions, artefacts)
    summaries = {name: evolution_summary(e) for name, e in evolutions.items()}
    candidates, chosen = learned_losses(evolutions, forms, summaries)
    learned = {entry["learned"]: candidates[entry["learned"]] for entry in chosen.values()}
    selected = chosen[forms[0]]["selected"]
    for name, loss in learned.items():
        files.write_atomic(artefacts / f"{name}_meta_params.msgpack", serialization.to_bytes(loss.meta_params))
    budget = int(evolutions[selected]["config"]["task_info"]["total_timesteps"])
    config = value_loss.inner_config(preset, total_timesteps=budget)
    shape = value_loss_shape.shape_numbers(learned["learned"].meta_params) if forms[0] == "scaled" else None
    # The published analysis (the scaled form, no tuning) records what it always did; one with another form or a
    # tuned L2 adds each form's entry, the loss numbers of `shape.loss_numbers` and paired differences.
    extended = bool(tune_runs) or forms != ["scaled"]
    # every ES seed's mean, not only the selected one's: how much of a shape is the search's, not one seed's
    loss_shapes = ({"l2": value_loss_shape.loss_numbers(l2, None)} | {
        name: value_loss_shape.loss_numbers(loss.value_loss, loss.meta_params) for name, loss in candidates.items()
        if name in learned or "es_seed" in name} if extended else {})
    from purerl_lab.studies.value_loss import markdown as value_loss_markdown, plots as value_loss_plots

    for form, entry in chosen.items():
        figure = "loss.png" if entry["learned"] == "learned" else f"loss_{form}.png"
        value_loss_plots.loss_figure(learned[entry["learned"]].meta_params, artefacts / figure, form)
    held, dynamics, previous_tuning = previous_stages(report, {form: entry["selected"] for form, entry in chosen.items()},
                                                      stages)
    origin = manifest.run_facts(argv)  # the commit and machine this run started on
    evolution_seeds = sorted({int(e["config"]["es"]["seed"]) for e in evolutions.values()})
    es = evolutions[selected]["config"]["es"]

    def record_part(stage: str, started: float, env_steps: int, held_out_seeds: list[int]) -> None:
        manifest.record("value_loss", report, stage, argv, time.perf_counter() - started,
                        {"population": es["population_size"], "generations": es["generations"],
                         "env_steps_per_run": env_steps, "seeds": held_out_seeds},
                        {"es_seeds": evolution_seeds})

    def stamp():
        return origin | {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                         "wall_s": round(time.perf_counter() - tick, 1)}

    design = ({"grid": list(tuning.GRID), "runs": tune_runs, "es_seeds": evolution_seeds, "total_timesteps": budget}
              if tune_runs else None)
    tuned = kept_tuning(previous_tuning.get("tuned_l2"), design, stages)
    if tune_runs and tuned is None:
        tuned = tuned_l2(evolutions, config, tune_runs) | {"es_seeds": evolution_seeds, "measured": stamp()}
    if not same_tuned_l2(previous_tuning.get("tuned_l2"), tuned):
        held, dynamics = {}, None  # stages measured beside another tuned L2 (or none) are not kept
    # L2 tuned again at 5x the budget, where the 100k choice need not be the best: the 5x stages' fair baseline
    design_5x = design and design | {"runs": min(tune_runs, TUNE_RUNS_5X), "total_timesteps": 5 * budget}
    tuned_5x = kept_tuning(previous_tuning.get("tuned_l2_5x"), design_5x, stages, TUNING_5X)
    if tune_runs and tuned_5x is None:
        tuned_5x = (tuned_l2(evolutions, config.replace(total_timesteps=5 * budget), design_5x["runs"])
                    | {"es_seeds": evolution_seeds, "measured": stamp()})
    if not same_tuned_l2(previous_tuning.get("tuned_l2_5x"), tuned_5x):
        held = {k: v for k, v in held.items() if published.REPLICATIONS.get(k, k) != "5x_budget"}
    baselines = value_loss.baselines(tuned["vf_coef"] if tuned else None)
    if tuned:
        loss_shapes["tuned_l2"] = value_loss_shape.loss_numbers(l2, None, vf_coef=tuned["vf_coef"])
    if tuned_5x:
        loss_shapes["tuned_l2_5x"] = value_loss_shape.loss_numbers(l2, None, vf_coef=tuned_5x["vf_coef"])
    forms_record = {form: {**entry, "task": evolutions[entry["selected"]]["config"]["task_info"],
                           "es_seeds": {n: summaries[n] for n, e in evolutions.items() if e["form"] == form},
                           "loss_shape": loss_shapes.get(entry["learned"])} for form, entry in chosen.items()}

    def write():
        """The record so far: each stage is written as soon as it is done, so a cut-off run still leaves
        a consistent document of what it measured (the missing stages are listed in it)."""
        record = build_record(held, forms_record[forms[0]]["es_seeds"], selected, shape, dynamics, preset,
                              evolutions[selected]["config"],
                              *((forms_record, loss_shapes, tuned, tuned_5x) if extended else ()))
        record["provenance"] = stamp()
        files.write_atomic(report.with_suffix(".json"), json.dumps(results.json_safe(record), indent=2))
        files.write_atomic(report, value_loss_markdown.render(record, artefacts.name))
        return record

    # Every ES seed's mean and the scale-only ablations at the training budget; the transfers compare the
    # selected losses with the baselines. Then each setting again on disjoint seeds, its replication (the other ES
    # seeds' means left out there: no verdict is drawn on them).
    settings = value_loss.transfer_settings(budget)
    for name in (*settings, *published.REPLICATIONS):
        if name not in stages:
            continue
        setting = published.REPLICATIONS.get(name, name)
        count = seeds if setting == "training_budget" else (transfer_seeds or seeds)
        evaluated = (candidates if name == "training_budget" else
                     {n: c for n, c in candidates.items() if n in learned or n.endswith("_scale_only")}
                     if setting == "training_budget" else learned) | baselines
        if setting == "5x_budget" and tuned_5x:
            evaluated["tuned_l2_5x"] = value_loss.Loss(l2, None, HyperParams(vf_coef=tuned_5x["vf_coef"]))
        start = value_loss.HELD_OUT_SEED_START if name == setting else value_loss.REPLICATION_SEED_START
        stage_started = time.perf_counter()
        part, curves = value_loss.held_out(evaluated, {name: settings[setting]}, {name: count}, preset,
                                           on_result=_print_result, seed_start=start)
        part[name]["config"]["measured"] = stamp()
        held |= part
        record_part(name, stage_started, settings[setting]["total_timesteps"], list(range(start, start + count)))
        if name == "training_budget":
            results.plot_labelled_curves(artefacts, {n: curves[name][n] for n in [*learned, *baselines]},
                                         config.batch_size, f"{value_loss.ENV}: held-out seeds at the training budget",
                                         filename="returns.png")
        write()
    if "critic" in stages:
        stage_started = time.perf_counter()
        dynamics_seeds = list(range(value_loss.HELD_OUT_SEED_START, value_loss.HELD_OUT_SEED_START + DYNAMICS_SEEDS))
        dynamics = value_loss_shape.critic_dynamics(learned | baselines, config, dynamics_seeds)
        dynamics["measured"] = stamp()
        record_part("critic", stage_started, budget, dynamics_seeds)
        value_loss_plots.dynamics_figure(dynamics, artefacts / "critic.png")
    return write()


def _print_result(setting: str, name: str, result: dict) -> None:
    s = result["auc"]
    print(f"{setting:16s} {name:20s} IQM {s['iqm']:.1f} [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}] n={s['n']}", flush=True)
