"""The algorithms, one module each, reading top to bottom (PPO, DQN, PQN, SAC, TD3), on what they share: the
rollout every one steps its envs through (`acting`), the update loop and results (`loop`), TD targets (`td`), the
off-policy actor-critic layer (`offpolicy`), the replay buffer, the minibatch shuffle and PPO's hooks
(`objectives`). `registry` is the one list of them, open to algorithms written elsewhere (`register`)."""

from purerl.algos.registry import Algorithm, register

__all__ = ["Algorithm", "register"]
