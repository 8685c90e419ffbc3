"""Iterated 2x2 matrix games and the gradient learners that M-FOS plays against.

Model-Free Opponent Shaping (Lu, Willi, Schroeder de Witt, Foerster, ICML 2022,
arXiv 2205.01447) meta-learns against inner learners whose game is solved in
closed form, so every function here is exact, differentiable and pure JAX:
vmap it over thousands of games and jit it with the `Game` as a static argument.

A policy is 5 logits of P(cooperate): at the first round, then after the joint
outcomes CC, CD, DC, DD, each written from the player's *own* perspective. The
game is infinitely repeated with discount `gamma`; with the 4x4 transition
matrix P over joint outcomes (player 1's view), the start distribution p0 and
the per-outcome payoffs u, the discounted value is V = p0^T (I - gamma P)^-1 u
and the per-step reward is (1 - gamma) V.

As in the authors' code (luchris429/Model-Free-Opponent-Shaping, src/environments.py),
learners step with lr 1 on the *unscaled* value V (their losses are -V), while
rewards are reported per step, (1 - gamma) V.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

Payoff = tuple[tuple[float, float], tuple[float, float]]


class Game(NamedTuple):
    """A 2x2 game. Both payoff matrices are indexed [player-1 action, player-2 action],
    action 0 = cooperate (C, heads, swerve), 1 = defect (D, tails, straight).

    Plain tuples keep a `Game` hashable, so it can be a static jit argument.
    """

    name: str
    payoff1: Payoff
    payoff2: Payoff
    gamma: float = 0.96


def _transpose(payoff: Payoff) -> Payoff:
    return tuple(zip(*payoff))


def _negate(payoff: Payoff) -> Payoff:
    return tuple(tuple(-x for x in row) for row in payoff)


_IPD = ((-1.0, -3.0), (0.0, -2.0))
_IMP = ((-1.0, 1.0), (1.0, -1.0))
_CHICKEN = ((0.0, -1.0), (1.0, -100.0))

GAMES: dict[str, Game] = {
    "ipd": Game("ipd", _IPD, _transpose(_IPD)),
    "imp": Game("imp", _IMP, _negate(_IMP)),
    # The authors' code plays chicken one-shot (a single logit, no discounting).
    # gamma = 0 reproduces that exactly: V is the stage payoff of the first round
    # and the four memory logits get zero gradient.
    "chicken": Game("chicken", _CHICKEN, _transpose(_CHICKEN), gamma=0.0),
    # Not in the paper: chicken repeated like the IPD (memory-one, gamma 0.96).
    "chicken_repeated": Game("chicken_repeated", _CHICKEN, _transpose(_CHICKEN)),
}

# Player 2 sees the joint outcome (a1, a2) as (a2, a1), so its memory logits for
# player 1's CC, CD, DC, DD sit at its own positions CC, DC, CD, DD.
_PLAYER2_MEMORY = (1, 3, 2, 4)


def _joint(p: jax.Array, q: jax.Array) -> jax.Array:
    """Distribution over CC, CD, DC, DD when player 1 cooperates w.p. p and player 2 w.p. q."""
    return jnp.stack([p * q, p * (1 - q), (1 - p) * q, (1 - p) * (1 - q)], axis=-1)


def _gauss_jordan(a: jax.Array, b: jax.Array) -> jax.Array:
    """Solve a x = b by Gauss-Jordan elimination without pivoting, unrolled over rows.

    No pivoting is needed because I - gamma P is strictly diagonally dominant
    by rows (P is row-stochastic, gamma < 1) and its transpose by columns.
    """
    n = a.shape[0]
    rows = [jnp.concatenate([a[i], b[i]]) for i in range(n)]
    for i in range(n):
        pivot_row = rows[i] / rows[i][i]
        rows = [pivot_row if j == i else rows[j] - rows[j][i] * pivot_row for j in range(n)]
    return jnp.stack(rows)[:, n:]


def _solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """a^-1 b for the 4x4 system, with derivatives that are themselves 4x4 solves.

    Row arithmetic fuses under vmap and avoids the batched LAPACK calls that
    can deadlock jaxlib 0.10 on CPU. `custom_linear_solve` keeps
    jax from differentiating the elimination step by step, which halves the
    compile time of the second-order LOLA and MAMAML programs.
    """
    return jax.lax.custom_linear_solve(
        lambda x: a @ x, b,
        solve=lambda _, rhs: _gauss_jordan(a, rhs),
        transpose_solve=lambda _, rhs: _gauss_jordan(a.T, rhs),
    )


def discounted_values(game: Game, logits1: jax.Array, logits2: jax.Array) -> jax.Array:
    """Exact discounted values [V1, V2] of two memory-one policies; the learners ascend these."""
    p, q = jax.nn.sigmoid(logits1), jax.nn.sigmoid(logits2)
    start = _joint(p[0], q[0])
    transition = _joint(p[1:], q[jnp.array(_PLAYER2_MEMORY)])
    payoffs = jnp.array([game.payoff1, game.payoff2]).reshape(2, 4).T
    future = _solve(jnp.eye(4) - game.gamma * transition, payoffs)
    return start @ future


def memory_one_value(game: Game, logits1: jax.Array, logits2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Per-step rewards (r1, r2) = (1 - gamma) V: mutual defection in the IPD gives -2."""
    values = (1 - game.gamma) * discounted_values(game, logits1, logits2)
    return values[0], values[1]


