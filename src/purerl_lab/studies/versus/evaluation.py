"""What `purerl versus` scores: every member's policy at each env-step mark, on fresh episodes as long as the env's
time limit allows, greedy (its most likely action: the mean, through tanh for SAC; TD3's actor without noise) and
sampled (its own exploration).

Training episodes cannot score a comparison between algorithms that step different numbers of envs. When a mark
comes, each env of a run has taken mark / num_envs steps in all, so no episode longer than that can have ended:
PPO's brax preset steps 2,048 envs and, at 819,200 env steps, has seen no episode end past step 400 of Hopper's
1,000, while SAC's 16 envs are not limited at all. Evaluation episodes measure every algorithm the same way, to
the time limit, including the part of an episode that a many-env algorithm has not reached in training. Each
seed's episodes come from one key, the same for every algorithm and every mark, so two algorithms meet the same
starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from purerl.checks import ConfigError
from purerl.run import files, rundir
from purerl.run.policy import members_evaluator
from purerl.runtime.distributed import is_writer

FILE = "evaluation.json"  # in each algorithm's run directory: its members' returns at every mark evaluated so far
rundir.register_files(FILE)
MODES = {"greedy": False, "sampled": True}  # each mode and whether it samples (the fingerprint reads it too)
EVAL_SEED = 20_240_554  # the evaluation episodes' key: apart from every training seed's stream


def episode_keys(seeds: list[int]) -> np.ndarray:
    """One key per seed [seeds, 2]; a member plays all its episodes from its seed's key."""
    return np.stack([np.asarray(jax.random.fold_in(jax.random.PRNGKey(EVAL_SEED), seed)) for seed in seeds])


class Evaluator:
    """`experiment.run`'s `on_evaluate`: each mark's greedy and sampled returns of every member (the mean over
    `episodes` episodes), written to the run's `evaluation.json` at once, before the checkpoint at that update."""

    def __init__(self, train, seeds: list[int], episodes: int, out: Path):
        self.programs = {mode: members_evaluator(train, episodes, sample) for mode, sample in MODES.items()}
        self.keys, self.episodes, self.path = episode_keys(seeds), episodes, Path(out) / FILE
        self.time_limit = train.env.max_episode_steps

    def __call__(self, update: int, params, obs_stats, hyperparams) -> None:
        returns = {mode: np.asarray(program(params, obs_stats, self.keys, hyperparams)).mean(axis=1).tolist()
                   for mode, program in self.programs.items()}
        if is_writer():
            record = _read(self.path) or {"episodes": self.episodes, "seed": EVAL_SEED, "updates": {}}
            record["updates"][str(update)] = returns
            files.write_atomic(self.path, json.dumps(record, indent=1) + "\n")


def check(out: Path, episodes: int) -> None:
    """Before a run continues: the marks it evaluated already used these episodes, or it is refused."""
    record = _read(Path(out) / FILE)
    if record is not None and (record.get("episodes"), record.get("seed")) != (episodes, EVAL_SEED):
        raise ConfigError(f"{out} was evaluated on {record.get('episodes')} episodes (seed {record.get('seed')}), "
                          f"not {episodes} (seed {EVAL_SEED}); give --episodes {record.get('episodes')} or "
                          "--overwrite")


def read(out: Path, updates: list[int], members: int) -> dict[str, np.ndarray]:
    """Per mode, the returns [marks, members] at `updates`; a run that passed a mark without an evaluation there
    is refused, never scored from what is left."""
    record = _read(Path(out) / FILE) or {"updates": {}}
    rows = {mode: [] for mode in MODES}
    for update in updates:
        at = record["updates"].get(str(update))
        if at is None or any(len(at.get(mode, ())) != members for mode in MODES):
            raise ConfigError(f"{out} has no evaluation of its {members} members at update {update:,} (its "
                              f"{FILE} is missing or incomplete); give --overwrite to train it again")
        for mode in MODES:
            rows[mode].append(at[mode])
    return {mode: np.array(values, dtype=float) for mode, values in rows.items()}


def _read(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        record = files.read_json(path, "an evaluation record")
    except ConfigError as error:
        raise ConfigError(f"{error}; give --overwrite to train again") from None
    if not isinstance(record.get("updates"), dict):
        raise ConfigError(f"{path} is not an evaluation record; give --overwrite to train again")
    return record
