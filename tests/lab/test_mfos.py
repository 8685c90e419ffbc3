"""M-FOS: the meta-game env against hand computation, PPO and self-play smoke runs, the baselines'
determinism, the lambda schedule, the Press & Dyson extortion tests, and the CLI's input checks."""

import dataclasses
import json
import math
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl_lab.publish import document, provenance, replication
from purerl.checks import ConfigError
from purerl.run import stopping
from purerl_lab.studies.mfos import analysis, baselines, games, meta_game, report, run_report, runs, self_play, settings, table
from purerl_lab.studies.mfos import cli as mfos_cli

GAMMA = 0.96
IPD = {(0, 0): (-1, -1), (0, 1): (-3, 0), (1, 0): (0, -3), (1, 1): (-2, -2)}  # (a1, a2) -> (r1, r2); 0 = C
OUTCOMES = [(0, 0), (0, 1), (1, 0), (1, 1)]
IPD_RSTP = (-1.0, -3.0, 0.0, -2.0)
TINY = settings.PRESETS["tiny"]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def np_ipd_rewards(logits1, logits2, gamma=GAMMA):
    """Per-step rewards (1 - gamma) p0 (I - gamma P)^-1 u, from the definitions, in float64."""
    p, q = sigmoid(logits1), sigmoid(logits2)
    act = lambda prob, a: prob if a == 0 else 1 - prob  # noqa: E731
    start = np.array([act(p[0], a1) * act(q[0], a2) for a1, a2 in OUTCOMES])
    transition = np.array([[act(p[1 + 2 * b1 + b2], a1) * act(q[1 + 2 * b2 + b1], a2) for a1, a2 in OUTCOMES]
                           for b1, b2 in OUTCOMES])
    payoffs = np.array([IPD[o] for o in OUTCOMES], np.float64)
    return (1 - gamma) * start @ np.linalg.solve(np.eye(4) - gamma * transition, payoffs)


@pytest.fixture(scope="module")
def ipd_nl():
    env = meta_game.MetaGame("ipd", "nl", meta_episode=3, warmup_steps=0)
    return env, jax.jit(env.step), jax.jit(env.reset)


def test_meta_game_step_matches_hand_computation(ipd_nl):
    env, step, reset = ipd_nl
    assert env.observation_shape == (10,) and env.action_space.shape == (5,) and not env.action_space.discrete
    assert meta_game.MetaGame("ipd", "nl").max_episode_steps == 100
    obs, state = reset(jax.random.PRNGKey(0))
    opponent = np.asarray(state.opponent)
    np.testing.assert_allclose(obs[5:], sigmoid(opponent), rtol=1e-6)  # the opponent's initial policy

    # Pure strategies: M-FOS (player 2) always defects, the opponent always cooperates: T = 0 vs S = -3.
    pure = state._replace(opponent=jnp.full(5, 30.0, jnp.float32))  # strong types: step's one program serves all
    _, ts = step(jax.random.PRNGKey(1), pure, jnp.full(5, -30.0, jnp.float32))
    np.testing.assert_allclose([ts.reward, ts.info["opponent_reward"]], [0.0, -3.0], atol=1e-5)

    # Mixed policies against an independent float64 solve; the opponent takes one naive step (seat 0, lr 1).
    action = jnp.array([0.3, -1.2, 0.8, 0.1, -0.5])
    new_state, ts = step(jax.random.PRNGKey(2), state, action)
    r_opponent, r_mfos = np_ipd_rewards(opponent, action)
    np.testing.assert_allclose([ts.reward, ts.info["opponent_reward"]], [r_mfos, r_opponent], rtol=1e-5)
    np.testing.assert_allclose(ts.obs, sigmoid(np.concatenate([action, opponent])), rtol=1e-6)
    np.testing.assert_allclose(ts.final_obs, ts.obs)
    eps = 1e-5
    grad = [(np_ipd_rewards(opponent + eps * e, action)[0] - np_ipd_rewards(opponent - eps * e, action)[0])
            / (2 * eps) / (1 - GAMMA) for e in np.eye(5)]
    np.testing.assert_allclose(new_state.opponent, opponent + np.array(grad), rtol=1e-3, atol=1e-4)
    assert int(new_state.t) == 1 and not bool(ts.terminated) and not bool(ts.truncated)


def test_authors_reset_takes_one_unscored_opponent_step():
    """As in the authors' MetaGames.reset: the opponent learns once against a random M-FOS policy; the first
    observation shows that random policy and the opponent's policy before its step."""
    env = meta_game.MetaGame("ipd", "nl")
    assert env.warmup_steps == 1
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    previous, initial = logit(np.asarray(obs[:5], np.float64)), logit(np.asarray(obs[5:], np.float64))
    expected = games.naive_step(games.GAMES["ipd"], jnp.asarray(initial, jnp.float32), jnp.asarray(previous, jnp.float32), 0)
    np.testing.assert_allclose(state.opponent, expected, rtol=1e-3, atol=1e-3)
    assert not np.allclose(state.opponent, initial, atol=1e-2)


