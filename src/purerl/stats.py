"""Aggregate results over seeds: IQM and percentile-bootstrap confidence intervals.

IQM (the mean of the middle 50%) and bootstrap CIs follow Agarwal et al. 2021,
"Deep RL at the Edge of the Statistical Precipice": robust to outlier seeds and
honest about uncertainty with few runs.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as scipy_stats


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along `axis` (25% trimmed from each end)."""
    return scipy_stats.trim_mean(np.asarray(x, dtype=np.float64), 0.25, axis=axis)


def bootstrap_ci(
    x: np.ndarray, statistic=iqm, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of `statistic` over the last axis (the seeds).

    Leading axes (for example updates) are handled in one vectorised pass.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(resamples, n))
    samples = statistic(x[..., index], axis=-1)  # [..., resamples]
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha], axis=-1)
    return low, high


MIN_SEEDS_FOR_CI = 10  # fewer seeds: report the per-seed values and n, never an interval
NOT_DISTINGUISHABLE = "not distinguishable at this budget"


def summarize(x: np.ndarray) -> dict:
    """Mean, IQM and 95% bootstrap CI of the IQM for one value per seed, and the values themselves.

    `ci_valid` is False below MIN_SEEDS_FOR_CI seeds: the bootstrap interval of a handful of seeds is
    little more than their range, so callers show `values` instead (see `describe`). It is False too when a
    value is not finite (a diverged seed): its interval would be NaN, and dropping the seed would hide it.
    """
    x = np.asarray(x, dtype=np.float64)
    low, high = bootstrap_ci(x)
    return {
        "values": [float(v) for v in x],
        "ci_valid": bool(x.size >= MIN_SEEDS_FOR_CI and np.isfinite(x).all()),
        "mean": float(np.mean(x)),
        "std": float(np.std(x)),
        "iqm": float(iqm(x)),
        "ci95_low": float(low),
        "ci95_high": float(high),
        "min": float(np.min(x)),
        "max": float(np.max(x)),
        "n": int(x.size),
    }


def describe(s: dict, digits: int = 1) -> str:
    """'IQM [low, high]' with a valid CI, else every per-seed value and n, naming seeds whose value is not
    finite (diverged ones)."""
    if s.get("ci_valid", s["n"] >= MIN_SEEDS_FOR_CI):
        return f"{s['iqm']:.{digits}f} [{s['ci95_low']:.{digits}f}, {s['ci95_high']:.{digits}f}]"
    lost = sum(not _finite(v) for v in s["values"])
    why = f"{lost} not finite, no CI" if lost else "no CI"
    return ("per seed " + ", ".join(f"{v:.{digits}f}" if _finite(v) else "nan" for v in s["values"])
            + f" (n={s['n']}, {why})")


def _finite(value) -> bool:
    """A seed's value is a number: not NaN or infinite, nor None (how a JSON record stores those)."""
    return value is not None and bool(np.isfinite(value))


def not_finite(*summaries: dict) -> bool:
    """Whether a `summarize`d seed's value is not finite (a diverged run): why such values give no interval
    when they have enough seeds."""
    return any(not _finite(v) for s in summaries for v in s["values"])


def no_ci_reason(a: dict, b: dict, unit: str = "seed") -> str | None:
    """Why two `summarize`d results give no CI to compare (a value that is not finite, or too few `unit`s), in
    the words every report uses; None when both have a valid CI."""
    if a.get("ci_valid") and b.get("ci_valid"):
        return None
    if not_finite(a, b):
        return f"no CI: a {unit}'s value is not finite (diverged)"
    return f"no CI: fewer than {MIN_SEEDS_FOR_CI} {unit}s"


def separation(a: dict, b: dict) -> int:
    """+1 if a's 95% CI lies wholly above b's, -1 wholly below, 0 otherwise or when either has no valid CI."""
    if not (a.get("ci_valid") and b.get("ci_valid")):
        return 0
    return 1 if a["ci95_low"] > b["ci95_high"] else -1 if a["ci95_high"] < b["ci95_low"] else 0


def iqm_verdict(a: dict, b: dict) -> str:
    """`separation` in `paired_difference`'s words: 'better' / 'worse' only where the IQMs' 95% CIs do not
    overlap."""
    return {1: "better", -1: "worse", 0: "not distinguishable"}[separation(a, b)]


