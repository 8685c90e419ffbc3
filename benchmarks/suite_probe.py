"""Where the test suite's time goes, per test: wall seconds, CPU seconds of the test process and of its child
processes (CLI subprocesses), and seconds and count of the XLA compiles it ran in-process.

Compiles dominate a cold 2-core run, so the way to a faster suite is tests that share compiled programs; this
shows which tests still compile their own. As a pytest plugin, from an empty compile cache:

    PURERL_CACHE_DIR=$(mktemp -d) PROBE_LOG=/tmp/probe PYTHONPATH=benchmarks \
        .venv/bin/python -m pytest -p suite_probe -n 0 -p no:randomly tests/test_ppo.py

writes one tab-separated row per test to /tmp/probe.PID (one file per xdist worker);
`python benchmarks/suite_probe.py /tmp/probe.*` sums them per test file.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import resource
import sys
import time

import pytest

_COMPILED = re.compile(r"Finished XLA compilation of .+? in ([0-9.e-]+) sec")
_compiles = [0.0, 0]  # seconds, count
_log = None


class _CompileCounter(logging.Handler):
    def emit(self, record):
        match = _COMPILED.search(record.getMessage())
        if match:
            _compiles[0] += float(match.group(1))
            _compiles[1] += 1


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_configure(config):
    global _log
    import jax

    jax.config.update("jax_log_compiles", True)
    logging.getLogger("jax").addHandler(_CompileCounter())
    _log = open(f"{os.environ['PROBE_LOG']}.{os.getpid()}", "a")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall, (own, children), (compile_s, compiles) = time.time(), _cpu(), tuple(_compiles)
    yield
    own_after, children_after = _cpu()
    _log.write(f"{time.time() - wall:.2f}\t{own_after - own:.2f}\t{children_after - children:.2f}\t"
               f"{_compiles[0] - compile_s:.2f}\t{_compiles[1] - compiles}\t{item.nodeid}\n")
    _log.flush()


def summarise(paths: list[str]) -> None:
    """CPU seconds (test process + children), in-process compile seconds and tests, per test file."""
    files = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for path in paths:
        for line in open(path):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 6:
                continue
            _, own, children, compile_s, _, test = fields
            totals = files[test.split("::")[0]]
            totals[0] += float(own) + float(children)
            totals[1] += float(compile_s)
            totals[2] += 1
    print(f"{'CPU s':>8} {'compile s':>9} {'tests':>5}  file")
    for name, (cpu, compile_s, tests) in sorted(files.items(), key=lambda item: -item[1][0]):
        print(f"{cpu:8.1f} {compile_s:9.1f} {tests:5d}  {name}")
    print(f"{sum(v[0] for v in files.values()):8.1f} {sum(v[1] for v in files.values()):9.1f} "
          f"{sum(v[2] for v in files.values()):5d}  in all")


if __name__ == "__main__":
    summarise(sys.argv[1:])
