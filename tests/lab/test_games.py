"""Matrix games and inner learners for M-FOS, checked against independent float64 numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl_lab.studies.mfos import games

GAMMA = 0.96
# Player 1's and player 2's payoffs, indexed [player-1 action][player-2 action], 0 = C.
PAYOFFS = {
    "ipd": ([[-1, -3], [0, -2]], [[-1, 0], [-3, -2]]),
    "imp": ([[-1, 1], [1, -1]], [[1, -1], [-1, 1]]),
    "chicken_repeated": ([[0, -1], [1, -100]], [[0, 1], [-1, -100]]),
}
OUTCOMES = [(0, 0), (0, 1), (1, 0), (1, 1)]  # CC, CD, DC, DD from player 1's view
ALWAYS_C, ALWAYS_D = jnp.full(5, 20.0), jnp.full(5, -20.0)

value = jax.jit(games.memory_one_value, static_argnums=0)
naive = jax.jit(games.naive_step, static_argnums=0)  # the seat is traced: one compile for both
lola = jax.jit(games.lola_step, static_argnums=0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_markov_chain(name, logits1, logits2):
    """Start distribution, transition matrix and payoff columns, built from the definitions."""
    p, q = sigmoid(np.asarray(logits1, np.float64)), sigmoid(np.asarray(logits2, np.float64))

    def act(prob_c, action):
        return prob_c if action == 0 else 1.0 - prob_c

    start = np.array([act(p[0], a1) * act(q[0], a2) for a1, a2 in OUTCOMES])
    # After (b1, b2), player 1 reads its logit for (b1, b2), player 2 its logit for (b2, b1).
    transition = np.array([[act(p[1 + 2 * b1 + b2], a1) * act(q[1 + 2 * b2 + b1], a2) for a1, a2 in OUTCOMES]
                           for b1, b2 in OUTCOMES])
    payoffs = np.array([[PAYOFFS[name][i][a1][a2] for i in (0, 1)] for a1, a2 in OUTCOMES], np.float64)
    return start, transition, payoffs


def np_values(name, logits1, logits2, gamma=GAMMA):
    start, transition, payoffs = np_markov_chain(name, logits1, logits2)
    return start @ np.linalg.solve(np.eye(4) - gamma * transition, payoffs)


def np_own_value(name, own, other, player, seat):
    """Value of `seat` (0 = the learner, 1 = its opponent) with the learner in `player`."""
    values = np_values(name, own, other) if player == 0 else np_values(name, other, own)[::-1]
    return values[seat]


def np_grad(f, x, eps):
    x = np.asarray(x, np.float64)
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def random_logits(seed, shape=(5,)):
    return jax.random.normal(jax.random.PRNGKey(seed), (2, *shape))


def test_games_are_the_papers_payoffs():
    for name, (payoff1, payoff2) in PAYOFFS.items():
        game = games.GAMES[name]
        assert np.array_equal(game.payoff1, payoff1) and np.array_equal(game.payoff2, payoff2)
        assert game.gamma == GAMMA
    assert games.GAMES["chicken"].payoff1 == games.GAMES["chicken_repeated"].payoff1
    assert games.GAMES["chicken"].gamma == 0.0  # the authors' chicken is one-shot


@pytest.mark.parametrize("name, expected", [
    ("ipd", {"CC": (-1, -1), "CD": (-3, 0), "DC": (0, -3), "DD": (-2, -2)}),
    ("imp", {"CC": (-1, 1), "CD": (1, -1), "DC": (1, -1), "DD": (-1, 1)}),
    ("chicken_repeated", {"CC": (0, 0), "CD": (-1, 1), "DC": (1, -1), "DD": (-100, -100)}),
    ("chicken", {"CC": (0, 0), "CD": (-1, 1), "DC": (1, -1), "DD": (-100, -100)}),
])
def test_pure_strategies_earn_their_stage_payoff_every_step(name, expected):
    policy = {"C": ALWAYS_C, "D": ALWAYS_D}
    for outcome, rewards in expected.items():
        got = value(games.GAMES[name], policy[outcome[0]], policy[outcome[1]])
        np.testing.assert_allclose(got, rewards, rtol=1e-5, atol=1e-5)


def test_imp_is_zero_sum_for_random_policies():
    logits1, logits2 = random_logits(0, (64, 5)) * 3
    r1, r2 = jax.vmap(value, in_axes=(None, 0, 0))(games.GAMES["imp"], logits1, logits2)
    assert np.abs(r1).max() > 0.1
    np.testing.assert_allclose(r1, -r2, atol=1e-5)


def test_oneshot_chicken_ignores_memory_logits():
    game = games.GAMES["chicken"]
    logits1, logits2 = random_logits(1)
    rewards = value(game, logits1, logits2)
    p, q = sigmoid(np.asarray(logits1[0])), sigmoid(np.asarray(logits2[0]))
    stage = np.array([p, 1 - p]) @ np.array(PAYOFFS["chicken_repeated"][0]) @ np.array([q, 1 - q])
    np.testing.assert_allclose(rewards[0], stage, rtol=1e-5)
    shuffled = value(game, logits1.at[1:].set(5.0), logits2.at[1:].set(-5.0))
    np.testing.assert_allclose(shuffled, rewards, rtol=1e-6)
    assert np.all(naive(game, logits1, logits2, 0)[1:] == logits1[1:])


@pytest.mark.parametrize("name", ["ipd", "imp", "chicken_repeated"])
def test_exact_value_matches_power_series(name):
    """(1 - gamma) sum_t gamma^t p0^T P^t u, summed in float64 until gamma^t < 1e-35."""
    for seed in range(3):
        logits1, logits2 = random_logits(10 + seed) * 2
        start, transition, payoffs = np_markov_chain(name, logits1, logits2)
        series, distribution = np.zeros(2), start
        for t in range(2000):
            series += GAMMA**t * distribution @ payoffs
            distribution = distribution @ transition
        np.testing.assert_allclose(value(games.GAMES[name], logits1, logits2), (1 - GAMMA) * series,
                                   rtol=1e-5, atol=1e-5 * np.abs(payoffs).max())


@pytest.mark.parametrize("name", ["ipd", "imp", "chicken_repeated"])
@pytest.mark.parametrize("player", [0, 1])
def test_naive_step_is_one_gradient_step_on_the_unscaled_value(name, player):
    own, other = random_logits(20 + player)
    grad = np_grad(lambda x: np_own_value(name, x, other, player, 0), own, eps=1e-6)
    expected = np.asarray(own, np.float64) + grad
    got = naive(games.GAMES[name], own, other, player)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(grad).max())


@pytest.mark.parametrize("player", [0, 1])
def test_lola_step_ascends_the_taylor_lookahead(player):
    """J(own) = V_own + (d V_own / d other) . (d V_other / d other), differentiated numerically."""
    own, other = random_logits(30 + player)

    def lookahead(own_logits):
        def grad_other(seat):
            return np_grad(lambda o: np_own_value("ipd", own_logits, o, player, seat), other, eps=1e-5)

        return np_own_value("ipd", own_logits, other, player, 0) + grad_other(0) @ grad_other(1)

    grad = np_grad(lookahead, own, eps=1e-4)
    expected = np.asarray(own, np.float64) + grad
    got = lola(games.GAMES["ipd"], own, other, player)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3 * np.abs(grad).max())
    naive_move = np.asarray(naive(games.GAMES["ipd"], own, other, player)) - np.asarray(own)
    assert np.linalg.norm(np.asarray(got) - own - naive_move) > 0.1 * np.linalg.norm(naive_move)


def test_vmap_over_4096_games_matches_single_games():
    game = games.GAMES["ipd"]
    logits1, logits2 = random_logits(40, (4096, 5))
    batched = jax.jit(jax.vmap(lambda a, b: (games.memory_one_value(game, a, b),
                                             games.naive_step(game, a, b, 0),
                                             games.lola_step(game, a, b, 0))))
    rewards, naive_batch, lola_batch = batched(logits1, logits2)
    assert rewards[0].shape == (4096,) and naive_batch.shape == lola_batch.shape == (4096, 5)
    assert np.isfinite(lola_batch).all()
    for i in [0, 1234, 4095]:
        np.testing.assert_allclose([r[i] for r in rewards], value(game, logits1[i], logits2[i]), rtol=1e-5)
        np.testing.assert_allclose(naive_batch[i], naive(game, logits1[i], logits2[i], 0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(lola_batch[i], lola(game, logits1[i], logits2[i], 0), rtol=1e-4, atol=1e-3)


@pytest.fixture(scope="module")
def play_ipd():
    """100 steps of IPD learning for 32 seeds, one compile per learner pair."""
    game = games.GAMES["ipd"]

    def run(name1, name2, seed):
        keys = jax.random.split(jax.random.PRNGKey(seed), 32)
        return jax.vmap(lambda k: games.play(k, game, games.LEARNERS[name1], games.LEARNERS[name2]))(keys)

    return jax.jit(run, static_argnums=(0, 1))


@pytest.mark.parametrize("pair", [("nl", "nl"), ("lola", "nl")])
def test_learning_is_deterministic_given_the_seed(play_ipd, pair):
    rewards, (final1, final2) = play_ipd(*pair, 0)
    again, (again1, again2) = play_ipd(*pair, 0)
    other, _ = play_ipd(*pair, 1)
    assert rewards.shape == (32, 100, 2)
    assert np.array_equal(rewards, again) and np.array_equal(final1, again1) and np.array_equal(final2, again2)
    assert not np.array_equal(rewards, other)


def test_warmup_steps_learn_without_being_scored():
    """The authors' scoring: one uncounted simultaneous step, then 100 scored ones, is steps 2..101 of 101."""
    game, nl, lola = games.GAMES["ipd"], games.LEARNERS["nl"], games.LEARNERS["lola"]
    key = jax.random.PRNGKey(3)
    scored, final = games.play(key, game, lola, nl, 100, warmup_steps=1)
    everything, final_all = games.play(key, game, lola, nl, 101)
    np.testing.assert_allclose(scored, everything[1:], rtol=1e-6)
    np.testing.assert_allclose(final[0], final_all[0], rtol=1e-6)


def test_naive_learners_defect_and_lola_shapes_them(play_ipd):
    """NL vs NL falls to mutual defection; LOLA against an NL earns more than that."""
    nl_nl, _ = play_ipd("nl", "nl", 0)
    lola_nl, _ = play_ipd("lola", "nl", 0)
    np.testing.assert_allclose(nl_nl[:, -1], -2.0, atol=0.05)
    assert lola_nl[:, :, 0].mean() > nl_nl[:, :, 0].mean() + 0.3


def test_mamaml_training_improves_its_meta_objective():
    """30 Adam steps against fresh batches of 64 naive learners, 100 inner steps each."""
    game = games.GAMES["chicken_repeated"]
    train = jax.jit(games.train_mamaml_init, static_argnums=(1, 2, 3, 4, 5))
    logits, history = train(jax.random.PRNGKey(0), game, 1, 30, 64, 100)
    assert logits.shape == (5,) and history.shape == (30,)
    assert history[-1] > history[0]
    assert history[-5:].mean() > history[:5].mean() + 0.03
    learner = games.mamaml_learner(logits)
    assert np.array_equal(learner.init(jax.random.PRNGKey(7)), logits)
