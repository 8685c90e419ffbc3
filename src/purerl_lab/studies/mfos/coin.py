"""M-FOS in the coin game, the M-FOS paper's higher-dimensional setting (arXiv 2205.01447, section 6.3).

A meta-episode is 16 inner episodes of 16 coin-game steps on every board. The
opponent is a PPO learner (the library's PPO with the authors' small conv
actor-critic) that plays every board with one policy and takes one PPO update
on all boards' experience after each inner episode. M-FOS plays the other seat
with a conv + GRU agent whose memory runs through the whole meta-episode, so
it can see how the opponent learns and shape it. M-FOS is the library's PPO,
unchanged, on `CoinGameMeta`; its minibatches keep whole meta-episodes.

Because the opponent is shared by all boards, `CoinGameMeta` steps its boards
together (`step_batch`) instead of one by one. The opponent's update sits in a
`lax.cond` on the shared step counter, so it runs once per inner episode; under
`vmap` over seeds that cond would become a select that runs the update at every
step, so the seeds are sharded over the devices and each device trains its own
one after another (`population.one_by_one`).

Its deliberate differences from the authors' code are the `mfos_coin` study's
`differences` in `publish/catalog.py`, shown at the top of docs/results/mfos_coin.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp

from purerl.algos.ppo import PPO, RunnerState, Transition
from purerl.algos.ppo_config import HyperParams, PPOConfig, recorded
from purerl.checks import MAX_DIMENSION, MAX_INT32, MAX_MEMBERS, check_counts
from purerl_lab.studies.mfos.coin_game import CoinGame, CoinState
from purerl.envs.core import ActionSpace, Env, Timestep
from purerl.envs.wrappers import EpisodeStats
from purerl.nets.layers import init_params
from purerl_lab.studies.mfos.coin_nets import ConvActorCritic, ConvGRUActorCritic
from purerl.run.population import one_by_one
from purerl_lab.studies.mfos.meta_game import meta_training
from purerl_lab.studies.mfos.runs import final_window, summaries, train_members

INNER_STEPS = 16  # steps per inner episode
INNER_EPISODES = 16  # inner episodes per meta-episode
META_STEPS = INNER_STEPS * INNER_EPISODES
MFOS_SEAT, OPPONENT_SEAT = 0, 1  # M-FOS plays red
ACTIONS = ActionSpace(discrete=True, num_actions=CoinGame.num_actions)
# Per meta-episode, means over boards: rewards per step, then each player's own-coin rate (the share of
# the coins it took that were its own: 1 is fully cooperative, 0.5 indifferent).
LOG_COLUMNS = ("mfos_reward", "opponent_reward", "mfos_own_coin_rate", "opponent_own_coin_rate")

# The authors' inner PPO agent: lr 0.005, gamma 0.96, 80 full-batch epochs, clip 0.2, entropy 0.01,
# Monte-Carlo returns (gae_lambda = 1, the inner episode's end is terminal), no gradient clipping.
OPPONENT_HP = HyperParams(lr=5e-3, gamma=0.96, gae_lambda=1.0, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5,
                          max_grad_norm=1e9)
# The authors' M-FOS PPO: lr 2e-4, gamma 0.995, 16 full-batch epochs, clip 0.2, no entropy bonus,
# Monte-Carlo returns normalised (here: reward normalisation, gae_lambda = 1, advantage normalisation).
MFOS_HP = HyperParams(lr=2e-4, gamma=0.995, gae_lambda=1.0, clip_eps=0.2, ent_coef=0.0, vf_coef=0.5,
                      max_grad_norm=1e9)


@dataclass(frozen=True)
class CoinSettings:
    """The budget of a coin-game run (static: it fixes every shape)."""

    num_boards: int  # boards played in parallel; the opponent learns from all of them
    meta_episodes: int  # M-FOS PPO updates, one meta-episode (256 steps of every board) each
    seeds: int
    channels: int  # M-FOS conv channels and GRU width (the authors: 16)
    description: str

    def validate(self) -> None:
        check_counts(self, {"num_boards": MAX_DIMENSION, "meta_episodes": MAX_INT32, "seeds": MAX_MEMBERS,
                            "channels": MAX_DIMENSION})

    def replace(self, **changes) -> CoinSettings:
        return dataclasses.replace(self, **changes)


PRESETS: dict[str, CoinSettings] = {
    "paper": CoinSettings(512, 1000, 3, 16, "the authors' scale: 512 boards x 1000 meta-episodes (one GPU)"),
    "cpu": CoinSettings(32, 12, 2, 16,
                        "smoke run on a 2-core CPU: 32 boards x 12 meta-episodes, 2 seeds (about 30 s)"),
    "tiny": CoinSettings(4, 2, 1, 4, "test: 4 boards x 2 meta-episodes"),
}


class CoinGameSeat(Env):
    """The coin game as one seat sees it: shapes for the opponent's PPO (it is stepped by `CoinGameMeta`)."""

    name = "coin-game-seat"
    observation_shape = CoinGame.observation_shape
    action_space = ACTIONS
    max_episode_steps = INNER_STEPS