def test_count_first_scoring_takes_no_unscored_step():
    """`--scoring count-first`: M-FOS's meta-game starts from the opponent's N(0, 1) policy with no learning
    step, and meta self-play's and the baselines' games (which take `settings.warmup_steps`) take none either."""
    counted = settings.resolve("tiny", scoring="count-first")
    assert (counted.warmup_steps, counted.for_self_play().warmup_steps, TINY.warmup_steps) == (0, 0, 1)
    ppo, _, _ = meta_game.make_mfos_train("ipd", "nl", counted)
    obs, state = jax.jit(ppo.env.env.reset)(jax.random.PRNGKey(0))
    np.testing.assert_allclose(obs[5:], sigmoid(state.opponent), rtol=1e-6)  # the policy before any step


def test_seed_summaries_claim_a_ci_only_from_ten_seeds():
    few, many = runs.summarize_seeds([0.1, 0.3, 0.2]), runs.summarize_seeds(np.linspace(0, 1, 10))
    assert few["ci95_low"] is None and few["n"] == 3 and few["values"] == [0.1, 0.3, 0.2]
    assert report.format_cell(few) == "+0.20 (n=3: +0.10, +0.30, +0.20)"
    assert many["ci95_low"] < many["mean"] < many["ci95_high"] and "[" in report.format_cell(many)
    assert "not_finite" not in many  # the key appears only where a seed was left out
    lost = runs.summarize_seeds([*np.linspace(0, 1, 10), np.nan, np.inf])
    assert lost["n"] == 10 and lost["not_finite"] == 2
    assert report.format_cell(lost).endswith("] (n=10, 2 seed(s) not finite left out)")
    assert report.format_cell(runs.summarize_seeds([np.nan])) == "n/a (1 seed(s) not finite left out)"


def test_meta_game_time_limit_truncates_and_resets(ipd_nl):
    env, step, reset = ipd_nl
    obs, state = reset(jax.random.PRNGKey(3))
    actions = jax.random.normal(jax.random.PRNGKey(4), (3, 5))
    rewards = []
    for t in range(3):
        played = np.asarray(state.opponent)
        key = jax.random.PRNGKey(10 + t)
        state, ts = step(key, state, actions[t])
        rewards.append([float(ts.reward), float(ts.info["opponent_reward"])])
        assert not bool(ts.terminated)  # a meta-episode ends on a time limit, never a real terminal
        assert bool(ts.truncated) == (t == 2)
    np.testing.assert_allclose(ts.final_obs, sigmoid(np.concatenate([actions[2], played])), rtol=1e-6)
    reset_obs, reset_state = reset(key)  # auto-reset inside step uses the step's key
    np.testing.assert_allclose(ts.obs, reset_obs)
    np.testing.assert_allclose(state.opponent, reset_state.opponent)
    assert int(state.t) == 0 and np.all(np.asarray(state.reward_sum) == 0)
    np.testing.assert_allclose(state.last_episode, np.mean(rewards, axis=0), rtol=1e-5)


def test_meta_game_vmaps_over_4096_games():
    env = meta_game.MetaGame("imp", "nl")
    keys = jax.random.split(jax.random.PRNGKey(5), 4096)
    obs, state = jax.vmap(env.reset)(keys)
    actions = jax.random.normal(jax.random.PRNGKey(6), (4096, 5))
    state2, ts = jax.jit(jax.vmap(env.step))(keys, state, actions)
    assert obs.shape == (4096, 10) and ts.reward.shape == (4096,) and state2.opponent.shape == (4096, 5)
    np.testing.assert_allclose(ts.reward, -ts.info["opponent_reward"], atol=1e-5)  # matching pennies is zero-sum
    _, one = jax.jit(env.step)(keys[7], jax.tree.map(lambda x: x[7], state), actions[7])
    np.testing.assert_allclose(ts.reward[7], one.reward, rtol=1e-5)


def test_tiny_ppo_run_on_the_meta_game(tmp_path):
    """The library's PPO on EpisodeStats(MetaGame): finite metrics, one update = one meta-episode."""
    result = runs.run_vs_learner("ipd", "nl", TINY, [0, 1])
    rewards, metrics = result["rewards"], result["ppo_metrics"]
    assert rewards.shape == (2, TINY.meta_episodes, 2) and np.isfinite(rewards).all()
    assert all(np.isfinite(v).all() for v in metrics.values())
    np.testing.assert_array_equal(metrics["episodes"], TINY.num_games)  # every game ends one meta-episode per update
    np.testing.assert_allclose(metrics["episode_length"], 100)
    np.testing.assert_allclose(metrics["episode_return"] / 100, rewards[..., 0], rtol=1e-4)
    assert result["trajectory"].mfos.shape == (100, 2 * TINY.num_games, 5)
    report.write_run(tmp_path, result, TINY, "tiny")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["final"]["mfos"]["n"] == 2 and math.isfinite(summary["final"]["opponent"]["mean"])
    for name in ("metrics.csv", "rewards.png", "policies.png"):  # config.json: written by the CLI at the start
        assert (tmp_path / name).stat().st_size > 0


