"""The benchmark harness measures in fresh processes and writes the report; numbers are checked for sense only."""

import json
import math
import sys

import pytest

from purerl_lab.bench import harness, report


def test_worker_cold_then_warm_cache_and_report(tmp_path):
    cache = tmp_path / "cache"
    cold = harness.run_worker("cartpole", 2, 1, cache, floor=True, total_timesteps=2048)
    warm = harness.run_worker("cartpole", 2, 1, cache, total_timesteps=2048)
    assert "error" not in cold and "error" not in warm, (cold, warm)
    assert any(cache.iterdir())  # the cold run filled the persistent cache
    for key in ("compile_s", "run_s", "env_steps_per_s", "agents_per_hour", "peak_rss_mb", "final_return"):
        assert cold[key] > 0 and math.isfinite(cold[key]), key
    assert cold["seeds"] == 2 and cold["total_timesteps"] == 2048
    assert cold["flops_per_update"] > 0 and 0 < cold["fraction_of_matmul_floor"] < 1
    assert warm["compile_s"] < cold["compile_s"]  # loaded from the cache, not compiled again

    record = {"task": "cartpole", "command": "purerl bench --test", "repeats": 1, "rows": [{"seeds": 2, "purerl": cold, "sb3": {"error": "not installed"}, "load_avg_1min": 1.5}],
              "machine": harness.machine(), "versions": harness.versions(),
              "peers": {"sb3": {"description": "SB3.", "requirements": ["stable-baselines3"], "mismatches": []}}}
    text = report.write_report([record], tmp_path / "benchmarks.md").read_text()
    assert "`purerl bench --test`" in text
    assert "| sb3 | 2 | could not run: not installed |" in text
    assert (tmp_path / "benchmarks" / "agents_per_hour.png").exists()
    assert report.ratio(cold, {"env_steps_per_s": cold["env_steps_per_s"] / 2}, "env_steps_per_s") == 2.0


def _peer_script(name):
    import importlib
    import sys

    from purerl_lab.bench.peers import SCRIPTS_DIR

    sys.path.insert(0, str(SCRIPTS_DIR))
    return importlib.import_module(name)


def _purejaxrl_script():
    return _peer_script("purejaxrl_ppo")


def test_rejax_value_peer_spells_purerls_dqn_and_pqn_presets():
    from purerl_lab.bench import worker
    from purerl_lab.bench.peers import PEERS

    script = _peer_script("rejax_value")
    dqn, dqn_hp = worker.task_config("dqn")
    assert (script.DQN["num_envs"], script.DQN["buffer_size"], script.DQN["fill_buffer"], script.DQN["batch_size"],
            script.DQN["target_update_freq"], script.DQN["hidden"], script.DQN["activation"], script.DQN["ddqn"]) == (
        dqn.num_envs, dqn.buffer_size, dqn.learning_starts, dqn.buffer_batch_size, dqn.target_update_interval,
        dqn.hidden_sizes, dqn.activation, dqn.double_dqn)
    assert script.DQN["epsilon_steps"] == dqn.epsilon_anneal_time
    assert dqn.train_interval == dqn.num_envs and script.DQN["num_epochs"] == 1  # one gradient step per env step
    assert (script.DQN["learning_rate"], script.DQN["gamma"], script.DQN["eps_start"], script.DQN["eps_end"]) == (
        dqn_hp.lr, dqn_hp.gamma, dqn_hp.epsilon_start, dqn_hp.epsilon_finish) and dqn_hp.tau == 1.0
    pqn, pqn_hp = worker.task_config("pqn")
    assert (script.PQN["num_envs"], script.PQN["num_steps"], script.PQN["num_epochs"], script.PQN["num_minibatches"],
            script.PQN["hidden"]) == (pqn.num_envs, pqn.num_steps, pqn.update_epochs, pqn.num_minibatches,
                                      pqn.hidden_sizes)
    assert (script.PQN["learning_rate"], script.PQN["gamma"], script.PQN["td_lambda"], script.PQN["eps_end"],
            script.PQN["max_grad_norm"]) == (pqn_hp.lr, pqn_hp.gamma, pqn_hp.td_lambda, pqn_hp.epsilon_finish,
                                             pqn_hp.max_grad_norm) and pqn.epsilon_decay == 0.2
    rejax = PEERS["rejax"]
    assert rejax.script_path("dqn").name == rejax.script_path("pqn").name == "rejax_value.py"
    assert rejax.script_path("cartpole").name == "rejax_ppo.py" and rejax.mismatches_for("dqn") != rejax.mismatches


