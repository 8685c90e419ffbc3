"""Experiments: M-FOS against a learner and meta self-play on many seeds (sharded, checkpointed in chunks),
summarised per seed."""

from __future__ import annotations

import time

import jax
import numpy as np

from purerl.population import Placement, batched, run_chunks
from purerl.studies.mfos.analysis import Trajectory, extortion_analysis, play_meta_episode
from purerl.studies.mfos.meta_game import make_mfos_train
from purerl.studies.mfos.self_play import make_self_play_train
from purerl.studies.mfos.settings import OPPONENT_SEAT, Settings, check_pairing, mamaml_init, seed_keys


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


MIN_SEEDS_FOR_CI = 10  # a 95% CI is a bootstrap over at least this many seeds (docs/results statistics rules)


def summarize_seeds(values: np.ndarray) -> dict:
    """Mean over seeds and the per-seed values; with at least MIN_SEEDS_FOR_CI seeds also a 95%
    percentile-bootstrap CI of the mean (otherwise the CI fields are None: no CI is claimed)."""
    from purerl import stats

    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not values.size:
        return {"mean": float("nan"), "ci95_low": None, "ci95_high": None, "n": 0, "values": []}
    low = high = None
    if values.size >= MIN_SEEDS_FOR_CI:
        low, high = (float(x) for x in stats.bootstrap_ci(values, statistic=lambda x, axis: np.mean(x, axis=axis)))
    return {"mean": float(values.mean()), "ci95_low": low, "ci95_high": high,
            "iqm": float(stats.iqm(values)), "std": float(values.std()), "n": int(values.size),
            "values": values.tolist()}


def summaries(per_seed: np.ndarray, names: tuple[str, str]) -> dict:
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
    analyses, pooled = {}, {}
    play = jax.jit(jax.vmap(lambda p, k, greedy: play_meta_episode(ppo, p, k, settings.num_games, greedy),
                            in_axes=(0, 0, None)))
    for mode in ("sampled", "greedy"):
        trajectory = play(run.state.params, eval_keys, mode == "greedy")
        by_seed = [Trajectory(*(np.asarray(x)[i] for x in trajectory)) for i in range(len(seeds))]
        pooled[mode] = Trajectory(*(np.concatenate(list(np.asarray(x)), axis=1) for x in trajectory))  # seeds x games
        analyses[mode] = {**extortion_analysis(pooled[mode], game),
                          "by_seed": [extortion_analysis(one, game) for one in by_seed]}
    return {
        "game": game, "opponent": opponent, "seeds": seeds, "final_window": window,
        "final": summaries(final, ("mfos", "opponent")), "final_by_seed": final.tolist(),
        "rewards": rewards, "analysis": analyses["sampled"], "analysis_greedy": analyses["greedy"],
        "trajectory": pooled["sampled"],
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
        "final": summaries(final, ("agent0", "agent1")), "final_by_seed": final.tolist(),
        "rewards": rewards, "opponent_rewards": run.opponent_rewards.astype(float), "vs_nl": vs_nl,
        "compile_s": timing["compile_s"], "run_s": timing["run_s"], "resumed_from_meta_episode": timing["first"],
    }