def test_lambda_schedule():
    assert settings.PRESETS["paper"].nl_decay == pytest.approx(0.0015)
    lam = np.asarray(self_play.nl_probability(np.arange(1024), 0.0015))
    assert lam[0] == 1.0 and lam[100] == pytest.approx(0.85) and lam[666] == pytest.approx(0.001, abs=1e-5)
    assert np.all(lam[667:] == 0.0) and np.all(np.diff(lam) <= 0)
    cpu = settings.PRESETS["cpu"]
    lam = np.asarray(self_play.nl_probability(np.arange(cpu.meta_episodes), cpu.nl_decay))
    assert np.flatnonzero(lam == 0)[0] / cpu.meta_episodes == pytest.approx(667 / 1024, abs=0.01)  # any budget


def test_self_play_follows_the_schedule_and_pays_both():
    """lambda = 1, 0.5, 0, 0: the first meta-episode is against NLs, the last two against each other."""
    budget = TINY.replace(num_games=4)
    _, init, advance = self_play.make_self_play_train("ipd", budget, decay=0.5)
    run = jax.jit(jax.vmap(lambda key: advance(init(key), 0, budget.meta_episodes)))(settings.seed_keys([0, 1]))
    vs_nl = np.asarray(run.vs_nl)
    assert vs_nl.shape == (2, 4) and vs_nl[:, 0].all() and not vs_nl[:, 2:].any()
    rewards, opponents = np.asarray(run.rewards), np.asarray(run.opponent_rewards)
    assert np.isfinite(rewards).all() and np.isfinite(opponents).all()
    # Against each other, each agent's opponent is the other agent.
    np.testing.assert_allclose(opponents[:, 2:], rewards[:, 2:, ::-1], rtol=1e-5)


def test_self_play_game_step():
    env = self_play.SelfPlayGame("ipd")
    obs, state = env.reset(jax.random.PRNGKey(0), jnp.bool_(False))
    actions = jax.random.normal(jax.random.PRNGKey(1), (2, 5))
    _, obs, rewards, _ = env.step(state, actions)
    np.testing.assert_allclose(rewards, np_ipd_rewards(actions[0], actions[1]), rtol=1e-5)
    np.testing.assert_allclose(obs[1], sigmoid(np.concatenate([actions[1], actions[0]])), rtol=1e-6)
    _, state = env.reset(jax.random.PRNGKey(0), jnp.bool_(True))
    new_state, obs, rewards, opponents = env.step(state, actions)
    nl = np.asarray(state.nl)
    np.testing.assert_allclose([rewards[0], opponents[0]], np_ipd_rewards(actions[0], nl[0]), rtol=1e-5)  # seat 0
    np.testing.assert_allclose([opponents[1], rewards[1]], np_ipd_rewards(nl[1], actions[1]), rtol=1e-5)  # seat 1
    np.testing.assert_allclose(new_state.nl[1], games.naive_step(games.GAMES["ipd"], state.nl[1], actions[1], 0),
                               rtol=1e-5)


def test_baseline_rows_are_deterministic_given_the_seed():
    """Two separately built and compiled programs give bit-identical rows; different seeds differ."""
    pairs = (("nl", "nl"), ("lola", "nl"), ("lola", "lola"))
    first = baselines.run_baselines("ipd", 8, [0, 1], pairs=pairs)
    again = baselines.run_baselines("ipd", 8, [0, 1], pairs=pairs)
    for label in first:
        assert first[label]["final_by_seed"] == again[label]["final_by_seed"]
        seed0, seed1 = first[label]["final_by_seed"]
        assert seed0 != seed1
    nl_nl = np.array(first["nl vs nl"]["final_by_seed"])
    lola_nl = np.array(first["lola vs nl"]["final_by_seed"])
    assert np.all(nl_nl < -1.8) and np.all(lola_nl[:, 0] > nl_nl[:, 0])  # LOLA shapes the NL


# ------------------------------------------------------------ ZD extortion
def extortioner(chi, phi, rstp):
    """Press & Dyson: p = (1, 1, 0, 0) + phi [(S_X - P) - chi (S_Y - P)]."""
    r, s, t, p = rstp
    return np.array([1, 1, 0, 0]) + phi * ((np.array([r, s, t, p]) - p) - chi * (np.array([r, t, s, p]) - p))


def test_zd_test_recognises_press_and_dysons_extortioner():
    # Press & Dyson's own example: chi = 3 with (T, R, P, S) = (5, 3, 1, 0) is p = (11/13, 1/2, 7/26, 0).
    result = analysis.zd_extortion_test([11 / 13, 1 / 2, 7 / 26, 0], (3, 0, 5, 1))
    assert result["extortionate"] and result["chi"] == pytest.approx(3) and result["phi"] == pytest.approx(1 / 26)
    assert result["residual"] < 1e-9
    ours = extortioner(2.0, 1 / 6, IPD_RSTP)  # (5/6, 1/6, 2/3, 0) for this IPD's payoffs
    np.testing.assert_allclose(ours, [5 / 6, 1 / 6, 2 / 3, 0])
    result = analysis.zd_extortion_test(ours, IPD_RSTP)
    assert result["extortionate"] and result["chi"] == pytest.approx(2)


@pytest.mark.parametrize("policy, why", [
    ([1, 0, 1, 0], "tit-for-tat is ZD but fair: chi = 1"),
    ([1, 1, 1, 1], "always cooperate: cooperates after DD"),
    ([0, 0, 0, 0], "always defect: phi < 0"),
    ([0.9, 0.02, 0.09, 0.0], "grim-like: not on a ZD plane"),
])
def test_zd_test_rejects_non_extortionate_policies(policy, why):
    assert not analysis.zd_extortion_test(policy, IPD_RSTP)["extortionate"], why


