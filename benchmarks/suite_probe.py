"""Where the test suite's time goes, per test: wall seconds, CPU seconds of the test process and of the child
processes it waited for (CLI subprocesses), and the XLA compiles it ran in-process, apart from the programs it
loaded from the persistent compile cache, and the seconds spent tracing to jaxprs and lowering to StableHLO, which
every jit call of a new function pays before the cache can be asked (the warm suite's main in-process cost).

Compiles dominate a cold 2-core run, so the way to a faster suite is tests that share compiled programs; this
shows which tests still compile their own. As a pytest plugin, from an empty compile cache:

    PURERL_CACHE_DIR=$(mktemp -d) PROBE_LOG=/tmp/probe PYTHONPATH=benchmarks \
        .venv/bin/python -m pytest -p suite_probe -n 0 tests/lib/test_ppo.py

writes one tab-separated row per test to /tmp/probe.PID (one file per xdist worker): wall s, own CPU s, children's
CPU s, compile s, compiles, cache loads, trace s, lower s, test; and to /tmp/probe.keys.PID the cache key of each
load and the test that loaded it: a key loaded twice in one process is a program it traced and lowered twice.
`python benchmarks/suite_probe.py /tmp/probe.*` sums the rows per file and counts those repeated loads.
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

_FINISHED = re.compile(r"Finished XLA compilation of .+? in ([0-9.e-]+) sec")  # a compile or a cache load
_LOADED = "Persistent compilation cache hit"  # logged just before its "Finished" line when the cache had it
_counts = {"compile_s": 0.0, "compiles": 0, "loads": 0, "trace_s": 0.0, "lower_s": 0.0}
_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
           "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s"}
_loading = [False]
_log = None
_keys = None
_test = [""]


class _CompileCounter(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if message.startswith(_LOADED):
            _loading[0] = True
            _keys.write(f"{record.args[1]}\t{_test[0]}\n")
            return
        finished = _FINISHED.search(message)
        if not finished:
            return
        if _loading[0]:
            _counts["loads"] += 1
        else:
            _counts["compile_s"] += float(finished.group(1))
            _counts["compiles"] += 1
        _loading[0] = False


def _on_duration(event: str, seconds: float, **_) -> None:
    if event in _EVENTS:
        _counts[_EVENTS[event]] += seconds


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_configure(config):
    global _log, _keys
    import jax

    jax.config.update("jax_log_compiles", True)  # also makes cache hits log at WARNING
    logging.getLogger("jax").addHandler(_CompileCounter())
    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    _log = open(f"{os.environ['PROBE_LOG']}.{os.getpid()}", "a")
    _keys = open(f"{os.environ['PROBE_LOG']}.keys.{os.getpid()}", "a")


def pytest_unconfigure(config):
    for file in (_log, _keys):
        if file is not None:
            file.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall, (own, children), before = time.perf_counter(), _cpu(), dict(_counts)
    _test[0] = item.nodeid
    yield
    own_after, children_after = _cpu()
    _log.write(f"{time.perf_counter() - wall:.2f}\t{own_after - own:.2f}\t{children_after - children:.2f}\t"
               f"{_counts['compile_s'] - before['compile_s']:.2f}\t{_counts['compiles'] - before['compiles']}\t"
               f"{_counts['loads'] - before['loads']}\t{_counts['trace_s'] - before['trace_s']:.2f}\t"
               f"{_counts['lower_s'] - before['lower_s']:.2f}\t{item.nodeid}\n")
    _log.flush()


def summarise(paths: list[str]) -> None:
    """Wall and CPU seconds, compile seconds, compiles, cache loads, trace and lower seconds and tests, per test
    file (rows written before trace and lower were recorded count 0 for them)."""
    files = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0, 0, 0.0, 0.0, 0])
    for path in paths:
        with open(path) as rows:
            for row in rows:
                fields = row.rstrip("\n").split("\t")
                if len(fields) == 7:
                    fields[6:6] = ["0", "0"]
                if len(fields) != 9:
                    continue
                wall, own, children, compile_s, compiles, loads, trace_s, lower_s, test = fields
                totals = files[test.split("::")[0]]
                for i, value in enumerate((float(wall), float(own) + float(children), float(compile_s),
                                           int(compiles), int(loads), float(trace_s), float(lower_s), 1)):
                    totals[i] += value
    print(f"{'wall s':>8} {'CPU s':>8} {'compile s':>9} {'compiles':>8} {'loads':>6} {'trace s':>7} {'lower s':>7} "
          f"{'tests':>5}  file")
    ordered = sorted(files.items(), key=lambda item: -item[1][1])
    for name, row in [*ordered, ("in all", [sum(v[i] for v in files.values()) for i in range(8)])]:
        wall, cpu, compile_s, compiles, loads, trace_s, lower_s, tests = row
        print(f"{wall:8.1f} {cpu:8.1f} {compile_s:9.1f} {compiles:8d} {loads:6d} {trace_s:7.1f} {lower_s:7.1f} "
              f"{tests:5d}  {name}")


def repeated_loads(paths: list[str]) -> None:
    """Per test file: cache loads of a key its process had loaded before (by any test), out of all its loads."""
    files = collections.defaultdict(lambda: [0, 0])
    for path in paths:
        seen = set()
        with open(path) as rows:
            for row in rows:
                key, _, test = row.rstrip("\n").partition("\t")
                totals = files[test.split("::")[0]]
                totals[0] += key in seen
                totals[1] += 1
                seen.add(key)
    print(f"{'again':>6} {'loads':>6}  file")
    for name, (again, loads) in sorted(files.items(), key=lambda item: -item[1][0]):
        print(f"{again:6d} {loads:6d}  {name}")
    print(f"{sum(v[0] for v in files.values()):6d} {sum(v[1] for v in files.values()):6d}  in all")


if __name__ == "__main__":
    keys = [path for path in sys.argv[1:] if ".keys." in path]
    summarise([path for path in sys.argv[1:] if path not in keys])
    if keys:
        repeated_loads(keys)
