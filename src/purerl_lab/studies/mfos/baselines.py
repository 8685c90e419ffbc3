"""The table's plain-learner rows: NL, LOLA and MAMAML against each other, all pairs in one program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from purerl.checks import ConfigError
from purerl_lab.studies.mfos import games
from purerl_lab.studies.mfos.runs import summaries
from purerl_lab.studies.mfos.settings import INNER_LR, META_EPISODE, MFOS_SEAT, OPPONENT_SEAT, OPPONENTS, seed_keys


SHAPERS = ("nl", "lola", "mamaml")  # the non-M-FOS row players of the table
BASELINE_PAIRS = tuple((shaper, opponent) for shaper in SHAPERS for opponent in OPPONENTS)
# The baselines draw from `fold_in(seed key, STREAM)`: M-FOS's and self-play's runs split the seed key itself, and
# `split(k, n)[i]` is `fold_in(k, i)`, so the seed key's small-index children are theirs.
STREAM = 3_000_017


def make_baselines(game: str, num_games: int, mamaml_inits: dict[int, jax.Array] | None = None,
                   pairs: tuple[tuple[str, str], ...] = BASELINE_PAIRS, warmup_steps: int = 1):
    """`play(key) -> [pairs, 2]`: for each (shaper, opponent) pair of plain learners, the mean reward per
    step of [shaper, opponent] over 100 steps of simultaneous learning, averaged over `num_games` games.

    The shaper sits in M-FOS's seat (1), the opponent in seat 0; both start from
    N(0, 1) logits (MAMAML from its meta-learned ones, trained in its seat). All
    pairs run in one compiled program: the learner kind is data, and every pair
    sees the same games' random initial logits (common random numbers).
    """
    for shaper, opponent in pairs:
        if shaper not in SHAPERS or opponent not in OPPONENTS:
            raise ConfigError(f"unknown baseline pair '{shaper} vs {opponent}'")
        if "mamaml" in (shaper, opponent) and not mamaml_inits:
            raise ConfigError("baselines with MAMAML need its meta-learned initial logits")
    inits = {seat: jnp.zeros(5) for seat in (OPPONENT_SEAT, MFOS_SEAT)}
    inits.update({seat: jnp.asarray(v, jnp.float32) for seat, v in (mamaml_inits or {}).items()})
    kinds = jnp.array([[SHAPERS.index(shaper), SHAPERS.index(opponent)] for shaper, opponent in pairs])
    inner = games.GAMES[game]
    use_lola = any("lola" in pair for pair in pairs)

    def learner(kind: jax.Array, init_logits: jax.Array) -> games.Learner:
        def init(key):
            return jnp.where(kind == SHAPERS.index("mamaml"), init_logits, games.standard_normal_logits(key))

        def step(game_, own, other, player, lr):
            naive = games.naive_step(game_, own, other, player, lr)
            if not use_lola:
                return naive
            return jnp.where(kind == SHAPERS.index("lola"), games.lola_step(game_, own, other, player, lr), naive)

        return games.Learner(init, step)

    def play_pair(key, kind):
        row, column = learner(kind[0], inits[MFOS_SEAT]), learner(kind[1], inits[OPPONENT_SEAT])

        def one(game_key):
            rewards, _ = games.play(game_key, inner, column, row, META_EPISODE, INNER_LR, warmup_steps)
            return rewards.mean(axis=0)[::-1]

        return jax.vmap(one)(jax.random.split(key, num_games)).mean(axis=0)

    return lambda key: jax.vmap(play_pair, in_axes=(None, 0))(jax.random.fold_in(key, STREAM), kinds)


def run_baselines(game: str, num_games: int, seeds: list[int], mamaml_inits: dict[int, jax.Array] | None = None,
                  warmup_steps: int = 1,
                  pairs: tuple[tuple[str, str], ...] = BASELINE_PAIRS) -> dict[str, dict]:
    """Every pair of plain learners on every seed: {"shaper vs opponent": summaries and per-seed values}."""
    play = make_baselines(game, num_games, mamaml_inits, pairs, warmup_steps)
    per_seed = np.asarray(jax.jit(jax.vmap(play))(seed_keys(seeds)), float)  # [seeds, pairs, 2]
    return {f"{shaper} vs {opponent}": {"final": summaries(per_seed[:, i], ("shaper", "opponent")),
                                        "final_by_seed": per_seed[:, i].tolist()}
            for i, (shaper, opponent) in enumerate(pairs)}