def _own_and_other_value(game: Game, own: jax.Array, other: jax.Array, player: int | jax.Array) -> jax.Array:
    """[V_own, V_other] for a learner sitting in seat `player` (0 or 1).

    `player` may be traced: one compiled step then serves both seats.
    """
    first = player == 0
    values = discounted_values(game, jnp.where(first, own, other), jnp.where(first, other, own))
    return jnp.where(first, values, values[::-1])


def naive_step(game: Game, own: jax.Array, other: jax.Array, player: int | jax.Array, lr: float = 1.0) -> jax.Array:
    """Naive learner (NL): one exact gradient-ascent step on its own unscaled value V."""
    grad = jax.grad(lambda o: _own_and_other_value(game, o, other, player)[0])(own)
    return own + lr * grad


def lola_step(game: Game, own: jax.Array, other: jax.Array, player: int | jax.Array, lr: float = 1.0) -> jax.Array:
    """LOLA (Foerster et al. 2018) in first-order Taylor form, as in the authors' code.

    The learner assumes the opponent takes a naive step of size `lr`,
    other' = other + lr * grad_other V_other, and expands its own value to first
    order around it: J(own) = V_own + lr * (grad_other V_own) . (grad_other V_other).
    It ascends the *full* gradient of J w.r.t. its own logits (both second-order
    terms, differentiated by jax) with step size `lr`: the authors'
    `grad_L[0][0] - lr * grad(grad_L[1][0] . grad_L[1][1])` written for values
    instead of losses. It is not the exact look-ahead V_own(own, other'), which
    would differentiate through the opponent's step to all orders. The dot
    product is a directional derivative (one jvp), cheaper than a Jacobian.
    """

    def lookahead(own_logits):
        def value(other_logits, seat):
            return _own_and_other_value(game, own_logits, other_logits, player)[seat]

        opponent_step = jax.grad(value)(other, 1)
        own_value, shaping = jax.jvp(lambda o: value(o, 0), (other,), (opponent_step,))
        return own_value + lr * shaping

    return own + lr * jax.grad(lookahead)(own)


StepFn = Callable[[Game, jax.Array, jax.Array, int | jax.Array, float], jax.Array]


class Learner(NamedTuple):
    """An inner learner: how its logits start, and how one learning step changes them."""

    init: Callable[[jax.Array], jax.Array]
    step: StepFn


def standard_normal_logits(key: jax.Array) -> jax.Array:
    """Inner agents start from N(0, 1) logits, as in the paper."""
    return jax.random.normal(key, (5,))


LEARNERS: dict[str, Learner] = {
    "nl": Learner(standard_normal_logits, naive_step),
    "lola": Learner(standard_normal_logits, lola_step),
}


def mamaml_learner(init_logits: jax.Array) -> Learner:
    """MAMAML: a naive learner that always starts from meta-learned logits."""
    return Learner(lambda key: init_logits, naive_step)