def test_purejaxrl_patches_a_temporary_copy_and_reads_its_own_config(tmp_path):
    script = _purejaxrl_script()
    checkout, copy = tmp_path / "purejaxrl", tmp_path / "copy"
    (checkout / "purejaxrl").mkdir(parents=True)
    copy.mkdir()
    wrappers = "import jax\n" + script.BRAX_NAVIX_IMPORTS + "class FlattenObservationWrapper:\n" + script.FIVE_VALUE_STEP
    (checkout / "purejaxrl" / "wrappers.py").write_text(wrappers)
    main_block = 'if __name__ == "__main__":\n    config = {"LR": 2.5e-4, "ENV_NAME": "CartPole-v1", "DEBUG": True}\n'
    (checkout / "purejaxrl" / "ppo.py").write_text("def train(rng):\n" + script.VMAPPED_INIT + main_block)
    applied = script.patched_copy(checkout, copy)
    assert len(applied) == len(script.PATCHES)
    patched = (copy / "wrappers.py").read_text()
    assert "brax" not in patched and "navix" not in patched and "terminated, truncated, info" in patched
    assert "!= 'final_observation'" in patched  # gymnax 1.x's extra info would be kept for every step
    assert "sequential_vmap" in (copy / "ppo.py").read_text()
    assert (checkout / "purejaxrl" / "wrappers.py").read_text() == wrappers  # the user's checkout is untouched
    config = script.purejaxrl_config(checkout, "cartpole", 1024)
    assert config == {"LR": 2.5e-4, "ENV_NAME": "CartPole-v1", "DEBUG": False, "TOTAL_TIMESTEPS": 1024}
    (checkout / "purejaxrl" / "wrappers.py").write_text("import jax\n")  # a PureJaxRL this script does not know
    try:
        script.patched_copy(checkout, copy)
    except script.PatchError as error:
        assert "expects its text once" in str(error) and "\n" not in str(error)
    else:
        raise AssertionError("an unknown wrappers.py must stop the peer")


def test_purejaxrl_sequential_init_gives_the_vmapped_init_parameters():
    import flax.linen as nn
    import jax

    dense = nn.Dense(8, kernel_init=nn.initializers.orthogonal(2.0))  # PureJaxRL's kind of initialiser
    x, keys = jax.numpy.zeros(4), jax.random.split(jax.random.PRNGKey(0), 3)
    vmapped = jax.vmap(lambda key: dense.init(key, x))(keys)
    sequential = jax.vmap(jax.custom_batching.sequential_vmap(lambda key: dense.init(key, x)))(keys)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), vmapped, sequential))


def test_purejaxrl_peer_without_a_checkout_is_skipped_with_its_reason():
    result = harness.run_peer("purejaxrl", "cartpole", 1, 512, 1, None)
    assert result["error"] == harness.PUREJAXRL_SKIPPED and "\n" not in result["error"]


