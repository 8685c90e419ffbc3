"""Drift functions (mirror learning): PPO, DPO and the LPO learned drift."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos import objectives as obj
from purerl.algos.ppo_config import HyperParams

HP = HyperParams().as_arrays()
R = jnp.linspace(0.05, 3.0, 301)
A = jnp.linspace(-3.0, 3.0, 121)
RR, AA = jnp.meshgrid(R, A, indexing="ij")


def random_lpo_params(seed: int, scale: float = 0.5):
    template = obj.init_lpo_params()
    leaves, tree = jax.tree.flatten(template)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(tree, [scale * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves)])


DRIFTS = {
    "ppo": lambda r, a: obj.ppo_drift(r, a, 0.2),
    "dpo": lambda r, a: obj.dpo_drift(r, jnp.log(r), a),
    "lpo": lambda r, a: obj.lpo_drift(r, jnp.log(r), a, random_lpo_params(0), 0.2),
}


@pytest.mark.parametrize("name", DRIFTS)
def test_drift_is_non_negative_on_a_grid(name):
    assert float(DRIFTS[name](RR, AA).min()) >= 0.0


@pytest.mark.parametrize("name", ["ppo", "dpo"])
def test_drift_and_its_slope_vanish_at_ratio_one(name):
    drift = DRIFTS[name]
    ones = jnp.ones_like(A)
    np.testing.assert_allclose(drift(ones, A), 0.0, atol=1e-7)
    slope = jax.vmap(jax.grad(lambda r, a: drift(r, a)))(ones, A)
    np.testing.assert_allclose(slope, 0.0, atol=1e-6)


def test_dpo_rolls_back_for_negative_advantages_where_ppo_never_does():
    """For A < 0 the DPO objective's slope in r changes sign below some r < 1; PPO's never does."""
    r = jnp.linspace(0.05, 0.999, 400)
    a = -jnp.ones_like(r)
    dpo_slope = jax.vmap(jax.grad(lambda r, a: obj.dpo(r, jnp.log(r), a, HP, None)))(r, a)
    ppo_slope = jax.vmap(jax.grad(lambda r, a: obj.ppo_clip(r, jnp.log(r), a, HP, None)))(r, a)
    assert float(dpo_slope[-1]) < 0  # near r = 1 lowering r still helps (A < 0) ...
    assert float(dpo_slope[0]) > 0  # ... but far below 1 the objective pushes r back up: rollback
    assert float(ppo_slope.max()) <= 0.0  # PPO: slope -1 inside the clip, 0 outside, never positive


def test_lpo_with_zero_weights_equals_ppo_clip():
    key_r, key_a = jax.random.split(jax.random.PRNGKey(1))
    ratio = jnp.exp(0.5 * jax.random.normal(key_r, (4096,)))
    adv = jax.random.normal(key_a, (4096,))
    zero = obj.init_lpo_params()
    lpo = obj.lpo(ratio, jnp.log(ratio), adv, HP, zero)
    ppo = obj.ppo_clip(ratio, jnp.log(ratio), adv, HP, None)
    np.testing.assert_allclose(lpo, ppo, atol=1.01e-4)  # the drift is shifted by 1e-4 where it is active
    grad_lpo = jax.vmap(jax.grad(lambda r, a: obj.lpo(r, jnp.log(r), a, HP, zero)))(ratio, adv)
    grad_ppo = jax.vmap(jax.grad(lambda r, a: obj.ppo_clip(r, jnp.log(r), a, HP, None)))(ratio, adv)
    np.testing.assert_allclose(grad_lpo, grad_ppo, atol=1e-5)


def test_lpo_drift_depends_on_its_weights():
    d0 = obj.lpo_drift(RR, jnp.log(RR), AA, obj.init_lpo_params(), 0.2)
    d1 = obj.lpo_drift(RR, jnp.log(RR), AA, random_lpo_params(3, 2.0), 0.2)
    assert float(jnp.abs(d1 - d0).max()) > 0.1


def test_drift_features_are_numbers_that_tell_ppo_dpo_and_lpo_apart():
    """`purerl analyze drift`'s numbers: PPO has no rollback and is its own reference; DPO rolls back below r ~ 0.55
    at A = -1 and charges far less than PPO beyond the clip; a PPO-initialised LPO is PPO to within 1e-4."""
    from purerl_lab.studies.dpo import lpo as study

    maps = {name: study.drift_maps(study.drift_for(name)[1]) for name in ("ppo", "dpo")}
    references = {name: d for name, (d, _) in maps.items()}
    ppo = study.describe(*maps["ppo"], references, 0.2)
    dpo = study.describe(*maps["dpo"], references, 0.2)
    assert ppo["rollback_fraction"] == 0 and set(ppo["rollback_below_r"].values()) == {None}
    assert ppo["mean_abs_difference_from_ppo"] == 0 and ppo["optimism_drift_beyond_clip_vs_ppo"] == 1
    assert 0.5 < dpo["rollback_below_r"]["-1"] < 0.6 and dpo["rollback_fraction"] > 0.3
    assert dpo["optimism_drift_beyond_clip_vs_ppo"] < 0.5 and dpo["mean_abs_difference_from_dpo"] == 0
    zero = study.drift_maps(lambda r, a: obj.lpo_drift(r, jnp.log(r), a, obj.init_lpo_params(), 0.2))
    assert study.describe(*zero, references, 0.2)["max_abs_difference_from_ppo"] < 1.01e-4


def test_lpo_starts_exactly_at_ppo_yet_antithetic_candidates_differ():
    """The ES mean's drift is PPO's, but mirrored candidates (mean +- e) are different drifts. From all-zero
    weights they were the same drift (the net is odd in its two layers jointly), so every antithetic pair had
    equal fitness and OpenES had no gradient."""
    from purerl_lab.studies.dpo import lpo as study

    mean = study.initial_params()
    ppo = obj.ppo_drift(RR, AA, 0.2)
    np.testing.assert_allclose(obj.lpo_drift(RR, jnp.log(RR), AA, mean, 0.2), jnp.maximum(ppo - 1e-4, 0), atol=1e-6)
    noise = jax.tree.map(lambda x: 0.05 * jax.random.normal(jax.random.PRNGKey(1), x.shape), mean)
    plus, minus = (jax.tree.map(lambda m, e: m + sign * e, mean, noise) for sign in (1, -1))
    gap = jnp.abs(obj.lpo_drift(RR, jnp.log(RR), AA, plus, 0.2) - obj.lpo_drift(RR, jnp.log(RR), AA, minus, 0.2))
    assert float(gap.max()) > 0.05
    zero = obj.init_lpo_params()
    plus0, minus0 = (jax.tree.map(lambda m, e: m + sign * e, zero, noise) for sign in (1, -1))
    np.testing.assert_array_equal(obj.lpo_drift(RR, jnp.log(RR), AA, plus0, 0.2),
                                  obj.lpo_drift(RR, jnp.log(RR), AA, minus0, 0.2))