def opponent_ppo(num_boards: int) -> PPO:
    config = PPOConfig(env="coin-game-seat", num_envs=num_boards, num_steps=INNER_STEPS,
                       total_timesteps=num_boards * INNER_STEPS, update_epochs=80, num_minibatches=1,
                       anneal_lr=False)
    return PPO(config, env=CoinGameSeat(), network=ConvActorCritic(ACTIONS, channels=2, features=8))


class CoinMetaState(NamedTuple):
    boards: CoinState  # [B]
    opponent: RunnerState  # one learner for all boards (params, opt_state, key)
    memory: Transition  # [INNER_STEPS, B]: the opponent's inner episode so far
    t: jax.Array  # step within the inner episode (shared by all boards)
    episode: jax.Array  # inner episode within the meta-episode
    totals: jax.Array  # [B, 6]: rewards of both, then own and other coins taken by M-FOS and by the opponent
    last_meta: jax.Array  # [4] LOG_COLUMNS of the last finished meta-episode


class CoinGameMeta(Env):
    """M-FOS's side of the coin-game meta-game; its boards step together (they share the opponent).

    observation: [3, 3, 7]: the board from M-FOS's seat (4 planes), then both
        players' last rewards and a flag that a new inner episode (and so a new
        opponent policy) begins, each tiled over the grid (as in the authors' code).
    time limit: a meta-episode of 256 steps, reported as truncated; then every
        board resets to a fresh opponent.
    """

    name = "mfos-coin"
    observation_shape = (3, 3, 7)
    action_space = ACTIONS
    max_episode_steps = META_STEPS

    def __init__(self, num_boards: int):
        self.num_boards = num_boards
        self.game = CoinGame()
        self.opponent = opponent_ppo(num_boards)
        self.opponent_hp = OPPONENT_HP.as_arrays()

    def reset(self, key):
        raise NotImplementedError("CoinGameMeta's boards share one opponent: use reset_batch")

    def step(self, key, state, action):
        raise NotImplementedError("CoinGameMeta's boards share one opponent: use step_batch")

    def _fresh_opponent(self, key: jax.Array) -> RunnerState:
        params = init_params(self.opponent.network, key, CoinGame.observation_shape)
        return RunnerState(params=params, opt_state=self.opponent.optimizer(self.opponent_hp).init(params),
                           env_state=None, obs=None, reset=None, carry=(), obs_stats=None, reward_stats=None,
                           key=jax.random.fold_in(key, 1), metrics=None)

    def _views(self, boards: CoinState) -> jax.Array:
        """[B, 2, 3, 3, 4]: every board from both seats."""
        return jax.vmap(self.game.observe)(boards)

    def _observe(self, views: jax.Array, rewards: jax.Array, new_episode: jax.Array) -> jax.Array:
        """M-FOS's observation: its board planes, then the tiled rewards and new-inner-episode flag."""
        planes = views[:, MFOS_SEAT]
        extra = jnp.concatenate([rewards, jnp.broadcast_to(new_episode, rewards.shape[:1])[:, None]], axis=-1)
        return jnp.concatenate([planes, jnp.broadcast_to(extra[:, None, None, :], planes.shape[:3] + (3,))], axis=-1)

    def reset_batch(self, keys):
        boards = jax.vmap(self.game.reset)(keys)
        shapes = {"obs": CoinGame.observation_shape, "bootstrap_obs": CoinGame.observation_shape}
        dtypes = {"action": jnp.int32, "episode_length": jnp.int32,
                  **{flag: bool for flag in ("reset", "terminated", "done", "episode_done")}}
        memory = Transition(**{field: jnp.zeros((INNER_STEPS, self.num_boards) + shapes.get(field, ()),
                                                dtypes.get(field, jnp.float32)) for field in Transition._fields
                               if field != "bootstrap_value"})  # the opponent's values come from bootstrap_obs
        state = CoinMetaState(boards, self._fresh_opponent(jax.random.fold_in(keys[0], 7)), memory, jnp.int32(0),
                              jnp.int32(0), jnp.zeros((self.num_boards, 6)), jnp.full(4, jnp.nan))
        return self._observe(self._views(boards), jnp.zeros((self.num_boards, 2)), jnp.bool_(True)), state

    def step_batch(self, keys, state: CoinMetaState, actions):
        action_key, opponent_key, reset_key = jax.random.split(jax.random.fold_in(keys[0], 3), 3)
        opponent_obs = self._views(state.boards)[:, OPPONENT_SEAT]
        pi = self.opponent.network.apply(state.opponent.params, opponent_obs, method="policy")
        opponent_action = pi.sample(action_key)
        joint = jnp.stack([actions, opponent_action], axis=-1)  # seat order: M-FOS, opponent
        boards, rewards, pickups = jax.vmap(self.game.step)(keys, state.boards, joint)
        reached = self._views(boards)  # before any reset: the opponent's bootstrap, M-FOS's final observation

        t = state.t + 1
        inner_end = t == INNER_STEPS
        flags = jnp.full(self.num_boards, inner_end)
        step = Transition(obs=opponent_obs, reset=jnp.full(self.num_boards, state.t == 0), action=opponent_action,
                          log_prob=pi.log_prob(opponent_action), reward=rewards[:, OPPONENT_SEAT], terminated=flags,
                          done=flags, bootstrap_obs=reached[:, OPPONENT_SEAT], episode_done=flags,
                          episode_return=rewards[:, OPPONENT_SEAT], episode_length=jnp.full(self.num_boards, t))
        memory = jax.tree.map(lambda buffer, x: buffer.at[state.t].set(x), state.memory, step)
        opponent = jax.lax.cond(
            inner_end,
            lambda o: self.opponent.learn_from(o, memory, (), self.opponent_hp, None)[0],
            lambda o: o,
            state.opponent,
        )
        episode = state.episode + inner_end
        meta_end = episode == INNER_EPISODES
        opponent = jax.lax.cond(meta_end, lambda o: self._fresh_opponent(opponent_key), lambda o: o, opponent)

        taken = jnp.stack([pickups.own[:, MFOS_SEAT], pickups.other[:, MFOS_SEAT],
                           pickups.own[:, OPPONENT_SEAT], pickups.other[:, OPPONENT_SEAT]], axis=-1)
        totals = state.totals + jnp.concatenate([rewards, taken.astype(jnp.float32)], axis=-1)
        finished = _log_row(totals)
        fresh_boards = jax.vmap(self.game.reset)(jax.random.split(reset_key, self.num_boards))
        next_boards = jax.tree.map(lambda a, b: jnp.where(inner_end, a, b), fresh_boards, boards)
        next_state = CoinMetaState(
            boards=next_boards, opponent=opponent, memory=memory, t=jnp.where(inner_end, 0, t),
            episode=jnp.where(meta_end, 0, episode), totals=jnp.where(meta_end, 0.0, totals),
            last_meta=jnp.where(meta_end, finished, state.last_meta),
        )
        truncated = jnp.full(self.num_boards, meta_end)
        timestep = Timestep(
            obs=self._observe(self._views(next_boards), jnp.where(inner_end, 0.0, rewards), inner_end),
            reward=rewards[:, MFOS_SEAT],
            terminated=jnp.zeros(self.num_boards, bool),
            truncated=truncated,
            final_obs=self._observe(reached, rewards, jnp.bool_(False)),
            info={"opponent_reward": rewards[:, OPPONENT_SEAT]},
        )
        return next_state, timestep


