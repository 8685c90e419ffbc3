"""The M-FOS meta-game against one learning opponent, as a purerl `Env`, and its PPO training loop (one
PPO update per meta-episode)."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from purerl.algos.ppo import PPO, RunnerState, make_train
from purerl.algos.ppo_config import HyperParams
from purerl_lab.studies.mfos import games
from purerl.envs.core import ActionSpace, Env, Timestep
from purerl.envs.wrappers import EpisodeStats
from purerl_lab.studies.mfos.settings import (HYPERPARAMS, INNER_LR, META_EPISODE, OPPONENT_SEAT, Settings,
                                          make_learner, ppo_config)


class MetaGameState(NamedTuple):
    opponent: jax.Array  # (5,) logits the opponent plays at the next meta-step
    t: jax.Array  # meta-steps taken in this meta-episode
    reward_sum: jax.Array  # (2,) [M-FOS, opponent] per-step rewards summed over this meta-episode
    last_episode: jax.Array  # (2,) mean reward per step of both players in the last finished meta-episode


class MetaGame(Env):
    """The M-FOS meta-game against one learning opponent, as a purerl `Env`.

    observation: sigmoid of the logits of the inner game just played, M-FOS's
        then the opponent's (10 probabilities of cooperating), as in the authors'
        code. After a reset it shows a random N(0, 1) "previous" M-FOS policy and
        the opponent's initial policy; with `warmup_steps=1` (the authors' `reset`)
        the opponent has already taken one learning step against that random
        policy, which is not scored.
    action: M-FOS's 5 logits for the next inner game (unbounded reals).
    reward: M-FOS's exact per-step reward (1 - gamma) V in that game.
    time limit: `meta_episode` meta-steps, reported as *truncated* (never
        terminated), with the policies of the last game as `final_obs`; then the
        game resets to a fresh opponent drawn from `learner.init`.

    `info["opponent_reward"]` is the opponent's per-step reward, and the state
    keeps both players' mean reward per step of the last finished meta-episode
    (`last_episode`), so a trainer can log the opponent's curve as well.
    """

    def __init__(self, game: games.Game | str, opponent: games.Learner | str = "nl",
                 meta_episode: int = META_EPISODE, lr: float = INNER_LR, mamaml_init: jax.Array | None = None,
                 warmup_steps: int = 1):
        self.game = games.GAMES[game] if isinstance(game, str) else game
        if isinstance(opponent, str):
            opponent_name = opponent
            opponent = make_learner(opponent, mamaml_init)
        else:
            opponent_name = "custom"
        self.learner = opponent
        self.lr = lr
        self.warmup_steps = warmup_steps
        self.name = f"mfos-{self.game.name}-{opponent_name}"
        self.observation_shape = (10,)
        self.action_space = ActionSpace(discrete=False, shape=(5,), low=-math.inf, high=math.inf)
        self.max_episode_steps = meta_episode

    def reset(self, key):
        previous_key, opponent_key = jax.random.split(key)
        initial = self.learner.init(opponent_key)
        previous = jax.random.normal(previous_key, (5,))
        opponent = initial
        for _ in range(self.warmup_steps):
            opponent = self.learner.step(self.game, opponent, previous, OPPONENT_SEAT, self.lr)
        state = MetaGameState(opponent, jnp.int32(0), jnp.zeros(2), jnp.full(2, jnp.nan))
        return observe(previous, initial), state

    def step(self, key, state, action):
        action = jnp.asarray(action, jnp.float32)
        r_opponent, r_mfos = games.memory_one_value(self.game, state.opponent, action)
        learned = self.learner.step(self.game, state.opponent, action, OPPONENT_SEAT, self.lr)
        final_obs = observe(action, state.opponent)
        t = state.t + 1
        reward_sum = state.reward_sum + jnp.stack([r_mfos, r_opponent])
        truncated = t >= self.max_episode_steps
        reset_obs, reset_state = self.reset(key)
        reset_state = reset_state._replace(last_episode=reward_sum / t)
        ongoing = MetaGameState(learned, t, reward_sum, state.last_episode)
        next_state = jax.tree.map(lambda a, b: jnp.where(truncated, a, b), reset_state, ongoing)
        timestep = Timestep(
            obs=jnp.where(truncated, reset_obs, final_obs),
            reward=r_mfos,
            terminated=jnp.bool_(False),
            truncated=truncated,
            final_obs=final_obs,
            info={"opponent_reward": r_opponent},
        )
        return next_state, timestep


def observe(own: jax.Array, other: jax.Array) -> jax.Array:
    """The meta-state one player sees: its own and the other's probabilities of cooperating."""
    return jax.nn.sigmoid(jnp.concatenate([own, other], axis=-1))


class MetaRun(NamedTuple):
    state: RunnerState  # the M-FOS agent (PPO's runner state)
    log: jax.Array  # [meta_episodes, columns], one row per meta-episode; NaN for those not run yet


def meta_training(ppo: PPO, hp: HyperParams, meta_episodes: int, columns: int, log_row):
    """(init, advance) for PPO trained one meta-episode per update: `init(key) -> MetaRun`, then
    `advance(run, start, stop)` plays meta-episodes start..stop-1 and logs `log_row(state)` after each.
    Chunks compose exactly, so a run can checkpoint between them (`chunks.run_chunks`)."""

    def init(key: jax.Array) -> MetaRun:
        return MetaRun(ppo.init(key, hp), jnp.full((meta_episodes, columns), jnp.nan))

    def advance(run: MetaRun, start, stop) -> MetaRun:
        def meta_episode(index, run):
            state = ppo.update(index, run.state, hp, None)
            return MetaRun(state, run.log.at[index].set(log_row(state)))

        return jax.lax.fori_loop(start, stop, meta_episode, run)

    return init, advance


def make_mfos_train(game: str, opponent: str, settings: Settings, mamaml_logits: jax.Array | None = None):
    """(ppo, init, advance): the library's PPO on `EpisodeStats(MetaGame(...))`, logging [M-FOS, opponent]
    mean reward per step of every meta-episode.

    Each PPO update is one meta-episode of every game (a rollout of exactly 100
    meta-steps, aligned with the time limit), after which the meta-game's state
    holds both players' mean reward per step of that meta-episode.
    """
    env = EpisodeStats(MetaGame(game, opponent, mamaml_init=mamaml_logits, warmup_steps=settings.warmup_steps))
    ppo = make_train(ppo_config(settings), env=env)
    init, advance = meta_training(ppo, HYPERPARAMS.as_arrays(), settings.meta_episodes, 2,
                                  lambda state: state.env_state.env_state.last_episode.mean(axis=0))
    return ppo, init, advance
