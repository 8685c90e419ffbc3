"""The fingerprint of `purerl act`: its ES runs and its evaluation of the evolved adversaries on fresh victims."""

from __future__ import annotations

import numpy as np

from purerl_lab.publish.fingerprint.core import Fingerprint, abstract, host_common
from purerl_lab.publish.fingerprint.training import es_programs
from purerl_lab.studies.commands import parse_command


def act_part(fp: Fingerprint, command: str, part: str | None = None) -> None:
    """`purerl act PHASE`: the ES runs it evolves (without --from-params), and with --report the evaluation of
    every evolved run on fresh victims."""
    import jax

    from purerl_lab.studies import act
    from purerl_lab.studies.act import cli as act_cli, test_time

    args = parse_command(command)
    overrides = {k: getattr(args, k) for k in ("population_size", "generations", "seed") if getattr(args, k) is not None}
    config = act.es_config(args.preset, args.env, **overrides)
    if args.from_params is None:
        tasks = ({args.mode: act.train_time_task(args.mode, args.env, config.seed)} if args.phase == "train-time" else
                 {prefix: test_time.test_time_task(args.env, kind, config.seed) for prefix, kind, _ in act_cli.RUNS["test-time"]})
        for prefix, task in tasks.items():
            name = f"{args.env} {act_cli.run_name(prefix, config.seed)}"
            fp.input(f"{name} es config", {k: v for k, v in config.__dict__.items() if k != "max_parallel"})
            fp.input(f"{name} initial mean", task.template)
            es_programs(fp, name, task, config)
    if args.report is None:
        return
    victim, seeds = act.victim_of(args.env), act.fresh_seeds(args.env, args.victims, replication=args.fresh_seeds)
    fp.input(f"{args.env} victims", {"hp": victim.hp, "fresh seeds": seeds})
    hp = abstract(victim.hp.as_arrays())
    key = jax.ShapeDtypeStruct((2,), np.uint32)
    talk = act.CheapTalk()
    template = act.adversary_params(talk, jax.random.PRNGKey(0), args.env)
    if args.phase == "train-time":
        fp.program(f"{args.env} victim, no channel", act.victim(args.env, None), key, hp)
        fp.program(f"{args.env} victim, cheap talk", act.victim(args.env, talk), key, hp, abstract(template))
        obs_size = act.envs.make(args.env).observation_shape[0]
        fp.probe(f"{args.env} random adversaries", lambda: jax.lax.map(
            lambda k: talk.init_params(k, obs_size), jax.random.split(jax.random.PRNGKey(12_345), len(seeds))))
    else:
        exploiter = act.CheapTalk(condition_dims=1)
        train = act.victim(args.env, talk)

        def one(key, psi, phi):
            train_key, eval_key = jax.random.split(key)
            state = train(train_key, victim.hp.as_arrays(), psi).state
            return test_time.goal_return(train, state, exploiter, phi, eval_key, test_time.EVAL_GOALS)

        phi = act.adversary_params(exploiter, jax.random.PRNGKey(0), args.env)
        fp.program(f"{args.env} goal return", one, key, abstract(template), abstract(phi))
        fp.probe("random shaper", lambda: (act.adversary_params(talk, jax.random.PRNGKey(4242), args.env),
                                           act.adversary_params(exploiter, jax.random.PRNGKey(4243), args.env)))
        fp.probe("silent and random victims", lambda: [test_time.training_messages(talk, kind, seed, args.env)
                                                       for kind in ("random", "silent") for seed in (0, 1)])
    host_common(fp)