def test_zd_test_on_the_policy_of_player_2():
    assert analysis.own_payoffs(games.GAMES["ipd"], seat=1) == IPD_RSTP == analysis.own_payoffs(games.GAMES["ipd"], seat=0)


def _play_random_opponents(policy, gamma):
    game = games.GAMES["ipd"]._replace(gamma=gamma)
    p = np.clip(np.concatenate([[policy[0]], policy]), 1e-7, 1 - 1e-7)
    own = jnp.asarray(np.log(p / (1 - p)), jnp.float32)
    others = 2 * jax.random.normal(jax.random.PRNGKey(0), (64, 5))
    rewards = jax.vmap(lambda o: jnp.stack(games.memory_one_value(game, o, own)))(others)  # ZD player in seat 1
    return np.asarray(rewards[:, 1]), np.asarray(rewards[:, 0])


def test_extortion_fit_on_reached_payoffs():
    """Against 64 random memory-one opponents in a nearly undiscounted IPD, the extortioner's payoffs lie on
    s_X - P = 2 (s_Y - P); tit-for-tat's on chi = 1."""
    own, other = _play_random_opponents(extortioner(2.0, 1 / 6, IPD_RSTP), gamma=0.999)
    fit = analysis.extortion_fit(own, other, kappa=-2.0)
    assert fit["extortionate"] and fit["chi"] == pytest.approx(2.0, abs=0.05) and fit["r2"] > 0.99
    own, other = _play_random_opponents(np.array([1.0, 0.0, 1.0, 0.0]), gamma=0.999)
    fit = analysis.extortion_fit(own, other, kappa=-2.0)
    assert not fit["extortionate"] and fit["chi"] == pytest.approx(1.0, abs=0.05)


# --------------------------------------------------------------------- CLI
def _parse(*argv):
    from purerl.cli.args import Parser as _Parser

    parser = _Parser(prog="purerl")
    mfos_cli.add_arguments(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    args = parser.parse_args(["mfos", *argv])
    args.argv = ["mfos", *argv]  # as purerl.cli.main records it
    return args


def test_cli_parses_train_and_table():
    args = _parse("--game", "imp", "--opponent", "self", "--preset", "paper", "--seeds", "3", "--out", "x")
    assert (args.what, args.game, args.opponent, args.preset, args.seeds) == ("train", "imp", "self", "paper", 3)
    args = _parse("table", "--preset", "small")
    assert args.what == "table" and args.game is None


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "seeds must be a positive integer, got 0"),
    (["--num-games", "-4"], "num-games must be a positive integer, got -4"),
    (["--meta-episodes", "0"], "meta-episodes must be a positive integer, got 0"),
    (["--seed", "-1"], r"--seed must be in \[0, 2\^32 - 4\] for 4 seeds, got -1"),
    (["--seed", str(2**32 - 2)], r"--seed must be in \[0, 2\^32 - 4\] for 4 seeds"),
    (["--game", "coin", "--seed", str(2**32 - 1)], r"--seed must be in \[0, 2\^32 - 2\] for 2 seeds"),
    (["--merge", "t.json"], "--merge belongs to `purerl mfos report`"),
    (["table", "--resume"], "the table neither resumes nor replaces"),
    (["table", "--overwrite"], "the table neither resumes nor replaces"),
    (["--report", "notes.txt"], "--report must be the path of a markdown"),
    (["table", "--seeds", "0"], "seeds must be a positive integer, got 0"),
    (["table", "--self-play-num-games", "0"], "self-play-num-games must be a positive integer, got 0"),
    (["table", "--self-play-meta-episodes", "-1"], "self-play-meta-episodes must be a positive integer, got -1"),
    (["table", "--self-play-num-games", "100000000"], "self-play-num-games must be at most 16,777,216"),
    (["--num-games", "100000000"], "num-games must be at most 16,777,216"),
    (["--game", "coin", "--num-games", "100000000"], "num-boards must be at most 16,777,216"),
    (["--meta-episodes", "3000000000"], "meta-episodes must be at most 2,147,483,647"),
])
def test_cli_rejects_bad_input_before_compiling(argv, message):
    with pytest.raises(ConfigError, match=message):
        mfos_cli.run_cli(_parse(*argv))


