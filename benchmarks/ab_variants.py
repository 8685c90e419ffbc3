"""Side-by-side A/B of PPO implementation variants, in one process, on one device.

Each variant is compiled first, then the compiled programs run in turns (median of
`--repeats`), so they share the machine's state; steps/s are steady state. These are
the candidates tried while optimising (benchmarks/README.md has what each bought):

    PURERL_HOST_DEVICES=1 python benchmarks/ab_variants.py --repeats 3
    PURERL_HOST_DEVICES=1 python benchmarks/ab_variants.py --task minatar --seeds 8 --total-timesteps 131072 \
        --variants "purerl,rolled threefry (before)"
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import optax

from purerl.algos import ppo as ppo_module
from purerl_lab.bench.worker import task_config
from purerl.nets.distributions import Categorical
from purerl.envs.core import unroll_threefry_on_cpu
from purerl.run.population import make_members


class PerArrayAdam(ppo_module.PPO):
    """The optimiser before `optax.flatten`: Adam and the global norm run per parameter array."""

    def optimizer(self, hp):
        return optax.chain(
            optax.clip_by_global_norm(hp.max_grad_norm),
            optax.adam(lambda count: self.learning_rate(hp, count // self.steps_per_update), eps=1e-5),
        )


class NoBootstrapForward(ppo_module.PPO):
    """A cost probe, not a candidate (its targets are wrong after a truncation): the next values are the rollout's
    own values shifted by one step, so the critic never runs over `bootstrap_obs`."""

    def advantages(self, params, trajectory, carry, hp):
        _, _, values = self.network.apply(params, carry, trajectory.obs, trajectory.reset, method="unroll")
        next_values = jnp.concatenate([values[1:], values[-1:]])
        advantages = ppo_module.gae(trajectory.reward, values, next_values, trajectory.terminated, trajectory.done,
                                    hp.gamma, hp.gae_lambda)
        return values, advantages, advantages + values


class OneSequenceMinibatches(ppo_module.PPO):
    """Feed-forward minibatches as they were: [1 sequence, samples, ...] in the loss, not [samples, ...]. The
    weight gradients then contract two axes (the same numbers up to float rounding)."""

    def loss(self, params, batch, hp, meta_params):
        if not self.network.recurrent:
            batch = jax.tree.map(lambda x: x[None], batch._replace(carry=None))._replace(carry=batch.carry)
        return super().loss(params, batch, hp, meta_params)


def traced_with(*patches):
    """A PPO traced with each `(owner, name, value)` patch applied (undone after tracing): earlier pieces, as they
    were."""

    class Patched(ppo_module.PPO):
        def __call__(self, key, hp, meta_params=None):
            before = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
            for owner, name, value in patches:
                setattr(owner, name, value)
            try:
                return super().__call__(key, hp, meta_params)
            finally:
                for owner, name, value in before:
                    setattr(owner, name, value)

    return Patched


def unrolled(body_name: str, unroll: int):
    """A PPO whose `lax.scan` over `body_name` (env_step, minibatch_step, backward) is unrolled."""
    scan = jax.lax.scan

    def patched(f, init, xs=None, length=None, reverse=False, **kw):
        kw["unroll"] = unroll if f.__name__ == body_name else kw.get("unroll", 1)
        return scan(f, init, xs, length=length, reverse=reverse, **kw)

    return traced_with((jax.lax, "scan", patched))


def unshuffled(key, n):
    """A cost probe, not a candidate: every epoch keeps the rollout's order (the same minibatches each epoch)."""
    return jnp.arange(n, dtype=jnp.int32)


def one_step_advantages(rewards, values, next_values, terminated, done, gamma, gae_lambda):
    """A cost probe, not a candidate: the TD errors alone (lambda = 0), so GAE's backward scan never runs."""
    return rewards + gamma * next_values * (1.0 - terminated.astype(jnp.float32)) - values


