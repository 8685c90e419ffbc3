"""The computation behind a published part, as a hash: staleness from what a command computes, not from files.

A part of a document under docs/results/ is made by registered commands (`registry.STUDIES`). Its *fingerprint*
is a set of named components, each a hash, built from those commands without running them:

- `program ...`: a jitted program the command runs (a training run's `init` and `run` per member, an ES
  strategy's `ask` and `tell`, an evaluation), lowered to StableHLO for the CPU at the part's static
  configuration (`Lowered.as_text(debug_info=False)`: no source locations), with the names JAX derives from
  Python (the module name, private function symbols, result paths) replaced by canonical ones. Lowering traces
  and emits the program without compiling it: seconds for a 1e7-step MinAtar run. Moving a function to another
  module, renaming a file or a helper, adding an algorithm or a preset does not change it; a change to a loss,
  the shuffle, an env's dynamics, an initialiser or a constant does.
- `host ...`: host-side numerics that make published numbers (bootstrap statistics, final-return windows, the ES
  loop around ask and tell, selection of an ES seed): each is *probed*, run on fixed inputs, and its output
  hashed. A probe is exact on its inputs and indifferent to where the code lives or what it is called.
- `input ...`: what the command reads or is given: its words (budgets, seeds, presets), the configs it builds,
  and the committed files it evaluates (meta-parameters, evolutions).
- `versions`: jax and jaxlib (lowering and XLA's compile, which rounds), and evosax where an ES runs.

`components(study, part)` builds them; `provenance` records them in the manifest beside the source hash, and
`purerl results --check` compares them with the recorded ones and names the components that changed.

What this does not see: code between programs that is neither lowered nor probed (how a population is sharded
over devices and grouped per CPU device, which the docs call rounding-only and which the config's `cpu_group`
records; checkpointing, which composes exactly); a change to a probed function that its probe inputs do not
exercise.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Callable

import numpy as np

from purerl.config import ConfigError

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parents[1]
RUNS = "/fingerprint-runs"  # `{runs}` in a registered command: a scratch folder, no part of the computation
VERSIONS = ("jax", "jaxlib")


# ------------------------------------------------------------------------------------------------ hashing
def digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def _plain(obj):
    """A JSON-able, exact form of a value: arrays by dtype, shape and bytes; floats by repr."""
    import jax

    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (jax.Array, np.ndarray, np.generic)):
        x = np.asarray(obj)
        if x.dtype == object:
            return [_plain(v) for v in x.tolist()]
        return {"dtype": str(x.dtype), "shape": list(x.shape), "sha": digest(np.ascontiguousarray(x).tobytes())}
    if isinstance(obj, float):
        return repr(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if hasattr(obj, "_asdict"):
        return _plain(obj._asdict())
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return _plain(dataclasses.asdict(obj))
    leaves = jax.tree.leaves(obj)
    if leaves and leaves != [obj]:
        return _plain(leaves)
    return repr(obj)


def value_hash(obj) -> str:
    return digest(json.dumps(_plain(obj), sort_keys=True))


_INFO = re.compile(r'jax\.(?:result|arg)_info = "(?:[^"\\]|\\.)*"(?:, )?')
_DEFINED = re.compile(r"(?:module |func\.func (?:public |private )?)@([\w.$-]+)")
_SYMBOL = re.compile(r"@([\w.$-]+)")


def normalise(text: str) -> str:
    """StableHLO text without what Python names put there: the module's name (jit_FUNCTION), the symbols of
    private functions (named after the Python functions or scopes they came from, numbered in tracing order)
    and the pytree paths of results and arguments. Symbols are renamed in order of first appearance."""
    text = _INFO.sub("", text).replace(" {}", "")
    defined = set(_DEFINED.findall(text))
    names: dict[str, str] = {}

    def rename(match):
        name = match.group(1)
        if name not in defined:
            return match.group(0)  # an external symbol (a custom call's target) is part of the computation
        return "@" + names.setdefault(name, f"f{len(names)}")

    return _SYMBOL.sub(rename, text)


def lowered_text(fn: Callable, *args, static_argnums: tuple[int, ...] = ()) -> str:
    """`fn` jitted and lowered for the CPU at `args` (arrays or `jax.ShapeDtypeStruct`s), normalised."""
    return _lowered(fn, *args, static_argnums=static_argnums)[0]


def _lowered(fn: Callable, *args, static_argnums: tuple[int, ...] = ()):
    """(`lowered_text`, the shapes and dtypes of `fn`'s outputs), from one trace."""
    import jax

    traced = jax.jit(fn, static_argnums=static_argnums).trace(*args)
    return normalise(traced.lower(lowering_platforms=("cpu",)).as_text(debug_info=False)), traced.out_info


def abstract(tree):
    """Shapes and dtypes of a tree of arrays (None stays None)."""
    import jax

    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
                        if not isinstance(x, jax.ShapeDtypeStruct) else x, tree)


