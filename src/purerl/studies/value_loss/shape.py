"""What a learned value loss looks like, and what it does to the critic while PPO trains.

Shape numbers are measured on the loss as a function of the value v at a fixed target t (the
loss PPO's critic descends): asymmetry compares over-estimation (v > t) with under-estimation by
the same amount, convexity is the sign of d^2 L / dv^2. Dynamics probe the critic at points
during training: on a fresh rollout, the error v - GAE target, its mean (bias), its mean size,
and its distribution at the end.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from purerl.algos.objectives import learned_log_weight, learned_value_loss
from purerl.algos.ppo import make_train
from purerl.config import HyperParams, PPOConfig
from purerl.run.population import Placement, batched, make_members

ERROR_SIZES = (1.0, 3.0, 10.0, 30.0)  # |v - t| at which over- and under-estimation are compared
PROBE_TARGETS = (5.0, 20.0, 50.0, 90.0)  # CartPole returns-to-go seen during training (gamma 0.99)


def loss_of_value(meta_params, target: float):
    """L(v) = learned loss at a fixed target t, as a scalar function of the value v."""
    return lambda v: learned_value_loss(v, v, jnp.asarray(target), None, meta_params)


def shape_numbers(meta_params, targets=PROBE_TARGETS, error_sizes=ERROR_SIZES, max_error: float = 30.0) -> dict:
    """Asymmetry, convexity and overall scale of the learned loss, as numbers.

    - `over_under_ratio[m]`: L(t + m) / L(t - m), geometric mean over targets (1 for L2; > 1 punishes
      over-estimation more);
    - `nonconvex_fraction`: share of the grid v - t in [-max_error, max_error] where d^2L/dv^2 < 0,
      for each target (0 for L2), and the most negative curvature relative to L2's (which is 1);
    - `weight_at_zero`: exp(g) at v = t, the loss's scale relative to L2 there.
    """
    out = {"targets": list(targets), "over_under_ratio": {}, "weight_at_zero": {}, "nonconvex_fraction": {},
           "min_curvature": {}, "nonconvex_errors": {}}
    errors = jnp.linspace(-max_error, max_error, 601)
    for size in error_sizes:
        ratios = [loss_of_value(meta_params, t)(t + size) / loss_of_value(meta_params, t)(t - size) for t in targets]
        out["over_under_ratio"][f"{size:g}"] = float(np.exp(np.mean(np.log(np.asarray(ratios)))))
    for t in targets:
        curvature = np.asarray(jax.vmap(jax.grad(jax.grad(loss_of_value(meta_params, t))))(t + errors))
        bent = np.asarray(errors)[curvature < 0]
        out["weight_at_zero"][f"{t:g}"] = float(np.exp(learned_log_weight(meta_params, jnp.asarray(t), jnp.asarray(t))))
        out["nonconvex_fraction"][f"{t:g}"] = float(np.mean(curvature < 0))
        out["min_curvature"][f"{t:g}"] = float(curvature.min())
        out["nonconvex_errors"][f"{t:g}"] = [float(bent.min()), float(bent.max())] if bent.size else None
    out["convex"] = all(v == 0 for v in out["nonconvex_fraction"].values())
    return out


def curves(meta_params, target: float, errors: jax.Array) -> dict[str, np.ndarray]:
    """Learned loss and its derivative in v at one target, next to L2 (both unscaled)."""
    learned = loss_of_value(meta_params, target)
    l2 = lambda v: 0.5 * (v - target) ** 2  # noqa: E731
    values = target + errors
    return {
        "learned": np.asarray(jax.vmap(learned)(values)),
        "learned_slope": np.asarray(jax.vmap(jax.grad(learned))(values)),
        "l2": np.asarray(jax.vmap(l2)(values)),
        "l2_slope": np.asarray(jax.vmap(jax.grad(l2))(values)),
    }


def log_weight_grid(meta_params, values: jax.Array, targets: jax.Array) -> np.ndarray:
    """g(v, t) on a grid [targets, values]: where the learned loss weighs errors more or less than L2."""
    t, v = jnp.meshgrid(targets, values, indexing="ij")
    return np.asarray(learned_log_weight(meta_params, v, t))


def critic_dynamics(losses: dict, config: PPOConfig, seeds: list[int], probes: int = 10,
                    bins: np.ndarray | None = None) -> dict:
    """Train each loss (name -> (value_loss, meta_params)) on `seeds`, pausing `probes` times to measure
    the critic on a fresh rollout: mean error v - t (bias), mean |v - t|, mean |v - t| / |t|; plus a
    histogram of v - t at the end, pooled over seeds."""
    bins = np.linspace(-40.0, 40.0, 81) if bins is None else bins
    members = make_members(seeds, HyperParams())
    placement = Placement.for_members(len(seeds))
    out = {}
    for name, (value_loss, meta_params) in losses.items():
        train = make_train(config, value_loss=value_loss)

        def probe(state, hp, meta, train=train):
            start_carry = state.carry
            _, trajectory = train.rollout(state, hp, meta)
            values, _, targets = train.advantages(state.params, trajectory, start_carry, hp)
            return values - targets, targets

        group = dict(num_member_args=2, cpu_group=config.cpu_group)
        init = batched(train.init, placement, num_shared_args=1, **group)
        run = batched(train.run, placement, num_shared_args=3, **group)
        measure = batched(probe, placement, num_shared_args=1, **group)
        keys, hps = placement.put(members.keys()), placement.put(members.hyperparams.as_arrays())
        state = init(keys, hps, meta_params)
        stops = np.linspace(0, config.num_updates, probes + 1).astype(int)[1:]
        rows, start = [], 0
        for stop in stops:
            state = run(state, hps, meta_params, start, int(stop))
            errors, targets = placement.get(measure(state, hps, meta_params), len(seeds))
            rows.append({"update": int(stop), "env_steps": int(stop) * config.batch_size,
                         "bias": float(errors.mean()), "abs_error": float(np.abs(errors).mean()),
                         "relative_abs_error": float(np.abs(errors).mean() / (np.abs(targets).mean() + 1e-8)),
                         "over_estimated_fraction": float((errors > 0).mean())})
            start = int(stop)
        counts, _ = np.histogram(np.clip(errors, bins[0], bins[-1]), bins=bins)
        out[name] = {"probes": rows, "final_error_histogram": counts.tolist(),
                     "final_error_quantiles": {f"{q:g}": float(np.quantile(errors, q)) for q in (0.05, 0.5, 0.95)}}
    out["histogram_bins"] = bins.tolist()
    out["seeds"] = seeds
    return out
