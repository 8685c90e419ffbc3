"""What the Stable-Baselines3-family peer scripts (sb3_ppo.py, sbx_sac.py) share. Runs inside their venvs."""

from __future__ import annotations

from stable_baselines3.common.callbacks import BaseCallback


class EpisodeLog(BaseCallback):
    """Records (timestep, return) of every finished episode (Monitor's info['episode'])."""

    def __init__(self):
        super().__init__()
        self.episodes: list[tuple[int, float]] = []

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            if "episode" in info:
                self.episodes.append((self.num_timesteps, float(info["episode"]["r"])))
        return True
