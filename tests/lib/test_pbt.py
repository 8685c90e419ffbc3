"""Population-based training: exploit copies exactly the chosen members' whole state, explore stays in bounds
and a perturbed learning rate takes effect; sharded equals unsharded; a cut and resumed run equals an
uninterrupted one bit for bit (metrics.csv and pbt.csv); bad settings are one line, exit 2; plot --pbt."""

import contextlib
import io
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_run import run_cli
from purerl.cli import main
from purerl.algos import registry
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import ConfigError
from purerl.run import experiment, pbt, pbt_files, rerun, stopping
from purerl.run.pbt_config import Bound, PBTConfig, parse_explore
from purerl.run.population import Placement, make_members
from purerl.run.trainspec import TrainSpec

# 4 envs x 16 steps, 12 updates: rounds after updates 4 and 8.
CONFIG = PPOConfig(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 12, update_epochs=1, num_minibatches=2,
                   normalize_obs=True, cpu_group=0)
EXPLORE = parse_explore("lr=1e-4:1e-2,ent_coef=0:0.1")
SMALL = ["--num-envs", "4", "--num-steps", "16", "--total-timesteps", "768", "--update-epochs", "1",
         "--num-minibatches", "2", "--no-progress"]
PBT = ["train", "--pbt", "--seeds", "4", "--pbt-interval", "4", *SMALL]


def with_scores(host: pbt.PBTState, scores, stop: int) -> pbt.PBTState:
    """`host` with every member's return over the updates before `stop` set to its score."""
    returns, episodes = np.array(host.train.metrics["episode_return"]), np.array(host.train.metrics["episodes"])
    returns[:, :stop] = np.asarray(scores, np.float32)[:, None]
    episodes[:, :stop] = 1.0
    return host._replace(train=host.train._replace(metrics={**host.train.metrics, "episode_return": returns,
                                                            "episodes": episodes}))


def test_exploit_copies_the_whole_state_of_a_top_member_and_explore_moves_its_hyperparameters():
    config = PBTConfig(interval=4, fraction=0.25, explore=EXPLORE, resample=0.0, init="given")
    train = registry.build("ppo", CONFIG)
    members = make_members(list(range(8)), HyperParams(lr=1e-3, ent_coef=0.01))
    host = Placement.for_members(8).get(pbt.start(train, Placement.for_members(8), members, config), 8)
    offset = lambda x: x + np.arange(8).reshape((8,) + (1,) * (x.ndim - 1)).astype(x.dtype)  # noqa: E731
    moving = [name for name in host.train._fields if name not in pbt.KEEP]
    host = host._replace(train=host.train._replace(**{  # every member's optimiser state and normaliser differ
        name: jax.tree.map(lambda x: offset(x) if np.issubdtype(x.dtype, np.floating) else x,
                           getattr(host.train, name)) for name in moving}))
    host = with_scores(host, [5, 1, 7, 3, 8, 2, 6, 4], stop=4)
    after = jax.jit(lambda runs: pbt.exploit_and_explore(runs, jnp.int32(4), config, 8))(host)

    parents = np.asarray(after.parents[:, 0])
    assert sorted(np.flatnonzero(parents != np.arange(8))) == [1, 5]  # the two worst
    assert set(parents[[1, 5]]) <= {4, 2}  # copy one of the two best
    for member, parent in enumerate(parents):
        for name in moving:  # params, optimiser state, observation normaliser, env state: the parent's
            jax.tree.map(lambda new, old: np.testing.assert_array_equal(new[member], old[parent]),
                         getattr(after.train, name), getattr(host.train, name))
        for name in pbt.KEEP:  # its own key and its own history
            jax.tree.map(lambda new, old: np.testing.assert_array_equal(new[member], old[member]),
                         getattr(after.train, name), getattr(host.train, name))
    for i, bound in enumerate(EXPLORE):
        new, old = np.asarray(getattr(after.hp, bound.name)), np.asarray(getattr(host.hp, bound.name))
        kept = parents == np.arange(8)
        np.testing.assert_array_equal(new[kept], old[kept])
        ratio = new[~kept] / old[parents[~kept]]
        assert np.all(np.isclose(ratio, 1.2) | np.isclose(ratio, 1 / 1.2)), ratio
        assert np.all((bound.low <= new) & (new <= bound.high))
        np.testing.assert_array_equal(after.explored[:, 1, i], new)
    np.testing.assert_array_equal(after.scores[:, 0], [5, 1, 7, 3, 8, 2, 6, 4])