class Fingerprint:
    """Named components of one part's computation, each a 16-hex hash."""

    def __init__(self):
        self.components: dict[str, str] = {}

    def add(self, name: str, value: str) -> None:
        if name in self.components and self.components[name] != value:
            raise ValueError(f"fingerprint component {name} given twice with different values")
        self.components[name] = value

    def program(self, name: str, fn: Callable, *args, static_argnums: tuple[int, ...] = ()):
        """Adds the program's hash; returns the shapes and dtypes of its outputs (no second trace needed)."""
        text, out = _lowered(fn, *args, static_argnums=static_argnums)
        self.add(f"program {name}", digest(text))
        return out

    def probe(self, name: str, fn: Callable, *args, **kwargs) -> None:
        self.add(f"host {name}", value_hash(fn(*args, **kwargs)))

    def input(self, name: str, value) -> None:
        self.add(f"input {name}", value_hash(value))

    def files(self, name: str, paths: list[Path]) -> None:
        """Committed files a command reads: their bytes, by name relative to the repository."""
        self.add(f"input {name}", value_hash({_relative(p): digest(Path(p).read_bytes()) for p in sorted(paths)}))

    def versions(self, *extra: str) -> None:
        from purerl import hostinfo

        self.add("versions", value_hash(hostinfo.versions((*VERSIONS, *extra))))

    @property
    def hash(self) -> str:
        return value_hash(self.components)

    def record(self) -> dict:
        return {"hash": self.hash, "components": dict(sorted(self.components.items()))}


