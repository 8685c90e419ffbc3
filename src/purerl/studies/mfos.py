"""Model-Free Opponent Shaping (Lu, Willi, Schroeder de Witt, Foerster; ICML 2022, arXiv 2205.01447).

M-FOS treats a whole inner game as one step of a meta-game. At meta-step t the
M-FOS agent picks the 5 logits of its memory-one policy, both players play the
infinitely repeated game exactly (`envs.games`), M-FOS is paid its per-step
reward and the opponent, a learner, takes one learning step against the policy
it just met. A meta-episode is 100 such steps against one opponent, so M-FOS can
learn to *shape* its learning opponent, paying early to be paid later.

Here the meta-game is an ordinary purerl `Env` (`MetaGame`), and the M-FOS agent
is the library's PPO, unchanged: `make_train(config, env=EpisodeStats(MetaGame(...)))`.
A rollout of 100 steps is exactly one meta-episode of every game in the batch,
so one PPO update is one meta-episode. Meta self-play (two M-FOS agents) is a
short two-agent loop built from PPO's `advantages` and `learn` (`make_self_play_train`).

Seats: as in the authors' code, the learning opponent is player 1 (seat 0) and
M-FOS player 2 (seat 1). Every policy is written from its owner's perspective
(logits for start, CC, CD, DC, DD with its own action first).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl.algos.ppo import PPO, RunnerState, Transition, make_train
from purerl.config import ConfigError, HyperParams, PPOConfig
from purerl.envs import games
from purerl.envs.core import ActionSpace, Env, Timestep
from purerl.envs.wrappers import EpisodeStats
from purerl.nets import init_params
from purerl.population import Placement, batched, run_chunks

META_EPISODE = 100  # meta-steps (inner games) per meta-episode
OPPONENT_SEAT, MFOS_SEAT = 0, 1
GAME_NAMES = ("ipd", "imp", "chicken")  # the table's games
# chicken_oneshot: the authors' code plays chicken one-shot (gamma = 0, see envs.games); train only.
TRAIN_GAMES = GAME_NAMES + ("chicken_oneshot",)
OPPONENTS = ("nl", "lola", "mamaml")
INNER_LR = 1.0  # every inner learner steps with lr 1 on its unscaled value (see envs.games)


# ===================================================================== meta-game
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
        the opponent's initial policy.
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
                 meta_episode: int = META_EPISODE, lr: float = INNER_LR, mamaml_init: jax.Array | None = None):
        self.game = games.GAMES[game] if isinstance(game, str) else game
        if isinstance(opponent, str):
            opponent_name = opponent
            opponent = make_learner(opponent, mamaml_init)
        else:
            opponent_name = "custom"
        self.learner = opponent
        self.lr = lr
        self.name = f"mfos-{self.game.name}-{opponent_name}"
        self.observation_shape = (10,)
        self.action_space = ActionSpace(discrete=False, shape=(5,), low=-math.inf, high=math.inf)
        self.max_episode_steps = meta_episode

    def reset(self, key):
        previous_key, opponent_key = jax.random.split(key)
        opponent = self.learner.init(opponent_key)
        previous = jax.random.normal(previous_key, (5,))
        state = MetaGameState(opponent, jnp.int32(0), jnp.zeros(2), jnp.full(2, jnp.nan))
        return observe(previous, opponent), state

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


def make_learner(name: str, mamaml_init: jax.Array | None = None) -> games.Learner:
    if name == "mamaml":
        if mamaml_init is None:
            raise ConfigError("the mamaml opponent needs its meta-learned initial logits (train_mamaml_init)")
        return games.mamaml_learner(jnp.asarray(mamaml_init, jnp.float32))
    if name not in games.LEARNERS:
        raise ConfigError(f"unknown learner '{name}'; choose from nl, lola, mamaml")
    return games.LEARNERS[name]


# ======================================================================= settings
@dataclass(frozen=True)
class Settings:
    """The budget of an M-FOS experiment (static: it fixes every shape)."""

    num_games: int  # inner games played in parallel (the PPO batch is num_games x 100 meta-steps)
    meta_episodes: int  # PPO updates; one meta-episode each
    hidden_sizes: tuple[int, ...]  # actor and critic MLPs (tanh)
    seeds: int  # default number of seeds
    description: str
    mamaml_steps: int = 100  # Adam steps of MAMAML's meta-learned initialisation

    @property
    def nl_decay(self) -> float:
        """Per-episode decrease of lambda in self-play: 0.0015 at the paper's 1024 meta-episodes,
        scaled so that on any budget lambda reaches 0 after the same 65% of training."""
        return 0.0015 * 1024 / self.meta_episodes

    def validate(self) -> None:
        for name in ("num_games", "meta_episodes", "seeds", "mamaml_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{name.replace('_', '-')} must be a positive integer, got {value}")
        if not self.hidden_sizes or any(h <= 0 for h in self.hidden_sizes):
            raise ConfigError(f"hidden sizes must be positive, got {self.hidden_sizes}")

    def replace(self, **changes) -> Settings:
        return dataclasses.replace(self, **changes)


PRESETS: dict[str, Settings] = {
    "paper": Settings(4096, 1024, (256, 256), 3, "the paper: 4096 games x 1024 meta-episodes, 256-256 tanh (one GPU)"),
    "cpu": Settings(128, 200, (64, 64), 4, "2-core CPU, one pairing: 128 games x 200 meta-episodes, 64-64 tanh, "
                    "4 seeds (2 min vs NL, 4 min self-play)"),
    "small": Settings(64, 150, (64, 64), 2, "2-core CPU, the whole table: 64 games x 150 meta-episodes, 64-64 tanh, "
                      "2 seeds (about 8 min in all)"),
    "tiny": Settings(8, 4, (16,), 2, "smoke test: 8 games x 4 meta-episodes", mamaml_steps=5),
}

# The authors' M-FOS PPO: lr 2e-3, returns discounted at 0.99 and normalised, clip 0.2, entropy 0.01,
# 4 full-batch epochs. gae_lambda = 1 gives their Monte-Carlo returns (bootstrapped at the time limit);
# reward normalisation (running std of the discounted return) and per-batch advantage normalisation stand
# in for their batch normalisation of returns. max_grad_norm = 1 is ours (they do not clip).
HYPERPARAMS = HyperParams(lr=2e-3, gamma=0.99, gae_lambda=1.0, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5,
                          max_grad_norm=1.0)


def ppo_config(settings: Settings) -> PPOConfig:
    """One PPO update per meta-episode: num_games envs x 100 steps, 4 full-batch epochs, constant lr."""
    return PPOConfig(
        env="mfos-meta-game",
        num_envs=settings.num_games,
        num_steps=META_EPISODE,
        total_timesteps=settings.num_games * META_EPISODE * settings.meta_episodes,
        update_epochs=4,
        num_minibatches=1,
        hidden_sizes=tuple(settings.hidden_sizes),
        activation="tanh",
        anneal_lr=False,
        normalize_obs=False,
        normalize_reward=True,
        normalize_advantages=True,
    )


def resolve(preset: str, seeds: int | None = None, num_games: int | None = None,
            meta_episodes: int | None = None) -> Settings:
    """The preset with any overrides, validated (raises ConfigError before anything compiles)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; choose from {', '.join(PRESETS)}")
    changes = {k: v for k, v in dict(seeds=seeds, num_games=num_games, meta_episodes=meta_episodes).items()
               if v is not None}
    settings = PRESETS[preset].replace(**changes)
    settings.validate()
    return settings


