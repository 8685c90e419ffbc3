"""M-FOS settings: the games and opponents, the budget presets, the authors' PPO hyperparameters, and the
small helpers every M-FOS experiment shares (seed keys, MAMAML's meta-learned start)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import MAX_DIMENSION, MAX_INT32, MAX_MEMBERS, ConfigError, check_counts
from purerl_lab.studies.mfos import games


META_EPISODE = 100  # meta-steps (inner games) per meta-episode
OPPONENT_SEAT, MFOS_SEAT = 0, 1
GAME_NAMES = ("ipd", "imp", "chicken")  # the table's games, as the authors play them (chicken one-shot)
TRAIN_GAMES = GAME_NAMES + ("chicken_repeated",)  # chicken_repeated: memory-one, gamma 0.96 (not in the paper)
OPPONENTS = ("nl", "lola", "mamaml")
INNER_LR = 1.0  # every inner learner steps with lr 1 on its unscaled value (see envs.games)
# How a meta-episode is scored. "authors": as in their code, the opponent (and, in the baselines, both
# learners) first take one learning step that is not counted (their `reset`), then 100 steps are scored.
# "count-first": every one of the 100 steps is scored, the first with the N(0, 1) policies.
SCORING = ("authors", "count-first")


def make_learner(name: str, mamaml_init: jax.Array | None = None) -> games.Learner:
    if name == "mamaml":
        if mamaml_init is None:
            raise ConfigError("the mamaml opponent needs its meta-learned initial logits (train_mamaml_init)")
        return games.mamaml_learner(jnp.asarray(mamaml_init, jnp.float32))
    if name not in games.LEARNERS:
        raise ConfigError(f"unknown learner '{name}'; choose from nl, lola, mamaml")
    return games.LEARNERS[name]


@dataclass(frozen=True)
class Settings:
    """The budget of an M-FOS experiment (static: it fixes every shape)."""

    num_games: int  # inner games played in parallel (the PPO batch is num_games x 100 meta-steps)
    meta_episodes: int  # PPO updates; one meta-episode each
    hidden_sizes: tuple[int, ...]  # actor and critic MLPs (tanh)
    seeds: int  # default number of seeds
    description: str
    mamaml_steps: int = 100  # Adam steps of MAMAML's meta-learned initialisation
    scoring: str = "authors"  # one of SCORING
    self_play_meta_episodes: int | None = None  # meta self-play's budget in the table (default: meta_episodes)
    self_play_num_games: int | None = None  # meta self-play's games per update in the table (default: num_games)

    @property
    def warmup_steps(self) -> int:
        """Uncounted learning steps before a meta-episode is scored (see SCORING)."""
        return 1 if self.scoring == "authors" else 0

    @property
    def nl_decay(self) -> float:
        """Per-episode decrease of lambda in self-play: 0.0015 at the paper's 1024 meta-episodes,
        scaled so that on any budget lambda reaches 0 after the same 65% of training."""
        return 0.0015 * 1024 / self.meta_episodes

    def validate(self) -> None:
        optional = {"self_play_meta_episodes": MAX_INT32, "self_play_num_games": MAX_DIMENSION}
        check_counts(self, {"num_games": MAX_DIMENSION, "meta_episodes": MAX_INT32, "seeds": MAX_MEMBERS,
                            "mamaml_steps": MAX_INT32} | {k: v for k, v in optional.items() if getattr(self, k)
                                                          is not None})
        if self.scoring not in SCORING:
            raise ConfigError(f"unknown scoring '{self.scoring}'; choose from {', '.join(SCORING)}")
        if not self.hidden_sizes or any(not 0 < h <= MAX_DIMENSION for h in self.hidden_sizes):
            raise ConfigError(f"hidden sizes must be in [1, {MAX_DIMENSION:,}], got {self.hidden_sizes}")

    def replace(self, **changes) -> Settings:
        return dataclasses.replace(self, **changes)

    def for_self_play(self) -> Settings:
        """The table's meta self-play budget: two learning agents need more and larger updates than one
        agent against a fixed learning rule."""
        return self.replace(meta_episodes=self.self_play_meta_episodes or self.meta_episodes,
                            num_games=self.self_play_num_games or self.num_games)


PRESETS: dict[str, Settings] = {
    "paper": Settings(4096, 1024, (256,), 3, "the paper: 4096 games x 1024 meta-episodes, one hidden layer of 256 "
                      "tanh as in the authors' code (one GPU)"),
    "cpu": Settings(128, 200, (64, 64), 4, "2-core CPU, one pairing: 128 games x 200 meta-episodes, 64-64 tanh, "
                    "4 seeds (2 min vs NL, 4 min self-play)"),
    "small": Settings(32, 100, (64, 64), 10, "2-core CPU, the whole table: 32 games x 100 meta-episodes (meta "
                      "self-play 128 games x 400), 64-64 tanh, 10 seeds (each self-play row about 25 min)",
                      self_play_meta_episodes=400, self_play_num_games=128),
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
            meta_episodes: int | None = None, scoring: str | None = None) -> Settings:
    """The preset with any overrides, validated (raises ConfigError before anything compiles)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; choose from {', '.join(PRESETS)}")
    changes = {k: v for k, v in dict(seeds=seeds, num_games=num_games, meta_episodes=meta_episodes,
                                     scoring=scoring).items()
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


# MAMAML's starts draw from `fold_in(PRNGKey(seed), MAMAML_STREAM)`: the experiments' seed keys are PRNGKey(s) too,
# and their runs split them, so `fold_in(PRNGKey(0), i)` for a small i is a child that seed 0's run uses.
MAMAML_STREAM = 4_000_037


def mamaml_key(game: str, seat: int, seed: int = 0) -> jax.Array:
    stream = jax.random.fold_in(jax.random.PRNGKey(seed), MAMAML_STREAM)
    return jax.random.fold_in(stream, 17 * TRAIN_GAMES.index(game) + seat)


def mamaml_init(game: str, seat: int, steps: int, seed: int = 0) -> jax.Array:
    """MAMAML's initial logits, meta-learned in the seat it will play (one per game and seat, shared by all
    seeds of an experiment). Budget: `steps` Adam steps at lr 0.1 against 64 fresh naive learners."""
    key = mamaml_key(game, seat, seed)
    train = jax.jit(games.train_mamaml_init, static_argnums=(1, 2, 3))
    logits, _ = train(key, games.GAMES[game], seat, steps)
    return logits
