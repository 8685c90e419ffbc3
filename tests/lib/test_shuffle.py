"""The minibatch shuffle and the categorical log-probability, both rewritten for speed: same contracts as before."""

import collections
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from purerl.algos import shuffle
from purerl.nets.distributions import Categorical


@settings(max_examples=12, deadline=None)  # each new n compiles: the edges of a bit width are given explicitly
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**31 - 1))
@example(n=1, seed=0)
@example(n=2, seed=1)
@example(n=3, seed=2)
@example(n=256, seed=3)
@example(n=257, seed=4)
@example(n=4097, seed=5)
def test_permutation_is_a_permutation_of_range_n(n, seed):
    order = np.asarray(jax.jit(shuffle.permutation, static_argnums=1)(jax.random.PRNGKey(seed), n))
    assert order.dtype == np.int32
    np.testing.assert_array_equal(np.sort(order), np.arange(n))


def test_permutations_of_four_are_uniform_and_vmap_like_single_keys():
    keys = jax.random.split(jax.random.PRNGKey(0), 24_000)
    orders = np.asarray(jax.jit(jax.vmap(lambda k: shuffle.permutation(k, 4)))(keys))
    counts = collections.Counter(map(tuple, orders))
    assert set(counts) == set(itertools.permutations(range(4)))
    expected = len(keys) / 24
    chi_square = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi_square < 49.7  # the 0.999 quantile of chi-square with 23 degrees of freedom
    np.testing.assert_array_equal(orders[7], shuffle.permutation(keys[7], 4))


def test_every_item_reaches_every_position_of_a_minibatch_sized_shuffle():
    """512 items (a CartPole batch): no position keeps its item more often than chance (1/512)."""
    keys = jax.random.split(jax.random.PRNGKey(1), 2_000)
    orders = np.asarray(jax.jit(jax.vmap(lambda k: shuffle.permutation(k, 512)))(keys))
    fixed = (orders == np.arange(512)).mean()
    assert abs(fixed - 1 / 512) < 5 * math.sqrt(1 / 512 / orders.size)
    first_half = (orders[:, :256] < 256).mean()  # items of the first half land in the first half half the time
    assert abs(first_half - 0.5) < 0.01


def test_too_many_items_to_pack_fall_back_to_jax(monkeypatch):
    monkeypatch.setattr(shuffle, "MIN_FREE_BITS", 30)
    key = jax.random.PRNGKey(3)
    np.testing.assert_array_equal(shuffle.permutation(key, 8), jax.random.permutation(key, 8))


def test_categorical_log_prob_and_its_gradient_equal_a_gather():
    logits = jax.random.normal(jax.random.PRNGKey(4), (32, 5)) * 3
    actions = jax.random.randint(jax.random.PRNGKey(5), (32,), 0, 5)

    def gathered(logits):
        return jnp.take_along_axis(jax.nn.log_softmax(logits), actions[:, None], axis=-1)[:, 0]

    np.testing.assert_array_equal(Categorical(logits).log_prob(actions), gathered(logits))
    np.testing.assert_allclose(jax.grad(lambda x: Categorical(x).log_prob(actions).sum())(logits),
                               jax.grad(lambda x: gathered(x).sum())(logits), rtol=1e-6, atol=1e-7)
    masked = logits.at[:, 0].set(-jnp.inf)  # an impossible action elsewhere does not make the chosen one NaN
    assert np.all(np.isfinite(Categorical(masked).log_prob(jnp.ones(32, jnp.int32))))