def check_pairing(game: str, opponent: str) -> None:
    if game not in TRAIN_GAMES:
        raise ConfigError(f"unknown game '{game}'; choose from {', '.join(TRAIN_GAMES)}")
    if opponent not in OPPONENTS + ("self",):
        raise ConfigError(f"unknown opponent '{opponent}'; choose from {', '.join(OPPONENTS + ('self',))}")


def seed_keys(seeds: list[int]) -> jax.Array:
    return jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, jnp.uint32))


def mamaml_init(game: str, seat: int, steps: int, seed: int = 0) -> jax.Array:
    """MAMAML's initial logits, meta-learned in the seat it will play (one per game and seat, shared by all
    seeds of an experiment). Budget: `steps` Adam steps at lr 0.1 against 64 fresh naive learners."""
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 17 * TRAIN_GAMES.index(game) + seat)
    train = jax.jit(games.train_mamaml_init, static_argnums=(1, 2, 3))
    logits, _ = train(key, games.GAMES[game], seat, steps)
    return logits


# ============================================================ M-FOS vs a learner
class MetaRun(NamedTuple):
    state: RunnerState  # the M-FOS agent (PPO's runner state)
    log: jax.Array  # [meta_episodes, columns], one row per meta-episode; NaN for those not run yet


def meta_training(ppo: PPO, hp: HyperParams, meta_episodes: int, columns: int, log_row):
    """(init, advance) for PPO trained one meta-episode per update: `init(key) -> MetaRun`, then
    `advance(run, start, stop)` plays meta-episodes start..stop-1 and logs `log_row(state)` after each.
    Chunks compose exactly, so a run can checkpoint between them (`population.run_chunks`)."""

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
    env = EpisodeStats(MetaGame(game, opponent, mamaml_init=mamaml_logits))
    ppo = make_train(ppo_config(settings), env=env)
    init, advance = meta_training(ppo, HYPERPARAMS.as_arrays(), settings.meta_episodes, 2,
                                  lambda state: state.env_state.env_state.last_episode.mean(axis=0))
    return ppo, init, advance


# =================================================================== self-play
def nl_probability(episode: jax.Array | int, decay: float) -> jax.Array:
    """lambda: the probability that, in meta-episode `episode` (from 0), both M-FOS agents face naive
    learners instead of each other. It starts at 1 and falls by `decay` per meta-episode, down to 0."""
    return jnp.clip(1.0 - decay * jnp.asarray(episode, jnp.float32), 0.0, 1.0)


class SelfPlayState(NamedTuple):
    nl: jax.Array  # (2, 5) the naive learners that agent 0 and agent 1 face when vs_nl
    vs_nl: jax.Array  # bool: this meta-episode is played against naive learners


class SelfPlayGame:
    """Meta self-play in one inner game: M-FOS agent 0 sits in seat 0, agent 1 in seat 1.

    Against each other, the two agents' actions are the two policies of the game.
    Against naive learners (`vs_nl`), each agent keeps its seat and plays its own
    NL (N(0, 1) logits, lr 1) in the other seat, and the NL learns as in `MetaGame`.
    Observations are `observe(own, other)` per agent, as in `MetaGame`. Episodes
    are reset by the trainer (they are aligned with PPO updates).
    """

    def __init__(self, game: games.Game | str, lr: float = INNER_LR):
        self.game = games.GAMES[game] if isinstance(game, str) else game
        self.lr = lr

    def reset(self, key: jax.Array, vs_nl: jax.Array) -> tuple[jax.Array, SelfPlayState]:
        previous_key, nl_key = jax.random.split(key)
        previous = jax.random.normal(previous_key, (2, 5))
        nl = jax.random.normal(nl_key, (2, 5))
        others = jnp.where(vs_nl, nl, previous[::-1])
        return observe(previous, others), SelfPlayState(nl, jnp.asarray(vs_nl))

    def step(self, state: SelfPlayState, actions: jax.Array):
        """actions (2, 5) -> (state, obs (2, 10), rewards (2,), opponents' rewards (2,))."""
        game, (a0, a1), (nl0, nl1) = self.game, actions, state.nl
        self_rewards = jnp.stack(games.memory_one_value(game, a0, a1))
        r0, r_nl0 = games.memory_one_value(game, a0, nl0)
        r_nl1, r1 = games.memory_one_value(game, nl1, a1)
        rewards = jnp.where(state.vs_nl, jnp.stack([r0, r1]), self_rewards)
        opponent_rewards = jnp.where(state.vs_nl, jnp.stack([r_nl0, r_nl1]), self_rewards[::-1])
        others = jnp.where(state.vs_nl, state.nl, actions[::-1])
        learned = jnp.stack([games.naive_step(game, nl0, a0, 1, self.lr), games.naive_step(game, nl1, a1, 0, self.lr)])
        return state._replace(nl=learned), observe(actions, others), rewards, opponent_rewards


