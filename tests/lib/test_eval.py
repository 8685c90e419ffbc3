"""`purerl eval`: greedy or sampled (reproducible from its seed), recurrent runs with their memory, and the GIF."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from cli_run import GRU, SMALL, run_cli
from purerl import envs
from purerl.run import policy
from purerl.cli import main


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "ppo"
    assert main(["train", "--out", str(out), "--seeds", "2", *SMALL]) == 0
    return out


@pytest.fixture(scope="module")
def gru_run(tmp_path_factory):
    """A recurrent run on CartPole without velocities (a masked gymnax task: the GIF unwraps its state)."""
    out = tmp_path_factory.mktemp("eval") / "gru"
    assert main(["train", *GRU, "--preset", "pomdp", "--env", "CartPole-NoVel-v1", "--out", str(out)]) == 0
    return out


@pytest.mark.smoke
def test_eval_says_which_policy_and_records_it(capsys, ppo_run):
    code, out, err = run_cli(capsys, "eval", ppo_run, "--episodes", "3", "--policy", "sample", "--seed", "7")
    assert code == 0, err
    assert out.startswith("sampled return over 3 episodes x 2 members (seed 7)")
    report = json.loads((ppo_run / "eval.json").read_text())
    assert report["policy"] == "sample" and report["seed"] == 7 and len(report["sampled_return_by_member"]) == 2
    code, out, err = run_cli(capsys, "eval", ppo_run, "--episodes", "3")
    assert code == 0 and out.startswith("greedy return over 3 episodes"), err
    assert json.loads((ppo_run / "eval.json").read_text())["policy"] == "greedy"


def test_sampling_differs_from_greedy_and_a_seed_fixes_it(ppo_run):
    _, members, train, state = policy.load_run(ppo_run)
    hps = members.hyperparams.as_arrays()

    @jax.jit(static_argnums=1)
    def returns(key, sample):
        return jax.vmap(lambda p, s, h: policy.evaluate(train, p, s, key, 8, sample, h))(
            state.params, state.obs_stats, hps)

    key, other = jax.random.PRNGKey(0), jax.random.PRNGKey(1)
    greedy, sampled = np.asarray(returns(key, False)), np.asarray(returns(key, True))
    assert not np.array_equal(greedy, sampled)  # a barely trained policy: its samples are not its argmax
    np.testing.assert_array_equal(sampled, np.asarray(returns(key, True)))
    assert not np.array_equal(sampled, np.asarray(returns(other, True)))
    np.testing.assert_array_equal(greedy, np.asarray(returns(jax.random.PRNGKey(0), False)))


def test_sampled_evaluation_draws_actions_from_keys_no_episode_uses():
    """A sampled action's key is never an episode's reset key, step key or their parents (episode 1's reset key
    was the first action key once)."""
    key, episodes, steps = jax.random.PRNGKey(3), 4, 6
    reset, step, action = policy.play_keys(key, episodes, steps, sample=True)
    parents = jax.random.split(key, episodes)
    children = jax.vmap(jax.random.split)(parents).reshape(-1, 2)
    used = np.concatenate([np.asarray(k).reshape(-1, 2) for k in (reset, step, parents, children)])
    actions = {tuple(k) for k in np.asarray(action).tolist()}
    assert len(actions) == steps and not actions & {tuple(k) for k in used.tolist()}
    assert policy.play_keys(key, episodes, steps, sample=False)[2] is None
    assert np.array_equal(policy.play_keys(key, episodes, steps, sample=False)[1], step)  # greedy keys unchanged


def test_a_value_based_policy_samples_epsilon_greedily_at_its_final_epsilon():
    from purerl.algos import registry
    from purerl.algos.dqn import DQNConfig, DQNHyperParams

    train = registry.build("dqn", DQNConfig(num_envs=2, hidden_sizes=(8,)), "mlp")
    params = train.init(jax.random.PRNGKey(0), DQNHyperParams().as_arrays()).params
    obs = jnp.zeros((64, 4))
    greedy = np.asarray(train.act(params, None, obs))
    assert len(set(greedy.tolist())) == 1
    never = DQNHyperParams(epsilon_finish=0.0).as_arrays()
    always = DQNHyperParams(epsilon_finish=1.0).as_arrays()
    np.testing.assert_array_equal(train.act(params, None, obs, jax.random.PRNGKey(1), never), greedy)
    assert set(np.asarray(train.act(params, None, obs, jax.random.PRNGKey(1), always)).tolist()) == {0, 1}


def test_a_recurrent_run_evaluates_greedy_and_sampled_with_a_gif(capsys, tmp_path, gru_run):
    for mode in ("greedy", "sample"):
        gif = tmp_path / f"{mode}.gif"
        code, out, err = run_cli(capsys, "eval", gru_run, "--episodes", "4", "--policy", mode, "--gif", gif)
        assert code == 0, err
        assert "XDG_RUNTIME_DIR" not in err
        assert f"saved {gif} (seed=0, {'sampled' if mode == 'sample' else mode}:" in out
        from PIL import Image

        with Image.open(gif) as image:
            assert image.n_frames >= 8  # an untrained pole still stands a few steps


def test_recurrent_evaluation_resets_the_memory_where_episodes_begin_as_training_does(gru_run):
    """`evaluate` (one compiled scan over a batch) against a host loop over `Policy.step`, one episode at a time:
    the memory starts at zero with reset=True and is carried, never reset, until the episode ends."""
    _, members, train, state = policy.load_run(gru_run)
    agent = policy.load(gru_run, member=1)
    key, episodes = jax.random.PRNGKey(3), 2
    scanned = np.asarray(jax.jit(lambda p, s: policy.evaluate(train, p, s, key, episodes))(
        agent.params, agent.obs_stats))
    env, looped = train.env, []
    env_reset, env_step = jax.jit(env.reset), jax.jit(env.step)
    for episode_key in jax.random.split(key, episodes):
        reset_key, step_key = jax.random.split(episode_key)
        obs, env_state = env_reset(reset_key)
        carry, reset, total = agent.initial_carry(1), True, 0.0
        for step_key in jax.random.split(step_key, env.max_episode_steps):
            carry, action = agent.step(carry, np.asarray(obs)[None], [reset])
            env_state, ts = env_step(step_key, env_state, action[0])
            total += float(ts.reward)
            if ts.done:
                break
            obs, reset = ts.obs, False
        looped.append(total)
    np.testing.assert_array_equal(scanned, looped)
    memory = jnp.full_like(agent.initial_carry(1), 5.0)  # whatever the memory held, a reset forgets it
    obs = jnp.ones((1, *envs.make("CartPole-NoVel-v1").observation_shape))
    forgotten, fresh = agent.step(memory, obs, [True]), agent.step(agent.initial_carry(1), obs, [True])
    np.testing.assert_array_equal(forgotten[0], fresh[0])


def test_a_recurrent_policy_has_no_memoryless_action(gru_run):
    agent = policy.load(gru_run)
    with pytest.raises(policy.ConfigError, match=r"acts from its memory: use Policy.step"):
        agent(np.zeros((1, 2), np.float32))


@pytest.mark.parametrize("argv, message", [
    (["--policy", "mode"], "argument --policy: invalid choice: 'mode'"),
    (["--gif", "x.png"], "--gif must name a .gif file"),
])
def test_bad_eval_input_is_one_line_exit_2(capsys, ppo_run, argv, message):
    code, _, err = run_cli(capsys, "eval", ppo_run, *argv)
    assert code == 2 and message in err and err.count("\n") == 1, err
