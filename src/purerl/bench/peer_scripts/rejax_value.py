"""rejax DQN or PQN on gymnax CartPole-v1 with purerl's presets, N seeds vmapped; one JSON line on stdout.

The settings are purerl's `classic` presets of `purerl train --algo dqn|pqn` (PureJaxRL/CleanRL's
DQN, purejaxql's PQN), spelled in rejax's arguments. rejax hard-codes its Q-network's hidden
layers at 64-64, so the one change to rejax is a subclass whose `create_agent` passes purerl's
hidden sizes instead (everything else is rejax's own code). As in `rejax_ppo.py`, the whole run
is `jax.jit(jax.vmap(algo.train))(keys)`, compiled ahead of time, its evaluation switched off
during training and run once afterwards, outside run_s.

Run inside the rejax peer venv:  python rejax_value.py --task dqn --seeds 8 --total-timesteps 500000
"""

from __future__ import annotations

import time

from peer_common import emit, finite_mean, parse_args, peak_rss_mb, versions

EVAL_EPISODES = 128  # rejax's own default for its evaluation callback

# purerl's classic presets (algos/dqn.py, algos/pqn.py), in rejax's names.
DQN = dict(num_envs=10, buffer_size=10_000, fill_buffer=10_000, batch_size=128, learning_rate=2.5e-4, gamma=0.99,
           target_update_freq=500, polyak=0.0, eps_start=1.0, eps_end=0.05, num_epochs=1, ddqn=False,
           epsilon_steps=250_000, hidden=(120, 84), activation="relu")
PQN = dict(num_envs=32, num_steps=64, num_epochs=4, num_minibatches=16, learning_rate=1e-4, gamma=0.99,
           td_lambda=0.95, eps_start=1.0, eps_end=0.2, max_grad_norm=10.0, hidden=(256, 256))


def dqn_algo(total_timesteps: int):
    from flax import linen as nn
    from rejax import DQN as RejaxDQN
    from rejax.networks import DiscreteQNetwork, EpsilonGreedyPolicy

    class SizedDQN(RejaxDQN):
        @classmethod
        def create_agent(cls, config, env, env_params):
            config.pop("agent_kwargs", None)
            action_dim = env.action_space(env_params).n
            return {"agent": EpsilonGreedyPolicy(DiscreteQNetwork)(
                hidden_layer_sizes=DQN["hidden"], action_dim=action_dim, activation=getattr(nn, DQN["activation"]))}

    settings = {k: v for k, v in DQN.items() if k not in ("hidden", "activation", "epsilon_steps")}
    return SizedDQN.create(env="CartPole-v1", total_timesteps=total_timesteps, eval_freq=total_timesteps,
                           skip_initial_evaluation=True,
                           exploration_fraction=DQN["epsilon_steps"] / total_timesteps,
                           **settings)


def pqn_algo(total_timesteps: int):
    from flax import linen as nn
    from rejax import PQN as RejaxPQN
    from rejax.networks import DiscreteQNetwork, EpsilonGreedyPolicy

    class SizedPQN(RejaxPQN):
        @classmethod
        def create_agent(cls, config, env, env_params):
            config.pop("agent_kwargs", None)
            action_dim = env.action_space(env_params).n
            return {"agent": EpsilonGreedyPolicy(DiscreteQNetwork)(
                hidden_layer_sizes=PQN["hidden"], action_dim=action_dim,
                activation=lambda x: nn.relu(nn.LayerNorm()(x)))}

    batch = PQN["num_envs"] * PQN["num_steps"]
    updates = total_timesteps // batch
    steps_per_update = PQN["num_epochs"] * PQN["num_minibatches"]
    lr0 = PQN["learning_rate"]
    settings = {k: v for k, v in PQN.items() if k not in ("hidden", "learning_rate")}
    return SizedPQN.create(env="CartPole-v1", total_timesteps=updates * batch, eval_freq=updates * batch,
                           skip_initial_evaluation=True, exploration_fraction=0.2,
                           learning_rate=lambda count: lr0 * (1.0 - (count // steps_per_update) / updates),
                           **settings)


def main() -> None:
    def extra(parser):
        parser.add_argument("--task", choices=("dqn", "pqn"), required=True, help="the harness's task: the algorithm")

    args = parse_args(__doc__.splitlines()[0], extra)
    import jax
    import jax.numpy as jnp
    from rejax.evaluate import evaluate

    algo = (dqn_algo if args.task == "dqn" else pqn_algo)(args.total_timesteps)
    algo = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(args.seeds))

    tick = time.perf_counter()
    train = jax.jit(jax.vmap(algo.train)).lower(keys).compile()
    compile_s = time.perf_counter() - tick
    tick = time.perf_counter()
    train_state, _ = train(keys)
    jax.block_until_ready(train_state)
    run_s = time.perf_counter() - tick

    def eval_one(ts, key):
        _, returns = evaluate(algo.make_act(ts), key, algo.env, algo.env_params, EVAL_EPISODES,
                              algo.env_params.max_steps_in_episode)
        return returns.mean()

    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    returns = jax.device_get(jax.jit(jax.vmap(eval_one))(train_state, eval_keys))
    emit({
        "peer": "rejax",
        "algo": args.task,
        "seeds": args.seeds,
        "measured_seeds": args.seeds,
        "extrapolated": False,
        "total_timesteps": args.total_timesteps,
        "env_steps_per_agent": int(jax.device_get(train_state.global_step).min()),
        "compile_s": compile_s,
        "run_s": run_s,
        "final_return": finite_mean(returns.tolist()),
        "final_return_by_seed": [float(r) for r in returns],
        "final_return_kind": f"mean return of {EVAL_EPISODES} episodes of the near-greedy policy (epsilon 0.005) "
                             "after training (rejax.evaluate), per seed",
        "peak_rss_mb": peak_rss_mb(),
        "backend": jax.default_backend(),
        "versions": versions("rejax", "jax", "jaxlib", "flax", "optax", "gymnax", "numpy"),
    })


if __name__ == "__main__":
    main()