def _relative(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.as_posix()


def changed(recorded: dict, current: dict) -> list[str]:
    """The components that differ between two fingerprint records, in words."""
    old, new = recorded.get("components", {}), current.get("components", {})
    words = [f"{name} changed" for name in sorted(old.keys() & new.keys()) if old[name] != new[name]]
    words += [f"{name} new" for name in sorted(new.keys() - old.keys())]
    words += [f"{name} gone" for name in sorted(old.keys() - new.keys())]
    return words


# ------------------------------------------------------------------------------------------------ commands
def _parse(command: str):
    """A registered command's arguments, as `purerl` would parse them ({runs} a fixed scratch folder)."""
    from purerl.cli import build_parser

    words = shlex.split(command.format(runs=RUNS))
    if words[:1] != ["purerl"]:
        raise ConfigError(f"not a purerl command: {command}")
    args = build_parser().parse_args(words[1:])
    args.argv = words[1:]
    return args


def _command_words(command: str) -> list[str]:
    """The command's words without where its scratch output goes and how the session runs."""
    words = shlex.split(command.format(runs=RUNS))
    return [w for w in words if w not in ("--resume", "--no-progress")]


# ------------------------------------------------------------------------------------------------ host probes
def _probe_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(20261127)
    return [rng.normal(100.0, 30.0, size) for size in (3, 10, 16, 32)]


def stats_probe() -> dict:
    """What `stats` computes for published cells and verdicts, on fixed per-seed values."""
    from purerl import stats

    values = _probe_inputs()
    summaries = [stats.summarize(v) for v in values]
    curve = np.where(np.random.default_rng(1).random((40, 5)) < 0.2, np.nan, np.arange(200.0).reshape(40, 5))
    return {"summarize": summaries,
            "separation": [stats.separation(a, b) for a in summaries for b in summaries],
            "bootstrap_mean": [stats.bootstrap_ci(v, statistic=lambda x, axis: np.mean(x, axis=axis)) for v in values],
            "iqm": [stats.iqm(v) for v in values], "forward_fill": stats.forward_fill(curve)}


def final_returns_probe() -> dict:
    """Per-seed final returns from a curve of episode returns [updates, members] with NaNs (no episode ended)."""
    from purerl import results

    rng = np.random.default_rng(7)
    curves = [np.where(rng.random((n, 6)) < 0.3, np.nan, rng.normal(50.0, 10.0, (n, 6))) for n in (5, 12, 100)]
    return {"final_returns": [results.final_returns(c) for c in curves]}


def _host_common(fp: Fingerprint) -> None:
    fp.probe("stats", stats_probe)
    fp.probe("final returns", final_returns_probe)


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


def compare_part(fp: Fingerprint, command: str) -> None:
    """`purerl compare`: each objective's training at the env's config, on the same seeds, and the statistics."""
    from purerl.cli.train import train_spec
    from purerl.experiment import TrainSpec

    args = _parse(command)
    base = train_spec(args)
    objectives = [o for o in args.objectives.split(",") if o]
    for objective in objectives:
        spec = TrainSpec(**{**base.__dict__, "objective": objective})
        members = spec.validate()
        name, _, path = objective.partition(":")
        label = name if not path else f"{name}:{Path(path).parent.name}"
        member_programs(fp, label, spec.build(), _first(members.hyperparams), spec.meta_params())
        if path:
            fp.files(f"{label} meta-parameters", [REPO / path])
    # What the programs take as data: the hyperparameter values (the seeds are constants of the keys' program).
    # The rest of the spec is static and in the programs, so a new config field with a default stales nothing.
    fp.input("hyperparameters", {"hyperparams": base.to_json()["hyperparams"], "grid": base.to_json()["grid"]})
    member_keys(fp, base.validate())
    fp.probe("compare curves", _compare_probe)
    _host_common(fp)


def _first(hyperparams):
    """Member 0's hyperparameters from a population's (leaves of shape [members])."""
    import jax

    return jax.tree.map(lambda x: np.asarray(x)[0], hyperparams.as_arrays())


def _compare_probe() -> dict:
    from purerl import compare

    rng = np.random.default_rng(3)
    curve = rng.normal(20.0, 5.0, (60, 12))
    return {"late": compare._return_at(curve, compare.LATE_FRACTION), "fraction": compare.LATE_FRACTION}


# ------------------------------------------------------------------------------------------------ value loss
def value_loss_part(fp: Fingerprint, command: str) -> None:
    """`purerl analyze value-loss`: the committed evolutions, the ES seed it selects, PPO with the learned loss and
    both baselines at every held-out setting, the critic probe, and the statistics."""
    import jax
    import jax.numpy as jnp

    from purerl.algos.objectives import clipped_l2, l2, learned_value_loss
    from purerl.algos.ppo import make_train
    from purerl.config import HyperParams
    from purerl.population import make_members
    from purerl.studies import value_loss, value_loss_report, value_loss_shape

    args = _parse(command)
    sources = [REPO / s for s in args.run_dir.split(",") if s]
    fp.files("evolutions", [p for s in sources for p in sorted(s.iterdir())
                            if p.name in ("config.json", "generations.csv", "mean_meta_params.msgpack")])
    evolutions = {}
    for source in sources:
        evolution = value_loss_report.load_evolution(source)
        evolutions[f"es_seed{evolution['config']['es']['seed']}"] = evolution
    summaries = {name: value_loss_report.evolution_summary(e) for name, e in evolutions.items()}
    selected = max(summaries, key=lambda name: summaries[name]["last_generations_mean_fitness"])
    chosen = evolutions[selected]["params"]
    fp.input("selection", {"selected": selected, "summaries": {k: {**v, "seconds": None} for k, v in summaries.items()}})
    fp.probe("scale-only ablation", value_loss_report.constant_weight_params, chosen)
    fp.probe("loss shape", value_loss_shape.shape_numbers, chosen)
    preset = evolutions[selected]["config"]["preset"]
    budget = int(evolutions[selected]["config"]["task_info"]["total_timesteps"])
    fp.input("arguments", {"seeds": args.seeds, "transfer_seeds": args.transfer_seeds, "preset": preset,
                           "budget": budget, "held_out_start": value_loss.HELD_OUT_SEED_START,
                           "settings": value_loss.transfer_settings(budget),
                           "dynamics_seeds": value_loss_report.DYNAMICS_SEEDS})
    hp = _first(make_members([0], HyperParams()).hyperparams)
    meta = abstract(chosen)
    losses = {"learned": (learned_value_loss, meta), "l2": (l2, None), "clipped_l2": (clipped_l2, None)}
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    for setting, spec in value_loss.transfer_settings(budget).items():
        config = value_loss.inner_config(preset, env=spec["env"], total_timesteps=spec["total_timesteps"])
        for name, (loss, params) in losses.items():
            train = make_train(config, value_loss=loss)
            fp.program(f"{setting} {name} training", lambda k, h, m, train=train: train(k, h, m).metrics["episode_return"],
                       key, abstract(hp), params)
    config = value_loss.inner_config(preset, total_timesteps=budget)
    for name, (loss, params) in losses.items():  # critic dynamics: the chunks of one run and the probe between them
        train = make_train(config, value_loss=loss)
        state = member_programs(fp, f"critic {name}", train, hp, params)

        def probe(state, hp, meta, train=train):
            start_carry = state.carry
            _, trajectory = train.rollout(state, hp, meta)
            values, _, targets = train.advantages(state.params, trajectory, start_carry, hp)
            return values - targets, targets

        fp.program(f"critic {name} probe", probe, state, abstract(hp), params)
    member_keys(fp, make_members(list(range(value_loss.HELD_OUT_SEED_START, value_loss.HELD_OUT_SEED_START
                                            + max(args.seeds, args.transfer_seeds or 0))), HyperParams()))
    fp.probe("fitness per seed", lambda: [value_loss.fitness_per_seed(c) for c in _curves()])
    _host_common(fp)


def _curves() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [np.where(rng.random((n, 12)) < 0.3, np.nan, rng.normal(80.0, 40.0, (n, 12))) for n in (8, 50)]


# ------------------------------------------------------------------------------------------------ evolution
def es_programs(fp: Fingerprint, name: str, task, config) -> None:
    """An ES run: the fitness of one candidate (its rollouts vmapped and averaged, as `Evolution` evaluates a
    population), the strategy's init, ask and tell lowered at the ES config, and the host loop around them
    (keys per generation, repair of bad fitness, ask -> evaluate -> tell) probed for two generations with a
    synthetic fitness in place of training."""
    import jax
    import jax.numpy as jnp

    from purerl.evolve import Evolution

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


# ------------------------------------------------------------------------------------------------ ACT
def act_part(fp: Fingerprint, command: str) -> None:
    """`purerl act PHASE`: the ES runs it evolves (without --from-params), and with --report the evaluation of
    every evolved run on fresh victims."""
    import jax

    from purerl.studies import act, act_cli

    args = _parse(command)
    overrides = {k: getattr(args, k) for k in ("population_size", "generations", "seed") if getattr(args, k) is not None}
    config = act.es_config(args.preset, args.env, **overrides)
    if args.from_params is None:
        tasks = ({args.mode: act.train_time_task(args.mode, args.env, config.seed)} if args.phase == "train-time" else
                 {prefix: act.test_time_task(args.env, kind, config.seed) for prefix, kind, _ in act_cli.RUNS["test-time"]})
        for prefix, task in tasks.items():
            name = f"{args.env} {act_cli.run_name(prefix, config.seed)}"
            fp.input(f"{name} es config", {k: v for k, v in config.__dict__.items() if k != "max_parallel"})
            fp.input(f"{name} initial mean", task.template)
            es_programs(fp, name, task, config)
    if args.report is None:
        return
    victim = act.victim_of(args.env)
    fp.input(f"{args.env} victims", {"hp": victim.hp, "fresh seeds": act.FRESH_SEEDS})
    hp = abstract(victim.hp.as_arrays())
    key = jax.ShapeDtypeStruct((2,), np.uint32)
    talk = act.CheapTalk()
    template = act.adversary_params(talk, jax.random.PRNGKey(0), args.env)
    if args.phase == "train-time":
        fp.program(f"{args.env} victim, no channel", act.victim(args.env, None), key, hp)
        fp.program(f"{args.env} victim, cheap talk", act.victim(args.env, talk), key, hp, abstract(template))
        obs_size = act.envs.make(args.env).observation_shape[0]
        fp.probe(f"{args.env} random adversaries", lambda: jax.lax.map(
            lambda k: talk.init_params(k, obs_size), jax.random.split(jax.random.PRNGKey(12_345), len(act.FRESH_SEEDS))))
    else:
        exploiter = act.CheapTalk(condition_dims=1)
        train = act.victim(args.env, talk)

        def one(key, psi, phi):
            train_key, eval_key = jax.random.split(key)
            state = train(train_key, victim.hp.as_arrays(), psi).state
            return act.goal_return(train, state, exploiter, phi, eval_key, act.EVAL_GOALS)

        phi = act.adversary_params(exploiter, jax.random.PRNGKey(0), args.env)
        fp.program(f"{args.env} goal return", one, key, abstract(template), abstract(phi))
        fp.probe("random shaper", lambda: (act.adversary_params(talk, jax.random.PRNGKey(4242), args.env),
                                           act.adversary_params(exploiter, jax.random.PRNGKey(4243), args.env)))
        fp.probe("silent and random victims", lambda: [act.training_messages(talk, kind, seed, args.env)
                                                       for kind in ("random", "silent") for seed in (0, 1)])
    _host_common(fp)


# ------------------------------------------------------------------------------------------------ M-FOS
def _mfos_settings(args, table: bool):
    from purerl.studies.mfos import cli as mfos_cli
    from purerl.studies.mfos.settings import resolve

    preset = args.preset or ("small" if table else "cpu")
    settings = resolve(preset, args.seeds, args.num_games, args.meta_episodes, args.scoring)
    self_play = {k: v for k, v in dict(self_play_meta_episodes=args.self_play_meta_episodes,
                                       self_play_num_games=args.self_play_num_games).items() if v is not None}
    if self_play:
        settings = settings.replace(**self_play)
    return preset, settings, mfos_cli._seeds(args.seed, settings.seeds)


def _numbers(settings) -> dict:
    """A settings dataclass without its prose (a preset's description)."""
    import dataclasses

    return {k: v for k, v in dataclasses.asdict(settings).items() if k != "description"}


def _meta_training(fp: Fingerprint, name: str, init, advance, extra=None) -> None:
    import jax
    import jax.numpy as jnp

    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    run = fp.program(f"{name} init", init, key)
    step = jax.ShapeDtypeStruct((), jnp.int32)
    fp.program(f"{name} meta-episodes", advance, run, step, step)
    return run


def _mfos_vs_learner(fp: Fingerprint, game: str, opponent: str, settings, logits) -> None:
    import jax
    import jax.numpy as jnp

    from purerl.studies.mfos.analysis import play_meta_episode
    from purerl.studies.mfos.meta_game import make_mfos_train

    ppo, init, advance = make_mfos_train(game, opponent, settings, logits)
    run = _meta_training(fp, f"{game} mfos vs {opponent}", init, advance)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    fp.program(f"{game} mfos vs {opponent} analysis",
               lambda p, k, greedy: play_meta_episode(ppo, p, k, settings.num_games, greedy),
               run.state.params, key, jax.ShapeDtypeStruct((), jnp.bool_))


def _mfos_host(fp: Fingerprint, game: str) -> None:
    from purerl.studies.mfos import analysis, runs

    fp.probe("mfos summaries", lambda: {"seeds": [runs.summarize_seeds(v) for v in _probe_inputs()],
                                        "window": [runs.final_window(n) for n in (1, 9, 10, 100, 1024)]})
    if game in analysis.games.GAMES:
        fp.probe(f"{game} extortion analysis", _extortion_probe, game)


def _extortion_probe(game: str) -> dict:
    """`extortion_analysis` of late policies: M-FOS playing an extortionate, a fair and a random memory-one policy."""
    from purerl.studies.mfos import analysis

    rng = np.random.default_rng(5)
    out = []
    for policy in ([0.9, 0.5, 0.3, 0.0], [1.0, 0.0, 1.0, 0.0], list(rng.random(4))):
        mfos = np.broadcast_to(np.array([0.5, *policy]), (30, 4, 5)) + rng.normal(0, 0.01, (30, 4, 5))
        opponent = rng.random((30, 4, 5))
        rewards = rng.normal(1.0, 0.5, (30, 4, 2))
        out.append(analysis.extortion_analysis(analysis.Trajectory(mfos=mfos, opponent=opponent, rewards=rewards), game))
    return {"analyses": out}


def mfos_table_part(fp: Fingerprint, command: str, game: str) -> None:
    """`purerl mfos table`, one game (one part): MAMAML's starts, the plain learners' pairs, M-FOS against each
    learner and its analysis, M-FOS self-play, and the statistics."""
    import jax
    import jax.numpy as jnp

    from purerl.studies.mfos.baselines import BASELINE_PAIRS, make_baselines
    from purerl.studies.mfos.self_play import make_self_play_train
    from purerl.studies.mfos.settings import HYPERPARAMS, MFOS_SEAT, OPPONENT_SEAT, OPPONENTS, mamaml_init, seed_keys

    args = _parse(command)
    preset, settings, seeds = _mfos_settings(args, table=True)
    fp.input("settings", {"settings": _numbers(settings), "seeds": seeds, "hyperparams": HYPERPARAMS})
    fp.program("seed keys", lambda: seed_keys(seeds))
    seats = (OPPONENT_SEAT, MFOS_SEAT)
    for seat in seats:  # MAMAML's meta-learned start, key derivation included; the programs below take it as data
        fp.program(f"{game} mamaml start, seat {seat}", lambda seat=seat: mamaml_init(game, seat, settings.mamaml_steps))
    start = jax.eval_shape(lambda: mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps))
    fp.program(f"{game} baselines", lambda keys, inits: jax.vmap(make_baselines(
        game, settings.num_games, inits, BASELINE_PAIRS, settings.warmup_steps))(keys),
        jax.ShapeDtypeStruct((len(seeds), 2), jnp.uint32), {seat: start for seat in seats})
    for opponent in OPPONENTS:  # the mamaml opponent's start is a constant of its programs: zeros stand in for it
        _mfos_vs_learner(fp, game, opponent, settings, jnp.zeros(start.shape, start.dtype))
    _, init, advance = make_self_play_train(game, settings.for_self_play())
    _meta_training(fp, f"{game} self-play", init, advance)
    _mfos_host(fp, game)
    _host_common(fp)


