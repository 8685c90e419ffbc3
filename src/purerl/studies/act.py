"""Adversarial Cheap Talk (Lu, Willi, Letcher, Foerster; ICML 2023, arXiv 2211.11030).

Train-time ACT evolves an adversary psi whose messages, appended to the
victim's observation, lower ("anti") or raise ("pro") the victim's mean return
over its training. Test-time ACT jointly evolves the train-time messages and a
goal-conditioned "exploiter" that, after training, steers the frozen greedy
victim to a target cart position through the message channel alone.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from purerl import envs, provenance, results, stats
from purerl.algos.ppo import make_train
from purerl.config import ConfigError, HyperParams, PPOConfig
from purerl.envs.cheap_talk import CheapTalk
from purerl.evolve import GENERATIONS_CSV, MEAN_PARAMS, ESConfig, Evolution, MetaTask, config_json, load_meta_params
from purerl.evolve import run as evolve_run

# The CartPole victim of the authors' code: 4 envs x 256 steps x 32 updates, 16 full-batch epochs,
# hidden 32 (tanh), lr 5e-3, gamma 0.99, entropy 0.01, clip 0.2; episodes capped at 200 steps.
VICTIM = PPOConfig(env="CartPole-v1", num_envs=4, num_steps=256, total_timesteps=4 * 256 * 32, update_epochs=16,
                   num_minibatches=1, hidden_sizes=(32, 32), activation="tanh")
VICTIM_HP = HyperParams(lr=5e-3, gamma=0.99, ent_coef=0.01, clip_eps=0.2)
EPISODE_CAP = 200
ES_DEFAULTS = dict(strategy="open_es", fitness_shaping="z_score", lr=0.01, lr_final=0.001, std=0.04, std_final=0.01)
# cpu: population 16, 16 generations, the budget of the published act.md (its header gives the wall-clock of
# each ES run); paper: the authors' CartPole scale (main_train_time.py: POP_SIZE 1024, num_generations 2049), one GPU.
PRESETS = {
    "cpu": dict(population_size=16, generations=16),
    "paper": dict(population_size=1024, generations=2049),
}
FRESH_SEEDS = list(range(20_000, 20_032))
GOAL_RANGE = 1.5  # target cart positions are drawn uniformly from [-1.5, 1.5]
EVAL_GOALS = 16


def es_config(preset: str, **overrides) -> ESConfig:
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; choose from {', '.join(PRESETS)}")
    return ESConfig(**{**ES_DEFAULTS, **PRESETS[preset], **overrides})


def victim(env_name: str, observe: CheapTalk | None):
    if env_name != "CartPole-v1":
        raise ConfigError(f"the ACT study reproduces the paper's CartPole-v1 victim, not {env_name}")
    env = envs.make(env_name, max_episode_steps=EPISODE_CAP)
    return make_train(VICTIM, env=env, observe=observe)


def adversary_params(talk: CheapTalk, key: jax.Array, env_name: str = "CartPole-v1"):
    return talk.init_params(key, envs.make(env_name).observation_shape[0])


# ----------------------------------------------------------------- train-time
def train_time_task(mode: str, env_name: str = "CartPole-v1", seed: int = 0) -> MetaTask:
    """Fitness: +/- the victim's mean episode return over its training (pro / anti)."""
    if mode not in ("anti", "pro"):
        raise ConfigError(f"mode must be anti or pro, got '{mode}'")
    talk = CheapTalk()
    train = victim(env_name, talk)
    sign = -1.0 if mode == "anti" else 1.0
    hp = VICTIM_HP.as_arrays()

    def fitness(key, psi):
        return sign * jnp.nanmean(train(key, hp, psi).metrics["episode_return"])

    return MetaTask(f"act-train-time-{mode}", adversary_params(talk, jax.random.PRNGKey(seed), env_name), fitness,
                    {"env": env_name, "mode": mode, "fitness": f"{'-' if sign < 0 else '+'}mean return over training"})


def victim_curves(env_name: str, psis, seeds: list[int]) -> np.ndarray:
    """Victims trained on `seeds`, one adversary each (psis batched on axis 0), or no channel if psis is None."""
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, jnp.uint32))
    hp = VICTIM_HP.as_arrays()
    if psis is None:
        metrics = jax.jit(jax.vmap(victim(env_name, None), in_axes=(0, None)))(keys, hp).metrics
    else:
        metrics = jax.jit(jax.vmap(victim(env_name, CheapTalk()), in_axes=(0, None, 0)))(keys, hp, psis).metrics
    return np.asarray(metrics["episode_return"]).T  # [updates, seeds]


