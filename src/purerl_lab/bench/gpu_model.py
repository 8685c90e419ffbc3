"""The GPU proxy's cost model: a compiled program's counted kernels (`hlo_count`) turned into seconds on one GPU.

Each launch costs the largest of a floor (launching it at all), its bytes over the memory bandwidth and its FLOPs
over the arithmetic throughput; each loop iteration adds the cost of sending its predicate to the host. The four
constants are fitted, by least squares on the logarithm of the time, to every time measured on that GPU, so the
model is only as good as its fit errors, which the report states point by point.
"""

from __future__ import annotations

import math

import numpy as np

# The fitted throughput is that of float32 dots at XLA's default precision (TF32 tensor cores on an H100); no
# measured point has bf16 dots, so their rate is the datasheet's ratio (H100 SXM dense: 989 BF16 vs 495 TF32
# TFLOP/s), an assumption until a GPU measures it.
LOW_PRECISION_SPEEDUP = 2.0
PARAMS = ("launch_us", "bandwidth_tb_s", "throughput_tflop_s", "iteration_us")
SCALE = {"launch_us": 1e-6, "bandwidth_tb_s": 1e12, "throughput_tflop_s": 1e12, "iteration_us": 1e-6}
START = {"launch_us": 2.0, "bandwidth_tb_s": 3.0, "throughput_tflop_s": 50.0, "iteration_us": 5.0}
BOUNDS = {"launch_us": (0.1, 50.0), "bandwidth_tb_s": (0.05, 10.0), "throughput_tflop_s": (1.0, 2000.0),
          "iteration_us": (1e-3, 200.0)}  # fitted on a log scale, which has no zero: 1 ns a loop is none


def _kernels(program: dict) -> np.ndarray:
    """[bytes, FLOPs priced at the fitted throughput, launches] of each merged kernel row: a low-precision FLOP
    costs 1 / LOW_PRECISION_SPEEDUP of one."""
    return np.array([[b, f - low + low / LOW_PRECISION_SPEEDUP, n] for _, b, f, low, n in program["kernels"]],
                    dtype=np.float64).reshape(-1, 3)


def terms(program: dict, params: dict) -> dict[str, float]:
    """The modelled seconds, split by what bounds each kernel: its launch, its bytes or its FLOPs; and the loops."""
    k = _kernels(program)
    floor = params["launch_us"] * SCALE["launch_us"]
    by = np.stack([np.full(len(k), floor), k[:, 0] / (params["bandwidth_tb_s"] * SCALE["bandwidth_tb_s"]),
                   k[:, 1] / (params["throughput_tflop_s"] * SCALE["throughput_tflop_s"])])
    bound = by.argmax(axis=0)
    seconds = by.max(axis=0) * k[:, 2]
    out = {name: float(seconds[bound == i].sum()) for i, name in enumerate(("launch", "bytes", "flops"))}
    out["loops"] = program["loop_iterations"] * params["iteration_us"] * SCALE["iteration_us"]
    return out


def modelled_s(program: dict, params: dict) -> float:
    return sum(terms(program, params).values())


def _constants(points: list[tuple[dict, float]]) -> tuple[dict, np.ndarray]:
    """Least squares on log(modelled / measured) over the constants' logarithms, within BOUNDS."""
    from scipy.optimize import least_squares

    def unpack(x):
        return {name: math.exp(v) for name, v in zip(PARAMS, x)}

    def residuals(x):
        params = unpack(x)
        return [math.log(modelled_s(program, params) / seconds) for program, seconds in points]

    lower = [math.log(BOUNDS[p][0]) for p in PARAMS]
    upper = [math.log(BOUNDS[p][1]) for p in PARAMS]
    start = [min(max(math.log(START[p]), lo), hi) for p, lo, hi in zip(PARAMS, lower, upper)]
    solution = least_squares(residuals, start, bounds=(lower, upper))
    return unpack(solution.x), solution.fun


def fit(points: list[tuple[dict, float]]) -> dict:
    """The constants that best predict the measured seconds of `points` [(program, seconds)]; each point's
    relative error (modelled / measured - 1) in the fit, and with the constants fitted to the other points
    alone (what the model would have said of a point it had not seen)."""
    params, residuals = _constants(points)
    errors = [modelled_s(program, params) / seconds - 1 for program, seconds in points]
    loo = []
    for i, (program, seconds) in enumerate(points):
        others, _ = _constants(points[:i] + points[i + 1:])
        loo.append(modelled_s(program, others) / seconds - 1)
    return {"params": params, "errors": errors, "loo_errors": loo, "max_abs_error": max(abs(e) for e in errors),
            "max_abs_loo_error": max(abs(e) for e in loo), "rms_log_error": float(np.sqrt(np.mean(residuals ** 2)))}
