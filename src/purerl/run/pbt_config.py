"""What a PBT run is set to, and every check on it before anything is traced (one `ConfigError` line each).

`PBTConfig` is static: it fixes the program (how many rounds, which hyperparameters move) and is recorded in
config.json, so a resumed or rerun PBT run is the same run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from purerl.checks import MAX_MEMBERS, ConfigError, fits_float32, is_number, shown

INITS = ("sample", "given")


@dataclass(frozen=True)
class Bound:
    """An explored hyperparameter and its range [low, high]. A positive range is a log scale (the prior is
    log-uniform); a range from 0 is a linear one (the prior is uniform)."""

    name: str
    low: float
    high: float

    @property
    def log(self) -> bool:
        return self.low > 0


@dataclass(frozen=True)
class PBTConfig:
    """Population-based training settings (`purerl train --pbt`).

    Every `interval` updates the `fraction` of members with the lowest mean return over their last `window`
    updates (0: the whole interval) copy the training state of members drawn from the best `fraction`, and
    explore: each copied hyperparameter in `explore` is resampled from its range with probability `resample`,
    else multiplied by `perturb` or 1 / `perturb`, then clipped to its range. `init="sample"` draws every
    member's explored hyperparameters from their ranges at the start; `"given"` starts from the given values.
    An empty `explore` means the algorithm's defaults (`registry.Algorithm.pbt_explore`).

    `fraction=0` is random search over the same ranges: every member draws its values from the priors once, as
    `init="sample"` does, and keeps them; no round runs (so the interval, window, perturbation and resampling
    do nothing), yet the population, its program and its record are PBT's, so the two compare like for like.
    """

    interval: int = 10
    fraction: float = 0.25
    explore: tuple[Bound, ...] = field(default_factory=tuple)
    perturb: float = 1.2
    resample: float = 0.25
    window: int = 0
    init: str = "sample"

    def with_defaults(self, hyperparams_class: type) -> PBTConfig:
        """This config with the algorithm's default ranges when it names none."""
        if self.explore:
            return self
        from purerl.algos import registry

        algorithm = next((a for a in registry.ALGORITHMS.values() if a.hyperparams is hyperparams_class), None)
        defaults = algorithm.pbt_explore if algorithm is not None else ()
        return replace(self, explore=tuple(Bound(*entry) for entry in defaults))

    @property
    def search(self) -> bool:
        """Random search: members sample their values once and are never exploited (`fraction=0`)."""
        return self.fraction == 0

    def validate(self, hp, config, num_members: int) -> None:
        """Refuse settings that cannot run, or would run without ever exploiting, for this algorithm's
        hyperparameters `hp` (their given values), its static `config` and a population of `num_members`.
        Every setting is checked whatever the fraction: random search ignores some, but the record keeps them."""
        self._check_settings()
        if self.search:
            if self.init != "sample":
                raise ConfigError("pbt-fraction 0 is random search, which samples every member's values: it needs "
                                  "pbt-init sample (with pbt-init given every member would train the same values)")
        else:
            self._check_rounds(config, num_members)
        self._check_explore(hp, config)

    def _check_settings(self) -> None:
        """Each setting of its type and within its range, on its own."""
        interval = self.interval
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise ConfigError(f"pbt-interval must be a positive integer, got {shown(interval)}")
        if not (is_number(self.fraction) and (self.fraction == 0 or 0 < self.fraction <= 0.5)):
            raise ConfigError(f"pbt-fraction must be in (0, 0.5] (the bottom and top fractions may not overlap), "
                              f"or 0 for random search, got {shown(self.fraction)}")
        if not (is_number(self.perturb) and fits_float32(self.perturb) and self.perturb > 1):
            raise ConfigError(f"pbt-perturb must be a finite factor > 1, got {shown(self.perturb)}")
        if not (is_number(self.resample) and 0 <= self.resample <= 1):
            raise ConfigError(f"pbt-resample must be a probability in [0, 1], got {shown(self.resample)}")
        window = self.window
        if not isinstance(window, int) or isinstance(window, bool) or not 0 <= window <= interval:
            raise ConfigError(f"pbt-window must be an integer in [0, pbt-interval={interval}] (0: the whole "
                              f"interval), got {shown(window)}")
        if self.init not in INITS:
            raise ConfigError(f"pbt-init must be one of {', '.join(INITS)}, got {shown(self.init)}")

    def _check_rounds(self, config, num_members: int) -> None:
        """PBT proper (not random search) runs at least one round, and each round replaces a member."""
        if self.interval >= config.num_updates:
            raise ConfigError(f"pbt-interval={self.interval} leaves no PBT round in a run of {config.num_updates} "
                              f"updates; it must be below the number of updates")
        if int(self.fraction * num_members) < 1:
            needed = 1 / self.fraction
            least = f"at least {max(2, math.ceil(needed - 1e-9)):,}" if needed <= MAX_MEMBERS else "more"
            raise ConfigError(f"a population of {num_members} with pbt-fraction={self.fraction:g} replaces no member: "
                              f"it needs {least} members (--seeds)")

    def _check_explore(self, hp, config) -> None:
        if not self.explore:
            raise ConfigError("pbt-explore names no hyperparameter to explore (NAME=LOW:HIGH,...)")
        names = [b.name for b in self.explore]
        for bound in self.explore:
            if not all(is_number(end) and fits_float32(end) for end in (bound.low, bound.high)):
                raise ConfigError(f"pbt-explore {bound.name}: the range needs finite numbers LOW < HIGH (in float32), "
                                  f"got {shown(bound.low)}:{shown(bound.high)}")
            text = f"pbt-explore {bound.name}={bound.low:g}:{bound.high:g}"
            if bound.name in getattr(config, "__dataclass_fields__", {}):
                raise ConfigError(f"{bound.name} is a static config field (it fixes the program) and cannot be "
                                  f"explored; explorable: {', '.join(type(hp)._fields)}")
            if bound.name not in type(hp)._fields:
                raise ConfigError(f"cannot explore '{bound.name}'; explorable: {', '.join(type(hp)._fields)}")
            if names.count(bound.name) > 1:
                raise ConfigError(f"pbt-explore names {bound.name} twice")
            low, high = np.float32(bound.low), np.float32(bound.high)
            if not low < high:
                raise ConfigError(f"{text}: the range needs finite LOW < HIGH (in float32)")
            if bound.low < 0:
                raise ConfigError(f"{text}: LOW must be >= 0 (a positive range is a log scale, one from 0 linear)")
            for end in (low, high):  # as the program computes: a positive LOW may underflow to 0
                try:
                    hp._replace(**{bound.name: float(end)}).validate()
                except ConfigError as error:
                    raise ConfigError(f"{text}: {error}") from None
            given = float(getattr(hp, bound.name))
            if self.init == "given" and not bound.low <= given <= bound.high:
                raise ConfigError(f"{bound.name}={given:g} lies outside its range {bound.low:g}:{bound.high:g} "
                                  f"(pbt-init given); widen the range or use pbt-init sample")

    def chunk(self, num_updates: int, chunk: int | None = None) -> int:
        """Updates per compiled chunk: a divisor of the interval, so every round ends a chunk. By default the
        largest one within a 25th of the run (the progress bar's and the checkpoints' step), or the interval
        itself where that divisor is much smaller (a prime interval would otherwise run one update a call)."""
        if self.search:  # no round to land on a chunk's end
            return chunk or max(1, math.ceil(num_updates / 25))
        if chunk is not None:
            if self.interval % chunk:
                raise ConfigError(f"chunks of {chunk} updates do not divide pbt-interval={self.interval}")
            return chunk
        most = min(self.interval, max(1, math.ceil(num_updates / 25)))
        divisor = max(d for d in range(1, most + 1) if self.interval % d == 0)
        return divisor if 4 * divisor >= most else self.interval

    def to_json(self) -> dict:
        return {"interval": self.interval, "fraction": self.fraction,
                "explore": [[b.name, b.low, b.high] for b in self.explore], "perturb": self.perturb,
                "resample": self.resample, "window": self.window, "init": self.init}

    @classmethod
    def from_json(cls, data: dict) -> PBTConfig:
        return cls(**{**data, "explore": tuple(Bound(str(n), float(lo), float(hi)) for n, lo, hi in data["explore"])})


def rounds(config: PBTConfig, num_updates: int) -> int:
    """PBT rounds in a run: one after every `interval` updates but the last (no round after the final update);
    none in random search."""
    return 0 if config.search else (num_updates - 1) // config.interval


def parse_explore(text: str) -> tuple[Bound, ...]:
    """`lr=1e-5:1e-2,ent_coef=0:0.1` as bounds; a malformed entry is one `ConfigError` line."""
    bounds = []
    for entry in (part.strip() for part in text.split(",")):
        name, _, span = entry.partition("=")
        low, _, high = span.partition(":")
        try:
            values = float(low), float(high)
        except ValueError:
            raise ConfigError(f"pbt-explore takes NAME=LOW:HIGH[,NAME=LOW:HIGH...], got '{entry}'") from None
        if not name.strip() or not all(math.isfinite(v) for v in values):
            raise ConfigError(f"pbt-explore takes NAME=LOW:HIGH with finite numbers, got '{entry}'")
        bounds.append(Bound(name.strip().replace("-", "_"), *values))
    return tuple(bounds)
