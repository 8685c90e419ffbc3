"""Population-based training (Jaderberg et al. 2017) inside the compiled population program.

Members train side by side, each with its own traced hyperparameters. Every `interval` updates the program
ranks them on their recent return; the bottom `fraction` copy the training state of a member drawn from the
top `fraction` (exploit) and perturb or resample the copied hyperparameters within stated bounds (explore).
Exploit is a gather along the member axis and explore is elementwise, so the step runs where the sharded
population lives, at the end of the chunk that reaches the interval: the population never crosses to the host.

The exploit/explore keys and every round's parents, scores and explored values are part of the state
`chunks.run_chunks` checkpoints, so a resumed run makes the same choices bit for bit. Settings and their
checks are in `pbt_config.py`; what a run writes (pbt.csv, the lineage, pbt.png) in `pbt_files.py`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl.run.pbt_config import Bound, PBTConfig, rounds
from purerl.run.chunks import run_chunks
from purerl.run.population import Placement, batched, make_members, vmapped

STREAM = 0x7B7  # the explore keys are `fold_in(PRNGKey(seed), STREAM)`: a stream apart from training's
KEEP = ("key", "metrics")  # what stays with a member's slot when it copies another: its randomness, its history


class PBTState(NamedTuple):
    """A PBT population: what `run_chunks` advances and checkpoints. Every leaf has the member axis first."""

    train: Any  # the algorithm's runner state
    hp: Any  # its traced hyperparameters, as they are now
    key: jax.Array  # each member's explore key
    parents: jax.Array  # [rounds] int32: the member whose state this one took at round r + 1 (itself if kept)
    scores: jax.Array  # [rounds] float32: the recent return it was ranked on at round r + 1 (NaN: not ranked)
    explored: jax.Array  # [rounds + 1, explored] float32: its explored hyperparameters from round r on


def record(runs: PBTState) -> PBTState:
    """The population's PBT record alone (parents, scores, explored values): what pbt.csv is written from,
    without gathering the training state to the host."""
    return rounds_only(runs)._replace(train=None, hp=None, key=None)


def rounds_only(runs: PBTState) -> PBTState:
    """`runs` with `parents` and `scores` cut to its rounds: random search holds one unused slot of each, since a
    checkpoint cannot hold an empty array."""
    count = runs.explored.shape[-2] - 1
    return runs._replace(parents=runs.parents[..., :count], scores=runs.scores[..., :count])


def member_keys(seeds) -> jax.Array:
    """Each member's explore key: it depends only on the member's seed, as its training key does."""
    return jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(s), STREAM))(jnp.asarray(seeds, jnp.uint32))


def sample(bound: Bound, key: jax.Array) -> jax.Array:
    """A draw from the bound's prior: log-uniform over a positive range, uniform over one from 0."""
    if bound.log:
        draw = jnp.exp(jax.random.uniform(key, minval=np.log(bound.low), maxval=np.log(bound.high)))
    else:
        draw = jax.random.uniform(key, minval=bound.low, maxval=bound.high)
    return jnp.clip(draw, bound.low, bound.high)  # exp's rounding may step just outside


def explore(config: PBTConfig, values: jax.Array, key: jax.Array) -> jax.Array:
    """One member's new explored values [explored] from the ones it copied: each resampled from its prior with
    probability `resample`, else multiplied by `perturb` or its inverse (equally likely, so the log-value does
    not drift), then clipped to its range."""
    out = []
    for i, bound in enumerate(config.explore):
        coin_key, prior_key, resample_key = jax.random.split(jax.random.fold_in(key, i), 3)
        factor = jnp.where(jax.random.bernoulli(coin_key), config.perturb, 1.0 / config.perturb)
        moved = jnp.where(jax.random.bernoulli(resample_key, config.resample), sample(bound, prior_key),
                          values[i] * factor)
        out.append(jnp.clip(moved, bound.low, bound.high))
    return jnp.stack(out).astype(jnp.float32)


def _values(config: PBTConfig, hp) -> jax.Array:
    return jnp.stack([jnp.asarray(getattr(hp, b.name), jnp.float32) for b in config.explore], axis=-1)


def _with_values(config: PBTConfig, hp, values: jax.Array):
    return hp._replace(**{b.name: values[..., i] for i, b in enumerate(config.explore)})


def member_start(init, config: PBTConfig, num_updates: int):
    """`start(key, hp, explore_key) -> PBTState` for one member: its initial hyperparameters (drawn from the
    priors with `init="sample"`, as Jaderberg et al. start, or as given), then the algorithm's `init`."""
    count = rounds(config, num_updates)

    def start(key, hp, explore_key):
        explore_key, draw_key = jax.random.split(explore_key)
        if config.init == "sample":
            draws = [sample(b, jax.random.fold_in(draw_key, i)) for i, b in enumerate(config.explore)]
            hp = _with_values(config, hp, jnp.stack(draws).astype(jnp.float32))
        explored = jnp.full((count + 1, len(config.explore)), jnp.nan, jnp.float32).at[0].set(_values(config, hp))
        slots = max(count, 1)  # `rounds_only` cuts random search's unused slot
        return PBTState(init(key, hp), hp, explore_key, jnp.full((slots,), -1, jnp.int32),
                        jnp.full((slots,), jnp.nan, jnp.float32), explored)

    return start


