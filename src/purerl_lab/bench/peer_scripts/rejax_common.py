"""What the rejax peer scripts share: N seeds trained as one compiled program, then evaluated apart.

As rejax's README recommends, a whole training run is `algo.train(rng)`, vmapped over seeds and jitted.
The program is compiled ahead of time (`.lower(keys).compile()`), so compile_s and the steady-state
run_s are measured separately; rejax's periodic evaluation is switched off during training and run once
afterwards (rejax.evaluate, 128 episodes per seed), outside run_s. Runs inside the rejax peer venv.
"""

from __future__ import annotations

import time

from peer_common import finite_mean, peak_rss_mb

EVAL_EPISODES = 128  # rejax's own default for its evaluation callback


def train_and_evaluate(algo, seeds: int) -> dict:
    """The timings and returns of seeds 0..N-1 of a rejax algorithm, as run_peer's result keys."""
    import jax
    import jax.numpy as jnp
    from rejax.evaluate import evaluate

    algo = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(seeds))
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

    tick = time.perf_counter()
    eval_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    returns = jax.device_get(jax.jit(jax.vmap(eval_one))(train_state, eval_keys))
    return {
        "peer": "rejax", "seeds": seeds, "measured_seeds": seeds, "extrapolated": False,
        "env_steps_per_agent": int(jax.device_get(train_state.global_step).min()),
        "compile_s": compile_s, "run_s": run_s, "eval_s": time.perf_counter() - tick,
        "final_return": finite_mean(returns.tolist()), "final_return_by_seed": [float(r) for r in returns],
        "peak_rss_mb": peak_rss_mb(), "backend": jax.default_backend(),
    }
