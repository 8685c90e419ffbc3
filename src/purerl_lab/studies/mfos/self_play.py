"""Meta self-play: two M-FOS agents, each PPO, meeting each other or (with probability lambda) naive
learners, in one compiled loop."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from purerl.algos.ppo import RunnerState, Transition, make_train
from purerl_lab.studies.mfos import games
from purerl.envs.core import Timestep
from purerl.envs.wrappers import EpisodeStats
from purerl.nets.layers import init_params
from purerl_lab.studies.mfos.meta_game import MetaGame, observe
from purerl_lab.studies.mfos.settings import HYPERPARAMS, INNER_LR, META_EPISODE, Settings, ppo_config


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
    Observations are `observe(own, other)` per agent, as in `MetaGame`; with
    `warmup_steps=1` each NL first takes one unscored step against the agent's
    random "previous" policy (the authors' `MetaGames.reset`; their self-play
    against each other has no such step). Episodes are reset by the trainer (they
    are aligned with PPO updates).
    """

    def __init__(self, game: games.Game | str, lr: float = INNER_LR, warmup_steps: int = 1):
        self.game = games.GAMES[game] if isinstance(game, str) else game
        self.lr = lr
        self.warmup_steps = warmup_steps

    def reset(self, key: jax.Array, vs_nl: jax.Array) -> tuple[jax.Array, SelfPlayState]:
        previous_key, nl_key = jax.random.split(key)
        previous = jax.random.normal(previous_key, (2, 5))
        initial = jax.random.normal(nl_key, (2, 5))
        nl = initial
        for _ in range(self.warmup_steps):
            nl = self._naive_steps(nl, previous)
        others = jnp.where(vs_nl, initial, previous[::-1])
        return observe(previous, others), SelfPlayState(nl, jnp.asarray(vs_nl))

    def _naive_steps(self, nl: jax.Array, agents: jax.Array) -> jax.Array:
        """Both NLs learn against the agent they face (agent 0's NL sits in seat 1, agent 1's in seat 0)."""
        return jnp.stack([games.naive_step(self.game, nl[0], agents[0], 1, self.lr),
                          games.naive_step(self.game, nl[1], agents[1], 0, self.lr)])

    def step(self, state: SelfPlayState, actions: jax.Array):
        """actions (2, 5) -> (state, obs (2, 10), rewards (2,), opponents' rewards (2,))."""
        game, (a0, a1), (nl0, nl1) = self.game, actions, state.nl
        self_rewards = jnp.stack(games.memory_one_value(game, a0, a1))
        r0, r_nl0 = games.memory_one_value(game, a0, nl0)
        r_nl1, r1 = games.memory_one_value(game, nl1, a1)
        rewards = jnp.where(state.vs_nl, jnp.stack([r0, r1]), self_rewards)
        opponent_rewards = jnp.where(state.vs_nl, jnp.stack([r_nl0, r_nl1]), self_rewards[::-1])
        others = jnp.where(state.vs_nl, state.nl, actions[::-1])
        return state._replace(nl=self._naive_steps(state.nl, actions)), observe(actions, others), rewards, opponent_rewards


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
    env = SelfPlayGame(game, warmup_steps=settings.warmup_steps)
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
        reset_key, key = jax.random.split(key)  # the resets' keys and the actions' chain: no key serves both
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_games), vs_nl)
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
        return ppo.learn_from(agent, trajectory, agent.carry, hp, None)[0]

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