class Tiny(NamedTuple):
    params: Any
    key: Any
    metrics: dict


def tiny_runs(scores, episodes=None, updates: int = 4) -> pbt.PBTState:
    """Six slots whose params are their index, each update's return its score: one episode an update where the
    score is a number (NaN returns of ended episodes where `episodes` says so: a diverged member), none where
    it is NaN, unless per-update `episodes` ([members, updates]) are given."""
    returns = np.tile(np.array(scores, np.float32)[:, None], (1, updates))
    if episodes is None:
        episodes = np.where(np.isnan(returns), 0.0, 1.0)
    n = len(scores)
    return pbt.PBTState(
        train=Tiny(params=jnp.arange(float(n)), key=jnp.zeros((n, 2), jnp.uint32),
                   metrics={"episode_return": jnp.asarray(returns), "episodes": jnp.asarray(episodes, jnp.float32)}),
        hp=HyperParams(*(jnp.full((n,), v, jnp.float32) for v in HyperParams(lr=1e-3))),
        key=jax.vmap(jax.random.PRNGKey)(jnp.arange(n)), parents=jnp.full((n, 1), -1, jnp.int32),
        scores=jnp.full((n, 1), jnp.nan), explored=jnp.full((n, 2, 1), jnp.nan))


# One small program per (config, members), not the round's ops one by one.
exploit = jax.jit(pbt.exploit_and_explore, static_argnums=(2, 3))


@pytest.mark.parametrize("scores, copied", [
    ([np.nan, 1, 2, 3, 4, 9], 2),  # member 0 has no score, member 5 is padding: 4 ranked, 2 copies
    ([np.nan, np.nan, 2, np.nan, 4, 9], 1),  # 2 ranked: one copy, so the groups never overlap
    ([np.nan, np.nan, np.nan, np.nan, 4, 9], 0),  # 1 ranked: nobody to copy from
])
def test_members_without_a_score_and_padding_are_neither_copied_nor_replaced(scores, copied):
    config = PBTConfig(interval=2, fraction=0.5, explore=(Bound("lr", 1e-4, 1e-2),))
    after = exploit(tiny_runs(scores), jnp.int32(2), config, 5)
    parents = np.asarray(after.parents[:, 0])
    changed = np.flatnonzero(parents != np.arange(6))
    assert len(changed) == copied
    ranked = [i for i in range(5) if np.isfinite(scores[i])]
    assert set(changed) <= set(ranked) and set(parents[changed]) <= set(ranked)
    assert all(scores[p] > scores[c] for c, p in zip(changed, parents[changed]))
    np.testing.assert_array_equal(after.train.params, np.arange(6.0)[parents])


def test_a_diverged_member_is_replaced_first_and_never_copied():
    """Its episodes end with NaN returns (a policy with NaN parameters acts NaN in a continuous env); it used
    to read as "no episode ended", kept its slot for the rest of the run and spared the worst healthy member."""
    config = PBTConfig(interval=2, fraction=0.25, explore=(Bound("lr", 1e-4, 1e-2),))
    scores = [10.0, np.nan, 50.0, 100.0]
    episodes = np.ones((4, 4))  # member 1's episodes ended, with NaN returns
    after = exploit(tiny_runs(scores, episodes), jnp.int32(2), config, 4)
    parents = np.asarray(after.parents[:, 0])
    assert parents[1] == 3 and list(parents[[0, 2, 3]]) == [0, 2, 3]  # the diverged one copies the best
    assert np.isfinite(np.asarray(after.train.params)).all() and np.isnan(after.scores[1, 0])
    mostly = exploit(tiny_runs([np.nan, np.nan, np.nan, 7.0], episodes), jnp.int32(2), config, 4)
    assert list(np.asarray(mostly.parents[:, 0])) == [3, 1, 2, 3]  # one healthy member: one copy, from it