def test_cli_rejects_a_file_or_a_used_directory_as_out(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        mfos_cli.run_cli(_parse("--out", str(tmp_path / "file")))
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        mfos_cli.run_cli(_parse("table", "--out", str(tmp_path / "file" / "sub")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    with pytest.raises(ConfigError, match="is not empty"):
        mfos_cli.run_cli(_parse("--out", str(tmp_path)))


def test_cli_trains_then_resume_finds_the_finished_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert mfos_cli.run_cli(_parse("--game", "ipd", "--preset", "tiny", "--out", str(out))) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["meta_episodes"] == TINY.meta_episodes and config["seeds"] == [0, 1]
    first = (out / "metrics.csv").read_text()
    assert mfos_cli.run_cli(_parse("--game", "ipd", "--preset", "tiny", "--out", str(out), "--resume")) == 0
    assert f"resumed after meta-episode {TINY.meta_episodes}" in capsys.readouterr().out
    assert (out / "metrics.csv").read_text() == first
    with pytest.raises(ConfigError, match="holds a different run"):
        mfos_cli.run_cli(_parse("--game", "ipd", "--preset", "tiny", "--seeds", "1", "--out", str(out), "--resume"))
    with pytest.raises(ConfigError, match="holds no purerl run to continue"):
        mfos_cli.run_cli(_parse("--game", "ipd", "--preset", "tiny", "--out", str(tmp_path / "none"), "--resume"))


def test_one_run_writes_its_published_report_with_the_paper_numbers_and_its_agents(tmp_path, monkeypatch):
    """`mfos --report` (the paper-scale IPD document): final numbers beside the paper's, the ZD analysis,
    the plots and every seed's agent beside the report, and one manifest part naming the command."""
    from purerl_lab.publish import provenance

    monkeypatch.setattr(provenance, "git_state", lambda: ("c0ffee" * 6 + "abcd", False))  # a clean checkout
    report = tmp_path / "results" / "mfos_paper.md"
    argv = ("--game", "ipd", "--preset", "tiny", "--out", str(tmp_path / "run"), "--report", str(report))
    assert mfos_cli.run_cli(_parse(*argv)) == 0
    text = report.read_text()
    assert "| M-FOS |" in text and "| -0.48 |" in text and "| -2.17 |" in text and "Press & Dyson" in text
    stem = report.parent / "mfos_paper"
    assert {p.name for p in stem.iterdir()} == {"ipd-vs-nl.json", "ipd-vs-nl_rewards.png", "ipd-vs-nl_policies.png",
                                               "params"}
    # the summary opens the document (after the title), the differences and provenance close it
    lines = text.split("\n")
    assert lines[2] == replication.START and lines.index(document.FOOTER) > lines.index(replication.END)
    assert "not resolved" in text.split(replication.END)[0] and "no traced source" in text.split(replication.END)[0]
    assert "**" not in text.split(document.FOOTER)[0].replace("**Primary:**", "")  # 2 seeds: no verdict in bold
    # the render writes the same document again from the record, without training
    assert run_report.render(report) == report and report.read_text() == text
    params = runs.load_agents(stem / "params" / "ipd-vs-nl.msgpack")
    assert jax.tree.leaves(params)[0].shape[0] == TINY.seeds  # one agent per seed
    part = json.loads((report.parent / "manifest.json").read_text())["mfos_paper.md"]["parts"]["ipd-vs-nl"]
    assert part["command"].endswith(f"--report {provenance.RUNS}/results/mfos_paper.md")  # no path of this machine
    assert part["budget"]["seeds"] == [0, 1]
    assert len(part["sessions"]) == 1 and part["mixed_sources"] is False
    assert "no CI, no verdict" in text  # 2 seeds: the difference from the paper, but no verdict
    # another study's document, or a pairing this study does not publish, is refused before anything runs
    with pytest.raises(ConfigError, match="it is the mfos_paper study's document"):
        mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--report", str(report)))
    with pytest.raises(ConfigError, match="publishes the mfos_paper study's pairings"):
        mfos_cli.run_cli(_parse("--game", "ipd", "--opponent", "lola", "--preset", "tiny", "--out",
                                str(tmp_path / "lola"), "--report", str(report)))
    assert not (tmp_path / "lola").exists()


def test_table_writes_under_its_run_directory_unless_asked_for_a_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert mfos_cli._table_report(_parse("table", "--out", "here")) == Path("here") / "mfos.md"
    default = mfos_cli._table_report(_parse("table"))
    assert default.parts[0] == "runs" and default.name == "mfos.md"
    assert mfos_cli._table_report(_parse("table", "--report", "docs/x.md")) == Path("docs/x.md")
    with pytest.raises(ConfigError, match="not both"):
        mfos_cli._table_report(_parse("table", "--out", "here", "--report", "docs/x.md"))
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "thesis.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not an empty directory"):
        mfos_cli._table_report(_parse("table", "--out", "used"))
    assert not (tmp_path / "docs").exists() and (tmp_path / "used" / "thesis.txt").read_text() == "mine"


def test_report_rerenders_the_markdown_from_the_table_data(tmp_path):
    report = tmp_path / "mfos.md"
    with pytest.raises(ConfigError, match="needs --report"):
        mfos_cli.run_cli(_parse("report"))
    with pytest.raises(ConfigError, match="no table data"):
        mfos_cli.run_cli(_parse("report", "--report", str(report)))
    (tmp_path / "mfos").mkdir()
    record = {"preset": "tiny", "settings": dataclasses.asdict(TINY), "seeds": [0, 1], "games": {},
              "provenance": {"command": "purerl mfos table", "commit": "abc1234", "machine": "m", "date": "d"}}
    (tmp_path / "mfos" / "table.json").write_text(json.dumps(record))
    earlier = {"command": "purerl results --render mfos.md", "commit": "e" * 40, "date": "d"}
    (tmp_path / "manifest.json").write_text(json.dumps({"mfos.md": {"study": "mfos", "parts": {}, "rendered": earlier}}))
    assert mfos_cli.run_cli(_parse("report", "--report", str(report))) == 0
    assert "rendered" not in json.loads((tmp_path / "manifest.json").read_text())["mfos.md"]  # no older claim
    text = report.read_text()
    assert "e" * 40 not in text and "This text was rendered from that data by `" in text
    assert "regenerate: `scripts/reproduce.sh mfos`" in text and "Deliberate differences" in text
    assert "[mfos/table.json](mfos/table.json)" in text
    assert "too few seeds for a CI" in text
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**record, "seeds": [5]}))
    with pytest.raises(ConfigError, match="other settings or seeds"):
        mfos_cli.run_cli(_parse("report", "--report", str(report), "--merge", str(other)))


