"""Learning checks for DQN, PQN and GRU-PPO against the issue's thresholds, run the way the CLI runs them
(presets, then the run directory). Run on purpose: `pytest -m slow tests/lib/test_slow_algos.py`.

Budgets (env steps per seed x seeds): DQN CartPole 5e5 x 4; PQN CartPole 5e5 x 4; PPO-GRU and PPO-MLP
MemoryChain 2e5 x 4 each; PPO-GRU and PPO-MLP CartPole-NoVel 1e6 x 4 each; Breakout-MinAtar PQN and PPO
2e6 x 4 each (a CPU budget; the presets say 1e7); SAC and TD3 Pendulum 2e4 x 4 each.
"""

import jax
import numpy as np
import pytest

from purerl.run import experiment
from purerl.cli import build_parser, train_spec
from purerl.run.policy import evaluate, load_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def run(tmp_path, *flags: str) -> dict:
    """Summary of `purerl train FLAGS` into a fresh run directory."""
    spec = train_spec(build_parser().parse_args(["train", *flags]))
    return experiment.run(spec, tmp_path / "run", progress=False)


def greedy_returns(run_dir, episodes: int = 20) -> np.ndarray:
    """Each member's mean return over greedy episodes (what `purerl eval` reports)."""
    _, _, train, state = load_run(run_dir)
    returns = jax.jit(jax.vmap(lambda p, s: evaluate(train, p, s, jax.random.PRNGKey(7), episodes)))(
        state.params, state.obs_stats)
    return np.asarray(returns).mean(axis=1)


def final(summary: dict) -> np.ndarray:
    return np.array(list(summary["final_return_by_member"].values()))


def test_dqn_cartpole_4_seeds_mean_final_return_at_least_475(tmp_path):
    returns = final(run(tmp_path, "--algo", "dqn", "--env", "CartPole-v1", "--seeds", "4"))
    print("DQN CartPole-v1 final returns:", returns)
    assert returns.mean() >= 475, returns


def test_pqn_cartpole_4_seeds_greedy_return_at_least_475(tmp_path):
    """The preset explores with epsilon 0.2 to the end, so its training episodes fall short of 500;
    the authors report the greedy policy's return, as `purerl eval` measures it."""
    training = final(run(tmp_path, "--algo", "pqn", "--env", "CartPole-v1", "--seeds", "4"))
    greedy = greedy_returns(tmp_path / "run")
    print("PQN CartPole-v1 final training returns:", training, "greedy:", greedy)
    assert greedy.mean() >= 475, greedy


def test_gru_ppo_solves_memory_chain_where_feed_forward_stays_at_chance(tmp_path):
    """Chance is 0: the reward is +1 or -1 for recalling the first observation's bit at the last step."""
    flags = ("--env", "MemoryChain-bsuite", "--preset", "memory", "--seeds", "4")
    gru = final(run(tmp_path / "gru", "--network", "gru", *flags))
    mlp = final(run(tmp_path / "mlp", *flags))
    print("MemoryChain-bsuite final returns, GRU:", gru, "MLP:", mlp)
    assert gru.min() > 0.5 and abs(mlp.mean()) < 0.2, (gru, mlp)


def test_gru_ppo_balances_cartpole_without_velocities_where_feed_forward_cannot(tmp_path):
    """CartPole-NoVel-v1 shows only the cart position and the pole angle. Both networks get the `pomdp`
    preset (16 envs x 128 steps, lr 1e-3, 1e6 env steps per seed, 4 seeds; about 6 min for the GRU and
    30 s for the MLP on a 2-core CPU). Measured: GRU 481.2 (per seed 470.1, 500, 500, 454.7; seeds 4-7:
    484.1, lowest 443.3) against MLP 49.9 (48.2 to 52.1); the thresholds leave a wide margin on both."""
    flags = ("--env", "CartPole-NoVel-v1", "--preset", "pomdp", "--seeds", "4")
    gru = final(run(tmp_path / "gru", "--network", "gru", *flags))
    mlp = final(run(tmp_path / "mlp", *flags))
    print("CartPole-NoVel-v1 final returns at 1e6 steps, GRU:", gru, "MLP:", mlp)
    assert gru.mean() >= 400 and gru.min() >= 250 and mlp.max() < 100, (gru, mlp)


def test_pqn_breakout_minatar_against_ppo_at_the_same_budget(tmp_path):
    """2e6 env steps per seed for both (each its MinAtar preset, shortened): with 4 seeds no CI is claimed;
    PQN's mean must reach at least PPO's worst seed (within PPO's spread, if not above it)."""
    flags = ("--env", "Breakout-MinAtar", "--total-timesteps", "2000000", "--seeds", "4")
    pqn = final(run(tmp_path / "pqn", "--algo", "pqn", *flags))
    ppo = final(run(tmp_path / "ppo", "--algo", "ppo", *flags))
    print("Breakout-MinAtar final returns at 2e6 steps, PQN:", pqn, "PPO:", ppo)
    assert pqn.mean() >= ppo.min(), (pqn, ppo)


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_off_policy_pendulum_4_seeds_greedy_return_at_least_minus_200_within_20k_steps(algo, tmp_path):
    run(tmp_path, "--algo", algo, "--env", "Pendulum-v1", "--seeds", "4", "--total-timesteps", "20000")
    returns = greedy_returns(tmp_path / "run")
    print(f"{algo} Pendulum-v1 greedy returns:", returns)
    assert returns.mean() >= -200, returns
