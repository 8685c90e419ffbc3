"""The pieces of a fingerprint that every study's builder shares: a member's training programs, its keys, an ES run's
programs and host loop, the paired statistics probed."""

from __future__ import annotations

import numpy as np

from purerl_lab.publish.fingerprint.core import Fingerprint, abstract, probe_inputs


# ------------------------------------------------------------------------------------------------ PPO runs
def member_programs(fp: Fingerprint, name: str, train, hyperparams, meta_params=None) -> None:
    """One member's `init(key, hp)` and `run(state, hp, meta, start, stop)` (chunks compose exactly, so the run
    of every chunk is this program), as `experiment.run` vmaps and shards them."""
    import jax
    import jax.numpy as jnp

    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    hp = abstract(jax.tree.map(lambda x: np.asarray(x, np.float32), hyperparams))
    state = fp.program(f"{name} init", train.init, key, hp)
    step = jax.ShapeDtypeStruct((), jnp.int32)
    fp.program(f"{name} run", train.run, state, hp, abstract(meta_params), step, step)
    return state


def member_keys(fp: Fingerprint, members) -> None:
    """Seeds to keys, as the population derives them (the seeds are constants of the program)."""
    fp.program("member keys", members.keys)


def first_member(hyperparams):
    """Member 0's hyperparameters from a population's (leaves of shape [members])."""
    import jax

    return jax.tree.map(lambda x: np.asarray(x)[0], hyperparams.as_arrays())


def paired_probe() -> list[dict]:
    """`stats.paired_difference` on the fixed probe inputs against a shifted reversal of themselves."""
    from purerl import stats

    return [stats.paired_difference(v, v[::-1] - 5.0) for v in probe_inputs()]


# ------------------------------------------------------------------------------------------------ evolution
def es_programs(fp: Fingerprint, name: str, task, config) -> None:
    """An ES run: the fitness of one candidate (its rollouts vmapped and averaged, as `Evolution` evaluates a
    population), the strategy's init, ask and tell lowered at the ES config, and the host loop around them
    (keys per generation, repair of bad fitness, ask -> evaluate -> tell) probed for two generations with a
    synthetic fitness in place of training."""
    import jax
    import jax.numpy as jnp

    from purerl.meta.evolve import Evolution

    evolution = Evolution(task, config)
    per_candidate = jax.vmap(task.fitness, in_axes=(0, None))
    keys = jax.ShapeDtypeStruct((config.rollouts, 2), jnp.uint32)
    fp.program(f"{name} fitness", lambda meta, keys: per_candidate(keys, meta).mean(), abstract(task.template), keys)
    strategy, params = evolution.strategy, evolution.params
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    state = fp.program(f"{name} es init", lambda k, mean, p: strategy.init(k, mean, p), key, abstract(task.template),
                       abstract(params))
    population = fp.program(f"{name} es ask", lambda k, s, p: strategy.ask(k, s, p), key, state, abstract(params))[0]
    fitness = jax.ShapeDtypeStruct((config.population_size,), jnp.float32)
    fp.program(f"{name} es tell", lambda k, x, f, s, p: strategy.tell(k, x, f, s, p), key, population, fitness,
               state, abstract(params))
    fp.probe(f"{name} es loop", _es_loop, evolution)


def _es_loop(evolution) -> dict:
    """The ES state and mean after two generations of `evolution`, with fitness = a fixed function of each
    candidate and one NaN among them (repaired as a bad fitness is). The generation's log row and best candidate
    are bookkeeping: the published numbers come from the ES mean."""
    def evaluate(key, population):
        flat = np.concatenate([np.asarray(x, np.float64).reshape(len(np.asarray(x)), -1)
                               for x in jax_leaves(population)], axis=1)
        fitness = np.sin(flat @ np.linspace(-1.0, 1.0, flat.shape[1])) + np.asarray(key, np.float64).sum() * 1e-12
        fitness[1] = np.nan
        return fitness

    evolution.evaluate = evaluate
    state = evolution.init_state()
    for index in range(2):
        state = evolution.generation(state, index)[0]
    return {"state": state, "mean": evolution.mean(state)}


def jax_leaves(tree):
    import jax

    return jax.tree.leaves(tree)
