"""`purerl act PHASE`: evolve the ACT adversaries (one run per ES seed), evaluate them on fresh victims, and write
act.md with the parameters its tables use beside it."""

from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

from purerl import envs, stats
from purerl_lab.publish import document, provenance, replication
from purerl.run import files, rundir
from purerl.checks import ConfigError
from purerl.meta.evolve import Evolution, MetaTask, config_json
from purerl.meta.strategies import ESConfig
from purerl.meta.evolve_files import GENERATIONS_CSV, MEAN_PARAMS
from purerl.meta.evolve import run as evolve_run
from purerl_lab.studies import act
from purerl_lab.studies.act import partials, summary, test_time

PARAMS = "params"  # beside a report: the evolved parameters its tables use, one folder per ES run
PARAM_FILES = (MEAN_PARAMS, rundir.CONFIG, GENERATIONS_CSV)
EVALUATION = "train-time-evaluation"  # in RUNS_DIR/ENV: the finished conditions of a train-time evaluation
# Each phase's ES runs, as (run-name prefix, what the victim hears in training, table label); a run is
# PREFIX-esSEED under --runs-dir/ENV.
RUNS = {
    "train-time": (("anti", None, "anti (evolved)"), ("pro", None, "pro (evolved)")),
    "test-time": (("test-time", "evolved", "joint (evolved messages + exploiter)"),
                  ("test-time-exploiter", "random", "exploiter vs random-message victim"),
                  ("test-time-exploiter-silent", "silent", "exploiter vs silent-channel victim")),
}
JOINT, RANDOM_VICTIM, SILENT_VICTIM = (label for _, _, label in RUNS["test-time"])


def run_name(prefix: str, seed: int | str) -> str:
    return f"{prefix}-es{seed}"


def evolved_runs(source: Path, phase: str) -> list[tuple[str, str | None, str, Path]]:
    """(prefix, victim messages, row label, run dir) of every ES run of `phase` in `source`, by prefix then seed."""
    found = []
    for prefix, kind, label in RUNS[phase]:
        dirs = [d for d in source.glob(run_name(prefix, "*")) if (d / MEAN_PARAMS).exists()]
        seeds = sorted(int(d.name.rsplit("-es", 1)[1]) for d in dirs)
        found += [(prefix, kind, f"{label}, ES seed {s}", source / run_name(prefix, s)) for s in seeds]
    return found