def _log_row(totals: jax.Array) -> jax.Array:
    """LOG_COLUMNS from a meta-episode's totals [B, 6] (rates pool the coins of all boards)."""
    mean = totals.mean(axis=0)
    rate = lambda own, other: own / jnp.maximum(own + other, 1.0)  # noqa: E731
    return jnp.stack([mean[0] / META_STEPS, mean[1] / META_STEPS, rate(mean[2], mean[3]), rate(mean[4], mean[5])])


def mfos_config(settings: CoinSettings) -> PPOConfig:
    """One PPO update per meta-episode: every board's 256 steps as one sequence, 16 full-batch epochs."""
    return PPOConfig(env="mfos-coin", num_envs=settings.num_boards, num_steps=META_STEPS,
                     total_timesteps=settings.num_boards * META_STEPS * settings.meta_episodes, update_epochs=16,
                     num_minibatches=1, anneal_lr=False, normalize_reward=True, normalize_advantages=True)


def make_coin_train(settings: CoinSettings):
    """(ppo, init, advance): M-FOS (conv + GRU) trained by PPO against PPO learners, one meta-episode per
    update, logging LOG_COLUMNS per meta-episode (`mfos.meta_training`)."""
    env = EpisodeStats(CoinGameMeta(settings.num_boards))
    network = ConvGRUActorCritic(ACTIONS, channels=settings.channels, features=settings.channels)
    ppo = PPO(mfos_config(settings), env=env, network=network)
    init, advance = meta_training(ppo, MFOS_HP.as_arrays(), settings.meta_episodes, len(LOG_COLUMNS),
                                  lambda state: state.env_state.env_state.last_meta)
    return ppo, init, advance