def evaluate_train_time(run_dirs: dict[str, Path], env_name: str, plots_dir: Path) -> dict:
    """Fresh victim seeds under: each evolved adversary (mean params), a random adversary, no channel."""
    talk = CheapTalk()
    template = adversary_params(talk, jax.random.PRNGKey(0), env_name)
    n = len(FRESH_SEEDS)
    conditions = {}
    for mode, run_dir in run_dirs.items():
        psi = load_meta_params(Path(run_dir) / "mean_meta_params.msgpack", template)
        conditions[f"{mode} (evolved)"] = jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), psi)
    random_keys = jax.random.split(jax.random.PRNGKey(12_345), n)
    conditions["random adversary"] = jax.lax.map(lambda k: adversary_params(talk, k, env_name), random_keys)
    conditions["no messages"] = None
    curves = {label: victim_curves(env_name, psis, FRESH_SEEDS) for label, psis in conditions.items()}
    rows = {label: stats.summarize(np.nanmean(stats.forward_fill(c), axis=0)) for label, c in curves.items()}

    plots_dir.mkdir(parents=True, exist_ok=True)
    results.plot_labelled_curves(plots_dir, curves, VICTIM.batch_size,
                                 f"{env_name} victims under cheap talk ({n} fresh seeds)", "train_time.png")
    report = {"env": env_name, "seeds": FRESH_SEEDS, "mean_return_over_training": rows,
              "runs": {m: str(d) for m, d in run_dirs.items()}}
    results.write_atomic(plots_dir / "train_time.json", json.dumps(report, indent=2))
    return report


# ------------------------------------------------------------------ test-time
def goal_inputs(obs: jax.Array, goal: jax.Array) -> jax.Array:
    return jnp.concatenate([obs, goal[None]], axis=-1)


def controlled_episode(train, victim_params, obs_stats, exploiter: CheapTalk, phi, key, goal):
    """The frozen greedy victim, steered by the exploiter's messages towards cart position `goal`.

    Returns (goal return, cart positions): reward exp(-(x - goal)^2) per step until the episode ends.
    """
    env = train.env
    reset_key, key = jax.random.split(key)
    obs, env_state = env.reset(reset_key)

    def step(carry, step_key):
        obs, env_state, alive = carry
        seen = jnp.concatenate([obs, exploiter.messages(phi, goal_inputs(obs, goal))])
        action = train.act(victim_params, obs_stats, seen)
        env_state, ts = env.step(step_key, env_state, action)
        x = ts.final_obs[0]
        reward = jnp.where(alive, jnp.exp(-((x - goal) ** 2)), 0.0)
        return (ts.obs, env_state, alive & ~ts.done), (reward, jnp.where(alive, x, jnp.nan))

    _, (rewards, xs) = jax.lax.scan(step, (obs, env_state, jnp.bool_(True)), jax.random.split(key, env.max_episode_steps))
    return rewards.sum(), xs


def goal_return(train, result_state, exploiter, phi, key, goals: int):
    goal_key, episode_key = jax.random.split(key)
    targets = jax.random.uniform(goal_key, (goals,), minval=-GOAL_RANGE, maxval=GOAL_RANGE)
    returns, _ = jax.vmap(lambda k, g: controlled_episode(train, result_state.params, result_state.obs_stats,
                                                          exploiter, phi, k, g))(jax.random.split(episode_key, goals), targets)
    return returns.mean()


def test_time_task(env_name: str = "CartPole-v1", exploiter_only: bool = False, seed: int = 0,
                   goals: int = 8) -> MetaTask:
    """Joint evolution of train-time messages and a goal-conditioned exploiter (or the exploiter alone,
    against victims trained with fixed random messages)."""
    talk, exploiter = CheapTalk(), CheapTalk(condition_dims=1)
    train = victim(env_name, talk)
    hp = VICTIM_HP.as_arrays()
    k_train, k_exploit = jax.random.split(jax.random.PRNGKey(seed))
    random_psi = adversary_params(talk, jax.random.PRNGKey(seed + 777), env_name)
    template = {"exploit": adversary_params(exploiter, k_exploit, env_name)}
    if not exploiter_only:
        template["train"] = adversary_params(talk, k_train, env_name)

    def fitness(key, meta):
        train_key, eval_key = jax.random.split(key)
        psi = random_psi if exploiter_only else meta["train"]
        state = train(train_key, hp, psi).state
        return goal_return(train, state, exploiter, meta["exploit"], eval_key, goals)

    name = "act-test-time-exploiter-only" if exploiter_only else "act-test-time"
    return MetaTask(name, template, fitness, {"env": env_name, "exploiter_only": exploiter_only, "goals": goals,
                                              "fitness": "mean goal return of the frozen greedy victim"})