def exploit_and_explore(runs: PBTState, stop: jax.Array, config: PBTConfig, num_members: int) -> PBTState:
    """One PBT round over the whole (padded) population, after update `stop - 1`.

    A member's score is the mean return of the episodes that ended in its last `window` updates (each episode
    weighs the same). A member with none (NaN) and the padding `Placement` adds are neither copied nor replaced;
    a member whose episodes ended with a return that is not finite has diverged, and ranks below every other, so
    that it is replaced first and never copied. Truncation selection: the `floor(fraction * members)` worst copy
    one of as many best, drawn uniformly (fewer when under twice that many members have a score, so the two
    groups never overlap); a loser whose score equals its drawn source's keeps its own state, so members that
    tie (at an env's maximum return, say) are not copied for nothing.
    """
    window = config.window or config.interval

    def last(name):
        return jax.lax.dynamic_slice_in_dim(runs.train.metrics[name], stop - window, window, axis=1)

    returns, episodes = last("episode_return"), last("episodes")
    ended = episodes > 0
    total = jnp.where(ended, episodes, 0.0).sum(axis=1)
    score = jnp.where(total > 0, jnp.where(ended, returns * episodes, 0.0).sum(axis=1) / jnp.maximum(total, 1.0),
                      jnp.nan)
    slots = score.shape[0]
    member = jnp.arange(slots) < num_members
    diverged = (ended & ~jnp.isfinite(returns)).any(axis=1) & member
    healthy = jnp.isfinite(score) & member & ~diverged
    ranked_ok = healthy | diverged
    rank_score = jnp.where(diverged, -jnp.inf, jnp.where(healthy, score, jnp.inf))
    ranked = jnp.argsort(rank_score, stable=True)  # diverged first, worst first, the unranked last
    size = int(config.fraction * num_members)
    count = jnp.minimum(size, jnp.minimum(ranked_ok.sum() // 2, healthy.sum()))
    losers = ranked[:size]
    keys = jax.vmap(lambda k: jax.random.split(k, 3))(runs.key)
    picks = jax.vmap(lambda k: jax.random.randint(k, (), 0, jnp.maximum(count, 1)))(keys[losers, 1])
    drawn = ranked[ranked_ok.sum() - 1 - picks]
    replaced = (jnp.arange(size) < count) & (rank_score[losers] < rank_score[drawn])
    sources = jnp.where(replaced, drawn, losers)  # a loser not replaced keeps itself

    moved = {name: jax.tree.map(lambda x: x.at[losers].set(x[sources]), getattr(runs.train, name))
             for name in runs.train._fields if name not in KEEP}
    values = _values(config, runs.hp)
    new = jax.vmap(lambda v, k: explore(config, v, k))(values[sources], keys[losers, 2])
    values = values.at[losers].set(jnp.where(replaced[:, None], new, values[losers]))
    round_index = stop // config.interval  # 1, 2, ...
    return PBTState(
        train=runs.train._replace(**moved),
        hp=_with_values(config, runs.hp, values),
        key=keys[:, 0],
        parents=runs.parents.at[:, round_index - 1].set(jnp.arange(slots).at[losers].set(sources)),
        scores=runs.scores.at[:, round_index - 1].set(score),
        explored=runs.explored.at[:, round_index].set(values),
    )


def advance(run, placement: Placement, config: PBTConfig, num_members: int, num_updates: int):
    """The chunk program for `run_chunks`: `run(train, hp, meta_params, start, stop)` (the population's
    `run`, from `population.vmapped`), then a PBT round when `stop` ends an interval before the run's end.
    One jitted program; the round is a `lax.cond` on the chunk's bounds."""

    def step(runs: PBTState, meta_params, start, stop):
        runs = runs._replace(train=run(runs.train, runs.hp, meta_params, start, stop))
        if rounds(config, num_updates) == 0:  # random search (or a run too short for a round): no round to trace
            return runs
        due = (stop % config.interval == 0) & (stop < num_updates)
        return jax.lax.cond(due, lambda r: exploit_and_explore(r, stop, config, num_members), lambda r: r, runs)

    return jax.jit(step, in_shardings=(placement.sharding, placement.replicated, placement.replicated,
                                       placement.replicated), out_shardings=placement.sharding)


def train_population(train, hp, seeds, config: PBTConfig, meta_params=None, placement: Placement | None = None,
                     chunk: int | None = None) -> PBTState:
    """PBT over one member per seed of `train` (any algorithm's train function, hooks included), in memory.

    `hp` gives every member's hyperparameters (the explored ones too with `init="given"`). Returns the final
    population on the host: `state.train.metrics` per member and update, `state.hp`, and the lineage record
    (`parents`, `scores`, `explored`; `pbt_files.lineage` follows the best member back). `purerl train --pbt`
    (`experiment.run` with `TrainSpec(pbt=...)`) runs the same program into a run directory, checkpointed.
    """
    members = make_members(list(seeds), hp)
    config = config.with_defaults(type(hp))
    config.validate(hp, train.config, len(members))
    chunk = config.chunk(train.config.num_updates, chunk)
    placement = placement or Placement.for_members(len(members))
    state = start(train, placement, members, config)
    _, run = vmapped(train, placement)
    step = advance(run, placement, config, len(members), train.config.num_updates)
    runs, _ = run_chunks(step, state, placement, len(members), train.config.num_updates, shared=(meta_params,),
                         chunk=chunk)
    return rounds_only(placement.get(runs, len(members)))


def start(train, placement: Placement, members, config: PBTConfig) -> PBTState:
    """The initial population, on the devices (`member_start` for every member)."""
    program = batched(member_start(train.init, config, train.config.num_updates), placement, num_member_args=3,
                      cpu_group=train.config.cpu_group)
    return program(placement.put(members.keys()), placement.put(members.hyperparams.as_arrays()),
                   placement.put(member_keys(members.seeds)))


def like(train, members, config: PBTConfig) -> PBTState:
    """Shapes and dtypes of a population's state, to restore a checkpoint into."""
    program = jax.vmap(member_start(train.init, config, train.config.num_updates))
    return jax.eval_shape(program, members.keys(), members.hyperparams.as_arrays(), member_keys(members.seeds))