class SelfPlayRun(NamedTuple):
    agents: RunnerState  # both agents' params, optimiser and normaliser states, stacked on axis 0
    key: jax.Array
    rewards: jax.Array  # [meta_episodes, 2] mean reward per step of agents 0 and 1 (NaN: not run yet)
    opponent_rewards: jax.Array  # [meta_episodes, 2] of whoever each agent faced (its NL, or the other agent)
    vs_nl: jax.Array  # [meta_episodes] bool


def make_self_play_train(game: str, settings: Settings, decay: float | None = None):
    """(ppo, init, advance): two M-FOS agents trained with meta self-play; `init(key) -> SelfPlayRun`, then
    `advance(run, start, stop)` plays meta-episodes start..stop-1.

    The loop is PPO's own update, written for two agents: one rollout of a whole
    meta-episode of every game with both policies acting, then for each agent
    PPO's `advantages` and `learn` (vmapped over the agent axis). Each
    meta-episode the batch plays naive learners with probability lambda
    (`nl_probability`), otherwise the two agents play each other.
    """
    decay = settings.nl_decay if decay is None else decay
    config = ppo_config(settings)
    ppo = make_train(config, env=EpisodeStats(MetaGame(game, "nl")))  # the agent; its env only fixes shapes
    env = SelfPlayGame(game)
    hp = HYPERPARAMS.as_arrays()
    num_games = settings.num_games
    steps = META_EPISODE
    both = jax.vmap  # over the agent axis

    def init_agent(key):
        params = init_params(ppo.network, key, ppo.observation_shape)
        return RunnerState(params=params, opt_state=ppo.optimizer(hp).init(params), env_state=None, obs=None,
                           reset=None, carry=(), obs_stats=None, reward_stats=ppo.reward_norm.init(),
                           key=jax.random.fold_in(key, 1), metrics=None)

    def act(params, obs, key):
        pi = ppo.network.apply(params, obs, method="policy")
        action = pi.sample(key)
        return action, pi.log_prob(action)

    def rollout(agents: RunnerState, key: jax.Array, vs_nl: jax.Array):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, num_games), vs_nl)
        obs = jnp.swapaxes(obs, 0, 1)  # [agent, game, 10]

        def meta_step(carry, t):
            state, obs, reward_stats, key = carry
            key, action_key = jax.random.split(key)
            actions, log_prob = both(act)(agents.params, obs, jax.random.split(action_key))  # [agent, game, ...]
            state, next_obs, rewards, opponent_rewards = jax.vmap(env.step, in_axes=(0, 1))(state, actions)
            next_obs, rewards, opponent_rewards = (jnp.swapaxes(x, 0, 1) for x in (next_obs, rewards, opponent_rewards))
            last = jnp.full((2, num_games), t == steps - 1)
            never = jnp.zeros((2, num_games), bool)
            timestep = Timestep(next_obs, rewards, never, last, next_obs, {})
            reward_stats, scaled = both(ppo.reward_norm.update_and_normalize, in_axes=(0, 0, None))(
                reward_stats, timestep, hp.gamma)
            transition = Transition(obs=obs, reset=jnp.full((2, num_games), t == 0), action=actions,
                                    log_prob=log_prob, reward=scaled, terminated=never,
                                    done=last, bootstrap_obs=next_obs, episode_done=last,
                                    episode_return=rewards, episode_length=jnp.full((2, num_games), t + 1))
            return (state, next_obs, reward_stats, key), (transition, opponent_rewards)

        carry = (state, obs, agents.reward_stats, key)
        (_, _, reward_stats, _), (trajectory, opponent_rewards) = jax.lax.scan(meta_step, carry, jnp.arange(steps))
        trajectory = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), trajectory)  # [agent, step, game, ...]
        return agents._replace(reward_stats=reward_stats), trajectory, opponent_rewards

    def learn(agent: RunnerState, trajectory: Transition):
        return ppo.learn_from(agent, trajectory, agent.carry, None, hp)[0]

    def init(key: jax.Array) -> SelfPlayRun:
        agent_keys = jax.random.split(key, 3)
        agents = jax.tree.map(lambda *x: jnp.stack(x), init_agent(agent_keys[0]), init_agent(agent_keys[1]))
        episodes = settings.meta_episodes
        return SelfPlayRun(agents, agent_keys[2], jnp.full((episodes, 2), jnp.nan), jnp.full((episodes, 2), jnp.nan),
                           jnp.zeros(episodes, bool))

    def advance(run: SelfPlayRun, start, stop) -> SelfPlayRun:
        def meta_episode(episode, run):
            key, coin_key, rollout_key = jax.random.split(run.key, 3)
            vs_nl = jax.random.uniform(coin_key) < nl_probability(episode, decay)
            agents, trajectory, opponent_rewards = rollout(run.agents, rollout_key, vs_nl)
            agents = both(learn)(agents, trajectory)
            return SelfPlayRun(agents, key, run.rewards.at[episode].set(trajectory.episode_return.mean(axis=(1, 2))),
                               run.opponent_rewards.at[episode].set(opponent_rewards.mean(axis=(0, 2))),
                               run.vs_nl.at[episode].set(vs_nl))

        return jax.lax.fori_loop(start, stop, meta_episode, run)

    return ppo, init, advance


# =================================================================== baselines
SHAPERS = ("nl", "lola", "mamaml")  # the non-M-FOS row players of the table
BASELINE_PAIRS = tuple((shaper, opponent) for shaper in SHAPERS for opponent in OPPONENTS)


def make_baselines(game: str, num_games: int, mamaml_inits: dict[int, jax.Array] | None = None,
                   pairs: tuple[tuple[str, str], ...] = BASELINE_PAIRS):
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
            rewards, _ = games.play(game_key, inner, column, row, META_EPISODE, INNER_LR)
            return rewards.mean(axis=0)[::-1]

        return jax.vmap(one)(jax.random.split(key, num_games)).mean(axis=0)

    return lambda key: jax.vmap(play_pair, in_axes=(None, 0))(key, kinds)


