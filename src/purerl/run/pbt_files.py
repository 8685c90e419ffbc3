"""What a PBT run writes besides a training run's files: pbt.csv (every member's explored hyperparameters and
parent, round by round), its summary entry (the final best member and its lineage) and pbt.png (the
hyperparameter schedules and that lineage), which `purerl plot RUN --pbt` redraws from the files alone.

pbt.csv is rewritten whole from the checkpointed record at every chunk, never appended to, so a resumed run's
file holds each round exactly once.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path

import numpy as np

from purerl.checks import ConfigError
from purerl.run import results, rundir
from purerl.run.files import write_atomic
from purerl.run.pbt_config import PBTConfig

CSV = "pbt.csv"
PLOT = "pbt.png"
rundir.register_files(CSV, PLOT)
FIXED = ["round", "update", "env_steps", "member", "seed", "parent", "score"]


def write_csv(out: Path, record, config: PBTConfig, seeds, steps_per_update: int, stop: int) -> None:
    """One row per member and round up to update `stop`: round 0 is the start (its own parent, no score); round
    r's values hold from update r * interval on, after it took the state of `parent` (itself if it kept its own),
    ranked on `score`. `record` is `pbt.record(state)` on the host."""
    done = min(stop // config.interval, record.parents.shape[1])
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(FIXED + [b.name for b in config.explore])
    for r in range(done + 1):
        update = r * config.interval
        for m, seed in enumerate(seeds):
            parent, score = (m, "") if r == 0 else (int(record.parents[m, r - 1]), _text(record.scores[m, r - 1]))
            writer.writerow([r, update, update * steps_per_update, m, seed, parent, score,
                             *(_text(v) for v in record.explored[m, r])])
    write_atomic(Path(out) / CSV, buffer.getvalue())


def _text(value) -> str:
    """The shortest text that reads back as the same float32 (empty for NaN)."""
    return str(np.float32(value)) if np.isfinite(value) else ""


def read_csv(run_dir: Path) -> dict:
    """pbt.csv as arrays: `parents` [members, rounds] (round 1 on), `values` per explored name [members,
    rounds + 1], `updates` [rounds + 1]; a missing or damaged file is one `ConfigError` line."""
    path = Path(run_dir) / CSV
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        header, body = rows[0], rows[1:]
        if header[:len(FIXED)] != FIXED or not body:
            raise ValueError("not a purerl pbt.csv")
        table = np.array([[float(v) if v else np.nan for v in row] for row in body])
        members = int(table[:, 3].max()) + 1
        table = table.reshape(-1, members, len(header))  # [rounds + 1, members, columns]
    except FileNotFoundError:
        raise ConfigError(f"{Path(run_dir)} is not a PBT run (no {CSV}; train with --pbt)") from None
    except (OSError, UnicodeDecodeError, IndexError, ValueError, csv.Error) as error:
        raise ConfigError(f"{path} is damaged ({error})") from None
    return {"updates": table[:, 0, 1].astype(int), "seeds": table[0, :, 4].astype(int),
            "parents": table[1:, :, 5].T.astype(int),
            "values": {name: table[:, :, len(FIXED) + i].T for i, name in enumerate(header[len(FIXED):])}}


def lineage(parents: np.ndarray, best: int) -> list[int]:
    """The members whose slots held the final `best` member's weights, round 0 to the last: following each
    round's parent back from `best`. `parents` is [members, rounds]."""
    chain = [int(best)]
    for r in range(parents.shape[1] - 1, -1, -1):
        chain.append(int(parents[chain[-1], r]))
    return chain[::-1]


def best_member(final_returns: np.ndarray) -> int:
    """The member with the highest final return (member 0 when none has one)."""
    finite = np.where(np.isfinite(final_returns), final_returns, -np.inf)
    return int(np.argmax(finite))


def summary(record, config: PBTConfig, seeds, final_returns: np.ndarray) -> dict:
    """summary.json's `pbt` entry: the final best member, its lineage, the hyperparameters its weights were
    trained with round by round, and how many copies the run made."""
    best = best_member(final_returns)
    chain = lineage(record.parents, best)
    copies = int((record.parents != np.arange(len(seeds))[:, None]).sum())
    return {
        "best_member": best,
        "best_seed": int(seeds[best]),
        "lineage": chain,
        "schedule_of_best": {b.name: [float(record.explored[m, r, i]) for r, m in enumerate(chain)]
                             for i, b in enumerate(config.explore)},
        "rounds": int(record.parents.shape[1]),
        "copies": copies,
    }


def plot(run_dir: Path, out: Path) -> Path:
    """pbt.png of a finished PBT run from its files: one panel per explored hyperparameter (every member's
    schedule, and the schedule the final best member's weights trained under) and one of that lineage."""
    run_dir = Path(run_dir)
    table = read_csv(run_dir)
    config = rundir.read_config(run_dir)
    if not (run_dir / results.METRICS).is_file():
        raise ConfigError(f"{run_dir} has not finished: no {results.METRICS} yet (continue it with --resume)")
    returns = results.read_member_metric(run_dir)
    final = results.final_returns(returns)
    best = best_member(final)
    chain = lineage(table["parents"], best)
    steps_per_update = int(config["config"]["num_envs"]) * int(config["config"]["num_steps"])
    starts = table["updates"] * steps_per_update
    edges = np.append(starts, returns.shape[0] * steps_per_update)  # each round's values hold to the next round
    return results.save_figure(_figure(table, chain, edges, best, final, config), out)


def _figure(table: dict, chain: list[int], edges: np.ndarray, best: int, final: np.ndarray, config: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter, LogFormatter, MaxNLocator

    names = list(table["values"])
    ranges = {name: (low, high) for name, low, high in config["pbt"]["explore"]}
    figure, axes = plt.subplots(len(names) + 1, 1, figsize=(8.0, 2.3 * (len(names) + 1) + 0.8), sharex=True,
                                layout="constrained", squeeze=False)
    axes = axes[:, 0]
    rounds = np.arange(len(chain))
    for ax, name in zip(axes, names):
        values = table["values"][name]  # [members, rounds + 1]
        for member_values in values:
            ax.stairs(member_values, edges, baseline=None, color="0.6", linewidth=0.7, alpha=0.6)
        ax.stairs(values[chain, rounds], edges, baseline=None, color="C3", linewidth=2.2)
        if ranges.get(name, (0, 1))[0] > 0:  # a log scale, labelled in plain text (mathtext looks for TeX fonts)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(LogFormatter())
            ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(handles=[plt.Line2D([], [], color="0.6", linewidth=0.7, label="each member"),
                            plt.Line2D([], [], color="C3", linewidth=2.2, label="lineage of the final best")],
                   fontsize="small", loc="best")
    ax = axes[-1]
    ax.stairs(np.asarray(chain, float), edges, color="C3", linewidth=2.2, baseline=None)
    copied = [r for r in range(1, len(chain)) if chain[r] != chain[r - 1]]
    ax.plot(edges[copied], np.asarray(chain)[copied], "o", color="C3", markersize=4,
            label="weights copied here (exploit)")
    ax.set_ylabel("member holding\nthe weights")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(-0.5, len(table["seeds"]) - 0.5)
    ax.set_xlabel("environment steps")
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.grid(alpha=0.3)
    if copied:
        ax.legend(fontsize="small", loc="best")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        text = f"{final[best]:.1f}" if np.isfinite(final[best]) else "none"
    figure.suptitle(f"PBT on {config['config']['env']}: hyperparameter schedules; the final best is member {best} "
                    f"(seed {table['seeds'][best]}, final return {text})", fontsize="medium")
    return figure
