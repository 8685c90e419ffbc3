"""The GPU proxy's parts that need no CUDA: counting kernels in HLO text, the cost model's fit, the proxy venv's
requirements and the report. `tests/lab/data/h100_scan.hlo` (a ten-step scan of a matmul) and `h100_bf16_dot.hlo` (one
bf16 matmul) were compiled for the H100 target by the proxy's own venv (source locations stripped)."""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from purerl_lab.bench import gpu_model, gpu_proxy, hlo_count, proxy_report

GPU_SCAN = (Path(__file__).parent / "data" / "h100_scan.hlo").read_text()


def test_a_gpu_scan_is_its_entry_kernels_plus_trip_count_times_its_body_and_condition():
    counts = hlo_count.count(GPU_SCAN)
    # entry: two copies and a broadcast; body: reduce, dynamic-update-slice, counter add, GEMM, copy; condition: 1
    assert counts.launches == 3 + 10 * (5 + 1)
    assert counts.loop_iterations == 10 and counts.unknown_trip_counts == 0
    assert counts.launches_of("gemm") == 10 and counts.launches_of("copy") == 2 + 10
    gemm = next(k for k in counts.kernels if k.kind == "gemm")
    assert gemm.flops == 2 * 64 * 32 * 32 + 64 * 32  # the tanh is fused into the GEMM's epilogue
    assert gemm.bytes == 4 * (64 * 32 + 32 * 32 + 64 * 32)
    # the dynamic-update-slice writes one float into its buffer in place: it reads the index and the value only
    update = next(k for k in counts.kernels if k.name == "loop_dynamic_update_slice_fusion")
    assert update.bytes == 4 + 4 + 4


def _cpu_counts(fn, *args) -> hlo_count.Counts:
    return hlo_count.count(jax.jit(fn).lower(*args).compile().as_text())


@pytest.mark.parametrize("length", [7, 13])
def test_launches_grow_with_the_trip_count_on_a_compiled_program(length):
    def scan(x, length):
        return jax.lax.scan(lambda c, _: (jnp.sin(c) * 2.0 + c.sum(), None), x, None, length=length)[0]

    x = jnp.ones(16)
    short, long = _cpu_counts(lambda x: scan(x, 3), x), _cpu_counts(lambda x: scan(x, length), x)
    assert short.loop_iterations == 3 and long.loop_iterations == length
    per_iteration = (long.launches - short.launches) / (length - 3)
    assert per_iteration == int(per_iteration) and per_iteration >= 1
    assert long.launches == short.launches + per_iteration * (length - 3)


def test_nested_loops_multiply_their_trip_counts():
    def nested(x):
        inner = lambda c, _: (jnp.cos(c) + c.sum(), None)  # noqa: E731
        outer = lambda c, _: (jax.lax.scan(inner, c * 1.5, None, length=5)[0], None)  # noqa: E731
        return jax.lax.scan(outer, x, None, length=3)[0]

    counts = _cpu_counts(nested, jnp.ones(8))
    assert counts.loop_iterations == 3 + 3 * 5


def test_a_conditional_counts_its_branch_with_more_launches():
    def branchy(p, x):
        return jax.lax.cond(p, lambda x: jnp.sin(x).sum() * jnp.cos(x), lambda x: x, x)

    counts = _cpu_counts(branchy, True, jnp.ones(32))
    assert counts.conditionals == 1
    cheap = _cpu_counts(lambda p, x: jax.lax.cond(p, lambda x: x + 1, lambda x: x, x), True, jnp.ones(32))
    assert counts.launches >= cheap.launches


def test_shape_bytes_reads_tuples_and_dtypes():
    assert hlo_count.shape_bytes("(s32[], f32[64,32]{1,0}, bf16[10]{0}, pred[3])") == 4 + 64 * 32 * 4 + 20 + 3
    assert hlo_count.shape_bytes("f32[]") == 4 and hlo_count.dims("f32[2048,4,64]{2,1,0}") == [2048, 4, 64]


def test_count_refuses_text_without_an_entry():
    with pytest.raises(ValueError, match="ENTRY"):
        hlo_count.count("HloModule empty\n")


def _program(kernels, iterations):
    return {"kernels": [["fusion", b, f, 0.0, n] for b, f, n in kernels], "loop_iterations": iterations}


