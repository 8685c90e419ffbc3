"""The fingerprint of `purerl analyze value-loss`: the committed evolutions, the ES seed selected per loss form,
PPO with each learned loss and both baselines at every held-out setting, the critic probe, and the statistics."""

from __future__ import annotations

import numpy as np

from purerl_lab.publish.fingerprint.core import REPO, Fingerprint, abstract, host_common
from purerl_lab.publish.fingerprint.training import first_member, member_keys, member_programs, paired_probe
from purerl_lab.studies.commands import parse_command


def value_loss_part(fp: Fingerprint, command: str, part: str | None = None) -> None:
    """`purerl analyze value-loss`: the committed evolutions, the ES seed it selects per loss form, PPO with each
    learned loss and both baselines at every held-out setting, the critic probe and the numbers made from its
    errors (`_critic_errors`), and the statistics. A command that evaluates another form than the scaled one, or
    tunes L2 (`--tuned-l2`), makes the extended record (`report.analyze`): then also its forms, the tuning's keys
    and choice, the loss numbers and the paired differences."""
    import jax
    import jax.numpy as jnp

    from purerl.algos.objectives import clipped_l2, l2
    from purerl.algos.ppo import make_train
    from purerl.algos.ppo_config import HyperParams
    from purerl.run.population import make_members
    from purerl_lab.studies import value_loss
    from purerl_lab.studies.value_loss import published, record as value_loss_record, report as value_loss_report
    from purerl_lab.studies.value_loss import shape as value_loss_shape, tuning

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
    hp = first_member(make_members([0], HyperParams()).hyperparams)
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
        fp.probe("paired differences", paired_probe)
    if part in published.REPLICATIONS:  # the same setting on disjoint seeds
        fp.input("replication seeds", {"start": value_loss.REPLICATION_SEED_START})
        fresh = make_members(list(range(value_loss.REPLICATION_SEED_START, value_loss.REPLICATION_SEED_START
                                        + max(args.seeds, args.transfer_seeds or 0))), HyperParams())
        fp.program("replication member keys", fresh.keys)
    if args.tuned_l2 and published.REPLICATIONS.get(part, part) == "5x_budget":  # beside L2 tuned at 5x
        runs_5x = min(args.tune_runs or tuning.RUNS, value_loss_record.TUNE_RUNS_5X)
        # its best lay at the grid's edge, so the extension past it made this baseline (the 100k tuning's did not)
        fp.input("tuning at 5x", {"grid": list(tuning.GRID), "runs": runs_5x, "extend": tuning.EXTEND})
        fp.probe("tuning extension at 5x", _tuning_extension)
        fp.probe("tuning keys at 5x", tuning.tuning_keys, [e["config"]["es"] for e in evolutions.values()], runs_5x)
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


def _tuning_extension() -> list:
    """The coefficients an extended tuning tries, on fixed fitness rising towards each edge and peaking inside."""
    from purerl_lab.studies.value_loss import tuning

    def rising(grid, peak):
        return np.asarray([[-abs(np.log2(c / peak))] * 3 for c in grid])

    return [tuning.extend_past_edges(tuning.GRID, lambda grid, peak=peak: rising(grid, peak), tuning.EXTEND)
            for peak in (0.001, 0.1, 2.0, 64.0)]
