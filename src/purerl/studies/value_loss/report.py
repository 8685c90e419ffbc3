"""`purerl analyze value-loss`: held-out evaluation, shape and critic dynamics of evolved value losses,
written as docs/results/value_loss.{md,json} with plots and the evolved meta-parameters beside them.

Sources are evolve run directories (or the committed copies of them in docs/results/value_loss/), one
per ES seed. The loss called `learned` is the ES mean of the seed with the highest population-mean
fitness over its last 10 generations: chosen from evolution's own numbers, before any held-out run.
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
from purerl.publish import provenance as manifest
from purerl.algos.objectives import clipped_l2, l2, learned_log_weight, learned_value_loss
from purerl.config import ConfigError
from purerl.studies import value_loss
from purerl.studies.value_loss import shape as value_loss_shape

SELECTION_WINDOW = 10  # generations whose mean fitness picks the ES seed
DYNAMICS_SEEDS = 16


def load_evolution(source: Path) -> dict:
    """config, per-generation log and ES-mean meta-parameters of one value-loss evolve run."""
    config_path = source / rundir.CONFIG
    if not config_path.is_file():
        raise ConfigError(f"{source} is not a value-loss evolve run (no {rundir.CONFIG})")
    config = json.loads(config_path.read_text())
    if config.get("task") != "value-loss":
        raise ConfigError(f"{source} is not a value-loss evolve run")
    log = evolve_files.read_log(source)
    if not log:
        raise ConfigError(f"{source} has no {evolve_files.GENERATIONS_CSV}")
    params = evolve_files.load_meta_params(source / evolve_files.MEAN_PARAMS, value_loss.initial_params())
    return {"source": source, "config": config, "log": log, "params": params}


def save_artefacts(evolutions: dict[str, dict], directory: Path) -> None:
    """Copy what re-evaluation needs (config, log, ES mean) to `directory`/NAME, unless already there."""
    for name, evolution in evolutions.items():
        target = directory / name
        if target.resolve() == Path(evolution["source"]).resolve():
            continue
        target.mkdir(parents=True, exist_ok=True)
        for entry in (rundir.CONFIG, evolve_files.GENERATIONS_CSV, evolve_files.MEAN_PARAMS):
            shutil.copyfile(Path(evolution["source"]) / entry, target / entry)


def evolution_summary(evolution: dict) -> dict:
    means = [row["mean"] for row in evolution["log"]]
    return {"generations": len(means), "first_generation_mean_fitness": means[0],
            "last_generations_mean_fitness": float(np.mean(means[-SELECTION_WINDOW:])),
            "seconds": float(sum(row["seconds"] for row in evolution["log"])), "es": evolution["config"]["es"]}


def constant_weight_params(meta_params) -> dict:
    """L2 times the learned loss's own weight at v = t (geometric mean over the probe targets): the ablation
    that keeps the learned scale and drops the shape."""
    targets = jnp.asarray(value_loss_shape.PROBE_TARGETS)
    log_weight = float(jnp.mean(learned_log_weight(meta_params, targets, targets)))
    return {"hidden": meta_params["hidden"],
            "out": {"kernel": jnp.zeros_like(meta_params["out"]["kernel"]), "bias": jnp.full((1,), log_weight)}}


STAGES = manifest.STUDIES["value_loss"].parts  # each stage is one part of the published document
MAIN = ("learned", "l2", "clipped_l2")


def previous_stages(report: Path, selected: str, stages: tuple[str, ...]) -> tuple[dict, dict | None]:
    """Held-out settings and critic dynamics already in `report`'s JSON for the same learned loss, minus
    the stages to measure again: so stages can be measured apart (on different machines), each with
    its own provenance."""
    path = report.with_suffix(".json")
    if not path.is_file():
        return {}, None
    record = json.loads(path.read_text())
    if record.get("evolution", {}).get("selected") != selected:
        return {}, None
    held = {k: v for k, v in record.get("all_candidates", {}).items() if k not in stages}
    dynamics = None if "critic" in stages else record.get("critic_dynamics")
    for stage in [rows["config"] for rows in held.values()] + ([dynamics] if dynamics else []):
        stage.setdefault("measured", record.get("provenance"))  # a record from one run: its own provenance
    return held, dynamics


def analyze(sources: list[Path], report: Path, seeds: int, argv: list[str], transfer_seeds: int | None = None,
            stages: tuple[str, ...] = STAGES) -> dict:
    """Measure `stages`; each is one part of `report` in the results manifest, recorded from `argv`."""
    tick = time.perf_counter()
    evolutions = {}
    for source in sources:
        evolution = load_evolution(Path(source))
        evolutions[f"es_seed{evolution['config']['es']['seed']}"] = evolution
    if len(evolutions) < len(sources):
        raise ConfigError("two sources are runs of the same ES seed")
    presets = {e["config"]["preset"] for e in evolutions.values()}
    if len(presets) != 1:
        raise ConfigError(f"the sources were evolved with different presets: {sorted(presets)}")
    preset = presets.pop()
    artefacts = report.parent / report.stem
    artefacts.mkdir(parents=True, exist_ok=True)
    save_artefacts(evolutions, artefacts)
    summaries = {name: evolution_summary(e) for name, e in evolutions.items()}
    selected = max(summaries, key=lambda name: summaries[name]["last_generations_mean_fitness"])
    chosen = evolutions[selected]["params"]
    files.write_atomic(artefacts / "learned_meta_params.msgpack", serialization.to_bytes(chosen))

    candidates = {"learned": chosen, "learned_scale_only": constant_weight_params(chosen)}
    candidates |= {name: e["params"] for name, e in evolutions.items() if name != selected}
    budget = int(evolutions[selected]["config"]["task_info"]["total_timesteps"])
    config = value_loss.inner_config(preset, total_timesteps=budget)
    shape = value_loss_shape.shape_numbers(chosen)
    from purerl.studies.value_loss import markdown as value_loss_markdown, plots as value_loss_plots

    value_loss_plots.loss_figure(chosen, artefacts / "loss.png")
    held, dynamics = previous_stages(report, selected, stages)
    origin = manifest.run_facts(argv)  # the commit and machine this run started on
    evolution_seeds = sorted(int(e["config"]["es"]["seed"]) for e in evolutions.values())
    es = evolutions[selected]["config"]["es"]

    def record_part(stage: str, started: float, env_steps: int, held_out_seeds: list[int]) -> None:
        manifest.record("value_loss", report, stage, argv, time.perf_counter() - started,
                        {"population": es["population_size"], "generations": es["generations"],
                         "env_steps_per_run": env_steps, "seeds": held_out_seeds},
                        {"es_seeds": evolution_seeds})

    def stamp():
        return origin | {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                         "wall_s": round(time.perf_counter() - tick, 1)}

    def write():
        """The record so far: each stage is written as soon as it is done, so a cut-off run still leaves
        a consistent document of what it measured (the missing stages are listed in it)."""
        record = build_record(held, summaries, selected, shape, dynamics, preset, evolutions[selected]["config"])
        record["provenance"] = stamp()
        files.write_atomic(report.with_suffix(".json"), json.dumps(results.json_safe(record), indent=2))
        files.write_atomic(report, value_loss_markdown.render(record, artefacts.name))
        return record

    # Every ES seed's mean and the scale-only ablation at the training budget; the transfers compare the
    # selected loss with the baselines.
    for name, spec in value_loss.transfer_settings(budget).items():
        if name not in stages:
            continue
        count = seeds if name == "training_budget" else (transfer_seeds or seeds)
        evaluated = candidates if name == "training_budget" else {"learned": chosen}
        stage_started = time.perf_counter()
        part, curves = value_loss.held_out(evaluated, {name: spec}, {name: count}, preset, on_result=_print_result)
        part[name]["config"]["measured"] = stamp()
        held |= part
        record_part(name, stage_started, spec["total_timesteps"],
                    list(range(value_loss.HELD_OUT_SEED_START, value_loss.HELD_OUT_SEED_START + count)))
        if name == "training_budget":
            results.plot_labelled_curves(artefacts, {n: curves[name][n] for n in MAIN}, config.batch_size,
                                         f"{value_loss.ENV}: held-out seeds at the training budget", filename="returns.png")
        write()
    if "critic" in stages:
        stage_started = time.perf_counter()
        dynamics_seeds = list(range(value_loss.HELD_OUT_SEED_START, value_loss.HELD_OUT_SEED_START + DYNAMICS_SEEDS))
        dynamics = value_loss_shape.critic_dynamics(
            {"learned": (learned_value_loss, chosen), "l2": (l2, None), "clipped_l2": (clipped_l2, None)},
            config, dynamics_seeds)
        dynamics["measured"] = stamp()
        record_part("critic", stage_started, budget, dynamics_seeds)
        value_loss_plots.dynamics_figure(dynamics, artefacts / "critic.png")
    return write()


def _print_result(setting: str, name: str, result: dict) -> None:
    s = result["auc"]
    print(f"{setting:16s} {name:20s} IQM {s['iqm']:.1f} [{s['ci95_low']:.1f}, {s['ci95_high']:.1f}] n={s['n']}", flush=True)


def build_record(held: dict, summaries: dict, selected: str, shape: dict, dynamics: dict, preset: str,
                 evolve_config: dict) -> dict:
    """The JSON document: `held_out` maps learned / l2 / clipped_l2 to summaries of the fitness metric at
    the training budget, and each transfer setting to the same."""
    main = ("learned", "l2", "clipped_l2")

    def table(setting):
        rows = {name: held[setting][name]["auc"] for name in main}
        rows["verdict_vs_l2"] = value_loss.verdict(rows["learned"], rows["l2"])
        rows["verdict_vs_clipped_l2"] = value_loss.verdict(rows["learned"], rows["clipped_l2"])
        rows["config"] = held[setting]["config"]
        return rows

    held_out = table("training_budget") if "training_budget" in held else {}
    held_out |= {setting: table(setting) for setting in held if setting != "training_budget"}
    missing = [stage for stage in STAGES if stage not in held and (stage != "critic" or dynamics is None)]
    return {
        "fitness_metric": "per seed: mean episode return over all updates of training (the evolution's fitness, "
                          "'auc'); summaries are mean, IQM and a 95% percentile-bootstrap CI of the IQM over seeds",
        "preset": preset,
        "evolution": {"selected": selected, "selection": f"highest population-mean fitness over the last "
                      f"{SELECTION_WINDOW} generations", "task": evolve_config["task_info"], "es_seeds": summaries},
        "held_out": held_out,
        "all_candidates": held,
        "shape": shape,
        "critic_dynamics": dynamics,
        "not_measured": missing,
    }