def evaluate_test_time(joint_dir: Path, exploiter_dir: Path, env_name: str, plots_dir: Path) -> dict:
    """Goal return on fresh victim seeds: joint, exploiter-only (random messages), and a random shaper."""
    talk, exploiter = CheapTalk(), CheapTalk(condition_dims=1)
    train = victim(env_name, talk)
    hp = VICTIM_HP.as_arrays()
    joint_task, exploit_task = test_time_task(env_name), test_time_task(env_name, exploiter_only=True)
    joint = load_meta_params(Path(joint_dir) / "mean_meta_params.msgpack", joint_task.template)
    exploit_only = load_meta_params(Path(exploiter_dir) / "mean_meta_params.msgpack", exploit_task.template)
    random_psi = adversary_params(talk, jax.random.PRNGKey(777), env_name)  # seed 0 + 777, as in the task
    random_shaper = {"train": adversary_params(talk, jax.random.PRNGKey(4242), env_name),
                     "exploit": adversary_params(exploiter, jax.random.PRNGKey(4243), env_name)}
    conditions = {
        "joint (evolved messages + exploiter)": (joint["train"], joint["exploit"]),
        "exploiter vs random-message victim": (random_psi, exploit_only["exploit"]),
        "random shaper": (random_shaper["train"], random_shaper["exploit"]),
    }
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(FRESH_SEEDS, jnp.uint32))

    @jax.jit
    def per_seed(psi, phi):
        def one(key):
            train_key, eval_key = jax.random.split(key)
            state = train(train_key, hp, psi).state
            return goal_return(train, state, exploiter, phi, eval_key, EVAL_GOALS)

        return jax.vmap(one)(keys)

    rows = {label: stats.summarize(np.asarray(per_seed(psi, phi))) for label, (psi, phi) in conditions.items()}
    plots_dir.mkdir(parents=True, exist_ok=True)
    _plot_controlled_episode(train, hp, exploiter, joint, plots_dir / "test_time_episode.png")
    report = {"env": env_name, "seeds": FRESH_SEEDS, "goals_per_seed": EVAL_GOALS, "goal_return": rows,
              "runs": {"joint": str(joint_dir), "exploiter_only": str(exploiter_dir)}}
    results.write_atomic(plots_dir / "test_time.json", json.dumps(report, indent=2))
    return report


