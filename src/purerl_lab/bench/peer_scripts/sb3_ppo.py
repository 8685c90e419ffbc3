"""Stable-Baselines3 PPO on gymnasium CartPole-v1 with the CleanRL defaults; one JSON line on stdout.

Seeds run one after another in this process, as SB3 users run many seeds. With
--max-measured-seeds M < --seeds N only the first M seeds are trained and the wall
time is extrapolated linearly to N (the result says so: measured_seeds, extrapolated).

Torch runs on one thread by default: for these 64-64 MLPs on small batches torch's
default intra-op pool (one thread per core) was about 9x slower on a busy 2-core machine.

Run inside the SB3 peer venv:  python sb3_ppo.py --seeds 1 --total-timesteps 50000
"""

from __future__ import annotations

import time

from peer_common import CLEANRL_CARTPOLE as C
from peer_common import FINAL_WINDOW, emit, finite_mean, num_updates, parse_args, peak_rss_mb, versions


def sb3_kwargs(total_updates: int) -> dict:
    """The CleanRL settings under SB3's own PPO argument names."""
    import torch

    lr0 = C["lr"]

    def learning_rate(progress_remaining: float) -> float:
        # SB3 calls this before update i (1-based) with progress_remaining = 1 - i/N.
        # CleanRL uses lr0 * (1 - (i-1)/N), hence the one-update shift.
        return lr0 * min(1.0, progress_remaining + 1.0 / total_updates)

    return dict(
        n_steps=C["num_steps"],
        batch_size=C["num_envs"] * C["num_steps"] // C["num_minibatches"],  # SB3 batch_size = minibatch size
        n_epochs=C["update_epochs"],
        learning_rate=learning_rate if C["anneal_lr"] else lr0,
        gamma=C["gamma"],
        gae_lambda=C["gae_lambda"],
        clip_range=C["clip_eps"],
        clip_range_vf=C["clip_eps"],  # CleanRL clip_vloss=True clips the value with clip_coef
        normalize_advantage=True,
        ent_coef=C["ent_coef"],
        # SB3's value loss is mean((R - V)^2); CleanRL's is 0.5 * mean(...). Halving vf_coef
        # makes vf_coef * value_loss the same number as CleanRL's.
        vf_coef=C["vf_coef"] * 0.5,
        max_grad_norm=C["max_grad_norm"],
        target_kl=None,
        policy_kwargs=dict(
            net_arch=dict(pi=list(C["hidden_sizes"]), vf=list(C["hidden_sizes"])),
            activation_fn=torch.nn.Tanh,
            ortho_init=True,
            optimizer_class=torch.optim.Adam,
            optimizer_kwargs=dict(eps=C["adam_eps"]),
        ),
    )


def main() -> None:
    def extra(parser):
        parser.add_argument("--max-measured-seeds", type=int, default=None,
                            help="train only this many seeds and extrapolate the wall time to --seeds")
        parser.add_argument("--torch-threads", type=int, default=1,
                            help="torch.set_num_threads; 0 keeps torch's default (one thread per core)")

    args = parse_args(__doc__.splitlines()[0], extra)
    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from sb3_common import EpisodeLog
    from stable_baselines3.common.env_util import make_vec_env

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)

    updates = num_updates(args.total_timesteps)
    batch = C["num_envs"] * C["num_steps"]
    steps_per_agent = updates * batch  # CleanRL runs whole updates only
    measured = args.seeds if args.max_measured_seeds is None else max(1, min(args.seeds, args.max_measured_seeds))

    per_seed_s, per_seed_return = [], []
    for seed in range(measured):
        log = EpisodeLog()
        tick = time.perf_counter()
        env = make_vec_env("CartPole-v1", n_envs=C["num_envs"], seed=seed)
        model = PPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **sb3_kwargs(updates))
        model.learn(total_timesteps=steps_per_agent, callback=log)
        per_seed_s.append(time.perf_counter() - tick)
        env.close()
        window_start = steps_per_agent - FINAL_WINDOW * batch
        recent = [r for t, r in log.episodes if t > window_start] or [r for _, r in log.episodes[-1:]]
        per_seed_return.append(finite_mean(recent))
        if model.num_timesteps != steps_per_agent:
            raise RuntimeError(f"SB3 ran {model.num_timesteps} steps, expected {steps_per_agent}")

    measured_run_s = sum(per_seed_s)
    run_s = measured_run_s * args.seeds / measured
    emit({
        "peer": "sb3",
        "seeds": args.seeds,
        "measured_seeds": measured,
        "extrapolated": measured < args.seeds,
        "total_timesteps": args.total_timesteps,
        "env_steps_per_agent": steps_per_agent,
        "num_updates": updates,
        "compile_s": 0.0,
        "run_s": run_s,
        "measured_run_s": measured_run_s,
        "per_seed_run_s": per_seed_s,
        "final_return": finite_mean(per_seed_return),
        "final_return_by_seed": per_seed_return,
        "final_return_kind": f"mean return of training episodes ending in the last {FINAL_WINDOW} updates",
        "peak_rss_mb": peak_rss_mb(),
        "torch_threads": torch.get_num_threads(),
        "versions": versions("stable-baselines3", "torch", "gymnasium", "numpy"),
        "gymnasium_env": gymnasium.spec("CartPole-v1").id,
    })


if __name__ == "__main__":
    main()
