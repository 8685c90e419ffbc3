"""The coin game (Lerer & Peysakhovich 2017; the M-FOS paper's higher-dimensional game).

Two players, red and blue, walk on a 3x3 torus that holds one red and one
blue coin. Stepping onto any coin pays +1; taking the *other* player's coin
also costs its owner -2, so greedily taking every coin is a social dilemma like
the prisoner's dilemma. A picked-up coin reappears at once on a random cell
that neither player occupies. Both players move at the same time (right, left,
down, up; there is no "stay"), and an inner episode lasts a fixed number of
steps with no terminal state.

`CoinGame` is the two-player game itself, pure and vmappable: `reset(key)`,
`step(key, state, actions) -> (state, rewards, pickups)`, and `observe(state)`
gives each player an egocentric [3, 3, 4] grid (own position, other's position,
own coin, other's coin), so one network can play either seat.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

GRID = 3
CELLS = GRID * GRID
NUM_ACTIONS = 4
MOVES = jnp.array([[0, 1], [0, -1], [1, 0], [-1, 0]], jnp.int32)  # right, left, down, up (row, column)
RED, BLUE = 0, 1


class CoinState(NamedTuple):
    positions: jax.Array  # [2, 2] (row, column) of red and blue
    coins: jax.Array  # [2, 2] (row, column) of the red and the blue coin


class Pickups(NamedTuple):
    """Who took which coin at this step, for the authors' "own coin" rate."""

    own: jax.Array  # [2] player i took its own coin
    other: jax.Array  # [2] player i took the other player's coin


class CoinGame:
    """The 3x3 coin game for two players; every method is pure and vmappable."""

    observation_shape = (GRID, GRID, 4)
    num_actions = NUM_ACTIONS

    def reset(self, key: jax.Array) -> CoinState:
        """Players and coins on independent uniform cells (as in the authors' code)."""
        cells = jax.random.randint(key, (4,), 0, CELLS)
        grid = jnp.stack([cells // GRID, cells % GRID], axis=-1)
        return CoinState(positions=grid[:2], coins=grid[2:])

    def step(self, key: jax.Array, state: CoinState, actions: jax.Array) -> tuple[CoinState, jax.Array, Pickups]:
        """Move both players, pay for coins taken, respawn them. Returns (state, rewards [2], pickups)."""
        positions = (state.positions + MOVES[actions]) % GRID
        # on[i, c]: player i stands on coin c after moving.
        on = jnp.all(positions[:, None, :] == state.coins[None, :, :], axis=-1)
        taken_by_any = on.any(axis=0)  # [coin]
        rewards = on.sum(axis=1).astype(jnp.float32) - 2.0 * on[::-1].diagonal().astype(jnp.float32)
        coins = jnp.where(taken_by_any[:, None], _free_cells(key, positions), state.coins)
        pickups = Pickups(own=on.diagonal(), other=on[::-1].diagonal()[::-1])
        return CoinState(positions, coins), rewards, pickups

    def observe(self, state: CoinState) -> jax.Array:
        """[2, 3, 3, 4] egocentric grids: channels own, other, own coin, other coin for each seat."""

        def one_hot(cell):
            return jnp.zeros((GRID, GRID), jnp.float32).at[cell[0], cell[1]].set(1.0)

        planes = jnp.stack([one_hot(state.positions[RED]), one_hot(state.positions[BLUE]),
                            one_hot(state.coins[RED]), one_hot(state.coins[BLUE])], axis=-1)
        return jnp.stack([planes, planes[..., jnp.array([1, 0, 3, 2])]])


def _free_cells(key: jax.Array, positions: jax.Array) -> jax.Array:
    """Two cells, each uniform over the cells that neither player occupies."""
    flat = positions[:, 0] * GRID + positions[:, 1]
    occupied = jnp.zeros(CELLS, bool).at[flat].set(True)
    logits = jnp.where(occupied, -jnp.inf, 0.0)
    cells = jax.random.categorical(key, logits, shape=(2,))
    return jnp.stack([cells // GRID, cells % GRID], axis=-1)