def run_baselines(game: str, num_games: int, seeds: list[int], mamaml_inits: dict[int, jax.Array] | None = None,
                  pairs: tuple[tuple[str, str], ...] = BASELINE_PAIRS) -> dict[str, dict]:
    """Every pair of plain learners on every seed: {"shaper vs opponent": summaries and per-seed values}."""
    play = make_baselines(game, num_games, mamaml_inits, pairs)
    per_seed = np.asarray(jax.jit(jax.vmap(play))(seed_keys(seeds)), float)  # [seeds, pairs, 2]
    return {f"{shaper} vs {opponent}": {"final": _summaries(per_seed[:, i], ("shaper", "opponent")),
                                        "final_by_seed": per_seed[:, i].tolist()}
            for i, (shaper, opponent) in enumerate(pairs)}


# ================================================================ ZD extortion
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


def play_meta_episode(ppo: PPO, params, key: jax.Array, num_games: int) -> Trajectory:
    """One meta-episode of the trained M-FOS (actions sampled, as in training) against fresh opponents."""
    env = ppo.env
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(reset_key, num_games))

    def meta_step(carry, step_key):
        obs, state = carry
        action_key, env_key = jax.random.split(step_key)
        action = ppo.act(params, None, obs, action_key)
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


# ================================================================ experiments
def final_window(meta_episodes: int) -> int:
    """The final numbers average the last 10% of meta-episodes (at least one)."""
    return max(1, meta_episodes // 10)


def train_members(init, advance, seeds: list[int], total: int, member_program=batched, checkpoint_dir=None,
                  resume: bool = False, chunk: int | None = None, stop_after_chunks: int | None = None,
                  on_chunk=None) -> tuple[object, dict] | None:
    """One member per seed, sharded over the devices: `init(key)`, then `advance(run, start, stop)` over
    `total` meta-episodes in chunks, checkpointed after each (`population.run_chunks`). `on_chunk(done,
    rows)` gets every member's last `log` row. Returns the members' final state as host arrays and the
    timing, or None if stopped early."""
    placement = Placement.for_members(len(seeds))
    tick = time.perf_counter()
    runs = member_program(init, placement)(placement.put(seed_keys(seeds)))
    init_s = time.perf_counter() - tick
    report = None if on_chunk is None else (
        lambda start, stop, runs: on_chunk(stop, placement.get(runs.log[:, stop - 1], len(seeds))))
    finished = run_chunks(member_program(advance, placement, 2), runs, placement, len(seeds), total,
                          checkpoint_dir=checkpoint_dir, resume=resume, chunk=chunk,
                          stop_after_chunks=stop_after_chunks, on_chunk=report)
    if finished is None:
        return None
    runs, timing = finished
    return placement.get(runs, len(seeds)), {**timing, "compile_s": init_s + timing["compile_s"]}


def summarize_seeds(values: np.ndarray) -> dict:
    """Mean over seeds with a 95% percentile-bootstrap CI of the mean (and the IQM, for reference)."""
    from purerl import stats

    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not values.size:
        return {"mean": float("nan"), "ci95_low": float("nan"), "ci95_high": float("nan"), "n": 0}
    low, high = stats.bootstrap_ci(values, statistic=lambda x, axis: np.mean(x, axis=axis))
    return {"mean": float(values.mean()), "ci95_low": float(low), "ci95_high": float(high),
            "iqm": float(stats.iqm(values)), "std": float(values.std()), "n": int(values.size)}


def _summaries(per_seed: np.ndarray, names: tuple[str, str]) -> dict:
    """per_seed [seeds, 2] -> {name: summarize_seeds(column)}."""
    return {name: summarize_seeds(per_seed[:, i]) for i, name in enumerate(names)}


def run_vs_learner(game: str, opponent: str, settings: Settings, seeds: list[int],
                   mamaml_logits: jax.Array | None = None, **chunking) -> dict | None:
    """Train M-FOS against `opponent` on every seed (vmapped, sharded over the devices), then analyse its
    late policy. `chunking` goes to `train_members` (checkpoint_dir, resume, ...)."""
    check_pairing(game, opponent)
    logits = None
    if opponent == "mamaml":
        logits = mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps) if mamaml_logits is None else mamaml_logits
    ppo, init, advance = make_mfos_train(game, opponent, settings, logits)
    finished = train_members(init, advance, seeds, settings.meta_episodes, **chunking)
    if finished is None:
        return None
    run, timing = finished
    keys = seed_keys(seeds)
    rewards = run.log.astype(float)  # [seeds, episodes, 2]
    window = final_window(settings.meta_episodes)
    final = rewards[:, -window:].mean(axis=1)

    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, 2_000_003))(keys)
    trajectory = jax.jit(jax.vmap(lambda p, k: play_meta_episode(ppo, p, k, settings.num_games)))(
        run.state.params, eval_keys)
    pooled = Trajectory(*(np.concatenate(list(np.asarray(x)), axis=1) for x in trajectory))  # seeds x games pooled
    return {
        "game": game, "opponent": opponent, "seeds": seeds, "final_window": window,
        "final": _summaries(final, ("mfos", "opponent")), "final_by_seed": final.tolist(),
        "rewards": rewards, "analysis": extortion_analysis(pooled, game), "trajectory": pooled,
        "ppo_metrics": dict(run.state.metrics),  # [seeds, meta-episodes]
        "compile_s": timing["compile_s"], "run_s": timing["run_s"], "resumed_from_meta_episode": timing["first"],
        "mamaml_init": None if logits is None else np.asarray(logits).tolist(),
    }


