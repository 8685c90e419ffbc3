"""The API reference builds from the docstrings (mkdocs --strict): a renamed or removed object fails here."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_api_reference_builds_strictly(tmp_path):
    pytest.importorskip("mkdocstrings_handlers.python", reason="needs purerl[docs]")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "site" / "index.html").read_text()
    for name in ("make_train", "ppo_clip", "make_members", "Evolution", "purerl.envs.make", "ChunkLogger"):
        assert name in page, name