def test_the_fit_recovers_the_constants_it_was_made_from():
    truth = {"launch_us": 3.0, "bandwidth_tb_s": 2.0, "throughput_tflop_s": 40.0, "iteration_us": 8.0}
    programs = [  # launch-bound, bandwidth-bound, compute-bound and loop-heavy programs, mixed
        _program([(1e3, 1e3, 1e6)], 1e3), _program([(1e8, 1e3, 1e4)], 10), _program([(1e3, 1e10, 1e4)], 10),
        _program([(1e3, 1e3, 1e4)], 1e6), _program([(1e7, 1e8, 1e5), (1e3, 1e3, 1e5)], 1e4),
        _program([(5e6, 1e9, 3e4), (2e3, 1e3, 2e5)], 3e5)]
    points = [(p, gpu_model.modelled_s(p, truth)) for p in programs]
    fitted = gpu_model.fit(points)
    assert fitted["max_abs_error"] < 1e-3
    for name, value in truth.items():
        assert math.isclose(fitted["params"][name], value, rel_tol=1e-2), name


def test_terms_split_the_time_by_what_bounds_each_kernel():
    params = {"launch_us": 1.0, "bandwidth_tb_s": 1.0, "throughput_tflop_s": 1.0, "iteration_us": 2.0}
    terms = gpu_model.terms(_program([(10, 10, 5), (1e7, 0, 1), (0, 1e8, 2)], 3), params)
    assert terms == pytest.approx({"launch": 5e-6, "bytes": 1e-5, "flops": 2e-4, "loops": 6e-6})


def test_the_fused_steps_work_comes_from_its_operands():
    class Call:
        attributes = ', custom_call_target="__gpu$xla.gpu.triton", backend_config={"name":"ppo_update"}'

    layers = ["f32[8,4,64]", "f32[8,1,64]", "f32[8,2,64]", "f32[8,1,2]"]  # each net: 4 -> 64 -> 2, its head as rows
    # scalars, the 32 rows to read of a 128-sample batch, its observations, five minibatch fields, the layers x 3
    shapes = ["f32[8,8]", "s32[8,32]", "u8[8,128,4]", *["f32[8,32]"] * 5, *(layers * 2) * 3]
    # per net and sample read: the first layer forward and weight gradient (4 x 4 x 64), the head also its input
    # gradient (6 x 64 x 2)
    expected = 8 * 32 * 2 * (4 * 4 * 64 + 6 * 64 * 2)
    # every operand is read whole but the observations: 32 of the batch's 128 rows (8 x 128 x 4 bytes in all)
    read = sum(hlo_count.shape_bytes(s) for s in shapes) - 8 * 128 * 4 * (1 - 32 / 128)
    assert gpu_proxy.fused_update_work(Call(), shapes) == (expected, 0.0, read)
    assert gpu_proxy.fused_update_work(Call(), shapes, low_precision=True) == (expected, expected, read)

    class Other:
        attributes = ', custom_call_target="something_else"'

    assert gpu_proxy.fused_update_work(Other(), shapes) is None


def test_bf16_dots_are_counted_as_low_precision_and_priced_cheaper():
    counts = hlo_count.count((Path(__file__).parent / "data" / "h100_bf16_dot.hlo").read_text())
    assert counts.launches_of("gemm") == 1 and counts.low_precision_flops == 2 * 64 * 32 * 64 == counts.flops
    params = {"launch_us": 1e-3, "bandwidth_tb_s": 1e3, "throughput_tflop_s": 1.0, "iteration_us": 0.0}
    full = {"kernels": [["gemm", 0.0, 1e12, 0.0, 1]], "loop_iterations": 0}
    half = {"kernels": [["gemm", 0.0, 1e12, 1e12, 1]], "loop_iterations": 0}
    assert gpu_model.modelled_s(half, params) == pytest.approx(
        gpu_model.modelled_s(full, params) / gpu_model.LOW_PRECISION_SPEEDUP)


def test_the_proxy_venv_has_the_cuda_build_of_purerls_own_jax_and_the_suite_has_none():
    from importlib import metadata

    spec = gpu_proxy.venv_spec()
    wanted = spec.flat_requirements
    assert f"jax[cuda12]=={metadata.version('jax')}" in wanted and any(r.startswith("distrax") for r in wanted)
    assert any(r.startswith("gymnax") for r in wanted) and not any(r.startswith("pytest") for r in wanted)
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("jax-cuda12-plugin")


def test_h100_points_are_read_from_the_records():
    records = [{"task": "cartpole", "machine": {"gpu": {"name": "NVIDIA H100 80GB HBM3"}},
                "rows": [{"seeds": 4, "purerl": {"run_s": 2.0, "total_timesteps": 512},
                          "purejaxrl": {"run_s": 3.0, "total_timesteps": 512.0}}]},
               {"task": "cartpole", "machine": {"gpu": None}, "rows": [{"seeds": 4, "purerl": {"run_s": 9.0}}]}]
    points = gpu_proxy.h100_points(records)
    assert [(p["system"], p["measured_s"], p["total_timesteps"]) for p in points] == [
        ("purerl", 2.0, 512), ("purejaxrl", 3.0, 512)]