def test_evolve_report_states_the_split_of_a_generation_and_renders_from_its_records(tmp_path, monkeypatch):
    parts = {"generation": 10.0, "ask": 0.01, "tell": 0.01, "to_host": 0.001, "to_device": 0.001, "from_device": 0.001,
             "inner_training": 9.9, "checkpoint": 0.05}
    result = {"study_preset": "cpu", "population_size": 16, "rollouts": 1, "inner_total_timesteps": 100_096,
              "devices": 2, "backend": "cpu", "generations_measured": 3, "first_generation_s": 20.0,
              "generation_s": 10.0, "parts_s": parts, "parts_fraction": {k: v / 10.05 for k, v in parts.items()},
              "es_overhead_fraction": 0.02 / 10.05, "agents_per_hour": 5731, "agents_per_hour_with_compile": 5700,
              "env_steps_per_s": 159_000}
    record = {"task": "evolve", "preset": "cpu", "repeats": 3, "evolve": result, "load_avg_1min": 1.0,
              "machine": harness.machine(), "versions": harness.versions(), "command": "purerl bench --task evolve"}
    text = report.write_report([record], tmp_path / "benchmarks.md").read_text()
    assert "## Meta-evolution throughput (cpu preset)" in text and "| 5,731 | 5,700 | 159,000 |" in text
    assert "| ES ask | 0.0100 |" in text and "0.199%" in text
    assert "`purerl bench --task evolve` at a commit it did not record; " in text  # none recorded: none claimed
    assert report.command_line({"command": "purerl bench", "commit": "e5fd6d9"}) == "`purerl bench` at commit `e5fd6d9`."
    measured = text

    from purerl.cli import main
    from purerl_lab.publish import provenance

    out = tmp_path / "rendered" / "benchmarks.md"
    assert main(["bench", "--render", "--out", str(out)]) == 2  # no records beside it: nothing to render
    assert not out.exists()
    (out.parent / "benchmarks").mkdir(parents=True)
    (out.parent / "benchmarks" / "records.json").write_text(json.dumps([record]))
    monkeypatch.setattr(provenance, "git_state", lambda: ("c0ffee" * 7, False))
    assert main(["bench", "--render", "--out", str(out)]) == 0
    rendered = out.read_text()
    assert "rendered from `benchmarks/records.json` by `purerl bench --render --out" in rendered
    assert rendered.replace(report.rendered_words(None), "").count("| 5,731 | 5,700 | 159,000 |") == 1
    assert measured.split("## Meta-evolution")[1] == rendered.split("## Meta-evolution")[1]


def test_records_keep_no_path_of_the_machine_that_measured(tmp_path, monkeypatch):
    """A record's commands and peers' venvs are kept as a reader can use them (`report.portable_record`), written
    so by every measurement and by `purerl bench --render` for records made before; no number changes."""
    old = {"task": "cartpole", "command": "purerl bench --task cartpole --purejaxrl /root/purejaxrl",
           "rows": [{"seeds": 8, "rejax": {"venv": "/home/u/.cache/purerl/peers/rejax/venv", "run_s": 1.5},
                     "purerl": {"run_s": 0.5, "command": "python -m purerl.bench.worker"}}]}
    kept = report.portable_record([old])
    assert kept == [{"task": "cartpole", "command": "purerl bench --task cartpole --purejaxrl PUREJAXRL_CHECKOUT",
                     "rows": [{"seeds": 8, "rejax": {"venv": "PURERL_CACHE_DIR/peers/rejax/venv", "run_s": 1.5},
                               "purerl": {"run_s": 0.5, "command": "python -m purerl_lab.bench.worker"}}]}]
    assert report.portable_record(kept) == kept  # once portable, it stays as it is
    records = tmp_path / "benchmarks" / "records.json"
    records.parent.mkdir()
    report.save_records(records, [old])
    assert json.loads(records.read_text()) == kept

    from purerl.cli import main
    from purerl_lab.publish import provenance

    records.write_text(json.dumps([old]))
    monkeypatch.setattr(provenance, "git_state", lambda: ("c0ffee" * 7, False))
    assert main(["bench", "--render", "--out", str(tmp_path / "benchmarks.md")]) == 0
    assert json.loads(records.read_text()) == kept


def test_the_published_benchmark_records_hold_no_path_of_the_machine_that_measured():
    from purerl_lab.publish import provenance

    text = (provenance.REPO / "docs" / "benchmarks" / "records.json").read_text()
    assert "/root/" not in text and "/home/" not in text