def run_cli(args) -> int:
    """Evolve this invocation's ES runs, or evaluate every run present (with --report or --from-params) and report.
    An evolve run alone does not evaluate: re-evaluating every run in the folder after each one cost more than
    evolving it on Pendulum (11 min against 10)."""
    envs.check_name(args.env)
    if args.phase == "test-time" and args.env != act.TEST_TIME_ENV:
        raise ConfigError(f"test-time ACT steers a cart to a goal position: it runs on {act.TEST_TIME_ENV}, "
                          f"not {args.env}")
    overrides = {k: getattr(args, k) for k in ("population_size", "generations", "seed", "max_parallel")
                 if getattr(args, k) is not None}
    config = act.es_config(args.preset, args.env, **overrides)
    config.validate()
    base = args.runs_dir / args.env
    report = provenance.check_report(args.report or base / "report.md", "act")
    plots_dir = report.parent / report.stem
    source = args.from_params or base
    if args.from_params and not evolved_runs(source, args.phase):
        prefixes = ", ".join(run_name(prefix, "S") for prefix, _, _ in RUNS[args.phase])
        raise ConfigError(f"{source} holds no evolved {args.phase} parameters ({prefixes})")
    if args.from_params is None:
        tasks = ({args.mode: act.train_time_task(args.mode, args.env, config.seed)} if args.phase == "train-time" else
                 {prefix: test_time.test_time_task(args.env, kind, config.seed) for prefix, kind, _ in RUNS["test-time"]})
        # --resume continues the runs that exist and starts the others, as `compare --resume` does, so a phase
        # stopped between its runs resumes with one command; every run directory is checked before one evolves.
        continued = {prefix: args.resume and rundir.holds_run(base / run_name(prefix, config.seed)) for prefix in tasks}
        for prefix, task in tasks.items():
            rundir.prepare(base / run_name(prefix, config.seed), _record(task, config, args), continued[prefix],
                           args.overwrite)
        for prefix, task in tasks.items():
            _evolve(task, config, base / run_name(prefix, config.seed), args, continued[prefix])
        if args.report is None:
            print(f"evaluate: purerl act {args.phase} --env {args.env} --from-params {base}")
            return 0
    present = evolved_runs(source, args.phase)
    if args.report:  # the report's tables can be re-evaluated from these without re-evolving
        _keep_params([run_dir for *_, run_dir in present], plots_dir / f"{PARAMS}{act.env_suffix(args.env)}")
    fresh = args.fresh_seeds
    seeds = act.fresh_seeds(args.env, args.victims, replication=fresh)
    started, earlier_sessions_s = time.perf_counter(), 0.0
    if args.phase == "train-time":
        done = partials.Partials(base / replication.run_folder(EVALUATION, fresh),
                                 partials.train_time_inputs(args.env, seeds), args.resume)
        evaluation = act.evaluate_train_time({label: run_dir for _, _, label, run_dir in present}, args.env,
                                             plots_dir, seeds, done, fresh, args.runs_dir)
        rows, earlier_sessions_s = evaluation["mean_return_over_training"], evaluation["earlier_sessions_s"]
    else:
        rows = test_time.evaluate_test_time({label: (kind, run_dir) for _, kind, label, run_dir in present}, args.env,
                                            plots_dir, seeds, fresh, args.runs_dir)["goal_return"]
    evolved = {run_dir.name: {"es": rundir.read_config(run_dir)["es"],
                              "evolve_wall_s": round(sum(r["seconds"] for r in _generations(run_dir)), 1)}
               for *_, run_dir in present}
    es = next(iter(evolved.values()))["es"]
    victim = act.victim_of(args.env).config
    # the evaluation's seconds, plus the evolutions' (every session's generations) where this command evolved
    # them, so that re-reporting finished evolutions does not record only its own seconds
    evolving = 0.0 if args.from_params else sum(run["evolve_wall_s"] for run in evolved.values())
    part = f"{args.phase}{act.env_suffix(args.env).replace('-', ' ', 1)}"
    provenance.record("act", report, replication.fresh_part(part) if fresh else part, args.argv,
                      time.perf_counter() - started + earlier_sessions_s + evolving,
                      {"population": es["population_size"], "generations": es["generations"],
                       "env_steps_per_run": victim.env_steps, "seeds": seeds},
                      {"evolved": evolved, "params_from": provenance.portable_path(source, args.runs_dir)})
    _write_report(report, plots_dir)
    for label, s in rows.items():
        print(f"{label:48s} IQM {stats.describe(s)}")
    print(f"report: {report}")
    return 0


def _record(task: MetaTask, config: ESConfig, args) -> dict:
    return json.loads(json.dumps(config_json(task, config, {"preset": args.preset})))  # as config.json holds it


def _evolve(task: MetaTask, config: ESConfig, out: Path, args, resume: bool) -> None:
    evolution = Evolution(task, config)
    log = evolve_run(evolution, out, config_json(task, config, {"preset": args.preset}),
                     resume=resume, overwrite=args.overwrite, progress=not args.no_progress)
    print(f"{task.name}: fitness mean {log[0]['mean']:.2f} -> {log[-1]['mean']:.2f} "
          f"(best {max(r['best'] for r in log):.2f}) over {len(log)} generations; {out}")


def _keep_params(run_dirs: list[Path], target: Path) -> None:
    for run_dir in run_dirs:
        if run_dir.resolve() != (target / run_dir.name).resolve():
            (target / run_dir.name).mkdir(parents=True, exist_ok=True)
            for name in PARAM_FILES:
                shutil.copyfile(run_dir / name, target / run_dir.name / name)


def _generations(run_dir: Path) -> list[dict]:
    with open(run_dir / GENERATIONS_CSV) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def render(report: Path) -> Path:
    """act.md again from the records committed beside it (`purerl results --render`): every number it prints is
    in REPORT_STEM/ (the evaluations' JSON, each ES run's config and generations), so no victim trains."""
    report = Path(report)
    _write_report(report, report.parent / report.stem)
    return report