def test_cli_rejects_unknown_choices():
    with pytest.raises(SystemExit) as exit_:
        _parse("--game", "chess")
    assert exit_.value.code == 2


# -------------------------------------------------------------------- slow
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_cpu_preset_reaches_the_ipd_target():
    """IPD, M-FOS vs NL, the cpu preset (4 seeds, about 2 min): M-FOS > -0.9 and NL < -1.4 per step."""
    result = runs.run_vs_learner("ipd", "nl", settings.PRESETS["cpu"], [0, 1, 2, 3])
    assert result["final"]["mfos"]["mean"] > -0.9
    assert result["final"]["opponent"]["mean"] < -1.4


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_cpu_preset_wins_matching_pennies():
    result = runs.run_vs_learner("imp", "nl", settings.PRESETS["cpu"], [0, 1, 2, 3])
    assert result["final"]["mfos"]["mean"] > 0.6


def test_a_killed_mfos_run_resumes_to_the_same_numbers(tmp_path):
    full = runs.run_vs_learner("ipd", "nl", TINY, [0, 1], checkpoint_dir=tmp_path / "full", chunk=1)
    cut = dict(checkpoint_dir=tmp_path / "cut", chunk=1)
    with stopping.cut_after(2):
        assert runs.run_vs_learner("ipd", "nl", TINY, [0, 1], **cut) is None
    resumed = runs.run_vs_learner("ipd", "nl", TINY, [0, 1], resume=True, **cut)
    assert resumed["resumed_from_meta_episode"] == 2
    np.testing.assert_array_equal(resumed["rewards"], full["rewards"])
    assert np.isfinite(full["rewards"]).all()


def test_table_self_play_has_its_own_budget():
    small = settings.PRESETS["small"]
    self_play_budget = small.for_self_play()
    assert self_play_budget.meta_episodes == small.self_play_meta_episodes
    assert self_play_budget.num_games == (small.self_play_num_games or small.num_games)
    assert settings.PRESETS["cpu"].for_self_play() == settings.PRESETS["cpu"]


def check_table_agents_replay(tmp_path, capsys, record):
    """The table saved the M-FOS agents it trained against NL; `evaluate` replays them without training and
    reproduces every number of the table's analysis; a changed agent is reported as a difference (exit 1)."""
    report_path = tmp_path / "mfos.md"
    agents = runs.agents_path(tmp_path / "mfos", "ipd", "nl")
    assert agents.stat().st_size > 0 and "ipd-vs-nl.msgpack" in report_path.read_text()
    assert mfos_cli.run_cli(_parse("evaluate", "--report", str(report_path))) == 0
    assert "the committed agents reproduce the table" in capsys.readouterr().out
    again = runs.replay_table_agents(record, tmp_path / "mfos", "ipd")
    assert runs.largest_difference({"analysis": record["games"]["ipd"]["analysis_vs_nl"],
                                    "analysis_greedy": record["games"]["ipd"]["analysis_vs_nl_greedy"]}, again) == 0
    params = runs.load_agents(agents)
    runs.save_agents(agents, jax.tree.map(lambda x: x * 0.5, params))
    assert mfos_cli.run_cli(_parse("evaluate", "--report", str(report_path))) == 1


def test_table_commits_its_agents_and_evaluate_replays_them_exactly(tmp_path, monkeypatch, capsys):
    """M-FOS against NL trains for real; the table's other pairings are stand-ins (the whole tiny table trains
    in test_the_whole_tiny_table_trains_every_pairing_and_its_agents_replay, slow)."""
    _fake_training(monkeypatch, 0.25, train_vs_nl=True)
    record = table.run_table(TINY, [0, 1], tmp_path / "mfos.md", ("ipd",), "tiny", argv=None, log=lambda *_: None)
    assert record["games"]["ipd"]["rows"]["mfos vs nl"]["final_by_seed"] != [[0.25, 0.25]] * 2  # trained, not a stand-in
    check_table_agents_replay(tmp_path, capsys, record)


@pytest.mark.slow
def test_the_whole_tiny_table_trains_every_pairing_and_its_agents_replay(tmp_path, capsys):
    record = table.run_table(TINY, [0, 1], tmp_path / "mfos.md", ("ipd",), "tiny", argv=None, log=lambda *_: None)
    assert set(record["games"]["ipd"]["rows"]) >= {"nl vs nl", "mfos vs nl", "mfos vs lola", "mfos vs mamaml",
                                                   "mfos vs mfos"}
    check_table_agents_replay(tmp_path, capsys, record)