def mfos_run_part(fp: Fingerprint, command: str) -> None:
    """`purerl mfos --game G --opponent O` (one run), or the coin game against PPO."""
    from purerl.studies.mfos.settings import HYPERPARAMS, seed_keys

    args = _parse(command)
    if args.game == "coin":
        from purerl.studies.mfos import cli as mfos_cli
        from purerl.studies.mfos import coin

        preset = args.preset or "cpu"
        changes = {k: v for k, v in dict(seeds=args.seeds, num_boards=args.num_games,
                                         meta_episodes=args.meta_episodes).items() if v is not None}
        settings = coin.PRESETS[preset].replace(**changes)
        seeds = mfos_cli._seeds(args.seed, settings.seeds)
        fp.input("run config", {k: v for k, v in coin.run_config(settings, seeds, preset).items()
                                if k not in ("command", "preset", "settings")} | {"settings": _numbers(settings)})
        _, init, advance = coin.make_coin_train(settings)
        _meta_training(fp, "coin mfos vs ppo", init, advance)
        fp.program("seed keys", lambda: seed_keys(seeds))
        _mfos_host(fp, "coin")
        _host_common(fp)
        return
    preset, settings, seeds = _mfos_settings(args, table=False)
    game, opponent = args.game or "ipd", args.opponent or "nl"
    fp.input("settings", {"settings": _numbers(settings), "seeds": seeds, "hyperparams": HYPERPARAMS,
                          "game": game, "opponent": opponent})
    fp.program("seed keys", lambda: seed_keys(seeds))
    if opponent == "self":
        from purerl.studies.mfos.self_play import make_self_play_train

        _, init, advance = make_self_play_train(game, settings)
        _meta_training(fp, f"{game} self-play", init, advance)
    else:
        from purerl.studies.mfos.settings import OPPONENT_SEAT, mamaml_init

        logits = None
        if opponent == "mamaml":
            import jax
            import jax.numpy as jnp

            fp.program(f"{game} mamaml start, seat {OPPONENT_SEAT}",
                       lambda: mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps))
            start = jax.eval_shape(lambda: mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps))
            logits = jnp.zeros(start.shape, start.dtype)
        _mfos_vs_learner(fp, game, opponent, settings, logits)
    _mfos_host(fp, game)
    _host_common(fp)


