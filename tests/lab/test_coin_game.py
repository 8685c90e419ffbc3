"""The coin game, recurrent PPO, and M-FOS in the coin game."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos.ppo import PPO
from purerl.run import stopping
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl_lab.studies.mfos.coin_game import CoinGame, CoinState
from purerl.envs.core import ActionSpace, Env, Timestep
from purerl.envs.wrappers import EpisodeStats
from purerl.nets.layers import init_params
from purerl_lab.studies.mfos.coin_nets import ConvGRUActorCritic
from purerl.checks import ConfigError
from purerl_lab.publish import document, records, replication
from purerl_lab.studies.mfos import coin as mfos_coin
from purerl_lab.studies.mfos import coin_report

RIGHT, LEFT, DOWN, UP = range(4)


def state(red, blue, red_coin, blue_coin):
    return CoinState(jnp.array([red, blue]), jnp.array([red_coin, blue_coin]))


@pytest.mark.parametrize(
    "actions, rewards, own, other",
    [
        ((RIGHT, LEFT), (1.0, 0.0), (True, False), (False, False)),  # red takes its own coin
        ((DOWN, LEFT), (1.0, -2.0), (False, False), (True, False)),  # red takes blue's coin
        ((UP, UP), (0.0, 0.0), (False, False), (False, False)),  # nobody takes a coin
    ],
)
def test_coin_game_rewards(actions, rewards, own, other):
    # red at (0,0), blue at (2,2); red coin at (0,1), blue coin at (1,0).
    start = state([0, 0], [2, 2], [0, 1], [1, 0])
    after, got, pickups = CoinGame().step(jax.random.PRNGKey(0), start, jnp.array(actions))
    np.testing.assert_array_equal(got, rewards)
    np.testing.assert_array_equal(pickups.own, own)
    np.testing.assert_array_equal(pickups.other, other)


def test_both_take_the_same_coin_and_it_respawns_on_a_free_cell():
    # red at (0,0) and blue at (0,2) both step onto the red coin at (0,1).
    start = state([0, 0], [0, 2], [0, 1], [2, 2])
    game = CoinGame()
    for seed in range(20):
        after, rewards, _ = game.step(jax.random.PRNGKey(seed), start, jnp.array([RIGHT, LEFT]))
        np.testing.assert_array_equal(rewards, [-1.0, 1.0])  # red: +1 for its coin, -2 as blue took it too
        assert not np.any(np.all(np.asarray(after.coins[0]) == np.asarray(after.positions), axis=-1))
        np.testing.assert_array_equal(after.coins[1], [2, 2])


def test_moves_wrap_around_the_torus_and_views_are_egocentric():
    start = state([0, 0], [2, 2], [1, 1], [1, 2])
    after, _, _ = CoinGame().step(jax.random.PRNGKey(0), start, jnp.array([LEFT, DOWN]))
    np.testing.assert_array_equal(after.positions, [[0, 2], [0, 2]])
    views = CoinGame().observe(after)
    assert views.shape == (2, 3, 3, 4)
    np.testing.assert_array_equal(views[1], views[0][..., jnp.array([1, 0, 3, 2])])
    assert views[0][1, 1, 2] == 1.0 and views[1][1, 1, 3] == 1.0  # red's coin: own for red, other for blue


def test_recurrent_unroll_equals_stepping_with_resets():
    net = ConvGRUActorCritic(ActionSpace(True, 4), channels=4, features=8)
    params = jax.jit(lambda key: init_params(net, key, (3, 3, 5)))(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (6, 3, 3, 3, 5))  # [T, N, ...]
    resets = jnp.array([[1, 1, 1], [0, 0, 1], [0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]], bool)
    carry = net.initial_carry(3)
    # jitted: op by op, flax's layers would compile each small op on its own
    unroll, step = (jax.jit(functools.partial(net.apply, method=m)) for m in ("unroll", "step"))
    carries, pi, values = unroll(params, carry, obs, resets)
    for t in range(6):
        carry, step_pi = step(params, carry, obs[t], resets[t])
        np.testing.assert_allclose(step_pi.logits, pi.logits[t], atol=1e-5)
        np.testing.assert_allclose(carry[1], carries[1][t], atol=1e-5)
    # A reset at t=4 makes env 0's later outputs independent of what it saw before.
    altered = obs.at[:4, 0].set(0.0)
    _, pi_altered, _ = unroll(params, net.initial_carry(3), altered, resets)
    np.testing.assert_allclose(pi_altered.logits[4:, 0], pi.logits[4:, 0], atol=1e-6)
    assert not np.allclose(pi_altered.logits[1:4, 0], pi.logits[1:4, 0])


class Recall(Env):
    """A cue (all ones or all zeros) at the first of 3 steps; naming it at the last step pays 1.

    Without memory the best policy guesses (0.5); with it the return is 1.
    """

    name = "recall"
    observation_shape = (3, 3, 2)
    action_space = ActionSpace(discrete=True, num_actions=2)
    max_episode_steps = 3

    def _obs(self, cue, t):
        return jnp.stack([jnp.full((3, 3), jnp.where(t == 0, cue, 0.0)), jnp.full((3, 3), t / 2.0)], axis=-1)

    def reset(self, key):
        cue = jax.random.bernoulli(key).astype(jnp.float32)
        return self._obs(cue, 0), (cue, jnp.int32(0))

    def step(self, key, state, action):
        cue, t = state
        last = t == 2
        reward = jnp.where(last & (action == cue.astype(jnp.int32)), 1.0, 0.0)
        reset_obs, reset_state = self.reset(key)
        next_state = jax.tree.map(lambda a, b: jnp.where(last, a, b), reset_state, (cue, t + 1))
        final = self._obs(cue, t + 1)
        ts = Timestep(jnp.where(last, reset_obs, final), reward, last, jnp.bool_(False), final, {})
        return next_state, ts


def test_recurrent_ppo_learns_a_memory_task():
    config = PPOConfig(env="recall", num_envs=32, num_steps=12, total_timesteps=32 * 12 * 120, update_epochs=4,
                       num_minibatches=4, anneal_lr=False)
    env = EpisodeStats(Recall())
    ppo = PPO(config, env=env, network=ConvGRUActorCritic(env.action_space, channels=4, features=16))
    hp = HyperParams(lr=3e-3, gamma=0.9, gae_lambda=0.95, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5,
                     max_grad_norm=0.5).as_arrays()
    metrics = jax.jit(ppo)(jax.random.PRNGKey(0), hp).metrics
    final = float(np.nanmean(np.asarray(metrics["episode_return"])[-10:]))
    assert final > 0.9, final  # memoryless play cannot beat 0.5


def test_recurrent_network_needs_whole_sequences_per_minibatch():
    config = PPOConfig(env="recall", num_envs=6, num_steps=12, total_timesteps=6 * 12, num_minibatches=4)
    with pytest.raises(Exception, match="num-envs=6 is not divisible by num-minibatches=4"):
        PPO(config, env=EpisodeStats(Recall()), network=ConvGRUActorCritic(Recall.action_space))


@pytest.fixture(scope="module")
def meta_game():
    env = mfos_coin.CoinGameMeta(num_boards=3)
    step = jax.jit(env.step_batch)
    obs, state = jax.jit(env.reset_batch)(jax.random.split(jax.random.PRNGKey(0), 3))
    # reset fills last_meta with a weakly typed NaN; step returns it strongly typed. Strong from the start, the
    # test's steps run one compiled program instead of two.
    state = state._replace(last_meta=jnp.asarray(state.last_meta, jnp.float32))
    return env, step, obs, state


def test_meta_game_opponent_learns_after_each_inner_episode_and_resets_each_meta_episode(meta_game):
    env, step, obs, state = meta_game
    assert obs.shape == (3, 3, 3, 7)
    first = state.opponent.params
    key = jax.random.PRNGKey(1)
    params_seen, truncated_at = [first], []
    for t in range(mfos_coin.META_STEPS):
        key, action_key, step_key = jax.random.split(key, 3)
        state, ts = step(jax.random.split(step_key, 3), state, jax.random.randint(action_key, (3,), 0, 4))
        if bool(ts.truncated.any()):
            truncated_at.append(t + 1)
            assert bool(ts.truncated.all()) and not bool(ts.terminated.any())
        changed = not all(jax.tree.leaves(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), state.opponent.params,
                                                       params_seen[-1])))
        if (t + 1) % mfos_coin.INNER_STEPS:
            assert not changed, f"opponent changed mid inner episode at step {t + 1}"
        else:
            assert changed, f"opponent did not update after step {t + 1}"
            params_seen.append(state.opponent.params)
    assert truncated_at == [mfos_coin.META_STEPS] and step._cache_size() == 1
    assert int(state.t) == 0 and int(state.episode) == 0
    log = np.asarray(state.last_meta)
    assert np.all(np.isfinite(log)) and -2.0 <= log[0] <= 1.0 and 0.0 <= log[2] <= 1.0


def test_coin_cli_smoke(tmp_path, capsys):
    from purerl import cli
    from purerl_lab.publish import provenance

    out, report = tmp_path / "coin", tmp_path / "docs" / "coin.md"
    fresh = ["mfos", "--game", "coin", "--preset", "tiny", "--out", str(tmp_path / "fresh"), "--report", str(report),
             "--fresh-seeds"]
    assert cli.main(fresh) == 2 and not (tmp_path / "fresh").exists()  # a replication of no run: refused at once
    assert "run the study's command (without --fresh-seeds) first" in capsys.readouterr().err
    code = cli.main(["mfos", "--game", "coin", "--preset", "tiny", "--out", str(out), "--report", str(report)])
    assert code == 0
    part = provenance.read_manifest(report.parent)["coin.md"]["parts"]["coin"]
    assert part["command"] == "purerl mfos --game coin --preset tiny --out RUNS/coin --report RUNS/docs/coin.md"
    assert part["budget"] == {"population": None, "generations": 2, "seeds": [0], "env_steps_per_run": 4 * 2 * 16 * 16}
    text = report.read_text()
    assert "`purerl mfos --game coin --preset tiny" in text and (report.parent / "coin" / "learning.png").exists()
    record = json.loads((report.parent / "coin" / "coin.json").read_text())
    assert record["seeds"] == [0] and np.asarray(record["final_by_seed"]).shape == (1, len(mfos_coin.LOG_COLUMNS))
    lines = text.split("\n")  # the summary first, the differences and provenance last
    assert lines[2] == replication.START and lines.index(document.FOOTER) > lines.index(replication.END)
    assert coin_report.render(report) == report and report.read_text() == text  # again from the record alone
    summary = (out / "summary.json").read_text()
    assert '"mfos_own_coin_rate"' in summary
    assert (out / "learning.png").stat().st_size > 0
    lines = (out / "metrics.csv").read_text().splitlines()
    assert len(lines) == 1 + mfos_coin.PRESETS["tiny"].meta_episodes
    assert "coin game, M-FOS vs PPO" in capsys.readouterr().out
    assert cli.main(["mfos", "--game", "coin", "--preset", "tiny", "--out", str(out), "--resume"]) == 0
    assert "resumed after meta-episode 2" in capsys.readouterr().out
    # its replication: the same run on seeds from PRNGKey(70000) on, a part of its own beside the study's
    assert cli.main(fresh) == 0
    parts = provenance.read_manifest(report.parent)["coin.md"]["parts"]
    assert set(parts) == {"coin", "fresh_coin"} and parts["fresh_coin"]["budget"]["seeds"] == [70000]
    assert json.loads((report.parent / "coin" / "fresh_coin.json").read_text())["seeds"] == [70000]
    assert "On fresh seeds (70000..70000)" in report.read_text()
    # a replication's record swapped for the study's is refused before a render writes anything
    (report.parent / "coin" / "fresh_coin.json").write_text((report.parent / "coin" / "coin.json").read_text())
    entry = provenance.read_manifest(report.parent)["coin.md"]
    with pytest.raises(ConfigError, match="part fresh_coin: coin/fresh_coin.json is the record of part coin"):
        records.require_complete(report.parent, "coin.md", entry)


@pytest.mark.parametrize("argv, message", [
    (["--game", "ipd", "--opponent", "ppo"], "the coin game's opponent is ppo"),
    (["--game", "coin", "--opponent", "nl"], "the coin game's opponent is ppo"),
    (["--game", "coin", "--preset", "small"], "unknown coin-game preset 'small'"),
    (["--game", "coin", "--num-games", "0"], "num-boards must be a positive integer"),
    (["--game", "coin", "--fresh-seeds"], "--fresh-seeds replicates a published run: it needs --report PATH"),
    (["--game", "coin", "--fresh-seeds", "--seed", "3", "--report", "x.md"], "--fresh-seeds chooses the seeds"),
])
def test_coin_cli_rejects_bad_input_before_compiling(argv, message, capsys):
    from purerl import cli

    assert cli.main(["mfos", *argv]) == 2
    assert message in capsys.readouterr().err


def test_coin_run_resumes_bit_for_bit(tmp_path):
    settings = mfos_coin.PRESETS["tiny"]  # test_coin_cli_smoke's programs: one compile serves both tests
    assert settings.meta_episodes == 2
    quiet = dict(chunk=1, log=lambda message: None)
    full = mfos_coin.run(settings, [0], tmp_path / "full", **quiet)
    with stopping.cut_after(1):
        assert mfos_coin.run(settings, [0], tmp_path / "cut", **quiet) is None
    resumed = mfos_coin.run(settings, [0], tmp_path / "cut", resume=True, **quiet)
    assert resumed["resumed_from_meta_episode"] == 1
    np.testing.assert_array_equal(resumed["log"], full["log"])
    # run_s is summed over both sessions, so the rate counts both meta-episodes, not the one run last
    board_steps = settings.num_boards * mfos_coin.META_STEPS * settings.meta_episodes
    assert resumed["steps_per_s"] == pytest.approx(board_steps / resumed["run_s"])
    assert np.all(np.isfinite(full["log"]))


def test_coin_cli_resume_refuses_other_settings(tmp_path, capsys):
    from purerl import cli

    out = tmp_path / "coin"
    out.mkdir()
    (out / "config.json").write_text("{}")
    assert cli.main(["mfos", "--game", "coin", "--preset", "tiny", "--out", str(out), "--resume"]) == 2
    assert "holds a different run" in capsys.readouterr().err


@pytest.mark.parametrize("grid", [(3, 3), (4, 5)])
def test_torus_conv_equals_a_circular_flax_conv(grid):
    import flax.linen as nn

    from purerl_lab.studies.mfos.coin_nets import TorusConv

    x = jax.random.normal(jax.random.PRNGKey(0), (2, 5) + grid + (7,))
    params = TorusConv(4).init(jax.random.PRNGKey(1), x)
    reference = nn.Conv(4, (3, 3), padding="CIRCULAR").apply(params, x)
    np.testing.assert_allclose(TorusConv(4).apply(params, x), reference, atol=1e-5)
    gradient = jax.grad(lambda p: (TorusConv(4).apply(p, x) ** 2).sum())(params)
    reference_gradient = jax.grad(lambda p: (nn.Conv(4, (3, 3), padding="CIRCULAR").apply(p, x) ** 2).sum())(params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4), gradient, reference_gradient)