def run(settings: CoinSettings, seeds: list[int], checkpoint_dir: Path | None = None, resume: bool = False,
        chunk: int | None = None, log=print) -> dict | None:
    """Train every seed (sharded over the devices, one after another on each: `population.one_by_one`),
    in chunks of meta-episodes with a checkpoint after each; `resume` continues from the last one.
    Returns None if stopped early."""
    def progress(done, rows):
        rewards = rows[:, :2].mean(axis=0)
        log(f"meta-episode {done}/{settings.meta_episodes}: M-FOS {rewards[0]:+.3f}, opponent {rewards[1]:+.3f} "
            f"per step")

    _, init, advance = make_coin_train(settings)
    finished = train_members(init, advance, seeds, settings.meta_episodes, one_by_one, checkpoint_dir, resume,
                             chunk, progress)
    if finished is None:
        return None
    runs, timing = finished
    log_rows = runs.log.astype(float)  # [seeds, meta_episodes, 4]
    window = final_window(settings.meta_episodes)
    final = log_rows[:, -window:].mean(axis=1)
    board_steps = len(seeds) * settings.num_boards * META_STEPS * settings.meta_episodes
    return {"game": "coin", "opponent": "ppo", "seeds": seeds, "final_window": window, "log": log_rows,
            "final": summaries(final, LOG_COLUMNS), "final_by_seed": final.tolist(),
            "first_by_seed": log_rows[:, 0].tolist(), "compile_s": timing["compile_s"], "run_s": timing["run_s"],
            "resumed_from_meta_episode": timing["first"],
            # run_s is summed over every session of a resumed run, so it covers every meta-episode
            "steps_per_s": board_steps / timing["run_s"] if timing["run_s"] > 0 else None}


def run_config(settings: CoinSettings, seeds: list[int], preset: str) -> dict:
    """Everything that fixes a run (config.json); a resumed run must match it."""
    return {"command": "mfos", "game": "coin", "opponent": "ppo", "preset": preset,
            "settings": dataclasses.asdict(settings), "mfos_ppo": recorded(mfos_config(settings)),
            "mfos_hyperparams": {k: float(v) for k, v in MFOS_HP._asdict().items()},
            "opponent_ppo": recorded(opponent_ppo(settings.num_boards).config),
            "opponent_hyperparams": {k: float(v) for k, v in OPPONENT_HP._asdict().items()},
            "seeds": seeds, "inner_steps": INNER_STEPS, "inner_episodes": INNER_EPISODES}