def _write_report(out_md: Path, plots_dir: Path) -> None:
    """act.md from whatever train-time and test-time results exist: the summary of every comparison first, then
    each evaluation's table, then the differences from the authors' code and the provenance."""
    evaluations, pairs, sections, fresh = {}, {}, [], {}
    for env_name in act.VICTIMS:
        train_json, train_png = (plots_dir / name for name in act.train_time_files(env_name))
        if not train_json.exists():
            continue
        r = files.read_json(train_json, "a train-time evaluation")
        rows, name = r["mean_return_over_training"], f"train-time {r['env']}"
        evaluations[name] = (r["env"], rows)
        fresh_json, fresh_png = (plots_dir / file for file in act.train_time_files(env_name, fresh=True))
        fresh[name] = _fresh_rows(fresh_json, "mean_return_over_training")
        pairs[name] = [(a, b) for a in rows if "(evolved" in a for b in summary.BASELINES[::-1]]
        sections += [f"## Train-time ACT on {r['env']}", "",
                     f"Victim mean episode return over its whole training, {len(r['seeds'])} held-out victim seeds.",
                     "", *_table("adversary", rows), "", *_verdicts(rows, pairs[name], r["env"]),
                     "", f"![train-time on {r['env']}]({plots_dir.name}/{train_png.name})", "",
                     *([f"The replication's victims (fresh seeds, from PRNGKey({replication.FRESH_SEED_START})):", "",
                        f"![train-time on {r['env']}, fresh seeds]({plots_dir.name}/{fresh_png.name})", ""]
                       if fresh_png.exists() else [])]
    test_json = plots_dir / "test_time.json"
    if test_json.exists():
        r = json.loads(test_json.read_text())
        rows = r["goal_return"]
        joint = [label for label in rows if label.startswith(JOINT)]
        baselines = [label for label in rows if label.startswith((RANDOM_VICTIM, SILENT_VICTIM))]
        evaluations["test-time"] = (r["env"], rows)
        fresh["test-time"] = _fresh_rows(plots_dir / "fresh_test_time.json", "goal_return")
        pairs["test-time"] = [(a, b) for a in joint for b in baselines] + [(a, "random shaper")
                                                                           for a in joint + baselines]
        sections += [f"## Test-time ACT on {r['env']}", "",
                     f"Goal return (sum of exp(-(x - goal)^2) over an episode of at most "
                     f"{act.VICTIMS[act.TEST_TIME_ENV].episode_cap} steps) of the "
                     f"frozen greedy victim, mean over {r['goals_per_seed']} goals per victim, {len(r['seeds'])} "
                     "held-out victim seeds. The exploiter baselines evolve the exploiter alone, against victims "
                     "trained with a fixed random message function or with a silent channel (zeros in the message "
                     "inputs).",
                     "", *_table("condition", rows), "", *_verdicts(rows, pairs["test-time"], r["env"]), "",
                     _backdoor_verdict(rows, joint, baselines, r["env"]), "",
                     f"![controlled episode]({plots_dir.name}/test_time_episode.png)", ""]
    lines = ["# Adversarial Cheap Talk", "", *document.notice(out_md, "act"), *summary.lines(evaluations, pairs, fresh),
             _statistic(plots_dir), "",
             *_es_budget([plots_dir / f"{PARAMS}{act.env_suffix(env)}" for env in act.VICTIMS]), *sections,
             *document.footer(out_md, "act")]
    out_md.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(out_md, "\n".join(lines))


def _fresh_rows(path: Path, key: str) -> dict | None:
    """An evaluation's replication on fresh victims (`--fresh-seeds`): its rows, None where it has not run."""
    return files.read_json(path, "a replication's evaluation")[key] if path.exists() else None


def _statistic(plots_dir: Path) -> str:
    """What a table cell is, when a comparison is called, and where the evolved parameters are."""
    return ("Statistic: IQM over held-out victim seeds (victims newly trained for the evaluation, none seen by "
            "the evolution) with its 95% percentile-bootstrap CI (per-seed values and n "
            f"below {stats.MIN_SEEDS_FOR_CI} seeds). A comparison is called only where the CIs do not overlap, and "
            "only from at least as many victims as the env's verdicts rest on ("
            + ", ".join(f"{env} {v.victims}" for env, v in act.VICTIMS.items()) + "). The evolved parameters are in "
            + ", ".join(f"`{plots_dir.name}/{PARAMS}{act.env_suffix(env)}/` ({env})" for env in act.VICTIMS)
            + ", one folder per ES run (its config.json holds the ES settings); `--from-params` re-evaluates them. A "
            "run on the same CPU (family, model and SIMD extension, in the manifest) reproduces these numbers "
            "exactly.")