def test_members_that_tie_are_not_copied_for_nothing():
    config = PBTConfig(interval=2, fraction=0.5, explore=(Bound("lr", 1e-4, 1e-2),))
    after = exploit(tiny_runs([500.0] * 4), jnp.int32(2), config, 4)
    assert list(np.asarray(after.parents[:, 0])) == [0, 1, 2, 3]
    np.testing.assert_array_equal(after.hp.lr, np.full(4, 1e-3, np.float32))  # nor explored


def test_the_score_weighs_every_episode_the_same():
    """Update 0: one episode of 100; update 1: nine of 10. The mean over episodes is 19, not the mean of the
    updates' means (55), which would rank this member above one whose 10 episodes all returned 30."""
    config = PBTConfig(interval=2, fraction=0.5, explore=(Bound("lr", 1e-4, 1e-2),))
    runs = tiny_runs([0.0, 30.0], np.array([[1.0, 9.0], [5.0, 5.0]]), updates=2)
    runs = runs._replace(train=runs.train._replace(metrics={
        **runs.train.metrics, "episode_return": jnp.asarray([[100.0, 10.0], [30.0, 30.0]])}))
    after = exploit(runs, jnp.int32(2), config, 2)
    np.testing.assert_allclose(after.scores[:, 0], [19.0, 30.0])
    assert list(np.asarray(after.parents[:, 0])) == [1, 1]


def test_a_break_between_chunk_ends_leaves_every_later_chunk_end_on_the_grid():
    """Rounds run at chunk ends that are multiples of the interval; an evaluation break at update 15 used to
    shift every later chunk to 25, 35, ..., so no later round ran and their parents stayed -1."""
    from purerl.run.chunks import run_chunks

    seen = []
    advance = jax.jit(lambda runs, start, stop: runs + (stop - start))
    runs, _ = run_chunks(advance, jnp.zeros((1,), jnp.int32), Placement.for_members(1), 1, 50, chunk=10,
                         on_chunk=lambda start, stop, runs, timing: seen.append(stop), breaks=(15,))
    assert seen == [10, 15, 20, 30, 40, 50] and int(runs[0]) == 50


def test_explore_stays_in_its_range_and_resamples_from_the_prior():
    config = PBTConfig(explore=(Bound("lr", 1e-4, 1e-2), Bound("ent_coef", 0.0, 0.1)), resample=1.0)
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    drawn = np.asarray(jax.vmap(lambda k: pbt.explore(config, jnp.array([1e-2, 0.0]), k))(keys))
    low, high = np.float32([1e-4, 0.0]), np.float32([1e-2, 0.1])  # the program computes in float32
    assert np.all((drawn >= low) & (drawn <= high))
    assert abs(np.median(np.log10(drawn[:, 0])) + 3) < 0.1  # log-uniform over 1e-4..1e-2
    assert abs(np.median(drawn[:, 1]) - 0.05) < 0.005  # uniform over 0..0.1
    at_edge = dict(config.__dict__, resample=0.0)
    pushed = jax.vmap(lambda k: pbt.explore(PBTConfig(**at_edge), jnp.array([1e-2, 0.1]), k))(keys)
    assert np.all(np.asarray(pushed) <= high) and np.any(np.asarray(pushed)[:, 0] == high[0])


def test_lineage_follows_each_rounds_parent_back_from_the_best():
    parents = np.array([[0, 2, 0], [1, 1, 0], [0, 2, 2]])  # [members, rounds]
    assert pbt_files.lineage(parents, best=1) == [0, 2, 0, 1]  # 1 took 0 at round 3, which took 2 at round 2, ...


