"""rejax SAC or TD3 on gymnax Pendulum-v1 with purerl's `continuous` presets, N seeds vmapped; one JSON line.

The settings are purerl's `continuous` presets of `purerl train --algo sac|td3` (CleanRL's SAC and TD3),
spelled in rejax's arguments. rejax cannot say everything purerl's presets say, so two small subclasses
change what rejax hard-codes, and nothing else:

- SAC: rejax builds one optax transformation for actor, critic and temperature (one `learning_rate`);
  the subclass's `initialize_network_params` gives the critic its own Adam at purerl's critic learning
  rate (rejax's optax.clip stays in front of it, as rejax builds it).
- TD3: rejax hard-codes 64-64 hidden layers for actor and critic; the subclass's `create_agent` builds
  rejax's own DeterministicPolicy and QNetwork with purerl's 256-256 relu instead.

Noise scales: purerl's are in the agent's [-1, 1] action space (CleanRL scales them by the action box's
half-width); rejax adds its noise in the env's units, so they are multiplied by Pendulum's half-width (2).
Training and evaluation are timed as for every rejax peer (`rejax_common.py`).

Run inside the rejax peer venv:  python rejax_offpolicy.py --task sac --seeds 8 --total-timesteps 20000
"""

from __future__ import annotations

from peer_common import emit, parse_args, versions
from rejax_common import EVAL_EPISODES, train_and_evaluate

ENV = "Pendulum-v1"
# purerl's continuous presets (algos/offpolicy.py, sac.py, td3.py), in rejax's names. `polyak` is the weight
# rejax keeps on the target (1 - tau); target_update_freq=1 updates the targets whenever rejax's step count
# moves on (every env step for SAC; every policy_delay env steps, after the actor, for TD3).
COMMON = dict(num_envs=1, buffer_size=100_000, fill_buffer=5_000, batch_size=256, num_epochs=1, gamma=0.99,
              polyak=1.0 - 0.005, target_update_freq=1, hidden=(256, 256), activation="relu",
              normalize_observations=False, normalize_rewards=False)
SAC = dict(COMMON, learning_rate=3e-4, critic_learning_rate=1e-3)  # learning_rate: actor and temperature
TD3 = dict(COMMON, learning_rate=3e-4, policy_delay=2, exploration_noise=0.1, target_noise=0.2,
           target_noise_clip=0.5)  # noise in purerl's [-1, 1] units; scaled to the env's box below
NOT_REJAX = ("hidden", "activation", "critic_learning_rate")  # given to rejax another way


def half_width() -> float:
    """Half the width of the env's action box (Pendulum: 2), which maps purerl's [-1, 1] noise onto rejax's."""
    import numpy as np
    from rejax.compat import create

    env, params = create(ENV)
    space = env.action_space(params)
    widths = np.broadcast_to((np.asarray(space.high) - np.asarray(space.low)) / 2.0, space.shape)
    assert np.allclose(widths, widths.flat[0]), "one noise scale needs a box of equal half-widths"
    return float(widths.flat[0])


def sac_algo(total_timesteps: int):
    import optax
    from flax.training.train_state import TrainState
    from rejax import SAC as RejaxSAC
    from rejax.algos.algorithm import register_init

    critic_lr = SAC["critic_learning_rate"]

    class CriticRate(RejaxSAC):
        """rejax's SAC with the critic's Adam at its own learning rate (rejax: one rate for everything)."""

        @register_init
        def initialize_network_params(self, rng):
            state = super().initialize_network_params(rng)
            tx = optax.chain(optax.clip(self.max_grad_norm), optax.adam(learning_rate=critic_lr))
            state["critic_ts"] = TrainState.create(apply_fn=(), params=state["critic_ts"].params, tx=tx)
            return state

    settings = {k: v for k, v in SAC.items() if k not in NOT_REJAX}
    return CriticRate.create(env=ENV, total_timesteps=total_timesteps, eval_freq=total_timesteps,
                             skip_initial_evaluation=True, hidden_layer_sizes=SAC["hidden"],
                             agent_kwargs=dict(activation=SAC["activation"]), **settings)


def td3_algo(total_timesteps: int):
    import numpy as np
    from flax import linen as nn
    from rejax import TD3 as RejaxTD3
    from rejax.networks import DeterministicPolicy, QNetwork

    hidden, activation = TD3["hidden"], getattr(nn, TD3["activation"])

    class Sized(RejaxTD3):
        """rejax's TD3 with purerl's hidden layers in place of its hard-coded 64-64 (nothing else changes)."""

        @classmethod
        def create_agent(cls, config, env, env_params):
            config.pop("actor_kwargs", None)
            config.pop("critic_kwargs", None)
            space = env.action_space(env_params)
            actor = DeterministicPolicy(np.prod(space.shape), (space.low, space.high), hidden_layer_sizes=hidden,
                                        activation=activation)
            return {"actor": actor, "critic": QNetwork(hidden_layer_sizes=hidden, activation=activation)}

    scale = half_width()
    settings = {k: v for k, v in TD3.items() if k not in NOT_REJAX}
    for name in ("exploration_noise", "target_noise", "target_noise_clip"):
        settings[name] = TD3[name] * scale
    return Sized.create(env=ENV, total_timesteps=total_timesteps, eval_freq=total_timesteps,
                        skip_initial_evaluation=True, **settings)


FINAL_RETURN_KIND = {
    "sac": "mean return of {n} episodes of the stochastic (sampling) policy after training (rejax.evaluate), "
           "per seed",
    "td3": "mean return of {n} episodes of the deterministic policy (no exploration noise) after training "
           "(rejax.evaluate), per seed",
}


def main() -> None:
    def extra(parser):
        parser.add_argument("--task", choices=("sac", "td3"), required=True, help="the harness's task: the algorithm")

    args = parse_args(__doc__.splitlines()[0], extra)
    result = train_and_evaluate((sac_algo if args.task == "sac" else td3_algo)(args.total_timesteps), args.seeds)
    emit({
        **result,
        "algo": args.task,
        "total_timesteps": args.total_timesteps,
        "final_return_kind": FINAL_RETURN_KIND[args.task].format(n=EVAL_EPISODES),
        "versions": versions("rejax", "jax", "jaxlib", "flax", "optax", "gymnax", "distrax", "numpy"),
    })


if __name__ == "__main__":
    main()