def play(
    key: jax.Array,
    game: Game,
    learner1: Learner,
    learner2: Learner,
    num_steps: int = 100,
    lr: float = 1.0,
    warmup_steps: int = 0,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """Two learners update simultaneously for `warmup_steps` uncounted steps, then for `num_steps`.

    Returns the per-step rewards (num_steps, 2) of the counted steps, each
    measured before that step's update, and the final logits of both players.
    The authors' baselines take one uncounted step (in their `reset`), so their
    scores start after the random N(0, 1) policies have learned once.
    """
    key1, key2 = jax.random.split(key)

    def one_step(logits, _):
        logits1, logits2 = logits
        rewards = jnp.stack(memory_one_value(game, logits1, logits2))
        new1 = learner1.step(game, logits1, logits2, 0, lr)
        new2 = learner2.step(game, logits2, logits1, 1, lr)
        return (new1, new2), rewards

    start = (learner1.init(key1), learner2.init(key2))
    start, _ = jax.lax.scan(one_step, start, None, length=warmup_steps)
    final, rewards = jax.lax.scan(one_step, start, None, length=num_steps)
    return rewards, final


def mamaml_objective(
    game: Game,
    init_logits: jax.Array,
    opponents: jax.Array,
    player: int = 1,
    num_inner_steps: int = 100,
    lr: float = 1.0,
) -> jax.Array:
    """Average per-step reward of a naive learner starting from `init_logits`, over
    `num_inner_steps` of simultaneous NL-vs-NL learning against each opponent
    in the batch `opponents` (B, 5). Differentiable in `init_logits`."""

    def one_opponent(opponent):
        def one_step(logits, _):
            own, other = logits
            reward = (1 - game.gamma) * _own_and_other_value(game, own, other, player)[0]
            new_own = naive_step(game, own, other, player, lr)
            new_other = naive_step(game, other, own, 1 - player, lr)
            return (new_own, new_other), reward

        _, rewards = jax.lax.scan(one_step, (init_logits, opponent), None, length=num_inner_steps)
        return rewards.mean()

    return jax.vmap(one_opponent)(opponents).mean()


def train_mamaml_init(
    key: jax.Array,
    game: Game,
    player: int = 1,
    num_meta_steps: int = 100,
    batch_size: int = 64,
    num_inner_steps: int = 100,
    meta_lr: float = 0.1,
    lr: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
    """Meta-learn MAMAML's initial logits by differentiating through NL-vs-NL learning.

    Each meta-step draws `batch_size` fresh N(0, 1) naive-learner opponents,
    runs `num_inner_steps` simultaneous naive steps (lr `lr`) and ascends the
    MAMAML agent's average per-step reward with Adam (`meta_lr`) on its
    N(0, 1)-initialised logits. `player` is the seat MAMAML trains in: train it
    in the seat it will play, since IMP is not symmetric. Returns the logits and
    the meta-objective at every meta-step (opponents differ per step, so the
    curve is noisy).

    The authors' `generate_mamaml` uses 1000 meta-steps, Adam lr 0.01, 100
    inner steps, opponent lr 1, the agent in seat 1 (player 2, the default
    here), and sums the unscaled losses (a positive rescaling of this
    objective, immaterial to Adam). It also meta-learns the agent's own inner
    step size, but its evaluation steps MAMAML with lr 1, so here the agent
    trains with the lr it is played with. Its batch size is set by the caller
    and not recorded in the repository. The defaults here (100 meta-steps of
    Adam lr 0.1, 64 opponents) are a CPU-sized budget, about 10 s on 2 cores;
    on 1024 held-out opponents they matched or beat 1000 steps at lr 0.01 in
    all three games in our runs.
    """
    init_key, opponents_key = jax.random.split(key)
    optimizer = optax.adam(meta_lr)
    objective = jax.value_and_grad(
        lambda logits, opponents: mamaml_objective(game, logits, opponents, player, num_inner_steps, lr)
    )

    def meta_step(carry, step_key):
        logits, opt_state = carry
        opponents = jax.random.normal(step_key, (batch_size, 5))
        value, grad = objective(logits, opponents)
        updates, opt_state = optimizer.update(-grad, opt_state)
        return (optax.apply_updates(logits, updates), opt_state), value

    logits = standard_normal_logits(init_key)
    step_keys = jax.random.split(opponents_key, num_meta_steps)
    (logits, _), history = jax.lax.scan(meta_step, (logits, optimizer.init(logits)), step_keys)
    return logits, history
