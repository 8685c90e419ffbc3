"""What a learned value loss looks like, and what it does to the critic while PPO trains.

Shape numbers are measured on the loss as a function of the value v at a fixed target t (the
loss PPO's critic descends): asymmetry compares over-estimation (v > t) with under-estimation by
the same amount, convexity is the sign of d^2 L / dv^2. `shape_numbers` reads the scaled form through
its weight exp(g); `loss_numbers` reads any loss (either form, L2) through its slopes and curvature, and
divides it by its own curvature at v = t to separate shape from scale. Dynamics probe the critic at points
during training: on a fresh rollout, the error v - GAE target, its mean (bias), its mean size,
and its distribution at the end.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from purerl.algos.objectives import learned_log_weight, learned_value_loss
from purerl.algos.ppo import make_train
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.run.population import Placement, batched, make_members

ERROR_SIZES = (1.0, 3.0, 10.0, 30.0)  # |v - t| at which over- and under-estimation are compared
PROBE_TARGETS = (5.0, 20.0, 50.0, 90.0)  # CartPole returns-to-go seen during training (gamma 0.99)


SLOPE_STEP = 1e-3  # one-sided slopes at v = t are read this far to either side


def loss_of_value(meta_params, target: float, loss=learned_value_loss):
    """L(v) = a value loss (the scaled form by default) at a fixed target t, as a scalar function of the value v."""
    return lambda v: loss(v, v, jnp.asarray(target), HyperParams(), meta_params)


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


def curvature_at_zero(loss, meta_params, target: float) -> float:
    """d^2L/dv^2 at v = t: 1 for L2, and the scale of any loss near its target."""
    return float(jax.grad(jax.grad(loss_of_value(meta_params, target, loss)))(jnp.asarray(target, jnp.float32)))


def loss_numbers(loss, meta_params, targets=PROBE_TARGETS, error_sizes=ERROR_SIZES, max_error: float = 30.0,
                 vf_coef: float = HyperParams().vf_coef) -> dict:
    """What any value loss (a hook) does near and away from v = t, per probe target, as numbers on the error e = v - t.

    - `slope_left`, `slope_right`: dL/dv at e = -/+ SLOPE_STEP (0 for L2: a kink or a tilt at e = 0 shows here);
    - `curvature_at_zero`: d^2L/dv^2 at e = 0 (1 for L2), and `effective_vf_coef`, `vf_coef` times it: the value
      coefficient at which L2 pulls the critic as hard near the target;
    - `minimum_at`: the error in [-max_error, max_error] where L is smallest (0 for L2; elsewhere the critic
      settles off the target);
    - `over_under_ratio[m]`: (L(m) - L(0)) / (L(-m) - L(0)) (1 for L2; None unless both sides are above L(0));
    - `negative_curvature_share`: share of the errors in [-max_error, max_error] where d^2L/dv^2 < 0 (0 for L2);
    - `normalised[m]`: N(m) / (0.5 m^2) at m = -/+ each error size, and `shape_distance`: sum |N(e) - 0.5 e^2| /
      sum 0.5 e^2 over the errors, where N = (L - L(0)) / curvature at zero. Both see any multiple of L2 as L2
      (1 and 0), so what departs from them is shape beyond scale; None where the curvature at zero is not positive.

    Each is given per target ({"5": ...}) and in `summary`: the mean over targets, ratios as geometric means, the
    largest share.
    """
    errors = np.linspace(-max_error, max_error, 601)
    half_square = 0.5 * errors**2
    per_target = {}
    for t in targets:
        of_value = loss_of_value(meta_params, t, loss)
        values = t + jnp.asarray(errors, jnp.float32)
        height = np.asarray(jax.vmap(of_value)(values), np.float64)
        slope, curve = jax.grad(of_value), jax.grad(jax.grad(of_value))
        at_zero = float(of_value(jnp.asarray(t, jnp.float32)))
        curvature = curvature_at_zero(loss, meta_params, t)
        bend = np.asarray(jax.vmap(curve)(values))
        numbers = {"slope_left": float(slope(jnp.asarray(t - SLOPE_STEP, jnp.float32))),
                   "slope_right": float(slope(jnp.asarray(t + SLOPE_STEP, jnp.float32))),
                   "curvature_at_zero": curvature, "effective_vf_coef": vf_coef * curvature,
                   "minimum_at": float(errors[int(np.argmin(height))]),
                   "over_under_ratio": {}, "negative_curvature_share": float(np.mean(bend < 0)), "normalised": {}}
        for size in error_sizes:
            over, under = (float(of_value(jnp.asarray(t + sign * size, jnp.float32))) - at_zero for sign in (1, -1))
            numbers["over_under_ratio"][f"{size:g}"] = over / under if over > 0 and under > 0 else None
            for signed in (-size, size):
                rise = float(of_value(jnp.asarray(t + signed, jnp.float32))) - at_zero
                numbers["normalised"][f"{signed:g}"] = rise / (curvature * 0.5 * signed**2) if curvature > 0 else None
        numbers["shape_distance"] = (float(np.abs((height - at_zero) / curvature - half_square).sum() / half_square.sum())
                                     if curvature > 0 else None)
        per_target[f"{t:g}"] = numbers
    return {"targets": list(targets), "max_error": max_error, "per_target": per_target,
            "summary": _over_targets(list(per_target.values()))}


def _over_targets(rows: list[dict]) -> dict:
    """`loss_numbers`' summary: means over targets (None if any target has none), geometric means of ratios,
    the largest negative-curvature share."""
    def mean(values, geometric=False):
        if any(v is None for v in values) or (geometric and any(v <= 0 for v in values)):
            return None
        return float(np.exp(np.mean(np.log(values)))) if geometric else float(np.mean(values))

    out = {name: mean([row[name] for row in rows]) for name in
           ("slope_left", "slope_right", "curvature_at_zero", "effective_vf_coef", "minimum_at", "shape_distance")}
    out["negative_curvature_share"] = max(row["negative_curvature_share"] for row in rows)
    for name, geometric in (("over_under_ratio", True), ("normalised", False)):
        out[name] = {m: mean([row[name][m] for row in rows], geometric) for m in rows[0][name]}
    return out


def curves(meta_params, target: float, errors: jax.Array, loss=learned_value_loss) -> dict[str, np.ndarray]:
    """A learned loss (the scaled form by default) and its derivative in v at one target, next to L2 (both unscaled)."""
    learned = loss_of_value(meta_params, target, loss)
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


def error_numbers(errors: np.ndarray, targets: np.ndarray) -> dict:
    """The critic's errors v - t on one probe's rollout [seeds, ...], pooled over seeds (bias, mean |v - t|, the
    same relative to |t|, share over-estimated), and mean |v - t| per seed: two losses trained on the same seeds
    are compared by their paired per-seed differences (`record.critic_paired`)."""
    return {"bias": float(errors.mean()), "abs_error": float(np.abs(errors).mean()),
            "relative_abs_error": float(np.abs(errors).mean() / (np.abs(targets).mean() + 1e-8)),
            "over_estimated_fraction": float((errors > 0).mean()),
            "abs_error_per_seed": [float(v) for v in np.abs(errors).reshape(len(errors), -1).mean(axis=1)]}


def critic_dynamics(losses: dict, config: PPOConfig, seeds: list[int], probes: int = 10,
                    bins: np.ndarray | None = None) -> dict:
    """Train each loss (name -> (value_loss, meta_params, hyperparams), as `value_loss.Loss`) on `seeds`, pausing
    `probes` times to measure the critic on a fresh rollout (`error_numbers`); plus a histogram of v - t at the end,
    pooled over seeds."""
    bins = np.linspace(-40.0, 40.0, 81) if bins is None else bins
    placement = Placement.for_members(len(seeds))
    out = {}
    for name, (value_loss, meta_params, hyperparams) in losses.items():
        members = make_members(seeds, hyperparams)
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
                         **error_numbers(errors, targets)})
            start = int(stop)
        counts, _ = np.histogram(np.clip(errors, bins[0], bins[-1]), bins=bins)
        out[name] = {"probes": rows, "final_error_histogram": counts.tolist(),
                     "final_error_quantiles": {f"{q:g}": float(np.quantile(errors, q)) for q in (0.05, 0.5, 0.95)}}
    out["histogram_bins"] = bins.tolist()
    out["seeds"] = seeds
    return out
