"""What a compiled XLA program launches, read from its optimised HLO text (`compiled.as_text()`).

XLA:GPU runs an optimised module as a sequence of kernels: each fusion, custom call (cuBLAS GEMMs, Pallas
kernels) and copy left in a scheduled computation is one launch, and a `while` loop runs its condition and body
once per iteration, with the predicate read back by the host each time. So the launches of a whole training
program are the kernels of each computation weighted by the trip counts XLA records on its loops
(`known_trip_count`); each kernel's bytes and FLOPs come from the shapes in the text. `count(text)` gives the
totals; `Kernel` rows let a cost model price every kernel by its own work.

It reads text only, so it is tested on CPU-compiled programs and on hand-written modules; on a machine without a
GPU, a program compiled for a GPU target (`jax.experimental.topologies`) gives the real GPU text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from purerl_lab.bench.hlo_text import Computation, Instruction, dims, elements, parse, shape_bytes, tuple_elements

# opcodes that name or regroup buffers and launch nothing
NO_KERNEL = {"parameter", "get-tuple-element", "tuple", "bitcast", "constant", "after-all", "add-dependency",
             "opt-barrier", "partition-id", "replica-id", "domain", "get-dimension-size"}
ELEMENTWISE_FLOP = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "exponential", "log", "tanh",
                    "logistic", "sqrt", "rsqrt", "power", "abs", "negate", "compare", "select", "exponential-minus-one",
                    "log-plus-one", "sine", "cosine", "atan2", "floor", "ceil", "round-nearest-even", "sign",
                    "remainder", "clamp", "and", "or", "xor", "not", "shift-left", "shift-right-logical",
                    "shift-right-arithmetic", "erf", "cbrt", "tan", "convert"}
# fusions and custom calls whose work lives in a slice of a large operand: they read (or write) only the slice
SLICING = {"dynamic-slice", "slice", "gather"}
LOW_PRECISION = ("bf16", "f16")
GEMM_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul", "__cudnn$")
GEMM_FUSION_KINDS = ("__triton_gemm", "__triton_nested_gemm_fusion", "__cublas", "__triton_scaled_dot_fusion")

@dataclass(frozen=True)
class Kernel:
    """One launched kernel and how many times the program launches it."""

    name: str
    kind: str  # "gemm", "fusion", "copy", "custom-call" or the opcode of an unfused op (sort, scatter, ...)
    bytes: float  # read and written by one launch
    flops: float  # of one launch
    launches: int
    low_precision_flops: float = 0.0  # the part of `flops` in dots of 16-bit operands (bf16, f16)


@dataclass
class Counts:
    kernels: list[Kernel] = field(default_factory=list)
    loop_iterations: int = 0  # host round trips: each while iteration's predicate goes back to the host
    conditionals: int = 0
    unknown_trip_counts: int = 0  # loops XLA could not bound, counted as one iteration

    @property
    def launches(self) -> int:
        return sum(k.launches for k in self.kernels)

    def launches_of(self, kind: str) -> int:
        return sum(k.launches for k in self.kernels if k.kind == kind)

    @property
    def bytes(self) -> float:
        return sum(k.bytes * k.launches for k in self.kernels)

    @property
    def flops(self) -> float:
        return sum(k.flops * k.launches for k in self.kernels)

    @property
    def low_precision_flops(self) -> float:
        return sum(k.low_precision_flops * k.launches for k in self.kernels)

    def summary(self) -> dict:
        kinds = sorted({k.kind for k in self.kernels})
        return {"launches": self.launches, "loop_iterations": self.loop_iterations,
                "conditionals": self.conditionals, "unknown_trip_counts": self.unknown_trip_counts,
                "bytes": self.bytes, "flops": self.flops, "low_precision_flops": self.low_precision_flops,
                "by_kind": {kind: self.launches_of(kind) for kind in kinds}}


# ------------------------------------------------------------------ work of one kernel
def _dot_flops(dot: Instruction, lhs_shape: str) -> float:
    contracting = dot.attribute("lhs_contracting_dims")
    lhs = dims(lhs_shape)
    axes = [int(a) for a in re.findall(r"\d+", contracting or "")]
    return 2.0 * elements(dot.shape) * math.prod(lhs[a] for a in axes if a < len(lhs))


def _computation_flops(comp: Computation, modules: dict[str, Computation], depth: int = 0) -> tuple[float, float]:
    """(FLOPs, of which in dots of 16-bit operands) of one run of a fused computation."""
    flops = low = 0.0
    for inst in comp.instructions:
        if inst.opcode == "dot" and inst.operands:
            lhs = comp.by_name.get(inst.operands[0])
            work = _dot_flops(inst, lhs.shape if lhs else "")
            flops += work
            low += work if lhs is not None and lhs.shape.startswith(LOW_PRECISION) else 0.0
        elif inst.opcode in ELEMENTWISE_FLOP:
            flops += elements(inst.shape)
        elif inst.opcode == "reduce" and inst.operands:
            operand = comp.by_name.get(inst.operands[0])
            flops += elements(operand.shape) if operand else 0
        elif inst.opcode == "fusion" and depth < 8:  # nested fusions of Triton GEMMs
            called = modules.get((inst.attribute("calls") or "").lstrip("%"))
            if called is not None:
                more, more_low = _computation_flops(called, modules, depth + 1)
                flops, low = flops + more, low + more_low
    return flops, low


def _parameter_reads(comp: Computation) -> dict[str, float | None]:
    """For each parameter of a fused computation that is only sliced, the bytes its slices read (else None);
    a parameter that is only the buffer a dynamic-update-slice writes into is read not at all (0). A chain of
    bitcasts between them (a reshape that moves no data) is looked through."""
    users: dict[str, list[Instruction]] = {}
    for inst in comp.instructions:
        for operand in inst.operands:
            users.setdefault(operand, []).append(inst)

    def uses_of(name: str) -> list[tuple[Instruction, str]]:
        out = []
        for user in users.get(name, []):
            out += uses_of(user.name) if user.opcode == "bitcast" else [(user, name)]
        return out

    reads = {}
    for inst in comp.instructions:
        if inst.opcode != "parameter":
            continue
        uses = uses_of(inst.name)
        if uses and all(u.opcode in SLICING and u.operands[0] == via for u, via in uses):
            reads[inst.name] = sum(shape_bytes(u.shape) for u, _ in uses)
        elif uses and all(u.opcode == "dynamic-update-slice" and u.operands[0] == via for u, via in uses):
            reads[inst.name] = 0.0
        else:
            reads[inst.name] = None
    return reads


def _written(called: Computation) -> float | None:
    """Bytes a fusion writes when XLA:GPU updates its results in place: when every result is a
    dynamic-update-slice (alone or the elements of a tuple, through bitcasts), each writes only its update; a
    fusion with any other result is emitted as a loop over its whole outputs (None: priced by their shapes)."""
    root = next((i for i in called.instructions if i.root), None)
    if root is None:
        return None
    results = [called.by_name.get(o) for o in root.operands] if root.opcode == "tuple" else [root]
    total = 0.0
    for result in results:
        while result is not None and result.opcode == "bitcast" and result.operands:
            result = called.by_name.get(result.operands[0])
        if result is None or result.opcode != "dynamic-update-slice" or len(result.operands) < 2:
            return None
        update = called.by_name.get(result.operands[1])
        total += shape_bytes(update.shape) if update else 0.0
    return total


def _kernel_work(inst: Instruction, comp: Computation, modules: dict[str, Computation],
                 custom_call_work=None) -> tuple[str, float, float, float]:
    """(kind, bytes, flops, low-precision flops) of one launch of a kernel instruction in a scheduled
    computation."""
    operand_shapes = [comp.by_name[o].shape if o in comp.by_name else "" for o in inst.operands]
    read = sum(shape_bytes(s) for s in operand_shapes)
    written = shape_bytes(inst.shape)
    flops = low = 0.0
    kind = inst.opcode
    if inst.opcode == "fusion":
        called = modules.get((inst.attribute("calls") or "").lstrip("%"))
        config = inst.backend_config().get("fusion_backend_config", {})
        kind = "gemm" if config.get("kind", "") in GEMM_FUSION_KINDS else "fusion"
        if called is not None:
            flops, low = _computation_flops(called, modules)
            params = [i for i in called.instructions if i.opcode == "parameter"]
            reads = _parameter_reads(called)
            read = 0.0
            for param in params:
                sliced = reads.get(param.name)
                read += shape_bytes(param.shape) if sliced is None else sliced
            in_place = _written(called)
            written = written if in_place is None else in_place
    elif inst.opcode == "custom-call":
        target = (inst.attribute("custom_call_target") or "").strip('"')
        kind = "gemm" if target.startswith(GEMM_TARGETS) else "custom-call"
        if kind == "gemm" and len(operand_shapes) >= 2:  # its result, then cuBLAS's s8 workspace (no data)
            result = tuple_elements(inst.shape)[0]
            written = shape_bytes(result)
            config = inst.backend_config().get("gemm_backend_config", {})
            axes = config.get("dot_dimension_numbers", {}).get("lhs_contracting_dimensions", [])
            lhs = dims(operand_shapes[0])
            flops = 2.0 * elements(result) * math.prod(lhs[int(a)] for a in axes if int(a) < len(lhs))
            low = flops if operand_shapes[0].startswith(LOW_PRECISION) else 0.0
        elif custom_call_work is not None:  # a hand-written kernel: only its author knows its work
            flops, low, reads = custom_call_work(inst, operand_shapes) or (0.0, 0.0, None)
            read = read if reads is None else reads
    elif inst.opcode == "copy":
        read = shape_bytes(operand_shapes[0]) if operand_shapes else written
    elif inst.opcode in ("sort", "reduce", "scatter", "select-and-scatter", "reduce-window"):
        flops = float(sum(elements(s) for s in operand_shapes))
    return kind, read + written, flops, low


# ------------------------------------------------------------------ the program
def count(text: str, custom_call_work=None) -> Counts:
    """Launches, loop iterations and each kernel's work of the module in `text` (its ENTRY computation).

    `custom_call_work(instruction, operand_shapes)`, if given, says the (FLOPs, low-precision FLOPs, bytes read)
    of a custom call other than a GEMM (a Pallas kernel: the HLO does not show its body), or None where it does not
    know; bytes read None: its operands whole."""
    modules = parse(text)
    entry = next((c for c in modules.values() if c.entry), None)
    if entry is None:
        raise ValueError("no ENTRY computation in the HLO text")
    counts = Counts()
    _walk(entry, modules, 1, counts, {}, custom_call_work)
    return counts


def _walk(comp: Computation, modules: dict[str, Computation], weight: int, counts: Counts, seen: dict,
          custom_call_work=None) -> None:
    for inst in comp.instructions:
        op = inst.opcode
        if op in NO_KERNEL or op.endswith(("-done", "-update")):  # an async op's end: its start launched it
            continue
        if op == "while":
            trip = inst.backend_config().get("known_trip_count", {}).get("n")
            if trip is None:
                counts.unknown_trip_counts += 1
            trips = int(trip) if trip is not None else 1
            counts.loop_iterations += weight * trips
            for key in ("condition", "body"):
                called = modules.get((inst.attribute(key) or "").lstrip("%"))
                if called is not None:
                    _walk(called, modules, weight * trips, counts, seen, custom_call_work)
        elif op == "conditional":
            counts.conditionals += weight
            names = re.findall(r"%([\w.\-]+)", inst.attribute("branch_computations") or "")
            names += [(inst.attribute(k) or "").lstrip("%") for k in ("true_computation", "false_computation")]
            branches = [modules[n] for n in names if n in modules]
            # the branch taken is decided at run time: count the one with more launches (an upper bound)
            trial = [Counts() for _ in branches]
            for branch, sub in zip(branches, trial):
                _walk(branch, modules, weight, sub, seen, custom_call_work)
            if trial:
                most = max(trial, key=lambda c: c.launches)
                counts.kernels += most.kernels
                counts.loop_iterations += most.loop_iterations
                counts.conditionals += most.conditionals
                counts.unknown_trip_counts += most.unknown_trip_counts
        elif op in ("call", "async-start"):
            called = modules.get((inst.attribute("to_apply") or inst.attribute("calls") or "").lstrip("%"))
            if called is not None:
                _walk(called, modules, weight, counts, seen, custom_call_work)
        else:
            key = (comp.name, inst.name)
            if key not in seen:
                seen[key] = _kernel_work(inst, comp, modules, custom_call_work)
            kind, nbytes, flops, low = seen[key]
            counts.kernels.append(Kernel(inst.name, kind, nbytes, flops, weight, low))