# ------------------------------------------------------------------------------------------------ parts
# The studies whose commands `components` can build without running (a study registered later falls back to its
# source hash until its commands have builders here).
COVERED = ("dpo", "value_loss", "mfos", "mfos_paper", "mfos_coin", "act")


def part_commands(study_name: str, part: str) -> list[str]:
    """The registered commands whose computation makes `part` of a study's document (its fingerprint's commands,
    `purerl.fingerprint`): dpo's part ENV is the comparison on ENV; act's train-time parts are that env's ES
    runs and the report that evaluates them; the M-FOS table's part GAME is the table command, restricted to
    GAME; a one-command study's parts are all made by it."""
    from purerl.registry import STUDIES

    study = STUDIES[study_name]
    if part not in study.parts:
        raise ConfigError(f"{study_name} has no part '{part}'; its parts are {', '.join(study.parts)}")
    if study_name == "dpo":
        return [c for c in study.commands if c.startswith("purerl compare") and f" --env {part} " in f"{c} "]
    if study_name == "act":
        if part == "test-time":
            return [c for c in study.commands if c.startswith("purerl act test-time")]
        env = part.partition(" ")[2] or "CartPole-v1"
        return [c for c in study.commands if c.startswith("purerl act train-time") and f" --env {env} " in c]
    return list(study.commands)


