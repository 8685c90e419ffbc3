"""Values as hashes: exact hashes of values, and sketches that compare them up to float rounding, so that the
records of one computation made on two CPU kinds agree and those of two computations do not."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np


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
# error times the norm, a changed computation by far more. An ES generation amplifies rounding: Adam divides each
# gradient entry by its own size, so a near-zero entry's step takes any sign.
SKETCH_PROJECTIONS = 4
SKETCH_RTOL = 1e-4  # of the norm: rounding moves a sketch by 1e-7 of it, up to 2.2e-5 after two ES generations
#                     (test_fingerprint's two CPU kinds), a 0.1% change by 1e-3


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


def float_constants(text: str) -> tuple[str, list[np.ndarray]]:
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
