"""From one agent to a population to an evolved hook, in one script: purerl's walkthrough.

    python examples/walkthrough.py            # about a minute on 2 CPU cores
    python examples/walkthrough.py --quick    # the same steps at toy budgets (what the test suite runs)

1. One PPO agent on CartPole, the whole training run (envs, rollout, GAE, epochs) one jitted XLA program.
2. A population in that program: 10 seeds x a grid of 3 learning rates, `jax.vmap` over keys and over the traced
   hyperparameters, and a paired comparison of two settings on the same seeds (`purerl.stats`).
3. Evolving a hook: a value loss with a learned scale on the squared error, searched by OpenES (evosax) over
   whole training runs (`purerl.meta.evolve`), the population of candidates again one program per generation.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import purerl
from purerl import HyperParams, PPOConfig, make_train, stats
from purerl.meta.evolve import Evolution, MetaTask, config_json, run, train_fitness
from purerl.meta.evolve_files import load_meta_params
from purerl.meta.strategies import ESConfig


def final_return(metrics, window: int = 10) -> jax.Array:
    """Mean episode return over the last `window` updates (NaN rows, where no episode ended, left out)."""
    return jnp.nanmean(metrics["episode_return"][..., -window:], axis=-1)


def one_agent(steps: int) -> None:
    train = make_train(PPOConfig(env="CartPole-v1", total_timesteps=steps))
    hp = HyperParams().as_arrays()  # traced: a new value reuses the compiled program
    result = jax.jit(train)(jax.random.PRNGKey(0), hp)
    print(f"1. one agent, {steps:,} steps: final return {float(final_return(result.metrics)):.1f}")


def population(steps: int, seeds: int) -> None:
    train = make_train(PPOConfig(env="CartPole-v1", total_timesteps=steps))
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(seeds))
    lrs = jnp.array([2.5e-4, 1e-3, 4e-3])
    grid = jax.vmap(lambda lr: HyperParams(lr=lr).as_arrays())(lrs)  # a HyperParams of [3] arrays
    over_seeds = jax.vmap(train, in_axes=(0, None))  # seeds, one setting
    over_grid = jax.vmap(over_seeds, in_axes=(None, 0))  # then every setting: [3, seeds] agents, one program
    returns = np.asarray(final_return(jax.jit(over_grid)(keys, grid).metrics))
    for lr, row in zip(lrs, returns):
        print(f"2. lr {float(lr):g}: IQM final return {stats.iqm(row):.1f} over {seeds} seeds")
    difference = stats.paired_difference(returns[1], returns[0])  # the same seeds, so paired
    print(f"   lr 1e-3 minus 2.5e-4 on the same seeds: {stats.describe_paired(difference)} ({difference['verdict']})")


def scaled_l2(value, old_value, target, hp, meta_params):
    """The hook: L2 on the value error, scaled by exp(a + b |v - t|), a learned pair (0, 0 is plain L2)."""
    error = value - target
    return 0.5 * error**2 * jnp.exp(meta_params["a"] + meta_params["b"] * jnp.abs(error))


def evolve_a_hook(steps: int, generations: int, seeds: int, out: Path) -> None:
    config = PPOConfig(env="CartPole-v1", total_timesteps=steps)
    train = make_train(config, value_loss=scaled_l2)
    task = MetaTask(name="scaled-l2", template={"a": jnp.float32(0.0), "b": jnp.float32(0.0)},
                    fitness=train_fitness(train, HyperParams().as_arrays(), "auc"),  # mean return over training
                    info={"env": config.env, "total_timesteps": steps})
    es = ESConfig(strategy="open_es", population_size=8, generations=generations, lr=0.1, std=0.3)
    run(Evolution(task, es), out, config_json(task, es), resume="auto")  # checkpointed: a rerun continues it

    # Each generation trains on fresh seeds, so its mean fitness moves with them; judge the evolved loss against
    # plain L2 (its starting point) on seeds no generation used, the same seeds for both.
    evolved = load_meta_params(out / "mean_meta_params.msgpack", task.template)
    keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(10_000, 10_000 + seeds))
    fitness = jax.jit(jax.vmap(task.fitness, in_axes=(0, None)))
    difference = stats.paired_difference(fitness(keys, evolved), fitness(keys, task.template))
    print(f"3. evolved value loss (a={float(evolved['a']):+.2f}, b={float(evolved['b']):+.2f}) minus plain L2, "
          f"mean return over training on {seeds} held-out seeds: {stats.describe_paired(difference)}; run in {out}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="toy budgets: every step in well under a minute")
    parser.add_argument("--out", type=Path, default=None, help="folder for the evolution's run (default: a new "
                                                               "temporary one)")
    args = parser.parse_args(argv)
    purerl.configure_jax()  # as the command line runs: a CPU device per core, the compile cache
    one_agent(4_096 if args.quick else 100_000)
    population(2_048 if args.quick else 50_000, seeds=2 if args.quick else 10)
    out = args.out or Path(tempfile.mkdtemp(prefix="purerl-walkthrough-")) / "scaled-l2"
    evolve_a_hook(2_048 if args.quick else 32_768, generations=2 if args.quick else 6, seeds=2 if args.quick else 10,
                  out=out)


if __name__ == "__main__":
    main()