def _record():
    def program(system, task, seeds, variant, launches, seconds):
        return {"system": system, "task": task, "seeds": seeds, "variant": variant, "launches": launches,
                "num_updates": 10, "loop_iterations": 100, "conditionals": 0, "bytes": 1e9, "flops": 1e10,
                "by_kind": {"copy": 5, "gemm": 10, "fusion": launches - 15}, "modelled_s": seconds,
                "terms_s": {"launch": seconds / 2, "bytes": seconds / 2, "flops": 0.0, "loops": 0.0},
                "total_timesteps": 5120, "compile_s": 1.0}

    programs = [program("purejaxrl", "cartpole", 2048, "default", 600, 6.0),
                program("purerl", "cartpole", 2048, "default", 480, 5.0),
                program("purerl", "cartpole", 2048, "fused", 200, 1.5),
                {"system": "purerl", "task": "cartpole", "seeds": 2048, "variant": "bf16", "error": "Boom: no"}]
    return {"task": "gpu-proxy", "target_device": "NVIDIA H100 80GB HBM3", "target": "h100_sxm.txtpb",
            "programs": programs, "goals": [["cartpole", 2048, 3.0]], "tasks": {"cartpole": [2048]},
            "variants": {"default": {}, "fused": {"update_kernel": "fused"}, "bf16": {"matmul_dtype": "bfloat16"}},
            "gpu_defaults": "fused",
            "model": {"params": {"launch_us": 2.0, "bandwidth_tb_s": 3.0, "throughput_tflop_s": 50.0,
                                 "iteration_us": 4.0},
                      "points": [{"system": "purerl", "task": "cartpole", "seeds": 2048, "measured_s": 5.1,
                                  "error": -0.02, "loo_error": -0.03, "jax": "0.11.2"}], "max_abs_error": 0.02,
                      "max_abs_loo_error": 0.03, "rms_log_error": 0.02},
            "command": "purerl bench --task gpu-proxy", "commit": "abc", "versions": {"jax": "0.10.2"},
            "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "python": "3.11.7"}}


def test_the_report_section_leads_with_the_ratio_against_its_goal():
    from purerl_lab.bench import report

    lines = proxy_report.section(_record(), report.portable("purerl bench --task gpu-proxy --purejaxrl /root/x"))
    text = "\n".join(lines)
    assert lines[0].startswith("## ")
    headline = text.index("| task | agents |")
    assert headline < text.index("### ")  # the summary table comes before the details
    assert "4.00x" in text  # PureJaxRL 6.0 s over the fused variant's 1.5 s
    assert "| 3.0x: met |" in text and "(goal 3.0x; fastest variant fused, 4.00x)" in text
    assert "Boom: no" in text and "-2.0%" in text
    assert "--purejaxrl PUREJAXRL_CHECKOUT" in text and "/root" not in text


# ------------------------------------------------------------------ PPO's defaults where JAX runs on a GPU
@pytest.fixture
def on_a_gpu(monkeypatch):
    from purerl.runtime import backend

    monkeypatch.setattr(backend, "platforms_named", lambda: ["cuda"])


def test_on_a_gpu_ppo_takes_the_levers_unless_the_user_named_them(on_a_gpu):
    from purerl.algos.registry import GPU_LEVERS
    from purerl.run.trainspec import make_spec

    config = make_spec("CartPole-v1").config
    assert {name: getattr(config, name) for name in GPU_LEVERS} == GPU_LEVERS
    mine = make_spec("CartPole-v1", settings={"update_kernel": "xla", "rollout_unroll": 2}).config
    assert (mine.update_kernel, mine.rollout_unroll) == ("xla", 2)
    assert make_spec("Breakout-MinAtar").config.update_kernel == "fused"
    # bootstrap values from the rollout where an observation is wider than the first hidden layer only
    assert make_spec("Breakout-MinAtar").config.rollout_bootstrap and not config.rollout_bootstrap


@pytest.mark.parametrize("case", ["dpo", "gru", "continuous", "minibatch", "dqn"])
def test_on_a_gpu_the_fused_step_is_default_only_where_it_computes_the_run(on_a_gpu, case):
    from purerl.run.trainspec import make_spec

    spec = {"dpo": lambda: make_spec("CartPole-v1", objective="dpo"),
            "gru": lambda: make_spec("MemoryChain-bsuite", network="gru", preset="memory"),
            "continuous": lambda: make_spec("Pendulum-v1"),
            "minibatch": lambda: make_spec("CartPole-v1", settings={"num_envs": 3}),  # 96 samples a minibatch
            "dqn": lambda: make_spec("CartPole-v1", algo="dqn")}[case]()
    assert getattr(spec.config, "update_kernel", "xla") == "xla"
    if case != "dqn":
        from purerl.algos.registry import GPU_LEVERS

        assert spec.config.rollout_unroll == GPU_LEVERS["rollout_unroll"]


def test_a_python_hook_keeps_xlas_step_on_a_gpu(on_a_gpu):
    import purerl
    from purerl.algos.objectives import ppo_clip
    from purerl.algos.registry import GPU_LEVERS

    def my_objective(ratio, log_ratio, advantages, hp, meta_params):
        return ppo_clip(ratio, log_ratio, advantages, hp, meta_params)

    train = purerl.make_train("CartPole-v1", objective=my_objective, total_timesteps=512)
    assert train.config.update_kernel == "xla" and train.config.rollout_unroll == GPU_LEVERS["rollout_unroll"]


def test_a_cpu_keeps_its_programs():
    from purerl.run.trainspec import make_spec

    config = make_spec("CartPole-v1").config
    assert (config.update_kernel, config.rollout_unroll, config.matmul_dtype) == ("xla", 1, "float32")


@pytest.mark.parametrize("named, expected", [("cpu", False), ("cuda,cpu", True), ("gpu", True), ("tpu", False)])
def test_will_use_gpu_follows_jax_platforms(monkeypatch, named, expected):
    from purerl.runtime import backend

    monkeypatch.setenv("JAX_PLATFORMS", named)
    assert backend.will_use_gpu() is expected


def test_programs_built_for_a_cpu_ignore_a_gpu(on_a_gpu):
    """The published documents' fingerprints lower the CPU's programs, on a GPU machine too."""
    from purerl.run.trainspec import make_spec
    from purerl.runtime import backend

    with backend.programs_for("cpu"):
        config = make_spec("CartPole-v1").config
    assert (config.update_kernel, config.rollout_unroll, config.minibatch_gather) == ("xla", 1, False)


@pytest.mark.parametrize("hidden", ["", "-1"])
def test_hidden_gpus_are_no_gpu(monkeypatch, hidden):
    from purerl.runtime import backend

    monkeypatch.setattr(backend, "platforms_named", lambda: [])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
    backend._cuda_machine.cache_clear()
    try:
        assert backend.will_use_gpu() is False
    finally:
        backend._cuda_machine.cache_clear()


def test_a_multi_output_in_place_update_counts_its_updates_only():
    text = """HloModule m

%fused (p0: f32[1000,64], p1: f32[1000,64], i: s32[], u: f32[1,64]) -> (f32[1000,64], f32[1000,64]) {
  %p0 = f32[1000,64]{1,0} parameter(0)
  %p1 = f32[1000,64]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %u = f32[1,64]{1,0} parameter(3)
  %z = s32[] constant(0)
  %a = f32[1000,64]{1,0} dynamic-update-slice(%p0, %u, %i, %z)
  %b = f32[1000,64]{1,0} dynamic-update-slice(%p1, %u, %i, %z)
  ROOT %t = (f32[1000,64]{1,0}, f32[1000,64]{1,0}) tuple(%a, %b)
}

ENTRY %main (x: f32[1000,64], y: f32[1000,64], i: s32[], u: f32[1,64]) -> (f32[1000,64], f32[1000,64]) {
  %x = f32[1000,64]{1,0} parameter(0)
  %y = f32[1000,64]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %u = f32[1,64]{1,0} parameter(3)
  ROOT %f = (f32[1000,64]{1,0}, f32[1000,64]{1,0}) fusion(%x, %y, %i, %u), kind=kLoop, calls=%fused
}
"""
    (kernel,) = hlo_count.count(text).kernels
    assert kernel.bytes == 4 + 64 * 4 + 2 * 64 * 4  # index and update read, two rows written
    mixed = text.replace("tuple(%a, %b)", "tuple(%a, %p1)").replace("%b = f32", "%unused = f32")
    (kernel,) = hlo_count.count(mixed).kernels  # a result that is no update: XLA writes every output whole
    assert kernel.bytes == 4 + 64 * 4 + 1000 * 64 * 4 + 2 * 1000 * 64 * 4


def test_a_cublas_gemm_counts_its_result_not_its_workspace():
    text = """HloModule m

ENTRY %main (a: f32[64,32], b: f32[32,128]) -> f32[64,128] {
  %a = f32[64,32]{1,0} parameter(0)
  %b = f32[32,128]{1,0} parameter(1)
  %g = (f32[64,128]{1,0}, s8[4194304]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"]}}}
  ROOT %r = f32[64,128]{1,0} get-tuple-element(%g), index=0
}
"""
    (kernel,) = hlo_count.count(text).kernels
    assert kernel.kind == "gemm" and kernel.flops == 2 * 64 * 128 * 32
    assert kernel.bytes == 4 * (64 * 32 + 32 * 128 + 64 * 128)