def _builder(command: str):
    words = shlex.split(command)
    kind = " ".join(words[1:3])
    if words[1] == "compare":
        return compare_part
    if kind == "analyze value-loss":
        return value_loss_part
    if words[1] == "act":
        return act_part
    if kind == "mfos table":
        return None  # per game: see `components`
    if words[1] == "mfos":
        return mfos_run_part
    raise ConfigError(f"no fingerprint for the command {command}")


def components(study_name: str, part: str) -> dict:
    """The fingerprint record of one part of a registered study: {"hash", "components"}, from the commands that
    make it (`part_commands`), built without running them."""
    commands = part_commands(study_name, part)
    fp = Fingerprint()
    fp.input("commands", [_command_words(c) for c in commands])
    for command in commands:
        if command.startswith("purerl mfos table"):
            mfos_table_part(fp, command, part)
        else:
            _builder(command)(fp, command)
    fp.versions(*(("evosax",) if any(c.startswith(("purerl act", "purerl evolve")) for c in commands) else ()))
    return fp.record()


# ------------------------------------------------------------------------------------------------ many parts
def _unit(study_name: str, part: str) -> tuple:
    """Parts with the same unit have the same fingerprint (one command making several parts)."""
    commands = tuple(part_commands(study_name, part))
    return commands, part if any(c.startswith("purerl mfos table") for c in commands) else None


