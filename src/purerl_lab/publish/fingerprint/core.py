"""Fingerprints: canonical lowered programs, probed host values and inputs, and the record of one part."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Callable

import numpy as np

from purerl_lab.publish.fingerprint.values import digest, float_constants, sketch, value_hash

SOURCE = Path(__file__).resolve().parents[3]  # src/, holding the library (purerl) and the lab (purerl_lab)
REPO = SOURCE.parent
RUNS = "/fingerprint-runs"  # `{runs}` in a registered command: a scratch folder, no part of the computation
VERSIONS = ("jax", "jaxlib")


# ------------------------------------------------------------------------------------------------ programs
_INFO = re.compile(r'jax\.(?:result|arg)_info = "(?:[^"\\]|\\.)*"(?:, )?')
_DEFINED = re.compile(r"(?:module |func\.func (?:public |private )?)@([\w.$-]+)")
_SYMBOL = re.compile(r"@([\w.$-]+)")


def normalise(text: str) -> str:
    """StableHLO text without what Python names put there: the module's name (jit_FUNCTION), the symbols of
    private functions (named after the Python functions or scopes they came from, numbered in tracing order)
    and the pytree paths of results and arguments. Symbols are renamed in order of first appearance."""
    text = _INFO.sub("", text).replace(" {}", "")
    defined = set(_DEFINED.findall(text))
    names: dict[str, str] = {}

    def rename(match):
        name = match.group(1)
        if name not in defined:
            return match.group(0)  # an external symbol (a custom call's target) is part of the computation
        return "@" + names.setdefault(name, f"f{len(names)}")

    return _SYMBOL.sub(rename, text)


def lowered_text(fn: Callable, *args, static_argnums: tuple[int, ...] = ()) -> str:
    """`fn` jitted and lowered for the CPU at `args` (arrays or `jax.ShapeDtypeStruct`s), normalised."""
    return _lowered(fn, *args, static_argnums=static_argnums)[0]


def _lowered(fn: Callable, *args, static_argnums: tuple[int, ...] = ()):
    """(`lowered_text`, the shapes and dtypes of `fn`'s outputs), from one trace."""
    import jax

    traced = jax.jit(fn, static_argnums=static_argnums).trace(*args)
    return normalise(traced.lower(lowering_platforms=("cpu",)).as_text(debug_info=False)), traced.out_info


def abstract(tree):
    """Shapes and dtypes of a tree of arrays (None stays None)."""
    import jax

    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
                        if not isinstance(x, jax.ShapeDtypeStruct) else x, tree)


class Fingerprint:
    """Named components of one part's computation, each a 16-hex hash."""

    def __init__(self):
        self.components: dict[str, str] = {}
        self.sketches: dict[str, dict] = {}  # host values and inputs with floats: compared up to rounding

    def add(self, name: str, value: str) -> None:
        if name in self.components and self.components[name] != value:
            raise ValueError(f"fingerprint component {name} given twice with different values")
        self.components[name] = value

    def program(self, name: str, fn: Callable, *args, static_argnums: tuple[int, ...] = ()):
        """Adds the program's hash; returns the shapes and dtypes of its outputs (no second trace needed)."""
        text, out = _lowered(fn, *args, static_argnums=static_argnums)
        self.add(f"program {name}", digest(text))
        rest, constants = float_constants(text)
        if constants:
            self.sketches[f"program {name}"] = sketch({"program": digest(rest), "constants": constants})
        return out

    def probe(self, name: str, fn: Callable, *args, **kwargs) -> None:
        self._value(f"host {name}", fn(*args, **kwargs))

    def input(self, name: str, value) -> None:
        self._value(f"input {name}", value)

    def _value(self, name: str, value) -> None:
        self.add(name, value_hash(value))
        found = sketch(value)
        if found:
            self.sketches[name] = found

    def files(self, name: str, paths: list[Path]) -> None:
        """Committed files a command reads: their bytes, by name relative to the repository."""
        self.add(f"input {name}", value_hash({_relative(p): digest(Path(p).read_bytes()) for p in sorted(paths)}))

    def versions(self, *extra: str) -> None:
        from purerl.runtime import hostinfo

        self.add("versions", value_hash(hostinfo.versions((*VERSIONS, *extra))))

    @property
    def hash(self) -> str:
        return value_hash(self.components)

    def record(self) -> dict:
        """The hash and components, the sketches of host values, and the CPU kind that computed them."""
        from purerl.runtime import hostinfo

        record = {"hash": self.hash, "components": dict(sorted(self.components.items())), "cpu": hostinfo.cpu()}
        return record | ({"sketches": dict(sorted(self.sketches.items()))} if self.sketches else {})


def _relative(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.as_posix()


# ------------------------------------------------------------------------------------------------ commands
def command_words(command: str) -> list[str]:
    """The command's words without where its scratch output goes and how the session runs."""
    words = shlex.split(command.format(runs=RUNS))
    return [w for w in words if w not in ("--resume", "--no-progress")]


# ------------------------------------------------------------------------------------------------ host probes
def probe_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(20261127)
    return [rng.normal(100.0, 30.0, size) for size in (3, 10, 16, 32)]


def stats_probe() -> dict:
    """What `stats` computes for published cells and verdicts, on fixed per-seed values."""
    from purerl import stats

    values = probe_inputs()
    summaries = [stats.summarize(v) for v in values]
    curve = np.where(np.random.default_rng(1).random((40, 5)) < 0.2, np.nan, np.arange(200.0).reshape(40, 5))
    return {"summarize": summaries,
            "separation": [stats.separation(a, b) for a in summaries for b in summaries],
            "bootstrap_mean": [stats.bootstrap_ci(v, statistic=lambda x, axis: np.mean(x, axis=axis)) for v in values],
            "iqm": [stats.iqm(v) for v in values], "forward_fill": stats.forward_fill(curve)}


def final_returns_probe() -> dict:
    """Per-seed final returns from a curve of episode returns [updates, members] with NaNs (no episode ended)."""
    from purerl.run import results

    rng = np.random.default_rng(7)
    curves = [np.where(rng.random((n, 6)) < 0.3, np.nan, rng.normal(50.0, 10.0, (n, 6))) for n in (5, 12, 100)]
    return {"final_returns": [results.final_returns(c) for c in curves]}


def host_common(fp: Fingerprint) -> None:
    fp.probe("stats", stats_probe)
    fp.probe("final returns", final_returns_probe)