def test_evaluate_without_committed_agents_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no table data"):
        mfos_cli.run_cli(_parse("evaluate", "--report", str(tmp_path / "mfos.md")))
    (tmp_path / "mfos").mkdir()
    (tmp_path / "mfos" / "table.json").write_text(json.dumps({"games": {"ipd": {}}, "settings": {}, "seeds": [0]}))
    with pytest.raises(ConfigError, match="no committed M-FOS agents"):
        mfos_cli.run_cli(_parse("evaluate", "--report", str(tmp_path / "mfos.md")))


# ------------------------------------------------------- one game into a report
def _fake_training(monkeypatch, value: float, train_vs_nl: bool = False):
    """run_table with every trained number VALUE and nothing compiled: these tests are about which games a
    report keeps. With TRAIN_VS_NL, M-FOS against NL (the agents a table commits) trains for real."""
    cell = runs.summarize_seeds(np.full(2, value))
    fit = dict(chi=1.0, phi=0.1, residual=0.5, tolerance=0.05, kappa=-2.0, r2=0.5, points=10, own_mean=value,
               other_mean=value, extortionate=False)
    policy = {"late_meta_steps": 10, "policy_test": fit, "payoff_fit": fit, "payoffs_RSTP": IPD_RSTP,
              "late_rewards": {"mfos": value, "opponent": value},
              **{k: dict.fromkeys(report.POLICY_LABELS, 0.5) for k in ("mfos_policy", "opponent_policy")}}
    result = {"final": dict.fromkeys(("mfos", "opponent", "agent0", "agent1"), cell), "final_by_seed": [[value, value]] * 2,
              "run_s": 1.0, "compile_s": 1.0, "params": {"w": np.zeros(2)}, "analysis": policy,
              "analysis_greedy": policy, "trajectory": None}
    rows = {f"{a} vs nl": {"final": {"shaper": cell, "opponent": cell}} for a in ("nl", "lola")}

    def vs_learner(game, opponent, *rest):
        return runs.run_vs_learner(game, opponent, *rest) if train_vs_nl and opponent == "nl" else result

    for name, fake in dict(mamaml_init=lambda *_: np.zeros(5), run_baselines=lambda *_: dict(rows),
                           run_vs_learner=vs_learner, run_self_play=lambda *_: result,
                           plot_policies=lambda *_: None, plot_rewards=lambda *_: None).items():
        monkeypatch.setattr(table, name, fake)


