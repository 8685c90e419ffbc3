"""sbx (Stable-Baselines-Jax) SAC on gymnasium Pendulum-v1 with purerl's `continuous` preset; one JSON line.

sbx is SB3 with its networks and gradient steps in JAX: the env steps, the replay buffer and the loop
stay in Python and numpy (SB3's DummyVecEnv, ReplayBuffer), and each env step past `learning_starts`
calls one jitted function that takes the gradient step. Seeds run one after another in this process,
as an SB3 user runs them. With --max-measured-seeds M < --seeds N only M seeds are trained and the wall
time is extrapolated linearly to N (the result says so: measured_seeds, extrapolated).

compile_s is a throwaway model that learns just past its `learning_starts` first, so the jitted gradient
step and the policy are traced and compiled before the timed seeds (jax keeps them for the whole
process); it includes the few Python env steps of that warm-up.

Run inside the sbx peer venv:  python sbx_sac.py --seeds 1 --total-timesteps 20000
"""

from __future__ import annotations

import time

from peer_common import emit, finite_mean, parse_args, peak_rss_mb, versions

ENV = "Pendulum-v1"
STEPS_PER_UPDATE = 200  # purerl's continuous preset: one metric row per 200 env steps (1 env x 200 steps)
FINAL_WINDOW = 10  # final return: episodes that end in the last 10 rows, as purerl reports its own
# purerl's continuous SAC preset (algos/offpolicy.py, sac.py) in sbx's names.
SAC = dict(buffer_size=100_000, learning_starts=5_000, batch_size=256, learning_rate=3e-4, qf_learning_rate=1e-3,
           tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, policy_delay=1, ent_coef="auto",
           target_entropy="auto", hidden=(256, 256))


def sbx_kwargs() -> dict:
    settings = {k: v for k, v in SAC.items() if k != "hidden"}
    # relu is sbx's default activation; policy_delay=1: one actor and temperature step per critic step, the
    # number purerl (CleanRL) takes; sbx's policy_delay=2 would halve it (it does not make up for the delay).
    return dict(settings, policy_kwargs=dict(net_arch=list(SAC["hidden"])))


def main() -> None:
    def extra(parser):
        parser.add_argument("--max-measured-seeds", type=int, default=None,
                            help="train only this many seeds and extrapolate the wall time to --seeds")

    args = parse_args(__doc__.splitlines()[0], extra)
    import gymnasium
    import jax
    from sbx import SAC as SbxSAC
    from sb3_common import EpisodeLog
    from stable_baselines3.common.env_util import make_vec_env

    steps_per_agent = -(-args.total_timesteps // STEPS_PER_UPDATE) * STEPS_PER_UPDATE  # purerl's whole rows
    measured = args.seeds if args.max_measured_seeds is None else max(1, min(args.seeds, args.max_measured_seeds))

    tick = time.perf_counter()  # warm-up: compiles sbx's jitted gradient step and policy for these shapes
    warm_env = make_vec_env(ENV, n_envs=1, seed=10_000)
    warm_kwargs = dict(sbx_kwargs(), learning_starts=SAC["batch_size"])
    SbxSAC("MlpPolicy", warm_env, seed=10_000, verbose=0, **warm_kwargs).learn(total_timesteps=SAC["batch_size"] + 8)
    warm_env.close()
    compile_s = time.perf_counter() - tick

    per_seed_s, per_seed_return = [], []
    for seed in range(measured):
        log = EpisodeLog()
        tick = time.perf_counter()
        env = make_vec_env(ENV, n_envs=1, seed=seed)
        model = SbxSAC("MlpPolicy", env, seed=seed, verbose=0, **sbx_kwargs())
        model.learn(total_timesteps=steps_per_agent, callback=log)
        per_seed_s.append(time.perf_counter() - tick)
        env.close()
        window_start = steps_per_agent - FINAL_WINDOW * STEPS_PER_UPDATE
        recent = [r for t, r in log.episodes if t > window_start] or [r for _, r in log.episodes[-1:]]
        per_seed_return.append(finite_mean(recent))
        if model.num_timesteps != steps_per_agent:
            raise RuntimeError(f"sbx ran {model.num_timesteps} steps, expected {steps_per_agent}")

    measured_run_s = sum(per_seed_s)
    emit({
        "peer": "sbx",
        "seeds": args.seeds,
        "measured_seeds": measured,
        "extrapolated": measured < args.seeds,
        "total_timesteps": args.total_timesteps,
        "env_steps_per_agent": steps_per_agent,
        "compile_s": compile_s,
        "run_s": measured_run_s * args.seeds / measured,
        "measured_run_s": measured_run_s,
        "per_seed_run_s": per_seed_s,
        "final_return": finite_mean(per_seed_return),
        "final_return_by_seed": per_seed_return,
        "final_return_kind": f"mean return of training episodes ending in the last {FINAL_WINDOW} x "
                             f"{STEPS_PER_UPDATE} steps",
        "peak_rss_mb": peak_rss_mb(),
        "backend": jax.default_backend(),
        "versions": versions("sbx-rl", "stable-baselines3", "jax", "jaxlib", "flax", "optax", "gymnasium", "torch",
                             "numpy"),
        "gymnasium_env": gymnasium.spec(ENV).id,
    })


if __name__ == "__main__":
    main()
