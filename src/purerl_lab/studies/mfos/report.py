"""Output of M-FOS runs: plots, a run directory's files and table cells."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from purerl_lab.studies.mfos.analysis import Trajectory
from purerl_lab.studies.mfos.self_play import nl_probability
from purerl_lab.studies.mfos.settings import HYPERPARAMS, INNER_LR, META_EPISODE, Settings, ppo_config
from purerl.run import files


PAPER = {  # target numbers (M-FOS, opponent) per step a pairing is compared with, none traced to the paper (PAPER_SOURCES)
    ("ipd", "nl"): (-0.48, -2.17),
}
_NOT_FOUND = ("no value here: none could be read from the paper (arXiv 2205.01447) or the authors' repository when "
              "this line was written")
PAPER_SOURCES = {  # where each of the table's paper numbers comes from, or why a pairing has none
    ("ipd", "nl"): "target numbers with no traced source: the values this study was set up to match, attributed to "
                   "the paper's full-scale run but found in no table or figure of arXiv 2205.01447 and nowhere in the "
                   "authors' repository (at 3efb169), so they are targets, not the paper's reported result",
    ("imp", "nl"): _NOT_FOUND,
    ("chicken", "mamaml"): _NOT_FOUND,
}
POLICY_LABELS = ("start", "CC", "CD", "DC", "DD")


def pyplot():
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
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    steps = np.arange(1, trajectory.mfos.shape[0] + 1)
    for ax, probabilities, who in ((axes[0], trajectory.mfos, "M-FOS"), (axes[1], trajectory.opponent, "opponent")):
        for i, label in enumerate(POLICY_LABELS):
            ax.plot(steps, np.asarray(probabilities)[:, :, i].mean(axis=1), label=f"P(C | {label})")
        ax.set_title(who)
        ax.set_xlabel("meta-step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("probability of cooperating")
    axes[1].legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path)


def save_figure(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.save_figure(fig, path, dpi=110)


def _jsonable(result: dict) -> dict:
    drop = ("rewards", "opponent_rewards", "vs_nl", "trajectory", "ppo_metrics", "params")
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
    files.write_atomic(out / "metrics.csv", buffer.getvalue())
    summary = {**_jsonable(result), "preset": preset, "settings": dataclasses.asdict(settings),
               "paper": PAPER.get((result["game"], result["opponent"]))}
    files.write_atomic(out / "summary.json", json.dumps(summary, indent=2))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    plot_rewards(ax, result)
    fig.tight_layout()
    save_figure(fig, out / "rewards.png")
    if "trajectory" in result:
        plot_policies(result["trajectory"], out / "policies.png",
                      f"{result['game'].upper()}: trained M-FOS vs a fresh {result['opponent'].upper()}")


def format_cell(s: dict) -> str:
    """mean [95% CI] with >= 10 seeds; otherwise the mean, n and every seed's value (no CI). Seeds left out for
    a value that is not finite (`runs.summarize_seeds`) are counted beside it."""
    lost = f", {s['not_finite']} seed(s) not finite left out" if s.get("not_finite") else ""
    if not s.get("n"):
        return f"n/a{f' ({lost[2:]})' if lost else ''}"
    if s.get("ci95_low") is not None:
        interval = f"{s['mean']:+.2f} [{s['ci95_low']:+.2f}, {s['ci95_high']:+.2f}]"
        return interval + (f" (n={s['n']}{lost})" if lost else "")
    return f"{s['mean']:+.2f} (n={s['n']}{lost}: " + ", ".join(f"{v:+.2f}" for v in s.get("values", [])) + ")"
