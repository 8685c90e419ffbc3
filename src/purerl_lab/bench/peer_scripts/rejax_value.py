"""rejax DQN or PQN on gymnax CartPole-v1 with purerl's presets, N seeds vmapped; one JSON line on stdout.

The settings are purerl's `classic` presets of `purerl train --algo dqn|pqn` (PureJaxRL/CleanRL's
DQN, purejaxql's PQN), spelled in rejax's arguments. rejax hard-codes its Q-network's hidden
layers at 64-64, so the one change to rejax is a subclass whose `create_agent` passes purerl's
hidden sizes instead (everything else is rejax's own code). Training and evaluation are timed as
for every rejax peer (`rejax_common.py`).

Run inside the rejax peer venv:  python rejax_value.py --task dqn --seeds 8 --total-timesteps 500000
"""

from __future__ import annotations

from peer_common import emit, parse_args, versions
from rejax_common import EVAL_EPISODES, train_and_evaluate

# purerl's classic presets (algos/dqn.py, algos/pqn.py), in rejax's names.
DQN = dict(num_envs=10, buffer_size=10_000, fill_buffer=10_000, batch_size=128, learning_rate=2.5e-4, gamma=0.99,
           target_update_freq=500, polyak=0.0, eps_start=1.0, eps_end=0.05, num_epochs=1, ddqn=False,
           epsilon_steps=250_000, hidden=(120, 84), activation="relu")
PQN = dict(num_envs=32, num_steps=64, num_epochs=4, num_minibatches=16, learning_rate=1e-4, gamma=0.99,
           td_lambda=0.95, eps_start=1.0, eps_end=0.2, max_grad_norm=10.0, hidden=(256, 256))


def sized(rejax_class, hidden: tuple[int, ...], activation):
    """`rejax_class` with purerl's hidden layers in place of rejax's hard-coded 64-64 (nothing else changes)."""
    from rejax.networks import DiscreteQNetwork, EpsilonGreedyPolicy

    class Sized(rejax_class):
        @classmethod
        def create_agent(cls, config, env, env_params):
            config.pop("agent_kwargs", None)
            return {"agent": EpsilonGreedyPolicy(DiscreteQNetwork)(
                hidden_layer_sizes=hidden, action_dim=env.action_space(env_params).n, activation=activation)}

    return Sized


def dqn_algo(total_timesteps: int):
    from flax import linen as nn
    from rejax import DQN as RejaxDQN

    settings = {k: v for k, v in DQN.items() if k not in ("hidden", "activation", "epsilon_steps")}
    return sized(RejaxDQN, DQN["hidden"], getattr(nn, DQN["activation"])).create(
        env="CartPole-v1", total_timesteps=total_timesteps, eval_freq=total_timesteps, skip_initial_evaluation=True,
        exploration_fraction=DQN["epsilon_steps"] / total_timesteps, **settings)


def pqn_algo(total_timesteps: int):
    from flax import linen as nn
    from rejax import PQN as RejaxPQN

    batch = PQN["num_envs"] * PQN["num_steps"]
    updates = total_timesteps // batch
    steps_per_update = PQN["num_epochs"] * PQN["num_minibatches"]
    lr0 = PQN["learning_rate"]
    settings = {k: v for k, v in PQN.items() if k not in ("hidden", "learning_rate")}
    return sized(RejaxPQN, PQN["hidden"], lambda x: nn.relu(nn.LayerNorm()(x))).create(
        env="CartPole-v1", total_timesteps=updates * batch, eval_freq=updates * batch, skip_initial_evaluation=True,
        exploration_fraction=0.2, learning_rate=lambda count: lr0 * (1.0 - (count // steps_per_update) / updates),
        **settings)


def main() -> None:
    def extra(parser):
        parser.add_argument("--task", choices=("dqn", "pqn"), required=True, help="the harness's task: the algorithm")

    args = parse_args(__doc__.splitlines()[0], extra)
    result = train_and_evaluate((dqn_algo if args.task == "dqn" else pqn_algo)(args.total_timesteps), args.seeds)
    emit({
        **result,
        "algo": args.task,
        "total_timesteps": args.total_timesteps,
        "final_return_kind": f"mean return of {EVAL_EPISODES} episodes of the near-greedy policy (epsilon 0.005) "
                             "after training (rejax.evaluate), per seed",
        "versions": versions("rejax", "jax", "jaxlib", "flax", "optax", "gymnax", "numpy"),
    })


if __name__ == "__main__":
    main()
