"""Fingerprints of the PPO-based studies' commands: compare (dpo), analyze value-loss, ES runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from purerl_lab.publish.fingerprint.core import REPO, Fingerprint, abstract, host_common, parse_command, probe_inputs


# ------------------------------------------------------------------------------------------------ PPO runs
def member_programs(fp: Fingerprint, name: str, train, hyperparams, meta_params=None) -> None:
    """One member's `init(key, hp)` and `run(state, hp, meta, start, stop)` (chunks compose exactly, so the run
    of every chunk is this program), as `experiment.run` vmaps and shards them."""
    import jax
    import jax.numpy as jnp

    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    hp = abstract(jax.tree.map(lambda x: np.asarray(x, np.float32), hyperparams))
    state = fp.program(f"{name} init", train.init, key, hp)
    step = jax.ShapeDtypeStruct((), jnp.int32)
    fp.program(f"{name} run", train.run, state, hp, abstract(meta_params), step, step)
    return state


def member_keys(fp: Fingerprint, members) -> None:
    """Seeds to keys, as the population derives them (the seeds are constants of the program)."""
    fp.program("member keys", members.keys)


def compare_part(fp: Fingerprint, command: str) -> None:
    """`purerl compare`: each objective's training at the env's config, on the same seeds, and the statistics."""
    from purerl.cli.train import train_spec
    from purerl_lab.studies import lpo_report
    from purerl.run.trainspec import TrainSpec

    args = parse_command(command)
    base = train_spec(args)
    objectives = [o for o in args.objectives.split(",") if o]
    for objective in objectives:
        spec = TrainSpec(**{**base.__dict__, "objective": objective})
        members = spec.validate()
        name, _, path = objective.partition(":")
        label = name if not path else f"{name}:{Path(path).parent.name}"
        member_programs(fp, label, spec.build(), _first(members.hyperparams), spec.meta_params())
        if path:
            fp.files(f"{label} meta-parameters", [REPO / path])
    # What the programs take as data: the hyperparameter values (the seeds are constants of the keys' program).
    # The rest of the spec is static and in the programs, so a new config field with a default stales nothing.
    fp.input("hyperparameters", {"hyperparams": base.to_json()["hyperparams"], "grid": base.to_json()["grid"]})
    member_keys(fp, base.validate())
    fp.probe("compare curves", _compare_probe)
    kinds = lpo_report.fitness_kinds(objectives, base.config)
    if kinds:  # an LPO evolution's training task: each objective's fitness per seed, and the drifts paired with PPO
        fp.probe("lpo training fitness", _lpo_fitness_probe, kinds)
    host_common(fp)


def _first(hyperparams):
    """Member 0's hyperparameters from a population's (leaves of shape [members])."""
    import jax

    return jax.tree.map(lambda x: np.asarray(x)[0], hyperparams.as_arrays())


def _compare_probe() -> dict:
    from purerl_lab.studies import compare

    rng = np.random.default_rng(3)
    curve = rng.normal(20.0, 5.0, (60, 12))
    return {"late": compare._return_at(curve, compare.LATE_FRACTION), "fraction": compare.LATE_FRACTION}


def _paired_probe() -> list[dict]:
    """`stats.paired_difference` on the fixed probe inputs against a shifted reversal of themselves."""
    from purerl import stats

    return [stats.paired_difference(v, v[::-1] - 5.0) for v in probe_inputs()]


def _lpo_fitness_probe(kinds: list[str]) -> dict:
    """The evolutions' fitness per seed from curves with NaNs (`evolve.curve_fitness`), and paired differences."""
    from purerl.meta.evolve import curve_fitness

    rng = np.random.default_rng(17)
    curves = [np.where(rng.random((n, 16)) < 0.3, np.nan, rng.normal(150.0, 40.0, (n, 16))) for n in (12, 128)]
    return {"fitness": {kind: [curve_fitness(c, kind) for c in curves] for kind in kinds},
            "paired": _paired_probe()}