def paired_difference(a, b) -> dict:
    """The mean over seeds of a - b on the same seeds, with its 95% percentile-bootstrap CI, and 'better' /
    'worse' only when that CI excludes 0 (no CI, and no verdict, below MIN_SEEDS_FOR_CI seeds or with a
    difference that is not finite). Pairing removes what the seeds share, so it resolves differences that two
    separate CIs (`separation`) cannot."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"paired_difference needs one value per seed on both sides, got shapes {a.shape} and "
                         f"{b.shape}")
    differences = a - b
    low, high = bootstrap_ci(differences, statistic=lambda x, axis: np.mean(x, axis=axis))
    valid = differences.size >= MIN_SEEDS_FOR_CI and bool(np.isfinite(differences).all())
    judged = "better" if valid and low > 0 else "worse" if valid and high < 0 else "not distinguishable"
    return {"mean": float(differences.mean()), "ci95_low": float(low), "ci95_high": float(high),
            "n": int(differences.size), "ci_valid": bool(valid), "verdict": judged}


def paired_p_value(a, b, resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided percentile-bootstrap p-value for a paired mean difference a - b of 0: twice the share of the
    resampled means on the far side of 0, counted with the usual +1. It is below 0.05 where `paired_difference`'s
    95% CI excludes 0, except near that edge: the two are separate Monte Carlo draws of one bootstrap (10,000 and
    2,000 resamples), so a family-corrected verdict (`replication`) asks both. 10,000 resamples resolve p down to
    2e-4, which a family correction (`holm`) needs: a family of 26 can still reject at 0.05."""
    differences = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    if differences.ndim != 1 or differences.size < MIN_SEEDS_FOR_CI or not np.isfinite(differences).all():
        return 1.0  # no CI is given for these, and no verdict: nothing to reject
    index = np.random.default_rng(seed).integers(0, differences.size, size=(resamples, differences.size))
    means = differences[index].mean(axis=-1)
    beyond = min(int((means <= 0).sum()), int((means >= 0).sum()))
    return min(1.0, 2.0 * (beyond + 1) / (resamples + 1))


def holm(p_values: dict[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values by name (step-down, kept monotone): rejecting where an adjusted p is below
    alpha keeps the chance of any false verdict in the whole family at alpha, whatever its comparisons share."""
    adjusted, running = {}, 0.0
    order = sorted(p_values, key=lambda name: p_values[name])
    for rank, name in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p_values[name]))
        adjusted[name] = running
    return adjusted


REPLICATED = ("better", "worse")


def replication(study: dict, fresh: dict | None, adjusted_p: float | None = None, alpha: float = 0.05) -> str:
    """The verdict of a paired comparison (`paired_difference`) made on the study's seeds and again, by the same
    command, on disjoint fresh seeds: 'better' or 'worse' only where both agree (the study's test passes: its 95%
    CI clear of 0, or with `adjusted_p`, a family-corrected p below alpha; and the fresh seeds' 95% CI clear of 0
    the same way); 'not replicated' where the study's seeds give a verdict the fresh ones do not; 'not resolved'
    where the study's seeds give none; 'replication pending' where no fresh seeds were run."""
    verdict = study["verdict"]
    if adjusted_p is not None and not adjusted_p < alpha:
        verdict = "not distinguishable"
    if verdict not in REPLICATED:
        return "not resolved"
    if fresh is None:
        return "replication pending"
    return verdict if fresh["verdict"] == verdict else "not replicated"


def both_tests(by_iqm: str, paired: dict | None) -> str:
    """Words for two comparisons of the same seeds: the IQMs' 95% CIs apart (`by_iqm`, from `iqm_verdict`) and
    the paired mean difference's CI clear of 0 (`paired_difference`, or None where it was not recorded). The two
    answer different questions (the typical seed; the mean over seeds) and can resolve differently, so the words
    say which resolved what."""
    if paired is None:
        return {"better": "better (IQM CIs apart)", "worse": "worse (IQM CIs apart)",
                "not distinguishable": "not resolved (IQM CIs overlap)"}[by_iqm]
    by_pair = paired["verdict"]
    if by_iqm == by_pair:
        return {"better": "better by both tests", "worse": "worse by both tests",
                "not distinguishable": "not resolved by either test"}[by_iqm]
    if "not distinguishable" in (by_iqm, by_pair):
        resolved, test = (by_iqm, "the IQM CIs") if by_pair == "not distinguishable" else (by_pair, "the paired mean")
        return f"{resolved} by {test} only"
    return f"the tests disagree ({by_iqm} by the IQM CIs, {by_pair} by the paired mean)"


def describe_paired(d: dict, digits: int = 1) -> str:
    """A `paired_difference` as '+mean [low, high]', or '+mean (n=N, no CI)' below MIN_SEEDS_FOR_CI seeds
    or with a difference that is not finite."""
    if not d["ci_valid"]:
        return f"{d['mean']:+.{digits}f} (n={d['n']}, no CI)"
    return f"{d['mean']:+.{digits}f} [{d['ci95_low']:+.{digits}f}, {d['ci95_high']:+.{digits}f}]"


def forward_fill(x: np.ndarray) -> np.ndarray:
    """Carry the last finite value forward along axis 0 (updates where no episode ended)."""
    x = np.array(x, dtype=np.float64)
    for t in range(1, x.shape[0]):
        x[t] = np.where(np.isfinite(x[t]), x[t], x[t - 1])
    return x


def smooth(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average along axis 0 (updates), for readable learning curves."""
    x = np.asarray(x, dtype=np.float64)
    if window <= 1:
        return x
    csum = np.cumsum(x, axis=0)
    out = csum.copy()
    out[window:] = csum[window:] - csum[:-window]
    counts = np.minimum(np.arange(1, x.shape[0] + 1), window).reshape((-1,) + (1,) * (x.ndim - 1))
    return out / counts
