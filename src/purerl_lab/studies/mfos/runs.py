"""Experiments: M-FOS against a learner and meta self-play on many seeds (sharded, checkpointed in chunks),
summarised per seed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import numpy as np

from purerl.run.chunks import Checkpoints, run_chunks
from purerl.run.population import Placement, batched
from purerl_lab.studies.mfos.analysis import Trajectory, extortion_analysis, play_meta_episode
from purerl_lab.studies.mfos.meta_game import make_mfos_train
from purerl_lab.studies.mfos.self_play import make_self_play_train
from purerl_lab.studies.mfos.settings import OPPONENT_SEAT, Settings, check_pairing, mamaml_init, seed_keys
from purerl.run import files


def final_window(meta_episodes: int) -> int:
    """The final numbers average the last 10% of meta-episodes (at least one)."""
    return max(1, meta_episodes // 10)


def train_members(init, advance, seeds: list[int], total: int, member_program=batched, checkpoint_dir=None,
                  resume: bool = False, chunk: int | None = None, on_chunk=None) -> tuple[object, dict] | None:
    """One member per seed, sharded over the devices: `init(key)`, then `advance(run, start, stop)` over
    `total` meta-episodes in chunks, checkpointed after each (`chunks.run_chunks`). `on_chunk(done,
    rows)` gets every member's last `log` row. Returns the members' final state as host arrays and the
    timing, or None if stopped early."""
    placement = Placement.for_members(len(seeds))
    tick = time.perf_counter()
    runs = member_program(init, placement)(placement.put(seed_keys(seeds)))
    init_s = time.perf_counter() - tick
    report = None if on_chunk is None else (
        lambda start, stop, runs, timing: on_chunk(stop, placement.get(runs.log[:, stop - 1], len(seeds))))
    checkpoints = Checkpoints(checkpoint_dir, resume) if checkpoint_dir is not None else None
    finished = run_chunks(member_program(advance, placement, 2), runs, placement, len(seeds), total, chunk=chunk,
                          checkpoints=checkpoints, on_chunk=report)
    if finished is None:
        return None
    runs, timing = finished
    return placement.get(runs, len(seeds)), {**timing, "compile_s": init_s + timing["compile_s"]}


MIN_SEEDS_FOR_CI = 10  # a 95% CI is a bootstrap over at least this many seeds (docs/results statistics rules)


def summarize_seeds(values: np.ndarray) -> dict:
    """Mean over seeds and the per-seed values; with at least MIN_SEEDS_FOR_CI seeds also a 95%
    percentile-bootstrap CI of the mean (otherwise the CI fields are None: no CI is claimed). Values that are not
    finite are left out and counted (`not_finite`, present only when there are some), so a table can say so."""
    from purerl import stats

    values = np.asarray(values, float)
    bad = int((~np.isfinite(values)).sum())
    lost = {"not_finite": bad} if bad else {}
    values = values[np.isfinite(values)]
    if not values.size:
        return {"mean": float("nan"), "ci95_low": None, "ci95_high": None, "n": 0, "values": [], **lost}
    low = high = None
    if values.size >= MIN_SEEDS_FOR_CI:
        low, high = (float(x) for x in stats.bootstrap_ci(values, statistic=lambda x, axis: np.mean(x, axis=axis)))
    return {"mean": float(values.mean()), "ci95_low": low, "ci95_high": high,
            "iqm": float(stats.iqm(values)), "std": float(values.std()), "n": int(values.size),
            "values": values.tolist(), **lost}


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
    rewards = run.log.astype(float)  # [seeds, episodes, 2]
    window = final_window(settings.meta_episodes)
    final = rewards[:, -window:].mean(axis=1)
    analyses = analyse_agents(ppo, run.state.params, seeds, settings.num_games, game)
    return {
        "game": game, "opponent": opponent, "seeds": seeds, "final_window": window,
        "final": summaries(final, ("mfos", "opponent")), "final_by_seed": final.tolist(),
        "rewards": rewards, **analyses, "params": run.state.params,
        "ppo_metrics": dict(run.state.metrics),  # [seeds, meta-episodes]
        "compile_s": timing["compile_s"], "run_s": timing["run_s"], "resumed_from_meta_episode": timing["first"],
        "mamaml_init": None if logits is None else np.asarray(logits).tolist(),
    }


def analyse_agents(ppo, params, seeds: list[int], num_games: int, game: str) -> dict:
    """Trained M-FOS agents (`params` stacked over `seeds`) each play one meta-episode against fresh
    opponents, sampled and greedy, and `extortion_analysis` reads their late policies. Training and
    `purerl mfos evaluate` (committed parameters) both call this with the same keys, so they agree exactly."""
    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, 2_000_003))(seed_keys(seeds))
    play = jax.jit(jax.vmap(lambda p, k, greedy: play_meta_episode(ppo, p, k, num_games, greedy),
                            in_axes=(0, 0, None)))
    found = {}
    for name, greedy in (("analysis", False), ("analysis_greedy", True)):
        trajectory = play(params, eval_keys, greedy)
        by_seed = [Trajectory(*(np.asarray(x)[i] for x in trajectory)) for i in range(len(seeds))]
        pooled = Trajectory(*(np.concatenate(list(np.asarray(x)), axis=1) for x in trajectory))  # seeds x games
        found[name] = {**extortion_analysis(pooled, game), "by_seed": [extortion_analysis(one, game) for one in by_seed]}
        if not greedy:
            found["trajectory"] = pooled
    return found


def agents_path(results_dir: Path, game: str, opponent: str) -> Path:
    """Where a table commits the M-FOS agents it trained against `opponent` (all seeds, one msgpack)."""
    return results_dir / "params" / f"{game}-vs-{opponent}.msgpack"


def save_agents(path: Path, params) -> None:
    from flax import serialization


    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, serialization.to_bytes(jax.tree.map(np.asarray, params)))


def load_agents(path: Path):
    """The agents `save_agents` wrote, as nested dicts of arrays (a flax params tree; no template needed)."""
    from flax import serialization

    return serialization.msgpack_restore(path.read_bytes())


def replay_table_agents(record: dict, results_dir: Path, game: str) -> dict:
    """A table's committed agents against NL in `game` (`results_dir`/params/), replayed as the table did
    after training: {"analysis": ..., "analysis_greedy": ...}, as table.json's analysis_vs_nl(_greedy)."""
    settings = Settings(**{**record["settings"], "hidden_sizes": tuple(record["settings"]["hidden_sizes"])})
    ppo = make_mfos_train(game, "nl", settings)[0]
    found = analyse_agents(ppo, load_agents(agents_path(results_dir, game, "nl")), record["seeds"],
                           settings.num_games, game)
    found.pop("trajectory")
    return found


def largest_difference(published, again) -> float:
    """The largest absolute difference between the numbers of two JSON trees (inf if their shapes differ;
    a flipped verdict counts 1). Tuples and lists are the same, as in table.json."""
    published, again = (json.loads(json.dumps(x)) for x in (published, again))
    if jax.tree.structure(published) != jax.tree.structure(again):
        return float("inf")
    a, b = (np.asarray(jax.tree.leaves(x), float) for x in (published, again))
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return float(np.max(np.where(same, 0.0, np.abs(a - b)), initial=0.0))


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
