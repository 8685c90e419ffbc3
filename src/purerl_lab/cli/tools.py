"""`purerl bench | results`: speed against peers, and the provenance of published results."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from purerl.cli.args import at_most, integer, path, positive, positive_ints
from purerl.checks import MAX_INT32, MAX_MEMBERS, ConfigError


MAX_REPEATS = 1000  # timed runs per width: more only never ends


def add_bench(sub) -> None:
    from purerl.algos import registry

    bench = sub.add_parser("bench", help="speed: purerl vs peers, side by side; writes docs/benchmarks.md")
    tasks = registry.bench_tasks()
    bench.add_argument("--task", choices=[*tasks, "all", "evolve", "gpu-levers", "gpu-proxy"], default="cartpole",
                       help="; ".join(f"{name}: {registry.get(spec['algo']).title} on {spec['env']}"
                                      + ("" if spec.get("in_all", True) else " (not in all: hours on 2 cores)")
                                      for name, spec in tasks.items())
                       + "; evolve: meta-evolution throughput (value-loss study; --preset cpu, or gpu for paper); "
                       "gpu-levers: on a GPU, PPO's levers beside PureJaxRL in about 6 minutes (bench/levers.py); "
                       "gpu-proxy: on any machine, purerl's and PureJaxRL's programs compiled for an H100, their "
                       "kernels counted and their H100 time modelled (bench/gpu_proxy.py, in a venv of its own)")
    bench.add_argument("--preset", choices=["cpu", "gpu"], default="cpu", help="widths per task (gpu: up to 2048)")
    bench.add_argument("--seeds", help="comma-separated widths, overriding the preset (e.g. 1,8,64)")
    bench.add_argument("--repeats", type=integer, default=3,
                       help=f"timed runs per width (median reported; at most {MAX_REPEATS})")
    bench.add_argument("--peers", default="sb3,rejax", help="comma-separated peers, or none")
    bench.add_argument("--total-timesteps", type=at_most(MAX_INT32), help="steps per agent (default: the task's)")
    bench.add_argument("--devices", help="comma-separated device counts: measure scaling with devices instead")
    bench.add_argument("--purejaxrl", type=path, metavar="PATH",
                       help="a checkout of luchris429/purejaxrl: adds its own ppo.py as a peer")
    bench.add_argument("--cores", type=positive(integer), metavar="N",
                       help="pin every measured process, purerl's and each peer's, to the first N cores (its own "
                            "section): per-core efficiency, whatever threads or devices a system would use")
    bench.add_argument("--out", type=path, default=Path("docs/benchmarks.md"))
    bench.add_argument("--render", action="store_true",
                       help="measure nothing: write --out again from its benchmarks/records.json, after a change to "
                            "how the report words its numbers (at a clean commit, which the report then names)")
    bench.set_defaults(run=cmd_bench)


def add_results(sub) -> None:
    results = sub.add_parser("results", help="published results: list stale documents, print reproduce commands")
    what = results.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="list every stale document; exit 1 if any")
    what.add_argument("--commands", nargs="*", metavar="STUDY", help="print the commands that regenerate "
                      "these studies (all when none is named), one per line")
    what.add_argument("--render", nargs="+", metavar="DOC", help="write these documents (dpo.md ...) again from "
                      "their committed records, without training, after a change to how their reports word the "
                      "numbers; at a clean commit, which the document then names")
    results.add_argument("--mark", action="store_true", help="with --check: write each stale part's notice into its "
                         "document (at the top and beside the part) and the manifest, and clear the notices of "
                         "current parts; a current part's record gains what it lacks: sketches (its host values up "
                         "to float rounding, so that other CPU kinds can check it) and a stamp of the sources and "
                         "inputs it was computed from, which later checks trust while they are unchanged")
    results.add_argument("--no-cache", action="store_true", help="with --check: recompute every fingerprint, "
                         "trusting neither the stamps nor this machine's cache (and cache the results)")
    results.add_argument("--runs-dir", default="runs/reproduce", help="scratch folder for --commands' run directories")
    results.add_argument("--resume", action="store_true", help="with --commands: each command continues what an "
                         "earlier, stopped run of them into the same --runs-dir left")
    results.add_argument("--results-dir", type=Path, help="the documents' folder (default docs/results of this checkout)")
    results.set_defaults(run=cmd_results)


def _check_bench_out(out: Path) -> None:
    """Refuse, before measuring for minutes, a --out the report cannot go to or must not replace."""
    from purerl.run import rundir

    if out.suffix != ".md" or out.is_dir():
        raise ConfigError(f"--out must be the path of a markdown (.md) file, got {out}")
    rundir.check_writable(out.parent)
    if out.exists() and not (out.parent / "benchmarks" / "records.json").is_file():
        raise ConfigError(f"refusing to replace {out}: it is not a purerl benchmark report (no benchmarks/records.json "
                          "beside it)")


def cmd_bench(args: argparse.Namespace) -> int:
    from purerl.algos import registry
    from purerl_lab.bench import gpu, harness, peers
    from purerl_lab.bench import report as bench_report

    if args.render:
        return _render_bench(args.out, args.argv)
    every = [name for name, spec in registry.bench_tasks().items() if spec.get("in_all", True)]
    tasks = {"all": every, "evolve": [], "gpu-levers": [], "gpu-proxy": []}.get(args.task, [args.task])
    names = [] if args.peers == "none" else [p for p in args.peers.split(",") if p]
    if args.purejaxrl is not None:
        if not (args.purejaxrl / "purejaxrl" / "ppo.py").is_file():
            raise ConfigError(f"--purejaxrl {args.purejaxrl} is not a checkout of luchris429/purejaxrl (no purejaxrl/ppo.py)")
        args.purejaxrl = args.purejaxrl.expanduser().resolve()
    unknown = [p for p in names if p not in peers.PEERS]
    if unknown:
        raise ConfigError(f"unknown peer '{unknown[0]}'; choose from {', '.join(peers.PEERS)} or none")
    custom = positive_ints("--seeds", args.seeds)
    device_counts = positive_ints("--devices", args.devices)
    if args.repeats <= 0:
        raise ConfigError(f"--repeats must be positive, got {args.repeats}")
    if args.repeats > MAX_REPEATS:
        raise ConfigError(f"--repeats must be at most {MAX_REPEATS}, got {args.repeats:,}")
    too_wide = [w for w in custom or () if w > MAX_MEMBERS]
    if too_wide:
        raise ConfigError(f"--seeds must be at most {MAX_MEMBERS:,} agents a width, got {too_wide[0]:,}")
    fixed = {"evolve": "its preset fixes the population and budget", "gpu-levers": "bench/levers.py fixes its sizes",
             "gpu-proxy": "bench/gpu_proxy.py fixes its programs"}
    if args.task in fixed:
        ignored = [flag for flag, value in (("--seeds", args.seeds), ("--devices", args.devices),
                                             ("--total-timesteps", args.total_timesteps)) if value is not None]
        if ignored:
            raise ConfigError(f"{ignored[0]} does not apply to --task {args.task} ({fixed[args.task]})")
    if args.task in fixed and args.task != "evolve" and args.cores is not None:
        raise ConfigError(f"--cores does not apply to --task {args.task} ({fixed[args.task]})")
    if args.task == "gpu-levers" and harness.gpu_count() == 0:
        raise ConfigError("--task gpu-levers measures GPU levers: this machine has no GPU")
    cores = sorted(os.sched_getaffinity(0))
    if args.cores is not None:
        if args.task == "evolve" or device_counts:
            raise ConfigError("--cores applies to the width benchmarks, not to --task evolve or --devices")
        if args.cores > len(cores):
            raise ConfigError(f"--cores {args.cores}: this process may use only {len(cores)} cores")
    _check_bench_out(args.out)
    if args.cores is not None:  # every worker and peer process inherits the affinity, and sizes its threads by it
        os.sched_setaffinity(0, cores[:args.cores])
    if "purejaxrl" in names and args.purejaxrl is None:
        print(f"purejaxrl peer {harness.PUREJAXRL_SKIPPED}", file=sys.stderr)
    records, records_path = [], args.out.parent / "benchmarks" / "records.json"
    if args.task == "gpu-proxy":
        from purerl_lab.bench import gpu_proxy

        known = json.loads(records_path.read_text()) if records_path.exists() else []
        if not gpu_proxy.h100_points(known):  # before a venv of gigabytes is built for nothing
            raise ConfigError(f"--task gpu-proxy fits its model to the H100 times in {records_path}: it holds none")
        python = peers.ensure_venv(gpu_proxy.venv_spec()) / "bin" / "python"
        records.append(gpu_proxy.run(known, args.purejaxrl, str(python)))
    if args.task == "evolve":
        records.append(harness.bench_evolve(args.preset, args.repeats))
    if args.task == "gpu-levers":
        from purerl_lab.bench import levers

        records.append(levers.run(levers.TASKS, args.purejaxrl, list(levers.XLA_OPTIONS), timeout_s=150,
                                  budget_s=330))
    for task in tasks:
        if device_counts:
            widths = custom or [8, 64]
            records.append(harness.bench_devices(task, widths, device_counts, args.repeats, args.total_timesteps))
            continue
        widths = custom or list(registry.bench_tasks()[task]["widths"][args.preset])
        records.append(harness.bench(task, widths, args.repeats, names, args.total_timesteps,
                                     purejaxrl=args.purejaxrl))
    command = "purerl bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else "purerl bench"
    measured = harness.measured_commit()
    for record in records:
        record["command"] = command
        record["commit"] = measured
        if args.cores is not None:
            record["cores"] = args.cores
    if records_path.exists():  # keep the other kinds of measurement already in the report
        records = gpu.merge(json.loads(records_path.read_text()), records)
    written = gpu.write_report(records, args.out)
    bench_report.save_records(records_path, records)
    print(f"report: {written}")
    return 0


def _require_clean_commit() -> None:
    """A render names the commit whose report code wrote the words, so it runs only on a clean checkout."""
    from purerl_lab.publish import provenance

    commit, dirty = provenance.git_state()
    if commit is None or dirty:
        raise ConfigError("--render names the commit whose report code wrote the words: commit first (the checkout "
                          + ("has uncommitted changes)" if commit else "is not a git checkout)"))


def _render_bench(out: Path, argv: list[str]) -> int:
    """`purerl bench --render`: the report's words again from its records, measuring nothing."""
    from purerl_lab.bench import gpu
    from purerl_lab.bench import report as bench_report
    from purerl_lab.publish import provenance

    records_path = out.parent / "benchmarks" / "records.json"
    if not records_path.is_file():
        raise ConfigError(f"--render needs {records_path}, the records a measured `purerl bench --out {out}` wrote")
    _require_clean_commit()
    facts = provenance.run_facts(argv)
    records = json.loads(records_path.read_text())
    print(f"report: {gpu.write_report(records, out, facts)}")
    bench_report.save_records(records_path, records)  # records made before they were kept portable become so
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from purerl_lab.publish import catalog, portable, provenance, staleness

    if args.commands is not None:
        print("\n".join(catalog.commands(args.commands, args.runs_dir, args.resume)))
        return 0
    if args.resume:
        raise ConfigError("--resume goes with --commands")
    if args.results_dir is not None and not args.results_dir.is_dir():
        raise ConfigError(f"--results-dir {args.results_dir} is not a folder")
    results_dir = args.results_dir or provenance.RESULTS_DIR
    if args.render:
        if args.mark or args.no_cache:
            raise ConfigError(f"{'--mark' if args.mark else '--no-cache'} goes with --check, not --render")
        return _render(results_dir, args.render, args.argv)
    started = time.perf_counter()
    stale, unchecked = staleness.judged(results_dir, cache=True, refresh=args.no_cache)
    for document, reasons in stale.items():  # one line per stale part, the first beside the document's name
        lines = [f"{part + ': ' if part else ''}{why}" for part, why in reasons]
        print(f"STALE {document}: " + "\n  ".join(lines))
    for document, reasons in unchecked.items():  # neither stale nor current: this install cannot tell
        print("\n".join(f"cannot check here: {document} {part} ({why})" for part, why in reasons))
    if args.mark:
        for rewritten in portable.rewrite(results_dir):
            print(f"made portable {rewritten}")
        for marked_path in staleness.mark(results_dir, stale, unchecked):
            print(f"marked {marked_path}")
        for part in staleness.record_current(results_dir):
            print(f"recorded for current {part}")
    print(_verdict(len(stale), sum(map(len, unchecked.values()))) + f" ({time.perf_counter() - started:.0f} s)")
    return 1 if stale else 0


