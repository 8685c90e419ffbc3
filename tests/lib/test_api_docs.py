"""The documentation site (the guides and the API reference built from the docstrings) builds strictly (mkdocs --strict): a renamed or removed object fails here; its tables
of fields and defaults are the code's (scripts/api_tables.py)."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLES = runpy.run_path(str(ROOT / "scripts" / "api_tables.py"))


def test_api_reference_builds_strictly(tmp_path):
    pytest.importorskip("mkdocstrings_handlers.python", reason="needs purerl[docs]")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    for guide in ("python_api", "algorithms", "meta_tasks", "pbt", "scaling", "tools", "architecture"):  # the guides
        assert (tmp_path / "site" / guide / "index.html").is_file(), guide
    assert not (tmp_path / "site" / "results").exists()  # generated documents stay out of the site
    page = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("make_train", "ppo_clip", "make_members", "Evolution", "purerl.envs.make", "ChunkLogger", "Policy",
                 "purerl.api.train", "DQNConfig", "PQNHyperParams", "target_update_interval", "max_parallel"):
        assert name in page, name


def test_every_config_and_hyperparameter_class_has_its_table_of_fields_and_defaults():
    from purerl.algos import registry
    from purerl.meta.strategies import ESConfig

    page = TABLES["PAGE"].read_text()
    tabled = {match.group(2) for match in TABLES["MARKED"].finditer(page)}
    classes = [cls for algorithm in registry.ALGORITHMS.values() for cls in (algorithm.config, algorithm.hyperparams)]
    for cls in [*classes, ESConfig]:
        assert f"{cls.__module__}.{cls.__name__}" in tabled, cls.__name__
    assert TABLES["render"](page) == page, "docs/api/index.md is stale: run scripts/api_tables.py"
    assert "| `num_envs` | `10` | parallel environments per agent |" in page  # DQN's default
