"""The flags the comparison commands (`compare`, `pbt-study`, `versus`) share: where their runs go, continuing or
replacing them, their report, and their replication on fresh seeds. Defined once, so that the three commands mean
and say the same by them, and `results --commands` can add `--resume` and `--fresh-seeds` to any of them."""

from __future__ import annotations

from pathlib import Path

from purerl.cli.args import path


def add_comparison_flags(parser, runs_dir: str, replaced: str, fresh_also: str = "") -> None:
    """--fresh-seeds, --runs-dir, --resume, --overwrite and --report on `parser`: a report's part is one env, its
    runs under RUNS_DIR; `replaced` says which runs --overwrite replaces, `fresh_also` what else a replication
    draws afresh."""
    parser.add_argument("--fresh-seeds", action="store_true",
                        help=f"the study's replication: its seeds moved to PRNGKey(70000) on{fresh_also}, its runs in "
                        "RUNS_DIR/fresh-ENV and its record in its own part of the report, fresh_ENV")
    parser.add_argument("--runs-dir", type=path, default=Path(runs_dir), help="where the runs go")
    parser.add_argument("--resume", action="store_true",
                        help="continue the runs in --runs-dir from their checkpoints and start the missing ones")
    parser.add_argument("--overwrite", action="store_true", help=f"replace {replaced} in --runs-dir")
    parser.add_argument("--report", type=path, help="markdown regenerated here, each env's JSON and plot "
                        "beside it in REPORT's stem folder, provenance in manifest.json (default RUNS_DIR/report.md)")