def gathered_log_prob(self, action):
    """`Categorical.log_prob` before: the action's entry by `take_along_axis` (a scatter-add in its gradient)."""
    log_probs = jax.nn.log_softmax(self.logits)
    return jnp.take_along_axis(log_probs, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


JAX_SHUFFLE = (ppo_module, "random_permutation", jax.random.permutation)
GATHERED_LOG_PROB = (Categorical, "log_prob", gathered_log_prob)
NO_SHUFFLE = (ppo_module, "random_permutation", unshuffled)
NO_GAE_SCAN = (ppo_module, "gae", one_step_advantages)
ROLLED_THREEFRY = {"rolled threefry (before)"}  # compiled with jax's own CPU lowering

VARIANTS = {
    "purerl": ppo_module.PPO,
    "rolled threefry (before)": ppo_module.PPO,  # compiled under ROLLED_THREEFRY
    "per-array Adam": PerArrayAdam,
    "no bootstrap forward (probe)": NoBootstrapForward,
    "one-sequence minibatches (before)": OneSequenceMinibatches,
    "rollout scan unroll 4": unrolled("env_step", 4),
    "minibatch scan unroll 4": unrolled("minibatch_step", 4),
    "GAE scan unroll 8": unrolled("backward", 8),
    "jax.random.permutation shuffle (before)": traced_with(JAX_SHUFFLE),
    "take_along_axis log_prob (before)": traced_with(GATHERED_LOG_PROB),
    "shuffle and log_prob (before)": traced_with(JAX_SHUFFLE, GATHERED_LOG_PROB),
    "no shuffle (probe)": traced_with(NO_SHUFFLE),
    "no GAE scan (probe)": traced_with(NO_GAE_SCAN),
    "no shuffle and no GAE scan (probe)": traced_with(NO_SHUFFLE, NO_GAE_SCAN),
}


def main() -> None:
    import purerl

    purerl.configure_jax()  # as the command line runs: a CPU device per core, the compile cache, fast threefry
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--task", default="cartpole", choices=("cartpole", "minatar"))
    parser.add_argument("--seeds", type=int, default=1, help="seeds vmapped in one program")
    parser.add_argument("--total-timesteps", type=int, help="steps per agent (default: the task's)")
    parser.add_argument("--variants", help="comma-separated names (default: all)")
    args = parser.parse_args()
    chosen = args.variants.split(",") if args.variants else list(VARIANTS)
    unknown = [name for name in chosen if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(map(repr, unknown))}; choose from {', '.join(VARIANTS)}")
    config, hp = task_config(args.task, args.total_timesteps)
    members = make_members(list(range(args.seeds)), hp)
    keys, hps = members.keys(), members.hyperparams.as_arrays()
    programs = {}
    for name in chosen:
        cls = VARIANTS[name]
        unroll_threefry_on_cpu(name not in ROLLED_THREEFRY)  # lowering happens at compile time
        tick = time.perf_counter()
        programs[name] = (jax.jit(jax.vmap(cls(config))).lower(keys, hps).compile(), time.perf_counter() - tick)
    times = {name: [] for name in programs}
    returns = {}
    for _ in range(args.repeats):
        for name, (compiled, _) in programs.items():
            tick = time.perf_counter()
            out = jax.block_until_ready(compiled(keys, hps))
            times[name].append(time.perf_counter() - tick)
            returns[name] = float(jnp.nanmean(out.metrics["episode_return"][:, -10:]))
    print(f"{args.task}, {args.seeds} seed(s), {config.num_updates * config.batch_size:,} steps each, "
          f"median of {args.repeats}, load average {os.getloadavg()[0]:.1f}")
    steps = config.num_updates * config.batch_size * args.seeds
    print("| variant | compile s | run s | env steps/s | final return |\n|---|---|---|---|---|")
    for name, (_, compile_s) in programs.items():
        run_s = statistics.median(times[name])
        print(f"| {name} | {compile_s:.1f} | {run_s:.2f} | {steps / run_s:,.0f} | {returns[name]:.1f} |")


if __name__ == "__main__":
    main()
