"""PPO's GPU levers: the fused Pallas gradient step against XLA's, bf16 matmuls, rollout unrolling,
their refusals, and the lever benchmark's record and report. On a CPU the kernel runs in Pallas's interpret
mode; on a GPU the same tests run the compiled Triton kernel."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from purerl.algos.objectives import dpo
from purerl.algos.ppo import make_train
from purerl.algos.ppo_config import HyperParams, PPOConfig, recorded
from purerl.checks import ConfigError
from cli_run import run_cli
from conftest import FULL_BATCH as CARTPOLE, TINY  # CARTPOLE: one 128-sample chunk per step

MINATAR = dict(env="Breakout-MinAtar", num_envs=16, num_steps=32, num_minibatches=2, update_epochs=2,
               activation="relu", total_timesteps=1024)  # 256 samples per minibatch: two chunks, accumulated


def one_learn(config: PPOConfig, hp: HyperParams, seed: int = 1):
    """Parameters, optimiser state and statistics after one update's learning on a fixed rollout. The
    hyperparameters are arguments, not constants, so settings that differ only in them share their programs."""
    hp = hp.as_arrays()
    xla = make_train(config.replace(update_kernel="xla"))
    state, trajectory = jax.jit(lambda k, h: xla.rollout(xla.init(k, h), h))(jax.random.PRNGKey(seed), hp)
    train = make_train(config)
    return jax.jit(lambda s, t, h: train.learn_from(s, t, (), h, None))(state, trajectory, hp), state


def relative(a, b, origin) -> float:
    a, b, origin = (ravel_pytree(x)[0] for x in (a, b, origin))
    return float(jnp.linalg.norm(a - b) / jnp.linalg.norm(a - origin))


@pytest.mark.parametrize("shape, max_grad_norm", [
    pytest.param(CARTPOLE, 0.5, id="cartpole-tanh-unclipped"), pytest.param(CARTPOLE, 0.01, id="cartpole-tanh-clipped"),
    pytest.param(MINATAR, 0.5, id="minatar-relu-chunks-unclipped"),
    pytest.param(MINATAR, 0.01, id="minatar-relu-chunks-clipped"),
    pytest.param({**CARTPOLE, "normalize_advantages": False}, 0.5, id="cartpole-tanh-raw-advantages"),
    pytest.param({**MINATAR, "minibatch_gather": True}, 0.5, id="minatar-rows-read-by-index-in-the-kernel"),
    pytest.param({**MINATAR, "minibatch_gather": True, "compact_obs": True}, 0.5, id="minatar-int8-rows-by-index")])
def test_fused_step_computes_the_xla_step(shape, max_grad_norm):
    """Same update to float rounding: parameters, Adam moments and counts, and every loss statistic; with
    advantages normalised per minibatch (PPO's default) and raw."""
    hp = HyperParams(lr=1e-3, max_grad_norm=max_grad_norm)
    (ours, stats), start = one_learn(PPOConfig(**shape, update_kernel="fused"), hp)
    (theirs, expected), _ = one_learn(PPOConfig(**shape), hp)
    assert jax.tree.structure(ours.opt_state) == jax.tree.structure(theirs.opt_state)
    assert relative(ours.params, theirs.params, start.params) < 1e-4
    adam = lambda s: s.opt_state[1][0]  # noqa: E731
    assert int(adam(ours).count) == int(adam(theirs).count) == shape["update_epochs"] * shape["num_minibatches"]
    assert int(ours.opt_state[1][1].count) == int(adam(ours).count)
    np.testing.assert_allclose(adam(ours).nu, adam(theirs).nu, rtol=1e-3, atol=1e-12)
    for name, value in expected.items():
        np.testing.assert_allclose(stats[name], value, rtol=1e-4, atol=1e-7, err_msg=name)


def test_fused_bf16_step_is_the_xla_bf16_step_to_bf16_rounding():
    hp = HyperParams(lr=1e-3)
    (ours, _), start = one_learn(PPOConfig(**CARTPOLE, update_kernel="fused", matmul_dtype="bfloat16"), hp)
    (theirs, _), _ = one_learn(PPOConfig(**CARTPOLE, matmul_dtype="bfloat16"), hp)
    assert jax.tree.leaves(ours.params)[0].dtype == jnp.float32
    assert relative(ours.params, theirs.params, start.params) < 0.1


def test_bf16_matmuls_keep_float32_weights_and_learn():
    train = make_train(TINY.replace(matmul_dtype="bfloat16"))
    hp = HyperParams().as_arrays()
    out = jax.jit(train)(jax.random.PRNGKey(0), hp)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(out.state.params))
    assert "bf16" in jax.jit(train).lower(jax.random.PRNGKey(0), hp).as_text()
    assert np.all(np.isfinite(out.metrics["value_loss"]))