def _compute(study_name: str, part: str) -> dict | str:
    """`components`, or the reason it cannot be computed here (a missing optional package, say) as a string."""
    try:
        return components(study_name, part)
    except Exception as error:  # noqa: BLE001  (reported per part by `purerl results --check`)
        return f"{type(error).__name__}: {error}".splitlines()[0]


def _compute_with_sources(study_name: str, part: str) -> tuple[dict | str, dict[str, str]]:
    """`_compute`, and the purerl source files loaded in this process once it is done, by content hash: the
    code the fingerprint can depend on (a module it never imported cannot change it)."""
    import sys

    found = _compute(study_name, part)
    return found, _loaded_sources(sys.modules.values())


def _loaded_sources(modules) -> dict[str, str]:
    sources = {}
    for module in list(modules):
        path = getattr(module, "__file__", None)
        if path and getattr(module, "__name__", "").split(".")[0] == "purerl":
            path = Path(path).resolve()
            if path.is_relative_to(PACKAGE) and path.is_file():
                sources[path.relative_to(PACKAGE).as_posix()] = digest(path.read_bytes())
    return dict(sorted(sources.items()))


def environment_key() -> str:
    """What every fingerprint depends on besides purerl's own code: the committed files studies read (evolved
    meta-parameters, evolutions), the registry's commands, Python and the installed packages' versions."""
    import platform

    from purerl import hostinfo, registry

    digest_ = hashlib.sha256()
    results = REPO / "docs" / "results"
    for path in sorted(p for p in results.rglob("*") if p.is_file()
                       and (p.suffix == ".msgpack" or p.name in ("config.json", "generations.csv"))):
        digest_.update(path.relative_to(results).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    digest_.update(json.dumps([platform.python_version(), hostinfo.versions(
        ("jax", "jaxlib", "flax", "optax", "evosax", "gymnax", "brax", "numpy", "scipy", "distrax", "chex")),
        {name: study.commands for name, study in registry.STUDIES.items()}], sort_keys=True).encode())
    return digest_.hexdigest()[:16]


def _cache_path() -> Path:
    import os

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "purerl" / "fingerprints.json"


def _still_valid(entry: dict) -> bool:
    """Whether every purerl source file a cached fingerprint's computation had loaded is unchanged."""
    for name, sha in entry.get("sources", {}).items():
        path = PACKAGE / name
        if not path.is_file() or digest(path.read_bytes()) != sha:
            return False
    return bool(entry.get("sources"))


def many(parts: list[tuple[str, str]], workers: int = 2, cache: bool = True,
         refresh: bool = False) -> dict[tuple[str, str], dict | str]:
    """The fingerprint of each (study, part), each computed once per unit (parts one command makes together),
    `workers` processes at a time. With `cache` (PURERL_FINGERPRINT_CACHE=0 turns it off), a unit's fingerprint
    is reused from the last computation when the environment (`environment_key`) and every purerl source file
    that computation had loaded are unchanged: an edit to the CLI, checkpointing or another study's module
    recomputes nothing, an edit to PPO recomputes every unit that imported it. `refresh` recomputes every unit
    and stores the results."""
    import os

    cache = cache and os.environ.get("PURERL_FINGERPRINT_CACHE", "1") != "0"
    units: dict[tuple, list[tuple[str, str]]] = {}
    for study_name, part in parts:
        units.setdefault(_unit(study_name, part), []).append((study_name, part))
    names = {unit: digest(json.dumps(unit)) for unit in units}
    known = {}
    if cache:
        environment = environment_key()
        try:
            stored = json.loads(_cache_path().read_text())
        except (OSError, ValueError):
            stored = {}
        if isinstance(stored, dict) and stored.get("environment") == environment and not refresh:
            known = {name: entry for name, entry in stored.get("units", {}).items() if _still_valid(entry)}
    todo = [unit for unit in units if names[unit] not in known]
    for unit, (found, sources) in zip(todo, _run_all([units[unit][0] for unit in todo], workers)):
        known[names[unit]] = {"record": found, "sources": sources}
    out = {member: known[names[unit]]["record"] for unit, members in units.items() for member in members}
    if cache and todo:
        keep = {name: entry for name, entry in known.items() if isinstance(entry["record"], dict)}
        try:
            from purerl.results import write_atomic

            _cache_path().parent.mkdir(parents=True, exist_ok=True)
            write_atomic(_cache_path(), json.dumps({"environment": environment, "units": keep}, indent=1))
        except OSError:
            pass
    return out


def _run_all(todo: list[tuple[str, str]], workers: int) -> list[tuple[dict | str, dict]]:
    """`_compute_with_sources` of each (study, part): here, or in `workers` fresh processes (spawned: JAX does not
    fork), longest first."""
    if workers <= 1 or len(todo) <= 1:
        return [_compute_with_sources(*p) for p in todo]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(range(len(todo)), key=lambda i: -_COST.get(todo[i][0], 1))
    with ProcessPoolExecutor(min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {i: pool.submit(_compute_with_sources, *todo[i]) for i in order}
        return [futures[i].result() for i in range(len(todo))]


_COST = {"mfos": 25, "act": 10, "value_loss": 10, "dpo": 3, "mfos_paper": 3, "mfos_coin": 3}  # seconds, roughly
