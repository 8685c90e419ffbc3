"""Importing purerl changes no process-wide JAX setting; `purerl.configure_jax` sets what the command line runs
under, once, and only what the user has not decided."""

import json
import subprocess
import sys

PROBE = """
import json, jax
from jax._src.interpreters import mlir
from jax._src.random.threefry2x32 import _threefry2x32_lowering_rule as unrolled
from jax.extend.random import threefry2x32_p
KEYS = ("jax_num_cpu_devices", "jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
def state():
    return {"config": {k: getattr(jax.config, k) for k in KEYS},
            "threefry_unrolled": mlir._platform_specific_lowerings["cpu"][threefry2x32_p].rule is unrolled}
before = state()
import purerl, purerl.cli, purerl.api, purerl.envs, purerl.algos.ppo, purerl.run.experiment, purerl_lab.cli
imported = state()
{call}
print(json.dumps({"before": before, "imported": imported, "after": state(), "devices": len(jax.devices())}))
"""


def _probe(call: str = "", **env) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE.replace("{call}", call)], capture_output=True, text=True,
                          check=True, env={**__import__("os").environ, "PURERL_HOST_DEVICES": "2", **env})
    return json.loads(done.stdout)


def test_import_purerl_leaves_jax_config_the_device_count_and_the_lowerings_as_they_were():
    found = _probe()
    assert found["imported"] == found["before"] == found["after"]
    assert found["devices"] == 1 and found["before"]["config"]["jax_num_cpu_devices"] == -1


def test_configure_jax_sets_the_devices_the_cache_and_threefry_and_keeps_what_the_user_set(tmp_path):
    found = _probe("purerl.configure_jax(); purerl.configure_jax()", PURERL_CACHE_DIR=str(tmp_path))
    after = found["after"]
    assert found["devices"] == 2 and after["config"]["jax_num_cpu_devices"] == 2
    assert after["config"]["jax_compilation_cache_dir"].startswith(str(tmp_path))
    assert after["threefry_unrolled"] and not found["before"]["threefry_unrolled"]
    mine = _probe("jax.config.update('jax_num_cpu_devices', 3); "
                  "jax.config.update('jax_compilation_cache_dir', '/tmp/mine'); purerl.configure_jax()")
    assert mine["devices"] == 3 and mine["after"]["config"]["jax_compilation_cache_dir"] == "/tmp/mine"
    late = _probe("jax.devices(); purerl.configure_jax(compile_cache=False)")  # the backend started first
    assert late["devices"] == 1 and late["after"]["config"]["jax_compilation_cache_dir"] is None
    chosen = _probe("purerl.configure_jax(devices=False, fast_threefry=False)", PURERL_CACHE_DIR=str(tmp_path))
    assert chosen["devices"] == 1 and not chosen["after"]["threefry_unrolled"]
    assert chosen["after"]["config"]["jax_compilation_cache_dir"].startswith(str(tmp_path))