@pytest.mark.parametrize("recurrent", [False, True], ids=["samples", "sequences"])
def test_gathered_minibatches_are_the_shuffled_ones(recurrent, hp):
    """`minibatch_gather` reads each minibatch from the batch by index: the same samples as the shuffled copy's
    slices, so the same learning (to float rounding: another program)."""
    from purerl.algos import registry

    config = TINY.replace(env="MemoryChain-bsuite", hidden_sizes=(16,)) if recurrent else TINY
    build = lambda c: registry.build("ppo", c, network="gru" if recurrent else "mlp")  # noqa: E731
    key = jax.random.PRNGKey(5)
    shuffled = jax.jit(build(config))(key, hp)
    gathered = jax.jit(build(config.replace(minibatch_gather=True)))(key, hp)
    for name, values in shuffled.metrics.items():
        np.testing.assert_allclose(gathered.metrics[name], values, rtol=1e-5, atol=1e-6, err_msg=name)


def test_rollout_unrolling_changes_nothing_but_the_program(tiny_jit, hp):
    key = jax.random.PRNGKey(3)
    unrolled = jax.jit(make_train(TINY.replace(rollout_unroll=2)))(key, hp)
    for name, values in tiny_jit(key, hp).metrics.items():
        np.testing.assert_allclose(unrolled.metrics[name], values, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("recurrent", [False, True], ids=["feed-forward", "gru"])
def test_bootstrap_values_from_the_rollout_are_the_batched_ones(recurrent, hp):
    """`rollout_bootstrap` computes each step's bootstrap value where the rollout reaches its observation, from the
    memory the step reached, and stores no bootstrap observation: the same learning (to float rounding: the
    values come from one step's matmuls instead of the batch's)."""
    from purerl.algos import registry

    config = TINY.replace(env="MemoryChain-bsuite", hidden_sizes=(16,)) if recurrent else TINY
    build = lambda c: registry.build("ppo", c, network="gru" if recurrent else "mlp")  # noqa: E731
    key = jax.random.PRNGKey(7)
    stored = jax.jit(build(config))(key, hp)
    in_rollout = build(config.replace(rollout_bootstrap=True))
    _, trajectory = jax.jit(lambda k, h: in_rollout.rollout(in_rollout.init(k, h), h))(key, hp.as_arrays())
    assert trajectory.bootstrap_obs is None and trajectory.bootstrap_value.shape == trajectory.reward.shape
    computed = jax.jit(in_rollout)(key, hp)
    for name, values in stored.metrics.items():
        np.testing.assert_allclose(computed.metrics[name], values, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("shape", [CARTPOLE, MINATAR], ids=["cartpole", "minatar"])
def test_fused_kernel_lowers_to_triton_for_a_gpu(shape):
    """Triton's limits (power-of-two blocks, two-array stacks, dots of at least 16) hold for the vmapped run,
    lowered for an abstract H200, the GPU the benchmark was prepared for: on a machine without a GPU, jax 0.11 (the version
    on that GPU's image) lowers Pallas to Triton only for a named device."""
    train = make_train(PPOConfig(**shape, update_kernel="fused"))
    train.update_rule.interpret = False
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    h200 = jax.sharding.AbstractDevice(device_kind="NVIDIA H200", num_cores=None, platform="cuda")
    with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh(
            (1,), ("gpu",), axis_types=(jax.sharding.AxisType.Auto,), abstract_device=h200)):
        text = jax.jit(jax.vmap(lambda k: train(k, HyperParams()))).trace(keys).lower(
            lowering_platforms=("cuda",)).as_text()
    assert "ppo_update" in text and "__gpu$xla.gpu.triton" in text


def test_the_fused_kernel_is_interpreted_only_where_it_is_lowered_for_a_cpu():
    """The same train function: Triton in a program lowered for a GPU from this CPU-only machine, the interpreter
    (plain XLA ops, no custom call) in the CPU's."""
    train = make_train(PPOConfig(**CARTPOLE, update_kernel="fused"))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    program = jax.jit(jax.vmap(lambda k: train(k, HyperParams())))
    h200 = jax.sharding.AbstractDevice(device_kind="NVIDIA H200", num_cores=None, platform="cuda")
    with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh(
            (1,), ("gpu",), axis_types=(jax.sharding.AxisType.Auto,), abstract_device=h200)):
        gpu = program.trace(keys).lower(lowering_platforms=("cuda",)).as_text()
    cpu = program.trace(keys).lower().as_text()
    assert "__gpu$xla.gpu.triton" in gpu and "__gpu$xla.gpu.triton" not in cpu


