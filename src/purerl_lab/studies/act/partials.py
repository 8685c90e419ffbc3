"""The finished conditions of an ACT evaluation, kept so that an evaluation stopped between them resumes there.

An evaluation trains fresh victims under each condition (every evolved adversary, a random one, no channel):
one compiled program per condition, each up to a quarter of an hour on a 2-core CPU. Each finished condition is
one .npz, named by a hash of everything its numbers depend on: the condition and its adversary parameters,
the victim programs (lowered StableHLO), the victims' seeds and settings, the CPU, the cores XLA's thread pool
uses and the package versions (a bit-exact rerun needs each of them). A file of that name that is not such a
record is refused before anything is trained, never replaced.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import jax
import numpy as np

from purerl.checks import ConfigError
from purerl.run import files

FIELDS = ("key", "curves", "diverged", "seconds")


def train_time_inputs(env_name: str, seeds: list[int]) -> dict:
    """What a train-time condition's victims depend on besides the condition's own adversary parameters."""
    from purerl_lab.publish import provenance
    from purerl_lab.publish.fingerprint.core import abstract, lowered_text
    from purerl.runtime import host_devices, hostinfo
    from purerl_lab.studies import act

    victim, talk = act.victim_of(env_name), act.CheapTalk()
    hp = abstract(victim.hp.as_arrays())
    key = jax.ShapeDtypeStruct((2,), np.uint32)
    psi = abstract(act.adversary_params(talk, jax.random.PRNGKey(0), env_name))
    programs = [lowered_text(act.victim(env_name, None), key, hp), lowered_text(act.victim(env_name, talk), key, hp, psi)]
    return {"env": env_name, "seeds": seeds, "hp": victim.hp._asdict(), "config": repr(victim.config),
            "programs": [hashlib.sha256(text.encode()).hexdigest() for text in programs],
            "cpu": hostinfo.cpu(), "cores": host_devices.cores(), "versions": provenance.versions()}


class Partials:
    """Finished conditions in `folder`. Without `resume` every condition is trained again (a finished one's
    file, checked to be one, is replaced by the new result); with it, a finished condition is read back."""

    def __init__(self, folder: Path, inputs: dict, resume: bool):
        self.folder, self.resume = Path(folder), resume
        self.inputs = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()

    def key(self, label: str, psis) -> str:
        digest = hashlib.sha256(f"{self.inputs}\n{label}".encode())
        for leaf in jax.tree.leaves(psis):  # None (no channel) has no leaves
            array = np.asarray(leaf)
            digest.update(f"{array.dtype}{array.shape}".encode())
            digest.update(array.tobytes())
        return digest.hexdigest()

    def path(self, label: str, key: str) -> Path:
        return self.folder / f"{re.sub(r'[^A-Za-z0-9.]+', '-', label).strip('-')}-{key[:16]}.npz"

    def load(self, label: str, psis) -> dict | None:
        """The finished condition if resuming and there is one; raises ConfigError for a file of its name that is
        not one (damaged, or someone else's)."""
        key = self.key(label, psis)
        path = self.path(label, key)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                saved = {name: data[name] for name in FIELDS}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            saved = None
        if saved is None or str(saved["key"]) != key:
            raise ConfigError(f"{path} is not a finished condition of this evaluation; move it away to train the "
                              f"condition again")
        return saved if self.resume else None

    def save(self, label: str, psis, saved: dict) -> None:
        key, buffer = self.key(label, psis), io.BytesIO()
        np.savez(buffer, **{name: np.asarray(saved[name]) for name in FIELDS[1:]}, key=key)
        self.folder.mkdir(parents=True, exist_ok=True)
        files.write_atomic(self.path(label, key), buffer.getvalue())
