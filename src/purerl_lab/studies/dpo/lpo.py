"""Learned / Discovered Policy Optimisation (Lu et al., NeurIPS 2022, arXiv 2210.05639).

LPO meta-learns the drift D(r, A) of mirror learning with OpenES, starting
from a zero output layer (exactly PPO's gradients) and maximising the return.
DPO is the paper's closed form of what LPO found. `analyze_drift` draws D and
dObjective/dr so the discovered features can be seen and named.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from purerl import envs
from purerl.algos import memory, objectives
from purerl.algos.ppo import make_train
from purerl_lab.studies.dpo.compare import run_name
from purerl.algos import ppo_config
from purerl.algos.ppo_config import HyperParams
from purerl.algos.settings import default_preset
from purerl.checks import ConfigError
from purerl.meta.evolve import MetaTask, train_fitness
from purerl.meta.strategies import ESConfig
from purerl.meta.evolve_files import load_meta_params
from purerl.run import files

# cpu: CartPole-v1 with the classic preset cut to 65,536 steps per inner run, where PPO is half-way (final return
#      about 240 of 500) and so unsaturated; population 32 x 300 generations, one inner run per candidate (the
#      same seed for all, fresh each generation), fitness = mean return over training (AUC: on 12 seeds its
#      paired standard error was half the final return's). Small steps, because the fitness is noisy and Adam
#      moves every weight by about lr per generation whatever the gradient's size: lr 0.01 -> 0.002, std 0.05
#      -> 0.02. About 3.5-5 s per generation, 17-26 minutes per ES seed on 2 cores.
# paper: Brax Ant, population 32 x 1 seed, 1000 generations, the Brax preset, the paper's OpenES, for one GPU.
PRESETS = {
    "cpu": dict(env="CartPole-v1", config=dict(total_timesteps=65_536), fitness="auc",
                es=dict(population_size=32, generations=300, lr=0.01, lr_final=0.002, std=0.05, std_final=0.02)),
    "paper": dict(env="brax:ant", es=dict(population_size=32, generations=1000), config={}),
}
ES_DEFAULTS = dict(strategy="open_es", lr=0.01, lr_final=0.001, std=0.04, std_final=0.01)


def inner_setup(env_name: str, overrides: dict):
    envs.check_name(env_name)
    env = envs.make(env_name)
    discrete = env.action_space.discrete
    config, hp = ppo_config.preset(default_preset(env_name, discrete), env_name, discrete)
    return config.replace(**overrides), hp


def make_task(preset: str = "cpu", total_timesteps: int | None = None, fitness: str | None = None,
              env: str | None = None) -> MetaTask:
    """LPO on `env` (default: the preset's), with the preset's inner budget unless `env` differs."""
    env_name = env or PRESETS[preset]["env"]
    overrides = dict(PRESETS[preset]["config"]) if env_name == PRESETS[preset]["env"] else {}
    if total_timesteps:
        overrides["total_timesteps"] = total_timesteps
    fitness = fitness or PRESETS[preset].get("fitness", "final")
    config, hp = inner_setup(env_name, overrides)
    train = make_train(config, objective=objectives.lpo)
    return MetaTask(
        name="lpo",
        template=initial_params(),  # a zero output layer: generation 0 is PPO
        fitness=train_fitness(train, hp.as_arrays(), fitness),
        info={"env": env_name, "fitness": fitness, "total_timesteps": config.total_timesteps,
              "num_envs": config.num_envs, "num_steps": config.num_steps},
        cpu_group=config.cpu_group,
        run_bytes=memory.ppo_bytes(config, train.env),
    )


def initial_params(seed: int = 0) -> dict:
    """Fixed random tanh features (N(0, 1/8) weights on the 8 inputs) and a zero output layer, so the drift is
    exactly PPO's. Not all zeros: the net is odd in (hidden, out) jointly, so at zero every antithetic pair
    of OpenES candidates trains identically, their fitness is equal to the bit, and the ES gradient is zero
    up to rounding, which Adam then inflates into steps of size lr in random directions."""
    zero = objectives.init_lpo_params()
    hidden = jax.random.normal(jax.random.PRNGKey(seed), zero["hidden"].shape) / np.sqrt(zero["hidden"].shape[0])
    return {**zero, "hidden": hidden}


def es_config(preset: str, **overrides) -> ESConfig:
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; choose from {', '.join(PRESETS)}")
    return ESConfig(**{**ES_DEFAULTS, **PRESETS[preset]["es"], **overrides})


# ------------------------------------------------------------------ analysis
RATIOS = np.linspace(0.0, 2.0, 201, dtype=np.float32)[1:]  # r > 0 so that log r is finite
ADVANTAGES = np.linspace(-2.0, 2.0, 201, dtype=np.float32)


def drift_for(name_or_path: str):
    """(label, drift(r, A)) for 'ppo', 'dpo', or a path to LPO meta-parameters."""
    hp = HyperParams()
    if name_or_path == "ppo":
        return "PPO", lambda r, a: objectives.ppo_drift(r, a, hp.clip_eps)
    if name_or_path == "dpo":
        return "DPO", lambda r, a: objectives.dpo_drift(r, jnp.log(r), a)
    params = load_meta_params(Path(name_or_path), objectives.init_lpo_params())
    return f"LPO {run_name(name_or_path)}", lambda r, a: objectives.lpo_drift(r, jnp.log(r), a, params, hp.clip_eps)


def drift_maps(drift) -> tuple[np.ndarray, np.ndarray]:
    """D and dObjective/dr = A - dD/dr on the (r, A) grid, shaped [A, r]."""
    rr, aa = jnp.meshgrid(RATIOS, ADVANTAGES)
    d = drift(rr, aa)
    grad_d = jax.vmap(jax.vmap(jax.grad(drift)))(rr, aa)
    return np.asarray(d), np.asarray(aa - grad_d)


def describe(d: np.ndarray, slope: np.ndarray, references: dict[str, np.ndarray], clip_eps: float) -> dict:
    """Named features of a drift (the paper's Section 5) as numbers, and its distance from reference drifts.

    rollback: with A < 0, PPO's objective is flat (slope 0) once r < 1 - eps; a drift that rolls back makes it
    rise again as r falls (dObjective/dr > 0), pushing r back towards 1. cautious optimism: with A > 0, how much
    the drift already charges for r > 1 inside PPO's clip range (where PPO charges nothing) and beyond it,
    relative to PPO's charge there.
    """
    r = np.broadcast_to(np.asarray(RATIOS)[None, :], d.shape)
    a = np.broadcast_to(np.asarray(ADVANTAGES)[:, None], d.shape)
    negative_low = (a < 0) & (r < 0.95)
    positive_high = (a > 0) & (r > 1.05)
    inside_clip = (a > 0) & (r > 1.0) & (r <= 1.0 + clip_eps)
    beyond_clip = (a > 0) & (r > 1.0 + clip_eps)
    features = {
        "rollback_fraction": float(np.mean(slope[negative_low] > 1e-6)),
        "rollback_below_r": {f"{edge_a:g}": _rollback_edge(slope, r[0], a[:, 0], edge_a) for edge_a in (-2.0, -1.0, -0.5)},
        "optimism_mean_slope_over_A": float(np.mean(slope[positive_high] / a[positive_high])),
        "optimism_mean_drift_inside_clip": float(np.mean(d[inside_clip])),
        "optimism_drift_beyond_clip_vs_ppo": float(np.mean(d[beyond_clip]) / np.mean(references["ppo"][beyond_clip])),
    }
    for name, ref in references.items():
        i, j = np.unravel_index(np.argmax(np.abs(d - ref)), d.shape)
        features[f"mean_abs_difference_from_{name}"] = float(np.mean(np.abs(d - ref)))
        features[f"max_abs_difference_from_{name}"] = float(np.abs(d - ref).max())
        features[f"largest_difference_from_{name}_at"] = {"r": float(r[i, j]), "A": float(a[i, j])}
    return features


def _rollback_edge(slope: np.ndarray, r: np.ndarray, a: np.ndarray, at_a: float) -> float | None:
    """At A = at_a, the largest r < 1 below which the objective pushes r back up (None if nowhere)."""
    row = slope[np.argmin(np.abs(a - at_a))]
    rolling_back = (r < 1.0) & (row > 1e-6)
    return float(r[rolling_back].max()) if rolling_back.any() else None


def analyze_drift(sources: list[str], out_dir: Path) -> dict:
    """Heatmaps of D(r, A) and dObjective/dr, one row per drift, with their named features."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for source in sources:
        if source not in ("ppo", "dpo") and not Path(source).exists():
            raise ConfigError(f"drift '{source}' is neither ppo, dpo nor an existing path")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} is a file; the drift maps and numbers go in a folder")
    from purerl.run.rundir import check_writable

    check_writable(out_dir)
    labelled = {source: drift_for(source) for source in dict.fromkeys(["ppo", "dpo", *sources])}
    out_dir.mkdir(parents=True, exist_ok=True)  # only once every drift has loaded
    maps = {source: drift_maps(drift) for source, (_, drift) in labelled.items()}  # each grid computed once
    references = {name: maps[name][0] for name in ("ppo", "dpo")}
    report = {}
    fig, axes = plt.subplots(len(sources), 2, figsize=(10, 3.6 * len(sources)), squeeze=False)
    extent = [float(RATIOS[0]), float(RATIOS[-1]), float(ADVANTAGES[0]), float(ADVANTAGES[-1])]
    for row, source in enumerate(sources):
        label = labelled[source][0]
        d, slope = maps[source]
        report[label] = describe(d, slope, references, HyperParams().clip_eps)
        # Shared colour scales (D in [0, 2], slope in [-2, 2]); log r makes DPO's slope explode near r = 0.
        panels = ((d, f"{label}: drift D(r, A)", "magma", (0.0, 2.0)),
                  (slope, f"{label}: dObjective/dr", "coolwarm", (-2.0, 2.0)))
        for col, (values, title, cmap, (low, high)) in enumerate(panels):
            ax = axes[row, col]
            image = ax.imshow(values, origin="lower", extent=extent, aspect="auto", cmap=cmap, vmin=low, vmax=high)
            ax.contour(np.asarray(RATIOS), np.asarray(ADVANTAGES), slope, levels=[0.0], colors="k", linewidths=0.6)
            ax.set_title(title)
            ax.set_xlabel("ratio r")
            ax.set_ylabel("advantage A")
            fig.colorbar(image, ax=ax, extend="both")
    fig.tight_layout()
    path = out_dir / "drift.png"
    files.save_figure(fig, path, dpi=110)
    files.write_atomic(out_dir / "drift.json", json.dumps(report, indent=2))
    return {"features": report, "plot": str(path)}