def _files(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_one_game_table_keeps_the_reports_other_games_with_their_provenance(tmp_path, monkeypatch):
    r = tmp_path / "mfos.md"
    _fake_training(monkeypatch, 0.25)
    assert mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--game", "ipd", "--report", str(r))) == 0
    _fake_training(monkeypatch, 0.5)
    assert mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--game", "imp", "--report", str(r))) == 0
    before = json.loads((tmp_path / "mfos" / "table.json").read_text())
    parts = json.loads((tmp_path / "manifest.json").read_text())["mfos.md"]["parts"]
    _fake_training(monkeypatch, 0.75)
    assert mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--game", "chicken", "--report", str(r))) == 0
    after = json.loads((tmp_path / "mfos" / "table.json").read_text())
    assert list(after["games"]) == ["ipd", "imp", "chicken"]
    assert after["games"]["ipd"] == before["games"]["ipd"]  # kept by the imp run, with the ipd run's provenance
    assert after["games"]["imp"] == {**before["games"]["imp"], "provenance": before["provenance"]}
    assert after["games"]["ipd"]["provenance"]["command"].endswith("--game ipd --report " + str(r))
    chicken = after["games"]["chicken"]
    assert "provenance" not in chicken and chicken["elapsed_s"] > 0
    assert "--game chicken" in after["provenance"]["command"]
    assert chicken["rows"]["nl vs nl"]["final"]["shaper"]["mean"] == 0.75
    manifest = json.loads((tmp_path / "manifest.json").read_text())["mfos.md"]["parts"]
    assert {k: manifest[k] for k in ("ipd", "imp")} == parts and manifest["chicken"]["wall_s"] > 0
    text = r.read_text()
    assert "CHICKEN was run by `purerl mfos table --preset tiny --game chicken" in text
    assert "IPD and IMP were kept with the same settings from the runs named in their sections" in text
    ipd = text[text.index("## IPD"):text.index("## IMP")]
    assert "Kept from a separate run with the same settings: `purerl mfos table --preset tiny --game ipd" in ipd
    assert "| NL vs NL | +0.25 (n=2: +0.25, +0.25) |" in ipd and "- **ipd**:" in text and "- **chicken**:" in text

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(table, "run_baselines", interrupted)  # a rerun of IPD stopped in its first game
    with pytest.raises(KeyboardInterrupt):
        mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--game", "ipd", "--report", str(r)))
    stopped = json.loads((tmp_path / "mfos" / "table.json").read_text())
    assert stopped["games"] == {**after["games"], "chicken": {**chicken, "provenance": after["provenance"]}}
    assert "| NL vs NL | +0.25 (n=2: +0.25, +0.25) |" in r.read_text() and "- **ipd**:" in r.read_text()


def test_a_kept_game_from_before_per_game_times_takes_its_time_from_the_manifest(tmp_path):
    """The published table, as a table written before per-game times, merged with a one-game run of its settings."""
    results = Path(__file__).resolve().parents[2] / "docs" / "results"
    (tmp_path / "mfos").mkdir()
    for name in ("mfos.md", "manifest.json"):
        (tmp_path / name).write_bytes((results / name).read_bytes())
    published = json.loads((results / "mfos" / "table.json").read_text())
    for entry in published["games"].values():
        entry.pop("elapsed_s", None)
    (tmp_path / "mfos" / "table.json").write_text(json.dumps(published))
    small = settings.PRESETS["small"]
    record = table.start_record(table.new_record(small, list(range(small.seeds)), "small", None), tmp_path / "mfos.md",
                                ("chicken",))
    parts = json.loads((results / "manifest.json").read_text())["mfos.md"]["parts"]
    for game in ("ipd", "imp", "chicken"):
        kept = record["games"][game]
        assert kept["rows"] == published["games"][game]["rows"] and kept["provenance"] == published["provenance"]
        assert kept["elapsed_s"] == parts[game]["wall_s"]


def test_a_table_of_other_settings_is_refused_before_compiling_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    from purerl.cli import main

    r = tmp_path / "mfos.md"
    _fake_training(monkeypatch, 0.25)
    assert mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--game", "ipd", "--report", str(r))) == 0
    assert mfos_cli.run_cli(_parse("table", "--preset", "tiny", "--game", "imp", "--report", str(r))) == 0
    (tmp_path / "thesis.md").write_text("mine")
    files = _files(tmp_path)

    def compiles(*_):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(table, "mamaml_init", compiles)
    code = main(["mfos", "table", "--preset", "tiny", "--meta-episodes", "3", "--game", "chicken", "--report", str(r)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "holds a table of other settings (meta_episodes 4 there, 3 here)" in err
    assert "pass another --report path, or rerun all its games (ipd, imp)" in err
    assert main(["mfos", "table", "--preset", "tiny", "--game", "ipd", "--report", str(tmp_path / "thesis.md")]) == 2
    assert "refusing to replace" in capsys.readouterr().err  # not listed in the manifest: not purerl's
    assert _files(tmp_path) == files and not (tmp_path / "thesis").exists()
    # rerunning every game of the unlike table replaces it, and its manifest parts stop vouching for it at once
    record = table.start_record(table.new_record(TINY.replace(meta_episodes=3), [0, 1], "tiny", None), r,
                                ("ipd", "imp"))
    assert record["games"] == {} and provenance.read_manifest(tmp_path)["mfos.md"]["parts"] == {}


def test_mamaml_and_the_baselines_draw_no_key_a_seeds_run_splits_off():
    """An experiment's seed key is PRNGKey(s) and its runs split it (`split(k, n)[i]` is `fold_in(k, i)`): MAMAML's
    starts once took `fold_in(PRNGKey(0), 17 * game + seat)`, seed 0's own children."""
    children = {tuple(np.asarray(k).tolist()) for s in range(4) for k in jax.random.split(jax.random.PRNGKey(s), 4096)}
    children |= {tuple(np.asarray(k).tolist()) for k in settings.seed_keys(list(range(64)))}
    drawn = [settings.mamaml_key(game, seat) for game in settings.TRAIN_GAMES for seat in (0, 1)]
    drawn += [jax.random.fold_in(k, baselines.STREAM) for k in settings.seed_keys(list(range(4)))]
    assert not {tuple(np.asarray(k).tolist()) for k in drawn} & children
    assert len({tuple(np.asarray(k).tolist()) for k in drawn}) == len(drawn)


@pytest.mark.parametrize("low, high, words", [
    (None, None, "no CI, no verdict"), (-0.55, -0.42, "yes"), (-0.70, -0.60, "no"), (-0.60, -0.45, "not distinguishable"),
])
def test_closeness_to_a_target_is_judged_by_the_whole_ci_and_never_in_bold(low, high, words):
    assert run_report.within({"mean": 0.0, "ci95_low": low, "ci95_high": high}, -0.48) == words


def test_the_paper_summary_names_its_missing_ci_only_below_ten_seeds():
    """Four seeds: no CI, so the words say there is no verdict; ten: each closeness verdict from its CI."""
    from purerl_lab.studies.mfos import summary

    def record(n: int) -> dict:
        mfos, nl = np.linspace(-0.5, -0.46, n), np.linspace(-2.2, -2.14, n)
        final = {"mfos": runs.summarize_seeds(mfos), "opponent": runs.summarize_seeds(nl)}
        return {"game": "ipd", "opponent": "nl", "preset": "paper", "seeds": list(range(n)), "final": final,
                "final_by_seed": np.stack([mfos, nl], axis=1).tolist(), "analysis": {}}

    few, many = ("\n".join(summary.paper_lines([record(n)], 0.1)) for n in (4, 10))
    assert "With 4 seeds there is no 95% CI" in few and "within 0.1: no CI, no verdict" in few
    assert "no 95% CI" not in many and many.count("within 0.1: yes") == 2 and "**yes" not in many
    # the fresh-seeds cell: the study registers no replication, so it never reads "not run yet"
    assert re.search(r"\| \+\d\.\d\d \(n=4, no CI\) \| none: no CI to replicate \| not resolved \|", few)
    assert "| none registered |" in many and "not run yet" not in few + many