# ------------------------------------------------------------------------------------------------ value loss
def value_loss_part(fp: Fingerprint, command: str) -> None:
    """`purerl analyze value-loss`: the committed evolutions, the ES seed it selects per loss form, PPO with each
    learned loss and both baselines at every held-out setting, the critic probe and the numbers made from its
    errors (`_critic_errors`), and the statistics. A command that evaluates another form than the scaled one, or
    tunes L2 (`--tuned-l2`), makes the extended record (`report.analyze`): then also its forms, the tuning's keys
    and choice, the loss numbers and the paired differences."""
    import jax
    import jax.numpy as jnp

    from purerl.algos.objectives import clipped_l2, l2
    from purerl.algos.ppo import make_train
    from purerl.config import HyperParams
    from purerl.run.population import make_members
    from purerl_lab.studies import value_loss
    from purerl_lab.studies.value_loss import report as value_loss_report, shape as value_loss_shape, tuning

    args = parse_command(command)
    sources = [REPO / s for s in args.run_dir.split(",") if s]
    fp.files("evolutions", [p for s in sources for p in sorted(s.iterdir())
                            if p.name in ("config.json", "generations.csv", "mean_meta_params.msgpack")])
    evolutions, forms = value_loss_report.load_evolutions(sources)
    summaries = {name: value_loss_report.evolution_summary(e) for name, e in evolutions.items()}
    _, chosen = value_loss_report.learned_losses(evolutions, forms, summaries)
    selected = chosen[forms[0]]["selected"]
    timeless = {k: {**{key: value for key, value in v.items() if key != "made_by"}, "seconds": None}
                for k, v in summaries.items()}  # who made an evolution and how long it took move no number
    fp.input("selection", {"selected": selected, "summaries": timeless})
    extended = args.tuned_l2 or forms != ["scaled"]
    if extended:
        fp.input("forms", chosen)
    learned = {}
    for form, entry in chosen.items():
        loss, params = value_loss.FORMS[form].loss, evolutions[entry["selected"]]["params"]
        learned[entry["learned"]] = (loss, params)
        if form == "scaled":
            fp.probe("scale-only ablation", value_loss_report.constant_weight_params, params)
            fp.probe("loss shape", value_loss_shape.shape_numbers, params)
        else:
            fp.probe(f"scale-only ablation {form}", value_loss_report.scale_only_params, form, params)
        if extended:
            fp.probe(f"loss numbers {entry['learned']}", value_loss_shape.loss_numbers, loss, params)
    preset = evolutions[selected]["config"]["preset"]
    budget = int(evolutions[selected]["config"]["task_info"]["total_timesteps"])
    fp.input("arguments", {"seeds": args.seeds, "transfer_seeds": args.transfer_seeds, "preset": preset,
                           "budget": budget, "held_out_start": value_loss.HELD_OUT_SEED_START,
                           "settings": value_loss.transfer_settings(budget),
                           "dynamics_seeds": value_loss_report.DYNAMICS_SEEDS})
    hp = _first(make_members([0], HyperParams()).hyperparams)
    losses = {name: (loss, abstract(params)) for name, (loss, params) in learned.items()}
    losses |= {"l2": (l2, None), "clipped_l2": (clipped_l2, None)}  # tuned L2 and the tuning run l2's programs
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    for setting, spec in value_loss.transfer_settings(budget).items():
        config = value_loss.inner_config(preset, env=spec["env"], total_timesteps=spec["total_timesteps"])
        for name, (loss, params) in losses.items():
            train = make_train(config, value_loss=loss)
            fp.program(f"{setting} {name} training", lambda k, h, m, train=train: train(k, h, m).metrics["episode_return"],
                       key, abstract(hp), params)
    config = value_loss.inner_config(preset, total_timesteps=budget)
    for name, (loss, params) in losses.items():  # critic dynamics: the chunks of one run and the probe between them
        train = make_train(config, value_loss=loss)
        state = member_programs(fp, f"critic {name}", train, hp, params)

        def probe(state, hp, meta, train=train):
            start_carry = state.carry
            _, trajectory = train.rollout(state, hp, meta)
            values, _, targets = train.advantages(state.params, trajectory, start_carry, hp)
            return values - targets, targets

        fp.program(f"critic {name} probe", probe, state, abstract(hp), params)
    fp.probe("critic errors", _critic_errors)
    member_keys(fp, make_members(list(range(value_loss.HELD_OUT_SEED_START, value_loss.HELD_OUT_SEED_START
                                            + max(args.seeds, args.transfer_seeds or 0))), HyperParams()))
    fp.probe("fitness per seed", lambda: [value_loss.fitness_per_seed(c) for c in _curves()])
    if args.tuned_l2:
        runs = args.tune_runs or tuning.RUNS
        fp.input("tuning", {"grid": list(tuning.GRID), "runs": runs})
        fp.probe("tuning keys", tuning.tuning_keys, [e["config"]["es"] for e in evolutions.values()], runs)
        fp.probe("tuning choice", lambda: tuning.choose(tuning.GRID, _tuning_fitness(len(tuning.GRID))))
    if extended:
        fp.probe("loss numbers l2", value_loss_shape.loss_numbers, l2, None)
        fp.probe("paired differences", _paired_probe)
    host_common(fp)