def _plot_controlled_episode(train, hp, exploiter, joint, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    state = jax.jit(train)(jax.random.PRNGKey(FRESH_SEEDS[0]), hp, joint["train"]).state
    fig, ax = plt.subplots(figsize=(7, 4))
    for goal in (-1.0, 0.0, 1.0):
        ret, xs = jax.jit(lambda g: controlled_episode(train, state.params, state.obs_stats, exploiter,
                                                       joint["exploit"], jax.random.PRNGKey(1), g))(jnp.float32(goal))
        line = ax.plot(np.asarray(xs), label=f"goal {goal:+.1f} (return {float(ret):.0f})")[0]
        ax.axhline(goal, color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("cart position x")
    ax.set_title("Frozen victim steered through the message channel alone")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


PARAMS = "params"  # beside a report: the evolved parameters its tables use, one folder per ES run
RUNS = {"train-time": ("anti", "pro"), "test-time": ("test-time", "test-time-exploiter")}
PARAM_FILES = (MEAN_PARAMS, results.CONFIG, GENERATIONS_CSV)


def run_cli(args) -> int:
    """`purerl act PHASE`: evolve (or load with --from-params), evaluate on fresh victims, write the report."""
    envs.check_name(args.env)
    overrides = {k: getattr(args, k) for k in ("population_size", "generations", "seed", "max_parallel")
                 if getattr(args, k) is not None}
    config = es_config(args.preset, **overrides)
    config.validate()
    base = args.runs_dir / args.env
    report = args.report or base / "report.md"
    plots_dir = report.parent / report.stem
    source = args.from_params or base
    if args.from_params and not any((source / run / MEAN_PARAMS).exists() for run in RUNS[args.phase]):
        raise ConfigError(f"{source} holds no evolved {args.phase} parameters ({'/, '.join(RUNS[args.phase])}/)")
    started = time.perf_counter()
    if args.from_params is None:
        tasks = ({args.mode: train_time_task(args.mode, args.env, config.seed)} if args.phase == "train-time" else
                 {"test-time": test_time_task(args.env, seed=config.seed),
                  "test-time-exploiter": test_time_task(args.env, exploiter_only=True, seed=config.seed)})
        for name, task in tasks.items():
            _evolve(task, config, base / name, args)
    present = [run for run in RUNS[args.phase] if (source / run / MEAN_PARAMS).exists()]
    if args.report:  # the report's tables can be re-evaluated from these without re-evolving
        _keep_params(source, plots_dir / PARAMS, present)
    if args.phase == "train-time":
        rows = evaluate_train_time({m: source / m for m in present}, args.env, plots_dir)["mean_return_over_training"]
    else:
        rows = evaluate_test_time(source / "test-time", source / "test-time-exploiter", args.env, plots_dir)["goal_return"]
    es = json.loads((source / present[0] / results.CONFIG).read_text())["es"]
    evolved = {run: {"es": json.loads((source / run / results.CONFIG).read_text())["es"],
                     "evolve_wall_s": round(sum(r["seconds"] for r in _generations(source / run)), 1)} for run in present}
    provenance.record("act", report, args.phase, args.argv, time.perf_counter() - started,
                      {"population": es["population_size"], "generations": es["generations"],
                       "env_steps_per_run": VICTIM.num_updates * VICTIM.batch_size, "seeds": FRESH_SEEDS},
                      {"evolved": evolved, "params_from": str(source)})
    _write_report(report, plots_dir)
    for label, s in rows.items():
        print(f"{label:38s} IQM {stats.describe(s)}")
    print(f"report: {report}")
    return 0


def _evolve(task: MetaTask, config: ESConfig, out: Path, args) -> None:
    evolution = Evolution(task, config)
    log = evolve_run(evolution, out, config_json(task, config, {"preset": args.preset}),
                     resume=args.resume, overwrite=args.overwrite, progress=not args.no_progress)
    print(f"{task.name}: fitness mean {log[0]['mean']:.2f} -> {log[-1]['mean']:.2f} "
          f"(best {max(r['best'] for r in log):.2f}) over {len(log)} generations; {out}")


def _keep_params(source: Path, target: Path, runs: list[str]) -> None:
    for run in runs:
        if (source / run).resolve() != (target / run).resolve():
            (target / run).mkdir(parents=True, exist_ok=True)
            for name in PARAM_FILES:
                shutil.copyfile(source / run / name, target / run / name)


def _generations(run_dir: Path) -> list[dict]:
    with open(run_dir / GENERATIONS_CSV) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _write_report(out_md: Path, plots_dir: Path) -> None:
    """act.md from whatever train-time and test-time results exist, headed by their provenance."""
    lines = ["# Adversarial Cheap Talk", "", *provenance.header(out_md, "act"),
             "Statistic: IQM over fresh victim seeds with its 95% percentile-bootstrap CI (per-seed values and n "
             f"below {stats.MIN_SEEDS_FOR_CI} seeds). A comparison is called only where the CIs do not overlap. "
             f"The evolved parameters are in `{plots_dir.name}/{PARAMS}/`; `--from-params` re-evaluates them. "
             "A run on the same kind of machine reproduces these numbers exactly.", ""]
    train_json, test_json = plots_dir / "train_time.json", plots_dir / "test_time.json"
    if train_json.exists():
        r = json.loads(train_json.read_text())
        rows = r["mean_return_over_training"]
        lines += [f"## Train-time ACT on {r['env']}", "",
                  f"Victim mean episode return over its whole training, {len(r['seeds'])} fresh victim seeds.", "",
                  *_table("adversary", rows), "",
                  *_verdicts(rows, [("anti (evolved)", "no messages"), ("anti (evolved)", "random adversary"),
                                    ("pro (evolved)", "no messages"), ("pro (evolved)", "random adversary")]),
                  "", f"![train-time]({plots_dir.name}/train_time.png)", ""]
    if test_json.exists():
        r = json.loads(test_json.read_text())
        rows = r["goal_return"]
        lines += [f"## Test-time ACT on {r['env']}", "",
                  f"Goal return (sum of exp(-(x - goal)^2) over an episode of at most {EPISODE_CAP} steps) of the "
                  f"frozen greedy victim, mean over {r['goals_per_seed']} goals per victim, {len(r['seeds'])} fresh "
                  "victim seeds.", "", *_table("condition", rows), "",
                  *_verdicts(rows, [("joint (evolved messages + exploiter)", "random shaper"),
                                    ("exploiter vs random-message victim", "random shaper"),
                                    ("joint (evolved messages + exploiter)", "exploiter vs random-message victim")]),
                  "", f"![controlled episode]({plots_dir.name}/test_time_episode.png)", ""]
    out_md.parent.mkdir(parents=True, exist_ok=True)
    results.write_atomic(out_md, "\n".join(lines))


def _table(what: str, rows: dict) -> list[str]:
    return [f"| {what} | IQM [95% CI] or per-seed values | mean |", "|---|---|---|",
            *[f"| {label} | {stats.describe(s)} | {s['mean']:.1f} |" for label, s in rows.items()]]


def _verdicts(rows: dict, pairs: list[tuple[str, str]]) -> list[str]:
    words = {1: "higher (CIs do not overlap)", -1: "lower (CIs do not overlap)", 0: stats.NOT_DISTINGUISHABLE}
    return [f"- {a} vs {b}: {words[stats.separation(rows[a], rows[b])]}" for a, b in pairs if a in rows and b in rows]