@pytest.mark.timeout(600)
def test_evolve_throughput_times_real_generations_and_their_parts(monkeypatch):
    from purerl_lab.bench import worker
    from purerl_lab.studies import value_loss

    # test_evolve's CLI run at the cpu preset's shape: its evaluation program is the one compiled there
    monkeypatch.setitem(value_loss.PRESETS, "tiny", dict(es=dict(population_size=4, generations=3, rollouts=4),
                                                         inner=dict(num_envs=4, num_steps=64, total_timesteps=1024)))
    monkeypatch.setitem(worker.EVOLVE_PRESETS, "cpu", "tiny")
    result = worker.measure_evolve("cpu", generations=2)
    assert result["study_preset"] == "tiny" and result["inner_total_timesteps"] == 1024
    assert result["population_size"] == 4 and result["generations_measured"] == 2
    assert 0 < result["es_overhead_fraction"] < 1 and result["agents_per_hour"] > 0
    assert set(result["parts_s"]) >= {"ask", "tell", "inner_training", "checkpoint"}


def test_unrolled_threefry_gives_the_same_bits_as_jax_cpu_default():
    import jax

    from purerl.envs.core import unroll_threefry_on_cpu

    def draws(seed):
        keys = jax.random.split(jax.random.PRNGKey(seed), 4)
        return jax.vmap(lambda k: jax.random.uniform(k, (3,)))(keys), jax.random.categorical(keys[0], jax.numpy.zeros(5))

    try:
        unroll_threefry_on_cpu(False)
        rolled_text = jax.jit(draws).lower(7).as_text()
        rolled = jax.jit(lambda s: draws(s))(7)
    finally:
        unroll_threefry_on_cpu(True)
    unrolled_text = jax.jit(lambda s: draws(s)).lower(7).as_text()
    unrolled = jax.jit(lambda s: draws(s))(7)
    assert "while" in rolled_text and "while" not in unrolled_text  # really two lowerings
    assert all((a == b).all() for a, b in zip(jax.tree.leaves(rolled), jax.tree.leaves(unrolled)))


def test_every_bench_task_gives_its_widths_for_each_preset():
    """`purerl bench --task NAME` reads a task's widths from its registry entry: a task without them would fail
    after the CLI accepted it."""
    from purerl.algos import registry

    for name, spec in registry.bench_tasks().items():
        assert set(spec["widths"]) == {"cpu", "gpu"}, name
        assert all(list(w) == sorted(w) and min(w) >= 1 for w in spec["widths"].values()), name