def run_self_play(game: str, settings: Settings, seeds: list[int], decay: float | None = None,
                  **chunking) -> dict | None:
    """Meta self-play on every seed; final numbers over the last self-play meta-episodes."""
    check_pairing(game, "self")
    _, init, advance = make_self_play_train(game, settings, decay)
    finished = train_members(init, advance, seeds, settings.meta_episodes, **chunking)
    if finished is None:
        return None
    run, timing = finished
    rewards = run.rewards.astype(float)  # [seeds, episodes, 2]
    vs_nl = np.asarray(run.vs_nl, bool)
    window = final_window(settings.meta_episodes)
    final = np.full((len(seeds), 2), np.nan)
    for i in range(len(seeds)):
        self_play = np.flatnonzero(~vs_nl[i])[-window:]
        if self_play.size:
            final[i] = rewards[i, self_play].mean(axis=0)
    return {
        "game": game, "opponent": "self", "seeds": seeds, "final_window": window,
        "nl_decay": settings.nl_decay if decay is None else decay,
        "final": _summaries(final, ("agent0", "agent1")), "final_by_seed": final.tolist(),
        "rewards": rewards, "opponent_rewards": run.opponent_rewards.astype(float), "vs_nl": vs_nl,
        "compile_s": timing["compile_s"], "run_s": timing["run_s"], "resumed_from_meta_episode": timing["first"],
    }


# ====================================================================== output
PAPER = {  # the paper's full-scale IPD numbers quoted in the brief (M-FOS, opponent)
    ("ipd", "nl"): (-0.48, -2.17),
}
_POLICY_LABELS = ("start", "CC", "CD", "DC", "DD")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _band(ax, x, values, label, color=None):
    """Mean over seeds (axis 0) with the min-max band."""
    center = np.nanmean(values, axis=0)
    line = ax.plot(x, center, label=label, color=color)[0]
    if values.shape[0] > 1:
        ax.fill_between(x, np.nanmin(values, axis=0), np.nanmax(values, axis=0), color=line.get_color(),
                        alpha=0.2, linewidth=0)


