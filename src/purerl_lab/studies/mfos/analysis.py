"""Is the trained M-FOS a zero-determinant extortioner? Press & Dyson's tests on its late policy and on the
payoffs it reaches against fresh opponents."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl.algos.ppo import PPO
from purerl_lab.studies.mfos import games
from purerl_lab.studies.mfos.settings import MFOS_SEAT


def own_payoffs(game: games.Game, seat: int = MFOS_SEAT) -> tuple[float, float, float, float]:
    """(R, S, T, P): the seat's stage payoffs after CC, CD, DC, DD, own action first."""
    matrix = np.array(game.payoff1 if seat == 0 else np.array(game.payoff2).T, dtype=float)
    return float(matrix[0, 0]), float(matrix[0, 1]), float(matrix[1, 0]), float(matrix[1, 1])


def zd_extortion_test(policy: np.ndarray, payoffs: tuple[float, float, float, float], tol: float = 0.05) -> dict:
    """Press & Dyson's (PNAS 2012) extortion condition on a memory-one policy vector.

    `policy` = P(C | CC, CD, DC, DD) of player X, own move first; payoffs (R, S, T, P)
    from X's view, so X's payoff vector is S_X = (R, S, T, P) and Y's is
    S_Y = (R, T, S, P). Press & Dyson show that if
        p~ = (p1 - 1, p2 - 1, p3, p4) = phi [(S_X - P) - chi (S_Y - P)],   phi > 0,
    then every opponent Y, whatever it does, ends up (in the long-run average)
    on the line  s_X - P = chi (s_Y - P): X takes chi times Y's surplus over
    mutual defection. chi > 1 is extortion, chi = 1 is fair (tit-for-tat).

    The test fits p~ by least squares in the two directions (S_X - P) and
    (S_Y - P), giving phi and chi, and calls the policy extortionate when the fit
    is exact up to `tol` (largest absolute error in a probability), phi > 0 and
    chi > 1. Both directions vanish after DD, so an extortioner must defect after
    mutual defection (p4 = 0). `zd_residual` is the error of the broader ZD test
    (p~ in the span of S_X, S_Y and 1, any fixed line), for reference.
    """
    p = np.asarray(policy, dtype=float)
    r, s, t, pun = payoffs
    sx, sy = np.array([r, s, t, pun]), np.array([r, t, s, pun])
    p_tilde = p - np.array([1.0, 1.0, 0.0, 0.0])
    basis = np.stack([sx - pun, sy - pun], axis=1)
    (a, b), *_ = np.linalg.lstsq(basis, p_tilde, rcond=None)
    residual = float(np.max(np.abs(basis @ np.array([a, b]) - p_tilde)))
    zd_basis = np.stack([sx, sy, np.ones(4)], axis=1)
    zd_coef, *_ = np.linalg.lstsq(zd_basis, p_tilde, rcond=None)
    zd_residual = float(np.max(np.abs(zd_basis @ zd_coef - p_tilde)))
    chi = float(-b / a) if abs(a) > 1e-12 else float("nan")
    extortionate = bool(residual <= tol and a > 0 and chi > 1.0 + 1e-6)
    return {"policy": [float(x) for x in p], "phi": float(a), "chi": chi, "residual": residual,
            "zd_residual": zd_residual, "tolerance": tol, "extortionate": extortionate}


def extortion_fit(own: np.ndarray, other: np.ndarray, kappa: float, min_r2: float = 0.9) -> dict:
    """Press & Dyson's signature in the payoffs reached: fit s_X - kappa = chi (s_Y - kappa).

    A least-squares line through (kappa, kappa), with kappa = P the mutual-defection
    payoff, over the reached per-step payoffs (one point per game and meta-step).
    Extortion shows as chi > 1, a line that explains the points (R^2 >= `min_r2`)
    and X above kappa. (With discounting, gamma = 0.96, a ZD policy enforces the
    line only approximately; the policy-vector test is exact.)
    """
    dx = np.ravel(np.asarray(own, float)) - kappa
    dy = np.ravel(np.asarray(other, float)) - kappa
    chi = float(dx @ dy / max(dy @ dy, 1e-12))
    total = float(((dx - dx.mean()) ** 2).sum())
    r2 = float(1.0 - ((dx - chi * dy) ** 2).sum() / total) if total > 1e-12 else float("nan")
    extortionate = bool(chi > 1.0 and np.isfinite(r2) and r2 >= min_r2 and dx.mean() > 0)
    return {"kappa": kappa, "chi": chi, "r2": r2, "own_mean": float(dx.mean() + kappa),
            "other_mean": float(dy.mean() + kappa), "points": int(dx.size), "extortionate": extortionate}


class Trajectory(NamedTuple):
    mfos: jax.Array  # [steps, games, 5] M-FOS's probabilities of cooperating (start, CC, CD, DC, DD)
    opponent: jax.Array  # [steps, games, 5] the opponent's, from its own perspective
    rewards: jax.Array  # [steps, games, 2] per-step rewards of [M-FOS, opponent]


def play_meta_episode(ppo: PPO, params, key: jax.Array, num_games: int, greedy: jax.Array | bool = False) -> Trajectory:
    """One meta-episode of the trained M-FOS against fresh opponents: its actions sampled, as in training, or
    (`greedy`) the mean of its Gaussian policy, the inner policy it would play without exploration noise.
    `greedy` may be traced, so one compiled program serves both."""
    env = ppo.env
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(reset_key, num_games))

    def meta_step(carry, step_key):
        obs, state = carry
        action_key, env_key = jax.random.split(step_key)
        action = jnp.where(greedy, ppo.act(params, None, obs), ppo.act(params, None, obs, action_key))
        state, ts = jax.vmap(env.step)(jax.random.split(env_key, num_games), state, action)
        rewards = jnp.stack([ts.reward, ts.info["opponent_reward"]], axis=-1)
        row = Trajectory(ts.final_obs[:, :5], ts.final_obs[:, 5:], rewards)
        return (ts.obs, state), row

    _, trajectory = jax.lax.scan(meta_step, (obs, state), jax.random.split(key, env.max_episode_steps))
    return trajectory


def extortion_analysis(trajectory: Trajectory, game: str, late: int = 20) -> dict:
    """M-FOS's and the opponent's mean policies over the last `late` meta-steps, and both extortion tests."""
    mfos = np.asarray(trajectory.mfos, float)
    opponent = np.asarray(trajectory.opponent, float)
    rewards = np.asarray(trajectory.rewards, float)
    payoffs = own_payoffs(games.GAMES[game])
    mfos_policy = mfos[-late:].mean(axis=(0, 1))
    labels = ["start", "CC", "CD", "DC", "DD"]
    return {
        "late_meta_steps": late,
        "mfos_policy": dict(zip(labels, mfos_policy.tolist())),
        "opponent_policy": dict(zip(labels, opponent[-late:].mean(axis=(0, 1)).tolist())),
        "late_rewards": {"mfos": float(rewards[-late:, :, 0].mean()), "opponent": float(rewards[-late:, :, 1].mean())},
        "payoffs_RSTP": payoffs,
        "policy_test": zd_extortion_test(mfos_policy[1:], payoffs),
        "payoff_fit": extortion_fit(rewards[-late:, :, 0], rewards[-late:, :, 1], kappa=payoffs[3]),
    }