def test_offpolicy_peers_spell_purerls_continuous_presets():
    from purerl_lab.bench import worker
    from purerl_lab.bench.peers import PEERS

    rejax, sbx = _peer_script("rejax_offpolicy"), _peer_script("sbx_sac")
    for task in ("sac", "td3"):
        config, hp = worker.task_config(task)
        assert config.env == rejax.ENV == sbx.ENV == "Pendulum-v1"
        assert harness.task_steps(task) == config.total_timesteps == 20_000
        settings = rejax.SAC if task == "sac" else rejax.TD3
        assert (settings["num_envs"], settings["buffer_size"], settings["fill_buffer"], settings["batch_size"],
                settings["hidden"], settings["activation"], settings["gamma"], settings["learning_rate"]) == (
            config.num_envs, config.buffer_size, config.learning_starts, config.buffer_batch_size,
            config.hidden_sizes, config.activation, hp.gamma, hp.lr)
        assert settings["num_epochs"] == config.gradient_steps == 1 and settings["target_update_freq"] == 1
        assert abs((1.0 - settings["polyak"]) - hp.tau) < 1e-12
    sac_config, sac_hp = worker.task_config("sac")
    assert rejax.SAC["critic_learning_rate"] == sbx.SAC["qf_learning_rate"] == sac_hp.q_lr and sac_config.autotune
    assert (sbx.SAC["buffer_size"], sbx.SAC["learning_starts"], sbx.SAC["batch_size"], sbx.SAC["hidden"],
            sbx.SAC["learning_rate"], sbx.SAC["tau"], sbx.SAC["gamma"]) == (
        sac_config.buffer_size, sac_config.learning_starts, sac_config.buffer_batch_size, sac_config.hidden_sizes,
        sac_hp.lr, sac_hp.tau, sac_hp.gamma)
    assert sbx.STEPS_PER_UPDATE == sac_config.batch_size
    td3_config, td3_hp = worker.task_config("td3")
    assert (rejax.TD3["policy_delay"], rejax.TD3["exploration_noise"], rejax.TD3["target_noise"],
            rejax.TD3["target_noise_clip"]) == (td3_config.policy_frequency, td3_hp.exploration_noise,
                                                td3_hp.policy_noise, td3_hp.noise_clip)
    assert td3_hp.lr == td3_hp.q_lr == rejax.TD3["learning_rate"]
    peer = PEERS["rejax"]
    assert peer.script_path("sac").name == peer.script_path("td3").name == "rejax_offpolicy.py"
    assert peer.mismatches_for("sac") != peer.mismatches_for("td3") != peer.mismatches
    assert PEERS["sbx"].tasks == ("sac",) and PEERS["sbx"].sequential_seeds and PEERS["sb3"].sequential_seeds
    assert not peer.sequential_seeds


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_offpolicy_floor_counts_every_actor_step_of_a_policy_cycle(algo):
    """XLA counts a loop body once, so the floor compiles each step index of a policy cycle alone. SAC's delayed
    actor steps are made up (`policy_frequency` of them on one index), TD3's are not (one): the FLOPs the floor
    counts must say so, which a rolled loop over SAC's actor steps would hide."""
    import jax

    from purerl.algos import registry
    from purerl_lab.bench import floor, worker

    base, hp = worker.task_config(algo, 600)
    base, hp = base.replace(hidden_sizes=(32, 32), buffer_size=1000, learning_starts=400), hp.as_arrays()

    def cycle_flops(policy_frequency):
        config = base.replace(policy_frequency=policy_frequency)
        train = registry.build(algo, config)
        state = jax.jit(train.init)(jax.random.PRNGKey(0), hp)
        return [floor.compiled_flops(floor.offpolicy_gradient_step(train, config, i), state, jax.random.PRNGKey(1),
                                     hp) for i in range(policy_frequency)]

    (actor_and_critic,) = cycle_flops(1)
    delayed, critic_only, critic_too = cycle_flops(3)
    one_actor_step = actor_and_critic - critic_only
    assert one_actor_step > 0 and critic_too == critic_only
    assert delayed - critic_only == pytest.approx((3 if algo == "sac" else 1) * one_actor_step, rel=0.05)


def test_offpolicy_floor_composes_a_run_from_its_steps():
    import jax
    import jax.numpy as jnp

    from purerl.algos import registry
    from purerl_lab.bench import floor, worker

    config, hp = worker.task_config("sac", 600)
    config = config.replace(hidden_sizes=(32, 32), buffer_size=1000, learning_starts=400, policy_frequency=1)
    train = registry.build("sac", config)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    hps = jax.tree.map(lambda x: jnp.broadcast_to(x, (2,)), hp.as_arrays())
    record = floor.offpolicy(train, keys, hps, config, devices=1, run_s=1.0)
    parts = record["flops_per_update_parts"]
    learning = 600 - 400
    per_member = parts["env_step"] * 600 + (parts["explore"] + parts["gradient_step"]) * learning
    assert record["flops_per_update"] == pytest.approx(per_member * 2 / config.num_updates)
    assert record["achieved_flops_per_s"] == pytest.approx(per_member * 2)  # run_s 1.0
    assert parts["gradient_step"] > 100 * parts["explore"] > 0 and parts["env_step"] > 0
    assert record["learn_us_per_env_step"] > record["rollout_us_per_env_step"] > 0


def test_a_child_process_stopped_or_failed_returns_what_it_printed_and_one_line_why():
    printing = "import sys, time; print('row 1', flush=True); "
    out, why = harness.run_process([sys.executable, "-c", printing + "time.sleep(30)"], timeout_s=3)
    assert out.strip() == "row 1" and why == "stopped at its 3 s limit"
    out, why = harness.run_process([sys.executable, "-c", printing + "sys.exit('first\\n' + 'x' * 999)"], 30)
    assert out.strip() == "row 1" and why == "exit 1: " + "x" * 300
    assert harness.run_process([sys.executable, "-c", printing], 30) == ("row 1\n", None)