def _verdict(stale: int, unchecked: int) -> str:
    """`results --check`'s last line: the documents stale, or all current, and how many parts it could not check
    (each named above), so that "current" is never read as covering them."""
    from purerl_lab.publish import provenance

    documents = len(provenance.STUDIES)
    said = f"{stale} of {documents} documents stale" if stale else f"all {documents} documents current"
    return said + (f" where checked; {unchecked} part(s) could not be checked here" if unchecked else "")


def _render(results_dir: Path, names: list[str], argv: list[str]) -> int:
    """`purerl results --render DOC ...`: each document's words again from its records (`Study.render`). Every
    name is checked, its records complete (`records.require_complete`), and the checkout must be clean, before
    anything is written."""
    import importlib

    from purerl_lab.publish import provenance, records, staleness
    from purerl.run import files

    manifest = provenance.read_manifest(results_dir)
    chosen = []
    for name in names:
        entry = manifest.get(Path(name).name)
        if entry is None:
            raise ConfigError(f"{name}: no such document in {results_dir} (choose from {', '.join(sorted(manifest))})")
        study = provenance.STUDIES.get(entry.get("study"))
        if study is None:
            raise ConfigError(f"{name}: its manifest entry names no registered study ({entry.get('study')})")
        if not study.render:
            raise ConfigError(f"{name}: the {study.name} study has no renderer; regenerate it "
                              f"(scripts/reproduce.sh {study.name})")
        records.require_complete(results_dir, Path(name).name, entry)
        chosen.append((results_dir / Path(name).name, study.render))
    _require_clean_commit()
    for report, target in chosen:
        module, _, function = target.partition(":")
        manifest_path = report.parent / provenance.MANIFEST
        before = manifest_path.read_bytes()
        provenance.record_render(report, argv)  # first: the writers read it, to say so in the document
        try:
            getattr(importlib.import_module(module), function)(report)
        except BaseException:
            files.write_atomic(manifest_path, before)  # no claim of a render that did not happen
            raise
        staleness.remark(report)  # its stale notice and marks, as recorded
        print(f"rendered {report}")
    return 0
