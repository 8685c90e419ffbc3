"""scripts/reproduce.sh: it asks the registry for commands that continue a stopped regeneration, stops at the
first command that does not finish, and says how to continue."""

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce.sh"

# Stands in for the purerl CLI: `results --commands` lists three commands and logs its own arguments; each
# command logs itself, and the one named `stops` exits as a run stopped by SIGINT does.
FAKE_PURERL = """#!/usr/bin/env bash
echo "$*" >> "$LOG"
if [ "$1" = results ] && [ "$2" = --commands ]; then
  printf 'purerl first --resume\\npurerl stops --resume\\npurerl never\\n'
fi
[ "$1" = stops ] && exit 130
exit 0
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "reproduce.sh")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "clean"], check=True)
    fake = tmp_path / "purerl"
    fake.write_text(FAKE_PURERL)
    fake.chmod(0o755)
    env = {**os.environ, "PURERL": str(fake), "LOG": str(tmp_path / "log"), "RUNS": "/scratch/r"}
    return subprocess.run(["bash", str(repo / "scripts" / "reproduce.sh"), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_a_stopped_regeneration_says_how_to_continue_and_runs_nothing_after_the_stop(tmp_path):
    done = _run(tmp_path, "dpo")
    assert done.returncode == 130
    assert (tmp_path / "log").read_text().splitlines() == [
        "results --commands dpo --runs-dir /scratch/r --resume", "first --resume", "stops --resume"]
    assert done.stderr.strip().endswith("continue with: RUNS=/scratch/r "
                                        f"{tmp_path / 'repo' / 'scripts' / 'reproduce.sh'} dpo")