@pytest.mark.parametrize("algo", list(registry.ALGORITHMS))
def test_every_algorithm_steps_with_the_learning_rate_it_is_given_now_not_the_one_it_started_with(algo):
    """A member that copies another keeps the copied optimiser state and trains on with its new lr: every
    algorithm builds its optimiser from the traced hyperparameters at each step (none bakes the lr into its
    optimiser state), so from the same state a doubled lr makes exactly a doubled step."""
    algorithm = registry.get(algo)
    discrete = "CartPole-v1"  # else continuous actions: an algorithm's default_preset refuses the wrong kind
    try:
        algorithm.default_preset(discrete, True)
        env = discrete
    except ConfigError:
        env = "Pendulum-v1"
    train = registry.build(algo, algorithm.config(env=env))
    hp = algorithm.hyperparams().as_arrays()
    doubled = hp._replace(**{name: 2 * getattr(hp, name) for name in ("lr", "q_lr") if name in hp._fields})
    def optimizers(h):  # SAC and TD3 keep one per learned part
        return train.optimizers(h) if hasattr(train, "optimizers") else {"all": train.optimizer(h)}

    params, grads = {"w": jnp.ones(3)}, {"w": jnp.array([0.3, -0.2, 0.1])}
    for name, started in optimizers(hp).items():
        state = started.init(params)
        step, _ = started.update(grads, state, params)
        step_doubled, _ = optimizers(doubled)[name].update(grads, state, params)
        np.testing.assert_allclose(step_doubled["w"], 2 * step["w"], rtol=1e-6)
        assert np.all(np.asarray(step["w"]) != 0)


def test_a_sharded_population_makes_the_same_choices_as_one_on_one_device_and_trains_at_the_new_lr():
    if len(jax.devices()) < 2:
        pytest.skip("needs two devices")
    # The CLI's run (`cli_run`: the classic preset's config, PBT's default fraction), so that the two-device
    # population is the program it compiled.
    train = registry.build("ppo", CONFIG.replace(normalize_obs=False, cpu_group=8))
    config = PBTConfig(interval=4, explore=EXPLORE)
    one, two = (pbt.train_population(train, HyperParams(), range(4), config, placement=Placement(jax.devices()[:k]))
                for k in (1, 2))
    for name in ("parents", "scores", "explored"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    np.testing.assert_array_equal(one.train.metrics["episode_return"], two.train.metrics["episode_return"])
    assert (two.parents != np.arange(4)[:, None]).sum(axis=0).tolist() == [1, 1]  # a quarter of 4, each round
    lr = two.train.metrics["learning_rate"]  # computed in the update from the traced lr, as the optimiser's step
    for update, r in ((0, 0), (4, 1), (8, 2)):
        np.testing.assert_allclose(lr[:, update], two.explored[:, r, 0] * (1 - update / CONFIG.num_updates), rtol=1e-6)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """A PBT run of the CLI (chunks of 1 update: the largest divisor of the interval within a 25th of the run)
    and what it printed."""
    out = tmp_path_factory.mktemp("pbt") / "full"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*PBT, "--pbt-explore", "lr=1e-4:1e-2,ent_coef=0:0.1", "--out", str(out)]) == 0
    return out, printed.getvalue()