def plot_rewards(ax, result: dict) -> None:
    """Both players' mean reward per step in every meta-episode (mean over seeds, min-max band)."""
    import warnings

    rewards = result["rewards"]
    episodes = np.arange(1, rewards.shape[1] + 1)
    warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
    if result["opponent"] == "self":
        vs_nl = result["vs_nl"]
        for agent in (0, 1):
            ax.plot(episodes, np.nanmean(np.where(~vs_nl, rewards[..., agent], np.nan), axis=0), ".",
                    ms=3, label=f"M-FOS {agent} vs M-FOS {1 - agent}")
            ax.plot(episodes, np.nanmean(np.where(vs_nl, rewards[..., agent], np.nan), axis=0), "x",
                    ms=3, alpha=0.5, label=f"M-FOS {agent} vs its NL")
        lam = np.asarray(nl_probability(np.arange(rewards.shape[1]), result["nl_decay"]))
        twin = ax.twinx()
        twin.plot(episodes, lam, color="gray", lw=0.8, ls="--")
        twin.set_ylabel("lambda (P[vs NL])", color="gray")
        twin.set_ylim(0, 1.05)
    else:
        _band(ax, episodes, rewards[..., 0], "M-FOS")
        _band(ax, episodes, rewards[..., 1], result["opponent"].upper())
    ax.set_xlabel("meta-episode")
    ax.set_ylabel("mean reward per step")
    against = "M-FOS (meta self-play)" if result["opponent"] == "self" else result["opponent"].upper()
    ax.set_title(f"{result['game'].upper()}: M-FOS vs {against} ({len(result['seeds'])} seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="lower right")


def plot_policies(trajectory: Trajectory, path: Path, title: str) -> None:
    """P(C | start, CC, CD, DC, DD) of M-FOS and of its opponent at every meta-step (mean over games)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    steps = np.arange(1, trajectory.mfos.shape[0] + 1)
    for ax, probabilities, who in ((axes[0], trajectory.mfos, "M-FOS"), (axes[1], trajectory.opponent, "opponent")):
        for i, label in enumerate(_POLICY_LABELS):
            ax.plot(steps, np.asarray(probabilities)[:, :, i].mean(axis=1), label=f"P(C | {label})")
        ax.set_title(who)
        ax.set_xlabel("meta-step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("probability of cooperating")
    axes[1].legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)


def _save(fig, path: Path) -> None:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110)
    _pyplot().close(fig)
    os.replace(tmp, path)


def _jsonable(result: dict) -> dict:
    drop = ("rewards", "opponent_rewards", "vs_nl", "trajectory", "ppo_metrics")
    return {k: v for k, v in result.items() if k not in drop}


def run_config(game: str, opponent: str, settings: Settings, seeds: list[int], preset: str) -> dict:
    """Everything that fixes a run (config.json); a resumed run must match it."""
    return {"command": "mfos", "game": game, "opponent": opponent, "preset": preset,
            "settings": dataclasses.asdict(settings), "ppo": dataclasses.asdict(ppo_config(settings)),
            "hyperparams": {k: float(v) for k, v in HYPERPARAMS._asdict().items()}, "seeds": seeds,
            "meta_episode": META_EPISODE, "inner_lr": INNER_LR}


def write_run(out: Path, result: dict, settings: Settings, preset: str) -> None:
    """metrics.csv (per meta-episode and seed), summary.json, rewards.png, policies.png (config.json is
    written when the run starts)."""
    import csv
    import io

    from purerl import results

    names = ("agent0", "agent1") if result["opponent"] == "self" else ("mfos", "opponent")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    header = ["meta_episode"] + [f"{n}[seed={s}]" for s in result["seeds"] for n in names]
    if result["opponent"] == "self":
        header += [f"vs_nl[seed={s}]" for s in result["seeds"]]
    ppo_columns = ("entropy", "approx_kl", "clip_fraction", "value_loss")
    ppo_metrics = result.get("ppo_metrics", {})
    header += [f"{name}_mean" for name in ppo_columns if name in ppo_metrics]
    writer.writerow(header)
    rewards = result["rewards"]
    for e in range(rewards.shape[1]):
        row = [e] + [f"{rewards[i, e, j]:.6g}" for i in range(len(result["seeds"])) for j in (0, 1)]
        if result["opponent"] == "self":
            row += [int(v) for v in result["vs_nl"][:, e]]
        row += [f"{ppo_metrics[name][:, e].mean():.6g}" for name in ppo_columns if name in ppo_metrics]
        writer.writerow(row)
    results.write_atomic(out / "metrics.csv", buffer.getvalue())
    summary = {**_jsonable(result), "preset": preset, "settings": dataclasses.asdict(settings),
               "paper": PAPER.get((result["game"], result["opponent"]))}
    results.write_atomic(out / "summary.json", json.dumps(summary, indent=2))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    plot_rewards(ax, result)
    fig.tight_layout()
    _save(fig, out / "rewards.png")
    if "trajectory" in result:
        plot_policies(result["trajectory"], out / "policies.png",
                      f"{result['game'].upper()}: trained M-FOS vs a fresh {result['opponent'].upper()}")


# ======================================================================= table
def run_table(settings: Settings, seeds: list[int], report: Path, games_: tuple[str, ...] = GAME_NAMES,
              preset: str = "small", log=print) -> dict:
    """Every pairing in every game: plain learners against each other, M-FOS against each learner, and
    M-FOS self-play. Writes REPORT (markdown) and, next to it, REPORT_STEM/ (table.json and plots)."""
    from purerl import results

    results_dir = report.parent / report.stem
    results_dir.mkdir(parents=True, exist_ok=True)
    record = {"preset": preset, "settings": dataclasses.asdict(settings), "seeds": seeds,
              "hyperparams": {k: float(v) for k, v in HYPERPARAMS._asdict().items()}, "games": {}}
    started = time.perf_counter()
    for game in games_:
        inits = {seat: mamaml_init(game, seat, settings.mamaml_steps) for seat in (OPPONENT_SEAT, MFOS_SEAT)}
        rows = run_baselines(game, settings.num_games, seeds, inits)
        for label, row in rows.items():
            log(f"{game} {label:18s} {_cell(row['final']['shaper'])}  {_cell(row['final']['opponent'])}")
        mfos_runs = {}
        for opponent in OPPONENTS:
            result = run_vs_learner(game, opponent, settings, seeds, inits[OPPONENT_SEAT])
            mfos_runs[opponent] = result
            rows[f"mfos vs {opponent}"] = {"final": {"shaper": result["final"]["mfos"],
                                                     "opponent": result["final"]["opponent"]},
                                           "final_by_seed": result["final_by_seed"], "run_s": result["run_s"]}
            log(f"{game} {'mfos vs ' + opponent:18s} {_cell(result['final']['mfos'])}  "
                f"{_cell(result['final']['opponent'])}  ({result['compile_s']:.0f} s compile, {result['run_s']:.0f} s)")
        self_play = run_self_play(game, settings, seeds)
        mfos_runs["self"] = self_play
        final = self_play["final"]
        rows["mfos vs mfos"] = {"final": {"shaper": final["agent1"], "opponent": final["agent0"]},
                                "final_by_seed": self_play["final_by_seed"], "run_s": self_play["run_s"]}
        log(f"{game} {'mfos vs mfos':18s} {_cell(self_play['final']['agent1'])}  {_cell(self_play['final']['agent0'])}"
            f"  ({self_play['compile_s']:.0f} s compile, {self_play['run_s']:.0f} s)")

        plt = _pyplot()
        fig, axes = plt.subplots(2, 2, figsize=(12, 8))
        for ax, result in zip(axes.ravel(), mfos_runs.values()):
            plot_rewards(ax, result)
        fig.tight_layout()
        _save(fig, results_dir / f"{game}_rewards.png")
        nl_run = mfos_runs["nl"]
        plot_policies(nl_run["trajectory"], results_dir / f"{game}_nl_policies.png",
                      f"{game.upper()}: trained M-FOS vs a fresh NL")
        record["games"][game] = {"rows": rows,
                                 "mamaml_init": {str(s): np.asarray(v).tolist() for s, v in inits.items()},
                                 "analysis_vs_nl": nl_run["analysis"]}
        record["elapsed_s"] = time.perf_counter() - started
        results.write_atomic(results_dir / "table.json", json.dumps(record, indent=2))
        write_report(record, report)
    return record


def _cell(s: dict) -> str:
    if not s.get("n"):
        return "n/a"
    return f"{s['mean']:+.2f} [{s['ci95_low']:+.2f}, {s['ci95_high']:+.2f}]"


_ROW_ORDER = [f"{a} vs {b}" for b in OPPONENTS for a in SHAPERS + ("mfos",)] + ["mfos vs mfos"]


def write_report(record: dict, report: Path) -> None:
    """docs/results/mfos.md from table.json (generated)."""
    from purerl import results

    s = record["settings"]
    results_dir = report.parent / report.stem
    lines = [
        "# Model-Free Opponent Shaping (M-FOS)", "",
        f"Generated by `purerl mfos table --preset {record['preset']}`; do not edit by hand "
        f"(data: [{results_dir.name}/table.json]({results_dir.name}/table.json)).", "",
        f"Budget: {s['num_games']} games in parallel x {s['meta_episodes']} meta-episodes of {META_EPISODE} "
        f"meta-steps, M-FOS actor and critic {'-'.join(map(str, s['hidden_sizes']))} tanh, seeds "
        f"{record['seeds']}, MAMAML initialisation from {s['mamaml_steps']} Adam steps. "
        f"The paper used 4096 games x 1024 meta-episodes (`--preset paper`). "
        f"Total time {record.get('elapsed_s', 0) / 60:.1f} min.", "",
        "Each cell: mean reward per step over the meta-episode (100 learning steps), mean over seeds with a "
        "95% percentile-bootstrap CI of the mean. Plain learners (NL, LOLA, MAMAML; lr 1) learn "
        "simultaneously from N(0, 1) logits (MAMAML from its meta-learned logits); for them the number is "
        "exact given the seed (the mean over the games of that seed). M-FOS rows are the mean over the last "
        "10% of training meta-episodes; for M-FOS vs M-FOS, over the last 10% of meta-episodes in which the "
        "two agents met (lambda falls linearly from 1 to 0 over the first 65% of training). The row player "
        "sits in seat 2 (player 2), the column player in seat 1. Meta self-play needs more meta-episodes than "
        "the other M-FOS rows (only the last 35% of training is pure self-play), so on a small budget it can "
        "stay at mutual defection; `purerl mfos --opponent self --preset cpu` trains it longer.", "",
    ]
    for game, entry in record["games"].items():
        rows = entry["rows"]
        lines += [f"## {game.upper()}", "", "| row vs column | row player | column player |", "|---|---|---|"]
        for label in _ROW_ORDER:
            if label in rows:
                row = rows[label]["final"]
                pretty = label.replace("mfos", "M-FOS").replace("mamaml", "MAMAML").replace("lola", "LOLA")
                pretty = pretty.replace("nl", "NL")
                lines.append(f"| {pretty} | {_cell(row['shaper'])} | {_cell(row['opponent'])} |")
        if game in {g for g, _ in PAPER}:
            lines += [""] + [f"Paper, full scale: M-FOS vs {o.upper()} {m:+.2f}, {o.upper()} {n:+.2f}."
                             for (g, o), (m, n) in PAPER.items() if g == game]
        lines += ["", f"![M-FOS training curves]({results_dir.name}/{game}_rewards.png)", ""]
        lines += _analysis_lines(game, entry["analysis_vs_nl"], f"{results_dir.name}/{game}_nl_policies.png")
    out = "\n".join(lines) + "\n"
    report.parent.mkdir(parents=True, exist_ok=True)
    results.write_atomic(report, out)


def _analysis_lines(game: str, analysis: dict, plot: str) -> list[str]:
    mfos, opp = analysis["mfos_policy"], analysis["opponent_policy"]
    test, fit = analysis["policy_test"], analysis["payoff_fit"]
    late = analysis["late_meta_steps"]
    lines = [f"### The trained M-FOS against a fresh NL ({game.upper()})", "",
             f"Memory-one policies averaged over the last {late} meta-steps of a meta-episode and over games "
             "and seeds (M-FOS's actions sampled, as in training):", "",
             "| | P(C\\|start) | P(C\\|CC) | P(C\\|CD) | P(C\\|DC) | P(C\\|DD) |", "|---|---|---|---|---|---|",
             "| M-FOS | " + " | ".join(f"{mfos[k]:.2f}" for k in _POLICY_LABELS) + " |",
             "| NL | " + " | ".join(f"{opp[k]:.2f}" for k in _POLICY_LABELS) + " |", ""]
    if game == "ipd":
        lines += [
            "Press & Dyson extortion tests (`zd_extortion_test`, `extortion_fit` in `studies/mfos.py`):", "",
            f"- Policy vector: the fit p~ = phi[(S_X - P) - chi (S_Y - P)] gives chi = {test['chi']:.2f}, "
            f"phi = {test['phi']:.3f}, largest error {test['residual']:.3f} (tolerance {test['tolerance']}); "
            f"extortionate: **{'yes' if test['extortionate'] else 'no'}**.",
            f"- Reached payoffs: s_X - P = chi (s_Y - P) with P = {fit['kappa']:g} gives chi = {fit['chi']:.2f}, "
            f"R^2 = {fit['r2']:.2f} over {fit['points']} (game, meta-step) points; M-FOS {fit['own_mean']:.2f}, "
            f"NL {fit['other_mean']:.2f} per step; extortionate: **{'yes' if fit['extortionate'] else 'no'}**.", ""]
    lines += [f"![policies over the meta-episode]({plot})", ""]
    return lines


# ========================================================================= CLI
def add_arguments(subparsers) -> None:
    """Add `mfos` to an argparse subparsers object (`purerl mfos [train|table] ...`)."""
    parser = subparsers.add_parser(
        "mfos", help="model-free opponent shaping in iterated matrix games",
        description="Train M-FOS against a learner (train, the default) or run every pairing (table).")
    parser.add_argument("what", nargs="?", choices=["train", "table"], default="train")
    parser.add_argument("--game", choices=TRAIN_GAMES + ("coin",),
                        help="train: ipd (default), imp, chicken, chicken_oneshot, or coin (the coin game against "
                             "a PPO learner, with presets cpu and paper); table: that matrix game only")
    parser.add_argument("--opponent", choices=OPPONENTS + ("self", "ppo"),
                        help="nl (the default in matrix games), lola, mamaml, self (meta self-play), "
                             "or ppo (the coin game's, and its only, opponent)")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="; ".join(f"{k}: {v.description}" for k, v in PRESETS.items())
                        + " (default: cpu for train, small for table)")
    parser.add_argument("--seeds", type=int, help="number of seeds (default: the preset's)")
    parser.add_argument("--seed", type=int, default=0, help="first seed; seeds are SEED..SEED+N-1")
    parser.add_argument("--num-games", type=int, help="games (coin: boards) in parallel (overrides the preset)")
    parser.add_argument("--meta-episodes", type=int, help="meta-episodes (overrides the preset)")
    parser.add_argument("--out", type=Path, help="train: run directory (default runs/mfos-GAME-OPPONENT-TIME)")
    parser.add_argument("--overwrite", action="store_true", help="train: replace a non-empty --out")
    parser.add_argument("--resume", action="store_true",
                        help="train: continue the run in --out from its last checkpoint (same settings)")
    parser.add_argument("--report", type=Path,
                        help="table: markdown report (default docs/results/mfos.md); coin: also write this report "
                             "of the run; its data and plots go to REPORT_STEM/ beside it")


def run_cli(args) -> int:
    """Run `purerl mfos`; bad input raises ConfigError (one line) before anything compiles."""
    what = getattr(args, "what", "train")
    if args.game == "coin" or args.opponent == "ppo":
        return _run_coin_cli(args, what)
    preset = args.preset or ("small" if what == "table" else "cpu")
    settings = resolve(preset, args.seeds, args.num_games, args.meta_episodes)
    if args.seed < 0:
        raise ConfigError(f"--seed must be non-negative, got {args.seed}")
    seeds = list(range(args.seed, args.seed + settings.seeds))
    if what == "table":
        chosen = (args.game,) if args.game else GAME_NAMES
        for game in chosen:
            check_pairing(game, "nl")
        report = _report_path(args.report or Path("docs/results/mfos.md"))
        record = run_table(settings, seeds, report, chosen, preset)
        print(f"report: {report} ({record['elapsed_s'] / 60:.1f} min)")
        return 0
    game, opponent = args.game or "ipd", args.opponent or "nl"
    check_pairing(game, opponent)
    out = _prepare_out(args, game, opponent, run_config(game, opponent, settings, seeds, preset))
    chunking = dict(checkpoint_dir=out / "checkpoint", resume=args.resume)
    if opponent == "self":
        result = run_self_play(game, settings, seeds, **chunking)
        names = ("agent0", "agent1")
    else:
        result = run_vs_learner(game, opponent, settings, seeds, **chunking)
        names = ("mfos", "opponent")
    write_run(out, result, settings, preset)
    window = result["final_window"]
    if result["resumed_from_meta_episode"]:
        print(f"resumed after meta-episode {result['resumed_from_meta_episode']}")
    print(f"{game.upper()} M-FOS vs {opponent.upper()}, preset {preset}: {settings.num_games} games x "
          f"{settings.meta_episodes} meta-episodes, {len(seeds)} seeds "
          f"(compile {result['compile_s']:.1f} s, run {result['run_s']:.1f} s)")
    for name in names:
        s = result["final"][name]
        print(f"  {name:9s} mean reward per step over the last {window} meta-episodes: {_cell(s)} (n={s['n']})")
    if "analysis" in result:
        a = result["analysis"]
        policy = ", ".join(f"{k} {v:.2f}" for k, v in a["mfos_policy"].items())
        print(f"  M-FOS late policy P(C|.): {policy}")
        if game == "ipd":
            t, f = a["policy_test"], a["payoff_fit"]
            print(f"  ZD extortion: policy chi {t['chi']:.2f} (error {t['residual']:.3f}) -> "
                  f"{'extortionate' if t['extortionate'] else 'not extortionate'}; payoff fit chi {f['chi']:.2f} "
                  f"R^2 {f['r2']:.2f} -> {'extortionate' if f['extortionate'] else 'not extortionate'}")
    plots = "rewards.png, policies.png" if "analysis" in result else "rewards.png"
    print(f"results in {out}/ (summary.json, metrics.csv, {plots})")
    return 0


def _report_path(report: Path) -> Path:
    if report.exists() and report.is_dir():
        raise ConfigError(f"--report {report} is a directory; give a .md path")
    return report


def _prepare_out(args, game: str, opponent: str, config: dict) -> Path:
    """The run directory: with --resume, the existing run with the same config; else a new (or
    --overwrite) one, with config.json written before anything trains."""
    from purerl import results

    if args.resume:
        out = args.out
        if out is None or not (out / "config.json").is_file():
            raise ConfigError(f"--resume needs --out with an M-FOS run in it; {out} has none")
        if json.loads((out / "config.json").read_text()) != json.loads(json.dumps(config)):
            raise ConfigError(f"--resume: these settings differ from the run in {out} (see its config.json)")
        return out
    out = args.out or Path("runs") / f"mfos-{game}-{opponent}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output path {out} exists and is not a directory")
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise ConfigError(f"output directory {out} is not empty; choose another --out or pass --overwrite")
    shutil.rmtree(out / "checkpoint", ignore_errors=True)  # --overwrite: never resume another run's state
    out.mkdir(parents=True, exist_ok=True)
    results.write_atomic(out / "config.json", json.dumps(config, indent=2))
    return out


def _run_coin_cli(args, what: str) -> int:
    """`purerl mfos --game coin`: M-FOS (conv + GRU) against a PPO learner in the coin game."""
    from purerl.studies import mfos_coin

    if what == "table":
        raise ConfigError("the table covers the matrix games; train the coin game with `purerl mfos --game coin`")
    if args.game not in (None, "coin") or args.opponent not in (None, "ppo"):
        raise ConfigError("the coin game's opponent is ppo, and ppo plays only the coin game "
                          f"(got --game {args.game} --opponent {args.opponent})")
    preset = args.preset or "cpu"
    if preset not in mfos_coin.PRESETS:
        raise ConfigError(f"unknown coin-game preset '{preset}'; choose from {', '.join(mfos_coin.PRESETS)}")
    changes = {k: v for k, v in dict(seeds=args.seeds, num_boards=args.num_games,
                                     meta_episodes=args.meta_episodes).items() if v is not None}
    settings = mfos_coin.PRESETS[preset].replace(**changes)
    settings.validate()
    if args.seed < 0:
        raise ConfigError(f"--seed must be non-negative, got {args.seed}")
    seeds = list(range(args.seed, args.seed + settings.seeds))
    report = _report_path(args.report) if args.report else None
    out = _prepare_out(args, "coin", "ppo", mfos_coin.run_config(settings, seeds, preset))
    result = mfos_coin.run(settings, seeds, out / "checkpoint", resume=args.resume)
    mfos_coin.write_results(out, result, preset)
    if result["resumed_from_meta_episode"]:
        print(f"resumed after meta-episode {result['resumed_from_meta_episode']}")
    if report:
        mfos_coin.write_report(report, result, settings, preset, "purerl " + " ".join(sys.argv[1:]))
        print(f"report: {report}")
    print(f"coin game, M-FOS vs PPO, preset {preset}: {settings.num_boards} boards x {settings.meta_episodes} "
          f"meta-episodes, {len(seeds)} seeds (compile {result['compile_s']:.1f} s, run {result['run_s']:.1f} s)"
          f"{mfos_coin.speed_note(result)}")
    for name in mfos_coin.LOG_COLUMNS:
        print(f"  {name:23s} over the last {result['final_window']} meta-episodes: {_cell(result['final'][name])}")
    print(f"results in {out}/ (summary.json, metrics.csv, learning.png)")
    return 0
