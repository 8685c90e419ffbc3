"""Figures of the value-loss study: the learned loss next to L2, and the critic while PPO trains."""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import numpy as np

from purerl.run import files
from purerl_lab.studies.value_loss import FORMS
from purerl_lab.studies.value_loss.shape import curvature_at_zero, curves, log_weight_grid, loss_of_value

TARGETS_DRAWN = (5.0, 50.0, 90.0)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def loss_figure(meta_params, path: Path, form: str = "scaled", max_error: float = 30.0) -> Path:
    """Loss and dL/dv against v - t at a few targets (L2 dashed), the loss divided by its own curvature at v = t
    beside L2 (what is left once its scale is taken out), and for the scaled form L / L2 = exp(g) over value x
    target."""
    plt = _pyplot()
    loss = FORMS[form].loss
    errors = jnp.linspace(-max_error, max_error, 301)
    fig, axes = plt.subplots(1, 4 if form == "scaled" else 3, figsize=(21 if form == "scaled" else 16, 4.5))
    for target in TARGETS_DRAWN:
        c = curves(meta_params, target, errors, loss)
        line = axes[0].plot(errors, c["learned"], label=f"learned, t = {target:g}")[0]
        axes[1].plot(errors, c["learned_slope"], color=line.get_color(), label=f"learned, t = {target:g}")
    c = curves(meta_params, TARGETS_DRAWN[0], errors, loss)
    axes[0].plot(errors, c["l2"], "k--", label="L2 (any t)")
    axes[1].plot(errors, c["l2_slope"], "k--", label="L2 (any t)")
    for ax, title in ((axes[0], "loss"), (axes[1], "dL/dv (what the critic follows)")):
        ax.axvline(0.0, color="grey", lw=0.5)
        ax.set_xlabel("error v - t (> 0: over-estimation)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    axes[0].set_yscale("symlog", linthresh=1.0)
    _normalised(axes[2], meta_params, loss, errors)
    if form == "scaled":
        _weight_map(fig, axes[3], meta_params)
    fig.tight_layout()
    return files.save_figure(fig, path, dpi=110)


def _weight_map(fig, ax, meta_params) -> None:
    values, targets = jnp.linspace(-10.0, 110.0, 121), jnp.linspace(0.0, 100.0, 101)
    weight = np.exp(log_weight_grid(meta_params, values, targets))
    image = ax.pcolormesh(np.asarray(values), np.asarray(targets), weight, shading="auto", cmap="viridis")
    ax.plot([0, 100], [0, 100], "w--", lw=0.8)
    ax.set_xlabel("value v")
    ax.set_ylabel("target t")
    ax.set_title("learned loss / L2 = exp(g(v, t)) (white: v = t)")
    fig.colorbar(image, ax=ax)


def _normalised(ax, meta_params, loss, errors) -> None:
    for target in TARGETS_DRAWN:
        c = curves(meta_params, target, errors, loss)
        rise = c["learned"] - float(loss_of_value(meta_params, target, loss)(jnp.asarray(target)))
        curvature = curvature_at_zero(loss, meta_params, target)
        if curvature > 0:
            ax.plot(errors, rise / curvature, label=f"learned / its curvature at 0, t = {target:g}")
    ax.plot(errors, c["l2"], "k--", label="L2")
    ax.axvline(0.0, color="grey", lw=0.5)
    ax.set_xlabel("error v - t (> 0: over-estimation)")
    ax.set_title("shape beyond scale: (L - L(0)) / L''(0)")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def dynamics_figure(dynamics: dict, path: Path) -> Path:
    """Mean |v - t| and mean v - t on fresh rollouts during training, and the error histogram at the end."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    bins = np.asarray(dynamics["histogram_bins"])
    names = [k for k in dynamics if k not in ("histogram_bins", "seeds", "measured")]
    for name in names:
        rows = dynamics[name]["probes"]
        steps = [row["env_steps"] for row in rows]
        line = axes[0].plot(steps, [row["abs_error"] for row in rows], marker="o", ms=3, label=name)[0]
        axes[1].plot(steps, [row["bias"] for row in rows], marker="o", ms=3, color=line.get_color(), label=name)
        counts = np.asarray(dynamics[name]["final_error_histogram"], float)
        axes[2].step(bins[:-1], counts / counts.sum(), where="post", color=line.get_color(), label=name)
    axes[0].set_title("critic error: mean |v - t| on a fresh rollout")
    axes[1].set_title("critic bias: mean v - t (> 0: over-estimates)")
    axes[2].set_title("v - t at the end of training (fraction per bin)")
    for ax in axes[:2]:
        ax.set_xlabel("environment steps")
    axes[1].axhline(0.0, color="grey", lw=0.5)
    axes[2].set_xlabel("v - t (clipped to the bin range)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"{len(dynamics['seeds'])} held-out seeds")
    fig.tight_layout()
    return files.save_figure(fig, path, dpi=110)