def test_a_cut_and_resumed_pbt_run_is_bit_identical(cli_run, tmp_path):
    """The CLI's run, and the same spec in chunks of 2 updates cut after update 6 (round 1 done, round 2 not)
    and resumed: the same metrics.csv and pbt.csv, byte for byte."""
    full, _ = cli_run
    spec = rerun.load_spec(full)
    with stopping.cut_after(3):
        assert experiment.run(spec, tmp_path / "cut", progress=False, chunk_updates=2) is None
    rows = (tmp_path / "cut" / "pbt.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 4 and rows[-1].startswith("1,4,")  # rounds 0 and 1 of 4 members, nothing more
    resumed = experiment.run(spec, tmp_path / "cut", resume=True, progress=False, chunk_updates=2)
    assert resumed["resumed_from_update"] == 6
    for name in ("metrics.csv", "pbt.csv"):
        assert (tmp_path / "cut" / name).read_text() == (full / name).read_text(), name
    summary = json.loads((full / "summary.json").read_text())
    assert resumed["pbt"] == summary["pbt"] and resumed["final_return_by_member"] == summary["final_return_by_member"]


def test_a_cli_run_writes_its_pbt_files_and_is_evaluated_and_plotted(cli_run, capsys, tmp_path):
    out, printed = cli_run
    assert "PBT: 2 copies in 2 rounds" in printed
    assert {"pbt.csv", "pbt.png"} <= {p.name for p in out.iterdir()}
    recorded = json.loads((out / "config.json").read_text())["pbt"]
    assert recorded["explore"] == [["lr", 1e-4, 1e-2], ["ent_coef", 0.0, 0.1]] and recorded["interval"] == 4
    summary = json.loads((out / "summary.json").read_text())["pbt"]
    assert summary["rounds"] == 2 and summary["copies"] == 2 and len(summary["lineage"]) == 3
    code, _, err = run_cli(capsys, "eval", out, "--episodes", "2")
    assert code == 0, err
    code, _, err = run_cli(capsys, "plot", out, "--pbt", "--out", tmp_path / "pbt.png")
    assert code == 0 and (tmp_path / "pbt.png").stat().st_size > 10_000, err
    shutil.copytree(out, tmp_path / "plain")
    (tmp_path / "plain" / "pbt.csv").unlink()
    for runs, message in (([out, tmp_path / "plain"], "plot --pbt draws one PBT run; give one RUN"),
                          ([tmp_path / "plain"], "is not a PBT run (no pbt.csv; train with --pbt)")):
        code, _, err = run_cli(capsys, "plot", *runs, "--pbt", "--out", tmp_path / "x.png")
        assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigterm_checkpoints_a_pbt_run_and_resume_is_bit_identical(tmp_path):
    """A real SIGTERM to a real `purerl train --pbt` process mid-run (many rounds), then --resume."""
    long = ["train", "--pbt", "--seeds", "4", "--pbt-interval", "8", "--num-envs", "4", "--num-steps", "64",
            "--total-timesteps", "614400", "--update-epochs", "1", "--num-minibatches", "1", "--no-progress",
            "--checkpoint-every", "1e9"]
    exe = str(Path(sys.executable).with_name("purerl"))
    assert subprocess.run([exe, *long, "--out", str(tmp_path / "full")], capture_output=True).returncode == 0
    proc = subprocess.Popen([exe, *long, "--out", str(tmp_path / "run")], stderr=subprocess.PIPE, text=True)
    while not (tmp_path / "run" / "pbt.csv").exists() and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=300) == 128 + signal.SIGTERM, proc.stderr.read()
    assert "checkpoint saved" in proc.stderr.read()
    resumed = subprocess.run([exe, "train", "--out", str(tmp_path / "run"), "--resume", "--no-progress"],
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["resumed_from_update"] > 0
    for name in ("metrics.csv", "pbt.csv"):
        assert (tmp_path / "run" / name).read_text() == (tmp_path / "full" / name).read_text(), name


@pytest.mark.parametrize("argv, message", [
    (["--pbt-interval", "4"], "--pbt-interval needs --pbt"),
    (["--pbt", "--pbt-interval", "0"], "pbt-interval must be a positive integer, got 0"),
    (["--pbt", "--pbt-interval", "12"], "pbt-interval=12 leaves no PBT round in a run of 12 updates"),
    (["--pbt", "--pbt-fraction", "0.6"], "pbt-fraction must be in (0, 0.5]"),
    (["--pbt", "--pbt-fraction", "-0.1"], "pbt-fraction must be in (0, 0.5]"),
    (["--pbt", "--pbt-fraction", "0", "--pbt-init", "given"], "pbt-fraction 0 is random search"),
    (["--pbt", "--seeds", "3"], "a population of 3 with pbt-fraction=0.25 replaces no member: it needs at least 4"),
    (["--pbt", "--pbt-explore", "lr=1e-2:1e-4"], "the range needs finite LOW < HIGH"),
    (["--pbt", "--pbt-explore", "lr=0:1e-2"], "pbt-explore lr=0:0.01: lr must be > 0, got 0"),
    (["--pbt", "--pbt-explore", "gamma=0.9:1.5"], "gamma must be in (0, 1], got 1.5"),
    (["--pbt", "--pbt-explore", "ent_coef=-1:0.1"], "LOW must be >= 0"),
    (["--pbt", "--pbt-explore", "num_envs=2:8"], "num_envs is a static config field"),
    (["--pbt", "--pbt-explore", "tau=0.1:1"], "cannot explore 'tau'; explorable: lr, gamma"),
    (["--pbt", "--pbt-explore", "lr=1e-4"], "pbt-explore takes NAME=LOW:HIGH"),
    (["--pbt", "--pbt-explore", "lr=1e-4:1e-2,lr=1e-3:1e-1"], "pbt-explore names lr twice"),
    (["--pbt", "--pbt-explore", "lr=1e-4:inf"], "with finite numbers"),
    (["--pbt", "--pbt-perturb", "1"], "pbt-perturb must be a finite factor > 1"),
    (["--pbt", "--pbt-resample", "1.5"], "pbt-resample must be a probability in [0, 1]"),
    (["--pbt", "--pbt-window", "5"], "pbt-window must be an integer in [0, pbt-interval=4]"),
    (["--pbt", "--pbt-init", "given", "--ent-coef", "0"], "ent_coef=0 lies outside its range 0.0001:0.1"),
    (["--pbt", "--lr", "1e-3,1e-4"], "--pbt explores the hyperparameters itself"),
])
def test_bad_pbt_settings_are_one_line_exit_2_and_write_nothing(capsys, tmp_path, argv, message):
    out = tmp_path / "run"
    defaults = ["--pbt-interval", "4"] if "--pbt-interval" not in argv and "--pbt" in argv else []
    code, _, err = run_cli(capsys, "train", "--seeds", "4", *SMALL, *defaults, *argv, "--out", out)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


PBT_FLAGS = ["--pbt-interval", "--pbt-fraction", "--pbt-explore", "--pbt-perturb", "--pbt-resample", "--pbt-window",
             "--pbt-init", "--seeds", "--total-timesteps"]
VALUES = st.one_of(st.sampled_from(["inf", "nan", "-1", "0", "1", "4", "0.25", "0.5", "1e-300", "5e-324", "1e400",
                                    "lr=1e-5:1e-2", "lr=1e-50:1", "ent_coef=0:0.1,lr=1e-3:1e-2", "gamma=0.5:1",
                                    "lr=", "=1:2", "lr=1:2:3", "sample", "given", "", " "]),
                   st.integers(-10**20, 10**20).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.text(alphabet="lr_entcof=:,0123456789.-e", max_size=14))


class ReachedTraining(Exception):
    """Validation passed: the command would now compile and train."""


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_pbt_flag_value_is_accepted_or_one_line_exit_2_and_nothing_written(capsys, monkeypatch, data):
    def reached(*args, **kwargs):
        raise ReachedTraining

    monkeypatch.setattr(experiment.Placement, "for_members", reached)
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(PBT_FLAGS), VALUES), min_size=1, max_size=3))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        argv = ["train", "--pbt", *SMALL, "--out", str(out), *(f"{flag}={value}" for flag, value in pairs)]
        try:
            code, _, err = run_cli(capsys, *argv)
        except ReachedTraining:
            code, err = 0, capsys.readouterr().err
        assert code in (0, 2), (argv, err)
        if code == 2:
            assert err.count("\n") == 1 and err.startswith("purerl: error: ") and "Traceback" not in err, (argv, err)
            assert not out.exists(), argv


def test_a_chunk_that_does_not_divide_the_interval_is_refused_before_anything_is_written(tmp_path):
    spec = TrainSpec(CONFIG, seeds=[0, 1, 2, 3], pbt=PBTConfig(interval=4))
    assert [b.name for b in spec.pbt.explore] == ["lr", "ent_coef"]  # the algorithm's defaults
    with pytest.raises(ConfigError, match="chunks of 3 updates do not divide pbt-interval=4"):
        experiment.run(spec, tmp_path / "run", chunk_updates=3)
    assert not (tmp_path / "run").exists()