def _es_budget(params_dirs: list[Path]) -> list[str]:
    """One line per committed ES run: its env, OpenES settings and cost, below the paper's budgets."""
    lines = []
    for params_dir in params_dirs:
        for run_dir in sorted(params_dir.glob("*-es*")):
            config = rundir.read_config(run_dir)
            es, env_name = config["es"], config["task_info"]["env"]
            wall = sum(r["seconds"] for r in _generations(run_dir))
            lines.append(f"- {env_name} `{run_dir.name}`: {es['strategy']}, population {es['population_size']} x "
                         f"{es['generations']} generations x {es['rollouts']} victims per candidate, lr {es['lr']:g} "
                         f"to {es['lr_final']:g}, std {es['std']:g} to {es['std_final']:g}, {es['fitness_shaping']} "
                         f"fitness; {wall:.0f} s")
    if not lines:
        return []
    paper = ", ".join(f"{env} population {v.presets['paper']['population_size']} x "
                      f"{v.presets['paper']['generations']} generations" for env, v in act.VICTIMS.items())
    return [f"ES runs (the paper, main_train_time.py: OpenES, {paper}, std {act.ES_DEFAULTS['std']:g}, lr "
            f"{act.ES_DEFAULTS['lr']:g}; `--preset paper`):", "", *lines, ""]


def _backdoor_verdict(rows: dict, joint: list[str], baselines: list[str], env_name: str) -> str:
    """Whether train-time shaping adds control beyond what an informative (random) or silent channel gives."""
    if not joint or not baselines:
        return "Train-time shaping vs an exploiter alone: not measured (a run is missing)."
    reason = _too_few(rows, env_name)
    if reason:
        return f"Train-time shaping vs an exploiter alone: not judged. {reason}"
    if all(stats.separation(rows[a], rows[b]) == 1 for a in joint for b in baselines):
        return ("Train-time shaping adds control beyond an exploiter alone: every joint run's CI lies above every "
                "exploiter baseline's.")
    below = [f"{a}, {stats.describe(rows[a])}, below {b}, {stats.describe(rows[b])}"
             for a in joint for b in baselines if stats.separation(rows[a], rows[b]) == -1]
    return ("Train-time shaping is not shown to add control beyond an exploiter alone: at least one joint run's CI "
            "does not lie above an exploiter baseline's." + (
                f" It gives less control where a joint run's CI lies below a baseline's: {'; '.join(below)}."
                if below else ""))


def _table(what: str, rows: dict) -> list[str]:
    return [f"| {what} | IQM [95% CI] or per-seed values | mean |", "|---|---|---|",
            *[f"| {label} | {stats.describe(s)} | {s['mean']:.1f} |" for label, s in rows.items()]]


def _too_few(rows: dict, env_name: str) -> str | None:
    """Why `rows` give no verdict: fewer fresh victims than a verdict on `env_name` needs (`act.Victim.victims`: on
    32 victims Pendulum-v1's verdicts moved with the CPU model and the seed set); None where there are enough."""
    victims, needed = min(s["n"] for s in rows.values()), act.victim_of(env_name).victims
    return None if victims >= needed else (f"No verdicts: {victims} held-out victims, and a verdict on {env_name} "
                                           f"needs at least {needed} (`--victims`).")


def _verdicts(rows: dict, pairs: list[tuple[str, str]], env_name: str) -> list[str]:
    reason = _too_few(rows, env_name)
    if reason:
        return [f"- {reason}"]
    words = {1: "higher (CIs do not overlap)", -1: "lower (CIs do not overlap)", 0: stats.NOT_DISTINGUISHABLE}
    return [f"- {a} vs {b}: {words[stats.separation(rows[a], rows[b])]}" for a, b in pairs if a in rows and b in rows]