@pytest.mark.parametrize("case", ["gru", "continuous", "objective", "minibatch", "dtype", "kernel", "unroll"])
def test_levers_refuse_what_they_do_not_support(case):
    from purerl.algos import registry

    with pytest.raises(ConfigError):
        if case == "gru":
            registry.build("ppo", PPOConfig(env="MemoryChain-bsuite", update_kernel="fused"), network="gru")
        elif case == "continuous":
            make_train(PPOConfig(env="Pendulum-v1", update_kernel="fused"))
        elif case == "objective":
            make_train(PPOConfig(update_kernel="fused"), objective=dpo)
        elif case == "minibatch":  # 96 samples: not a power of two, and Triton's blocks must be
            make_train(PPOConfig(num_envs=3, num_steps=128, update_kernel="fused"))
        else:
            PPOConfig(**{"dtype": {"matmul_dtype": "float16"}, "kernel": {"update_kernel": "triton"},
                         "unroll": {"rollout_unroll": 0}}[case]).validate()


def test_levers_at_their_defaults_are_not_recorded():
    """Records made before the levers existed still match (mfos coin's config.json, fingerprints)."""
    assert not {"matmul_dtype", "update_kernel", "rollout_unroll"} & set(recorded(PPOConfig()))
    assert recorded(PPOConfig(update_kernel="fused"))["update_kernel"] == "fused"


@pytest.mark.parametrize("argv", [["train", "--update-kernel", "fused", "--env", "Pendulum-v1"],
                                  ["train", "--matmul-dtype", "float16"], ["train", "--rollout-unroll", "0"],
                                  ["bench", "--task", "gpu-levers", "--seeds", "8"],
                                  ["bench", "--task", "gpu-proxy", "--seeds", "8"],
                                  ["bench", "--task", "gpu-proxy", "--cores", "1"],
                                  ["bench", "--task", "gpu-proxy"],  # --out's folder holds no H100 records
                                  pytest.param(["bench", "--task", "gpu-levers"], marks=pytest.mark.skipif(
                                      jax.default_backend() == "gpu", reason="refused only without a GPU"))])
def test_cli_lever_errors_are_one_line_and_exit_2(argv, tmp_path, capsys):
    out = tmp_path / ("run" if argv[0] == "train" else "bench.md")
    code, _, err = run_cli(capsys, *argv, "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_lever_benchmark_records_every_variant_and_renders(tmp_path):
    from purerl_lab.bench import levers, levers_report

    lines = []
    levers.measure("cartpole", 2, 512, ["xla", "fused"], matmul_size=64, emit=lambda text, flush: lines.append(text))
    rows = [json.loads(line)["row"] for line in lines[:-1]]
    process = json.loads(lines[-1])["process"]
    assert [r["variant"] for r in rows] == ["xla", "fused", "xla"] and rows[-1]["repeat"]
    assert not any("error" in r for r in rows)
    assert rows[0]["final_return"] == pytest.approx(rows[1]["final_return"], rel=1e-3)
    assert process["flops_per_update"] > 0 and set(process["matmul_flops_per_s"]) == {"float32", "bfloat16"}
    assert process["kernels_per_gradient_step"]["fusions"] > 1
    peer = {"peer": "purejaxrl", "seeds": 2, "total_timesteps": 512, "run_s_all": [2.0, 1.0], "compile_s": 1.0,
            "final_return": 20.0}
    record = {"task": "gpu-levers", "targets": {"cartpole": 2.0}, "command": "python -m purerl_lab.bench.levers run",
              "processes": [{**process, "variants": rows},
                            {"task": "cartpole", "seeds": 2, "option": "no-triton-gemm", "variants": [],
                             "error": levers.OUT_OF_TIME}],
              "purejaxrl": {"cartpole": peer},
              "fused_check": {"cartpole": {"params_relative_error": 1e-6, "stats_max_relative_error": 2e-7}}}
    text = "\n".join(levers_report.section(record, "test GPU", record["command"]))
    assert "XLA's plain gradient step launches" in text and "| fused | - |" in text and "| PureJaxRL ppo.py | - | 1.0 | 1.00 | 1,024 |" in text
    assert levers.OUT_OF_TIME in text and "the target 2.0x" in text and "cartpole: parameters 1.0e-06" in text


def test_a_copied_tree_names_its_commit_only_when_it_has_no_history(monkeypatch):
    from purerl_lab.bench import harness
    from purerl_lab.publish import provenance

    monkeypatch.setenv("PURERL_SOURCE_COMMIT", "abcdef1234567")
    monkeypatch.setattr(provenance, "git_state", lambda: (None, True))
    assert harness.measured_commit().startswith("abcdef1234 (a copy of that commit's tree")
    monkeypatch.setattr(provenance, "git_state", lambda: ("0123456789ab", False))
    assert harness.measured_commit() == "0123456789"  # a checkout's own HEAD wins
    monkeypatch.setattr(provenance, "git_state", lambda: ("0123456789ab", True))
    assert harness.measured_commit() == "0123456789 with uncommitted changes"