def _critic_errors() -> dict:
    """The critic's numbers from a probe's errors (pooled and per seed) and the paired comparison of the final
    per-seed errors, on fixed errors of 12 seeds."""
    from purerl_lab.studies.value_loss import record, shape

    rng = np.random.default_rng(17)
    rows = {name: shape.error_numbers(rng.normal(bias, 6.0, (12, 8, 4)), rng.normal(40.0, 20.0, (12, 8, 4)))
            for name, bias in (("learned", -1.0), ("l2", 0.0), ("clipped_l2", 0.5))}
    return {"rows": rows, "paired": record.critic_paired({name: {"probes": [row]} for name, row in rows.items()})}


def _tuning_fitness(count: int) -> np.ndarray:
    """Fitness [coefficients, runs] for the tuning's choice, one coefficient with a NaN run."""
    fitness = np.random.default_rng(13).normal(150.0, 40.0, (count, 16))
    fitness[0, 3] = np.nan
    return fitness


def _curves() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [np.where(rng.random((n, 12)) < 0.3, np.nan, rng.normal(80.0, 40.0, (n, 12))) for n in (8, 50)]


# ------------------------------------------------------------------------------------------------ evolution
def es_programs(fp: Fingerprint, name: str, task, config) -> None:
    """An ES run: the fitness of one candidate (its rollouts vmapped and averaged, as `Evolution` evaluates a
    population), the strategy's init, ask and tell lowered at the ES config, and the host loop around them
    (keys per generation, repair of bad fitness, ask -> evaluate -> tell) probed for two generations with a
    synthetic fitness in place of training."""
    import jax
    import jax.numpy as jnp

    from purerl.meta.evolve import Evolution

    evolution = Evolution(task, config)
    per_candidate = jax.vmap(task.fitness, in_axes=(0, None))
    keys = jax.ShapeDtypeStruct((config.rollouts, 2), jnp.uint32)
    fp.program(f"{name} fitness", lambda meta, keys: per_candidate(keys, meta).mean(), abstract(task.template), keys)
    strategy, params = evolution.strategy, evolution.params
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    state = fp.program(f"{name} es init", lambda k, mean, p: strategy.init(k, mean, p), key, abstract(task.template),
                       abstract(params))
    population = fp.program(f"{name} es ask", lambda k, s, p: strategy.ask(k, s, p), key, state, abstract(params))[0]
    fitness = jax.ShapeDtypeStruct((config.population_size,), jnp.float32)
    fp.program(f"{name} es tell", lambda k, x, f, s, p: strategy.tell(k, x, f, s, p), key, population, fitness,
               state, abstract(params))
    fp.probe(f"{name} es loop", _es_loop, evolution)


def _es_loop(evolution) -> dict:
    """The ES state and mean after two generations of `evolution`, with fitness = a fixed function of each
    candidate and one NaN among them (repaired as a bad fitness is). The generation's log row and best candidate
    are bookkeeping: the published numbers come from the ES mean."""
    def evaluate(key, population):
        flat = np.concatenate([np.asarray(x, np.float64).reshape(len(np.asarray(x)), -1)
                               for x in jax_leaves(population)], axis=1)
        fitness = np.sin(flat @ np.linspace(-1.0, 1.0, flat.shape[1])) + np.asarray(key, np.float64).sum() * 1e-12
        fitness[1] = np.nan
        return fitness

    evolution.evaluate = evaluate
    state = evolution.init_state()
    for index in range(2):
        state = evolution.generation(state, index)[0]
    return {"state": state, "mean": evolution.mean(state)}


def jax_leaves(tree):
    import jax

    return jax.tree.leaves(tree)
