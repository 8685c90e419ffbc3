"""How far a benchmarked run is from the hardware floor: its FLOPs, the matmul FLOP/s, and where the time goes.

XLA's cost analysis counts a loop body once, whatever its trip count, so the FLOPs of a run are composed from
loop-free pieces, each compiled alone and counted, then multiplied by how often the run executes it. The floor
is a 2048x2048 float32 matmul timed in the same process. `keys` and `hps` are one device's share of the
members; every device runs the same program.
"""

from __future__ import annotations

import statistics
import time


def compiled_flops(fn, *args) -> float:
    """FLOPs of one call of `fn`, from XLA's cost analysis of the optimised program."""
    import jax

    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost).get("flops", 0.0))


def timed(fn, *args, repeats: int = 20) -> float:
    """Median seconds of `fn(*args)` after one warm-up call."""
    import jax

    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        tick = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - tick)
    return statistics.median(times)


def matmul_flops_per_s(n: int = 2048) -> float:
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    return 2 * n**3 / timed(jax.jit(lambda x: x @ x), a, repeats=10)


def summary(flops_per_member: float, parts: dict, members: int, devices: int, num_updates: int, run_s: float,
            steps_per_update: int, rollout_s: float, learn_s: float) -> dict:
    """The floor record: `rollout_s` and `learn_s` are one update's acting and learning time on one device's
    share (`members`); `steps_per_update` counts that share's env steps in an update."""
    flops_per_update = flops_per_member / num_updates * members * devices
    achieved = flops_per_update * num_updates / run_s
    matmul = matmul_flops_per_s()
    return {
        "floor_devices": devices,
        "flops_per_update": flops_per_update,
        "flops_per_update_parts": parts,
        "achieved_flops_per_s": achieved,
        "matmul_flops_per_s": matmul,
        "fraction_of_matmul_floor": achieved / matmul,
        "rollout_us_per_env_step": rollout_s / steps_per_update * 1e6,
        "learn_us_per_env_step": learn_s / steps_per_update * 1e6,
    }


def ppo_minibatch(train, config, key, hp):
    """(state, trajectory, minibatch) of one member as shapes: what one gradient step takes."""
    import jax

    from purerl.algos.ppo import Batch

    state, trajectory = jax.eval_shape(lambda k, h: train.rollout(train.init(k, h), h), key, hp)
    sample = lambda x: jax.ShapeDtypeStruct((config.minibatch_size,) + x.shape[2:], x.dtype)  # noqa: E731
    return state, trajectory, Batch((), sample(trajectory.obs), sample(trajectory.reset), sample(trajectory.action),
                                    *(sample(trajectory.log_prob) for _ in range(4)))


def ppo_update_flops(train, config, key, hp) -> tuple[float, dict]:
    """One member's FLOPs per update, and its pieces: one rollout step of every env (x `num_steps`), the
    advantages, one gradient step on a minibatch (x epochs x minibatches)."""
    import jax

    from purerl.algos.ppo import make_train

    one_step = make_train(config.replace(num_steps=1, total_timesteps=config.num_envs, num_minibatches=1))
    state = jax.jit(one_step.init)(key, hp)
    step_flops = compiled_flops(lambda s, h: one_step.rollout(s, h)[0].obs, state, hp)
    _, trajectory, minibatch = ppo_minibatch(train, config, key, hp)
    advantage_flops = compiled_flops(lambda p, t, h: train.advantages(p, t, (), h), state.params, trajectory, hp)
    gradient_flops = compiled_flops(lambda p, o, b, h: train.gradient_step(p, o, b, h, None)[:2], state.params,
                                    state.opt_state, minibatch, hp)
    per_update = (step_flops * config.num_steps + advantage_flops
                  + gradient_flops * config.update_epochs * config.num_minibatches)
    return per_update, {"rollout_step": step_flops, "advantages": advantage_flops, "gradient_step": gradient_flops}


def ppo(train, keys, hps, config, devices: int, run_s: float) -> dict:
    """PPO's pieces (`ppo_update_flops`). Acting is a rollout timed alone; learning is an update minus it."""
    import jax

    hp = jax.tree.map(lambda x: x[0], hps)
    per_update, parts = ppo_update_flops(train, config, keys[0], hp)
    states = jax.jit(jax.vmap(train.init))(keys, hps)
    update = jax.jit(jax.vmap(lambda s, h: train.update(0, s, h, None))).lower(states, hps).compile()
    rollout = jax.jit(jax.vmap(lambda s, h: train.rollout(s, h)[0])).lower(states, hps).compile()
    update_s, rollout_s = timed(update, states, hps), timed(rollout, states, hps)
    return summary(per_update * config.num_updates, parts, keys.shape[0], devices, config.num_updates, run_s, config.batch_size * keys.shape[0], rollout_s,
                   max(update_s - rollout_s, 0.0))


def offpolicy_gradient_step(train, config, index: int):
    """`(state, key, hp) -> what learning changed` for gradient step `index`, a constant (XLA folds the actor's
    branch). A returned buffer would be copied on every timed call, so only the learned parts come back."""
    from purerl.algos import replay

    def step(state, key, hp):
        learned = train.learn(state, replay.sample(state.buffer, key, config.buffer_batch_size), key, index, hp)[0]
        return learned.params, learned.target_params, learned.opt_state
    return step


def offpolicy(train, keys, hps, config, devices: int, run_s: float) -> dict:
    """SAC's and TD3's pieces: one vectorised env step without learning (x every vectorised step), the
    exploring actor (x the steps after learning starts) and one gradient step, sampling included (x the
    gradient steps). A gradient step is averaged over one policy-update cycle: each of its `policy_frequency`
    step indices is compiled as a constant, so XLA keeps only the branch that index takes (the actor steps on
    one of them). Acting is a vectorised step before learning starts; learning is a cycle of gradient steps,
    per env step at the run's update-to-data ratio."""
    import jax

    hp = jax.tree.map(lambda x: x[0], hps)
    state = jax.jit(train.init)(keys[0], hp)
    cycle = [offpolicy_gradient_step(train, config, index) for index in range(config.policy_frequency)]

    def acting(s, h):
        return train.env_step(s, 0, h)[0]

    def update_of_acting(s, h):  # one update's steps in one call, as the run takes them
        return jax.lax.scan(lambda s, _: (acting(s, h), None), s, length=config.num_steps)[0]

    env_flops = compiled_flops(acting, state, hp)
    explore_flops = compiled_flops(lambda s, k, h: train.explore(s.params, s.obs, k, h), state, keys[0], hp)
    gradient_flops = statistics.mean(compiled_flops(step, state, keys[0], hp) for step in cycle)
    vector_steps = config.num_updates * config.num_steps
    learning_steps = max(vector_steps - config.learning_starts // config.num_envs, 0)
    per_member = (env_flops * vector_steps + explore_flops * learning_steps
                  + gradient_flops * learning_steps * config.gradient_steps)

    states = jax.jit(jax.vmap(train.init))(keys, hps)
    rollout_s = timed(jax.jit(jax.vmap(update_of_acting)), states, hps, repeats=5)
    gradient_s = statistics.mean(timed(jax.jit(jax.vmap(step)), states, keys, hps) for step in cycle)
    members = keys.shape[0]
    return summary(per_member, {"env_step": env_flops, "explore": explore_flops, "gradient_step": gradient_flops},
                   members, devices, config.num_updates, run_s, config.num_steps * config.num_envs * members,
                   rollout_s, gradient_s * config.gradient_steps * config.num_steps)


ANALYSES = {"ppo": ppo, "sac": offpolicy, "td3": offpolicy}
