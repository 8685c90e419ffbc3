"""rejax PPO on gymnax CartPole-v1 with the CleanRL defaults, N seeds vmapped; one JSON line on stdout.

As rejax's README recommends, the whole training run is one function `algo.train(rng)`
that is vmapped over seeds and jitted: `jax.jit(jax.vmap(algo.train))(keys)`. The
program is compiled ahead of time (`.lower(keys).compile()`) so compile_s and the
steady-state run_s are measured separately. rejax's periodic evaluation is switched off
during training (a no-op eval_callback) and run once afterwards, outside run_s.

Run inside the rejax peer venv:  python rejax_ppo.py --seeds 8 --total-timesteps 500000
"""

from __future__ import annotations

from peer_common import CLEANRL_CARTPOLE as C
from peer_common import emit, num_updates, parse_args, versions
from rejax_common import EVAL_EPISODES, train_and_evaluate


def rejax_config(total_updates: int) -> dict:
    """The CleanRL settings under rejax's PPO.create argument names."""
    batch = C["num_envs"] * C["num_steps"]
    opt_steps_per_update = C["update_epochs"] * C["num_minibatches"]
    lr0 = C["lr"]

    def learning_rate(count):
        # rejax passes learning_rate straight to optax.adam, so an optax schedule works.
        # count = optimiser steps so far; CleanRL anneals once per update, stepwise.
        return lr0 * (1.0 - (count // opt_steps_per_update) / total_updates)

    return dict(
        env="CartPole-v1",  # gymnax.make
        num_envs=C["num_envs"],
        num_steps=C["num_steps"],
        num_epochs=C["update_epochs"],
        num_minibatches=C["num_minibatches"],
        learning_rate=learning_rate if C["anneal_lr"] else lr0,
        gamma=C["gamma"],
        gae_lambda=C["gae_lambda"],
        clip_eps=C["clip_eps"],  # also clips the value, like CleanRL's clip_vloss
        ent_coef=C["ent_coef"],
        vf_coef=C["vf_coef"],  # rejax's critic loss is vf_coef * 0.5 * max(clipped, unclipped): CleanRL's scale
        max_grad_norm=C["max_grad_norm"],  # NB rejax applies optax.clip: element-wise, not global norm
        agent_kwargs=dict(activation=C["activation"], hidden_layer_sizes=tuple(C["hidden_sizes"])),
        total_timesteps=total_updates * batch,
        eval_freq=total_updates * batch,  # one block of all updates, no evaluation inside it
        skip_initial_evaluation=True,
        normalize_observations=False,
        normalize_rewards=False,
    )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    from rejax import PPO

    updates = num_updates(args.total_timesteps)
    result = train_and_evaluate(PPO.create(**rejax_config(updates)), args.seeds)
    emit({
        **result,
        "total_timesteps": args.total_timesteps,
        "num_updates": updates,
        "final_return_kind": f"mean return of {EVAL_EPISODES} episodes of the stochastic policy after training "
                             "(rejax.evaluate), per seed",
        "versions": versions("rejax", "jax", "jaxlib", "flax", "optax", "gymnax", "distrax", "numpy"),
    })


if __name__ == "__main__":
    main()
