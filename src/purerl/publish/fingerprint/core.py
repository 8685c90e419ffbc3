"""Hashing for fingerprints: canonical lowered programs, probed values, and the record of one part."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Callable

import numpy as np

from purerl.config import ConfigError

PACKAGE = Path(__file__).resolve().parents[2]  # src/purerl
REPO = PACKAGE.parents[1]
RUNS = "/fingerprint-runs"  # `{runs}` in a registered command: a scratch folder, no part of the computation
VERSIONS = ("jax", "jaxlib")


# ------------------------------------------------------------------------------------------------ hashing
def digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def _plain(obj):
    """A JSON-able, exact form of a value: arrays by dtype, shape and bytes; floats by repr."""
    import jax

    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (jax.Array, np.ndarray, np.generic)):
        x = np.asarray(obj)
        if x.dtype == object:
            return [_plain(v) for v in x.tolist()]
        return {"dtype": str(x.dtype), "shape": list(x.shape), "sha": digest(np.ascontiguousarray(x).tobytes())}
    if isinstance(obj, float):
        return repr(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if hasattr(obj, "_asdict"):
        return _plain(obj._asdict())
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return _plain(dataclasses.asdict(obj))
    leaves = jax.tree.leaves(obj)
    if leaves and leaves != [obj]:
        return _plain(leaves)
    return repr(obj)


def value_hash(obj) -> str:
    return digest(json.dumps(_plain(obj), sort_keys=True))


# A host value's floats may differ in their last bits from one CPU kind to another (XLA compiles for the host's
# instruction set). A sketch keeps what is exact (structure, shapes, integers, where NaNs are) as a hash, and the
# floats as their norm and a few fixed random projections: rounding moves these by about the floats' relative
# error times the norm, a changed computation by far more.
SKETCH_PROJECTIONS = 4
SKETCH_RTOL = 1e-5  # of the norm: float32 rounding moves a sketch by about 1e-7 of it, a 0.1% change by 1e-3


def sketch(obj) -> dict | None:
    """`{"exact": hash, "numbers": [norm, projections...]}` of a value with floats, or None without any."""
    floats: list[np.ndarray] = []

    def split(x):
        if isinstance(x, dict):
            return {str(k): split(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
        if isinstance(x, (list, tuple)):
            return [split(v) for v in x]
        array = np.asarray(x) if isinstance(x, (float, np.floating, np.ndarray)) or hasattr(x, "__array__") else None
        if array is not None and array.dtype.kind == "f":
            flat = array.astype(np.float64).ravel()
            finite = np.isfinite(flat)
            floats.append(np.where(finite, flat, 0.0))
            return {"float": str(array.dtype), "shape": list(array.shape),  # where NaNs and infinities are, exactly
                    "not_finite": [[int(i), repr(flat[i])] for i in np.flatnonzero(~finite)]}
        if array is not None and array.dtype != object and not isinstance(x, (bool, int, str)):
            return _plain(array)
        if hasattr(x, "_asdict"):
            return split(x._asdict())
        if hasattr(x, "__dataclass_fields__"):
            import dataclasses

            return split(dataclasses.asdict(x))
        return _plain(x)

    structure = split(obj)
    if not floats:
        return None
    values = np.concatenate(floats)
    rng = np.random.default_rng(0)
    projections = [float(rng.choice([-1.0, 1.0], values.size) @ values) for _ in range(SKETCH_PROJECTIONS)]
    return {"exact": digest(json.dumps(structure, sort_keys=True)),
            "numbers": [float(np.linalg.norm(values)), *projections], "count": int(values.size)}


def same_within_rounding(recorded: dict | None, current: dict | None) -> bool:
    """Two sketches of one value, equal up to float rounding of every float."""
    if not recorded or not current or recorded["exact"] != current["exact"]:
        return False
    scale = SKETCH_RTOL * max(abs(recorded["numbers"][0]), abs(current["numbers"][0])) + 1e-30
    return all(abs(a - b) <= scale for a, b in zip(recorded["numbers"], current["numbers"]))


# Arrays a program closes over are constants in its text, large ones as hex bytes. Those computed on the host
# (a random initialisation, say) round differently on another CPU kind, like any host value; so a program's
# large float constants are sketched too, beside the rest of its text, which stays exact.
_HEX_FLOATS = re.compile(r'dense<"0x([0-9A-Fa-f]*)"> : tensor<((?:\d+x)*)(f16|bf16|f32|f64)>')


def _float_constants(text: str) -> tuple[str, list[np.ndarray]]:
    """The program text with each hex-printed float constant's bytes cut out, and those constants."""
    import ml_dtypes

    dtypes = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
    constants = []

    def cut(match):
        shape = [int(n) for n in match.group(2).split("x") if n]
        data = np.frombuffer(bytes.fromhex(match.group(1)), np.dtype(dtypes[match.group(3)]).newbyteorder("<"))
        constants.append(data.astype(np.float64).reshape(shape))
        return f"dense<constant {len(constants) - 1}> : tensor<{match.group(2)}{match.group(3)}>"

    return _HEX_FLOATS.sub(cut, text), constants


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
        rest, constants = _float_constants(text)
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


def rounding_only(recorded: dict, current: dict) -> list[str]:
    """The components whose hashes differ but whose values agree up to float rounding (another CPU kind)."""
    old, new = recorded.get("components", {}), current.get("components", {})
    return [name for name in sorted(old.keys() & new.keys()) if old[name] != new[name]
            and same_within_rounding(recorded.get("sketches", {}).get(name), current.get("sketches", {}).get(name))]


def unverifiable_rounding(recorded: dict, current: dict) -> str | None:
    """Why a change may be rounding only, where only floats differ but the record has no sketches to tell:
    the CPU kind it was made on, when that is not this one (or unknown)."""
    words = changed(recorded, current)
    floats_only = all(w.endswith(" changed") and w[:-len(" changed")] in current.get("sketches", {})
                      and w[:-len(" changed")] not in recorded.get("sketches", {}) for w in words)
    made_on = recorded.get("cpu")
    if not words or not floats_only or made_on == current.get("cpu"):
        return None
    return (f"only host floats differ, and the record, made on {made_on or 'an unrecorded CPU kind'}, has no "
            "sketches to tell rounding from change: `purerl results --check --mark` on that kind records them")


def changed(recorded: dict, current: dict) -> list[str]:
    """The components that differ between two fingerprint records beyond float rounding, in words."""
    old, new = recorded.get("components", {}), current.get("components", {})
    rounding = set(rounding_only(recorded, current))
    words = [f"{name} changed" for name in sorted(old.keys() & new.keys())
             if old[name] != new[name] and name not in rounding]
    words += [f"{name} new" for name in sorted(new.keys() - old.keys())]
    words += [f"{name} gone" for name in sorted(old.keys() - new.keys())]
    return words


# ------------------------------------------------------------------------------------------------ commands
def parse_command(command: str):
    """A registered command's arguments, as `purerl` would parse them ({runs} a fixed scratch folder)."""
    from purerl.cli import build_parser

    words = shlex.split(command.format(runs=RUNS))
    if words[:1] != ["purerl"]:
        raise ConfigError(f"not a purerl command: {command}")
    args = build_parser().parse_args(words[1:])
    args.argv = words[1:]
    return args


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
