"""Trained policies from a run directory: act in Python, evaluate greedily or by sampling, render a GIF."""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from purerl.algos import acting, memory
from purerl.run import files, rundir
from purerl.checks import ConfigError, shown


class Policy:
    """A trained member of a run. `policy(obs)` is the greedy action; `policy.sample(key, obs)` samples.

    Observations are raw environment observations (any leading batch axes); the
    run's observation normaliser is applied inside. A recurrent (`--network gru`) policy acts from its
    memory: `carry, action = policy.step(carry, obs, reset, key=None)` from `policy.initial_carry(n)`.
    """

    def __init__(self, train, params, obs_stats, label: str, hp=None):
        self.train = train
        self.env = train.env
        self.params = params
        self.obs_stats = obs_stats
        self.label = label
        self.hp = hp  # the member's hyperparameters: an exploration policy (DQN's epsilon, TD3's noise) reads them
        self.initial_carry, act = actor(train, params, obs_stats, hp)
        self._greedy = jax.jit(lambda obs: train.act(params, obs_stats, self._flat(obs), None, hp))
        self._sample = jax.jit(lambda key, obs: train.act(params, obs_stats, self._flat(obs), key, hp))
        self._step = jax.jit(lambda carry, obs, reset, key: act(carry, self._flat(obs), reset, key))

    def _flat(self, obs):
        obs = jnp.asarray(obs, jnp.float32)
        size = self.env.observation_shape[0]
        return obs.reshape(obs.shape[: obs.ndim - len(self.env.raw_observation_shape)] + (size,))

    def __call__(self, obs) -> np.ndarray:
        return np.asarray(self._greedy(obs))

    def sample(self, key: jax.Array, obs) -> np.ndarray:
        return np.asarray(self._sample(key, obs))

    def evaluate(self, key: jax.Array, episodes: int = 100, sample: bool = False) -> np.ndarray:
        """Returns of `episodes` fresh episodes played side by side, greedy or sampled, as `purerl eval` plays them
        (and refused in one line, as there, when they cannot fit this machine's memory)."""
        memory.evaluation_fits(self.train.env, 1, episodes)
        return np.asarray(evaluate(self.train, self.params, self.obs_stats, key, episodes, sample, self.hp))

    def step(self, carry, obs, reset, key: jax.Array | None = None):
        """`(carry, action)` for a batch `obs` [n, ...]: greedy without a key; `reset` [n] marks observations that
        begin an episode (the memory is zeroed there first, as in training)."""
        return self._step(carry, obs, jnp.asarray(reset, bool), key)


def actor(train, params, obs_stats, hp=None):
    """The policy as `(initial_carry, step)`: `initial_carry(n)` is the memory of n fresh episodes and
    `step(carry, obs, reset, key) -> (carry, action)` acts on a batch, greedily when `key` is None.

    PPO acts through its network's sequence contract as its rollout does, so a recurrent network carries its
    memory and zeroes it where `reset` marks an episode's first observation; the other algorithms have no
    memory (`()`) and sample through `act` with the member's hyperparameters `hp`.
    """
    if hasattr(train, "act_step"):
        return (train.network.initial_carry,
                lambda carry, obs, reset, key: train.act_step(params, obs_stats, carry, obs, reset, key))
    return lambda n: (), lambda carry, obs, reset, key: ((), train.act(params, obs_stats, obs, key, hp))


def load_run(run_dir: Path, train=None) -> tuple[Any, Any, Any, Any]:
    """(spec, members, train fn, restored runner state of every member) of a run directory. `train`: the train
    function it was trained with, for a run made from Python objects no record can rebuild (an environment, a
    network, a hook or a subclass of one's own); its static config must be the one the run recorded."""
    from purerl.run.checkpoint import Checkpointer
    from purerl.run.rerun import load_spec

    run_dir = Path(run_dir)
    if not (run_dir / rundir.CONFIG).exists():
        raise ConfigError(f"{run_dir} is not a purerl run directory (no {rundir.CONFIG})")
    config = rundir.read_config(run_dir)
    if config.get("command") != "train":
        raise ConfigError(f"{run_dir} is a purerl {config.get('command', 'unknown')} run; this needs a run of purerl train")
    spec = load_spec(run_dir, "eval")  # members in the order they were trained in
    if train is not None:
        _check_same_config(run_dir, spec, train)
    members = spec.validate(train, instead="load it from Python with the train function it was trained with: "
                                           "purerl.load(RUN_DIR, train=...)")
    train = train if train is not None else spec.build()
    if not (run_dir / rundir.CHECKPOINT).is_dir():  # checked first: the Checkpointer would create the folder
        raise ConfigError(f"{run_dir} has no checkpoint yet")
    checkpointer = Checkpointer(run_dir / rundir.CHECKPOINT)
    if checkpointer.latest() is None:
        checkpointer.close()
        raise ConfigError(f"{run_dir} has no checkpoint yet")
    if spec.pbt is None:
        like = jax.eval_shape(jax.vmap(train.init), members.keys(), members.hyperparams.as_arrays())
    else:  # a PBT population: the runner state travels with its hyperparameters and lineage
        from purerl.run import pbt

        like = pbt.like(train, members, spec.pbt)
    state, _ = checkpointer.restore(like)
    checkpointer.close()
    return spec, members, train, state if spec.pbt is None else state.train


def _check_same_config(run_dir: Path, spec, train) -> None:
    """The given train function's static config is the one the run recorded (so the checkpoint fits it)."""
    import dataclasses

    from purerl.run import records

    if type(train.config) is not type(spec.config) or train.config != spec.config:
        given = dataclasses.asdict(train.config) if dataclasses.is_dataclass(train.config) else {}
        raise ConfigError(f"the train function given is not the one {run_dir} trained (its config differs in: "
                          f"{records.differences(dataclasses.asdict(spec.config), given, ('recorded', 'given'))})")


def load(run_dir: str | Path, member: int = 0, train=None) -> Policy:
    """The policy of one member (default the first) of a finished or checkpointed run. `member` is checked
    to be an integer before the run is loaded (True would pass for member 1; 1.5 would fail as an IndexError).
    A run trained from Python on objects no record can rebuild (an environment, network, hook or subclass of one's
    own) is loaded with the train function it was trained with: `load(run_dir, train=train)`."""
    if isinstance(member, bool) or not isinstance(member, numbers.Integral):
        raise ConfigError(f"member must be an integer index, got {shown(member)}")
    spec, members, train, state = load_run(Path(run_dir), train)
    if not 0 <= member < len(members):
        raise ConfigError(f"member must be in [0, {len(members) - 1}], got {member}")
    pick = lambda tree: jax.tree.map(lambda x: x[member], tree)  # noqa: E731
    return Policy(train, pick(state.params), pick(state.obs_stats), members.label(member),
                  pick(members.hyperparams.as_arrays()))


def evaluate(train, params, obs_stats, key: jax.Array, episodes: int, sample: bool = False, hp=None) -> jax.Array:
    """Returns of `episodes` episodes played side by side (one env each): the greedy policy, or with `sample`
    the policy's own sampling (`actor`), its actions drawn from `key` too, so a seed fixes every number."""
    return play(train, params, obs_stats, key, episodes, sample, hp)[0]


def members_evaluator(train, episodes: int, sample: bool = False):
    """`evaluate` for a whole population in one compiled program, `(params, obs_stats, keys, hps) -> returns
    [members, episodes]`, each leaf's leading axis the members and each member playing from its own key. Kept and
    called again, it compiles once."""
    return jax.jit(jax.vmap(lambda p, s, k, h: evaluate(train, p, s, k, episodes, sample, h)))


def play_keys(key: jax.Array, episodes: int, steps: int, sample: bool):
    """(reset keys [episodes], env step keys [steps, episodes], action keys [steps] or None when greedy) for `play`.
    Episode i draws from `split(key, episodes)[i]`; the actions from `fold_in(key, episodes)`, which under JAX's
    partitionable threefry is `split(key, episodes + 1)[episodes]`, so no key serves two purposes (`fold_in(key,
    1)` would be episode 1's key, and its first action key that episode's reset key)."""
    reset_keys, keys = jax.vmap(jax.random.split, out_axes=1)(jax.random.split(key, episodes))
    step_keys = jax.vmap(lambda k: jax.random.split(k, steps), out_axes=1)(keys)
    action_keys = jax.random.split(jax.random.fold_in(key, episodes), steps) if sample else None
    return reset_keys, step_keys, action_keys


def play(train, params, obs_stats, key: jax.Array, episodes: int, sample: bool = False, hp=None, record: bool = False):
    """(returns [episodes], record): each episode runs in its own env for the task's time limit, and only
    its first episode counts. `record` keeps, per step, the env states before it, the rewards, and whether
    the episode was still running ([steps, episodes] leaves), for `render_gif`; otherwise it is None."""
    env = train.env
    initial_carry, act = actor(train, params, obs_stats, hp)
    reset_keys, step_keys, action_keys = play_keys(key, episodes, env.max_episode_steps, sample)

    def step(carry, keys):
        obs, reset, memory, env_state, total, alive = carry
        step_keys, action_key = keys

        def act_on_obs(action_key):
            next_memory, action = act(memory, obs, reset, action_key)
            return action, next_memory

        next_state, _, ts, memory = acting.actor_step(env, env_state, act_on_obs, action_key, step_keys)
        total = total + jnp.where(alive, ts.reward, 0.0)
        kept = (env_state, ts.reward, alive) if record else None
        return (ts.obs, ts.done, memory, next_state, total, alive & ~ts.done), kept

    obs, env_state = env.reset_batch(reset_keys)
    first = jnp.ones(episodes, bool)  # every episode begins: a recurrent memory starts at zero, as in training
    carry = (obs, first, initial_carry(episodes), env_state, jnp.zeros(episodes, jnp.float32), first)
    (_, _, _, _, total, _), kept = acting.unroll(step, carry, xs=(step_keys, action_keys))
    return total, kept


def _classic_control(gymnax_env) -> bool:
    """Drawn by gymnasium's own renderer (pygame) rather than with matplotlib."""
    from gymnax.visualize import vis_gym

    return gymnax_env.name in vis_gym.SUPPORTED_GYM_ENVS


def check_gif(path: Path, env) -> None:
    """Refuse, before anything is evaluated, a GIF that `render_gif` could not make or write."""
    import importlib.util

    if path.suffix != ".gif":
        raise ConfigError(f"--gif must name a .gif file, got {path}")
    if path.is_dir():
        raise ConfigError(f"--gif {path} is a folder")
    rundir.check_writable(path.parent)
    if importlib.util.find_spec("gymnax") is None:
        raise ConfigError("--gif needs gymnax; install it with pip install 'purerl[render]'")
    if not hasattr(env, "gymnax_env"):
        raise ConfigError(f"--gif draws gymnax tasks with gymnax's visualiser; {env.name} is not one")
    if _classic_control(env.gymnax_env) and importlib.util.find_spec("pygame") is None:
        raise ConfigError("--gif needs pygame; install it with pip install 'purerl[render]'")


def render_gif(policy: Policy, path: Path, key: jax.Array, sample: bool = False) -> tuple[Path, int, float]:
    """Animate one episode of `policy`, played as `evaluate` plays (greedy, or sampled from `key`): one frame per
    state, the return so far on each. Returns (path, steps, return).

    The episode is one compiled scan (`play`); classic-control tasks are drawn by one gymnasium renderer kept
    for every frame, the other gymnax tasks by gymnax's matplotlib visualiser.
    """
    from purerl.envs.wrappers import EpisodeStatsState

    env = policy.env
    _, (states, rewards, alive) = jax.jit(lambda p, s, h: play(policy.train, p, s, key, 1, sample, h, record=True))(
        policy.params, policy.obs_stats, policy.hp)
    while isinstance(states, EpisodeStatsState):  # purerl's wrappers keep gymnax's state inside theirs
        states = states.env_state
    steps = int(np.asarray(alive)[:, 0].sum())  # the episode ended at step `steps` (or hit the time limit)
    returns = np.concatenate([[0.0], np.cumsum(np.asarray(rewards)[:steps - 1, 0])])  # before each step
    host = jax.tree.map(lambda x: np.asarray(x[:steps, 0]), states)
    states = [jax.tree.map(lambda x: x[t], host) for t in range(steps)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with files.temporary(path) as tmp:
        if _classic_control(env.gymnax_env):
            _write_gif(_gym_frames(env.gymnax_env, env.params, states, returns), tmp)
        else:
            from gymnax.visualize import Visualizer

            Visualizer(env.gymnax_env, env.params, states, returns).animate(str(tmp))
    return path, steps, float(np.asarray(rewards)[:steps, 0].sum())


FRAME_MS = 50  # 20 frames a second, as gymnax's visualiser shows classic control


def _gym_frames(gymnax_env, params, states, returns):
    """RGB frames from one gymnasium renderer made once. gymnax's visualiser makes (and closes) a gymnasium
    env per frame, and each one starts pygame again: most of a GIF's time, and, without a display, SDL's
    complaint about XDG_RUNTIME_DIR on every start. The dummy video driver draws off-screen with no display."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # no banner on stdout
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")  # no sound device needed (or complained about)
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # off-screen surfaces only: no display probed
    try:
        import gymnasium
        import pygame  # noqa: F401  (gymnasium's classic-control renderer needs it)
    except ModuleNotFoundError as error:
        raise ConfigError(f"--gif needs {error.name}; install it with pip install 'purerl[render]'") from None
    from gymnax.visualize import vis_gym
    from PIL import Image, ImageDraw, ImageFont

    name = gymnax_env.name
    renderer = gymnasium.make(name, render_mode="rgb_array")
    try:
        renderer.reset()
        unwrapped = renderer.unwrapped
        vis_gym.set_gym_params(unwrapped, name, params)
        font = ImageFont.load_default(size=18)
        for t, state in enumerate(states):
            unwrapped.state = vis_gym.get_gym_state(state, name)
            if name == "Pendulum-v1":
                unwrapped.last_u = np.asarray(state.last_u, dtype=np.float64)
            frame = Image.fromarray(renderer.render())
            ImageDraw.Draw(frame).text((8, 6), f"{name}  step {t + 1}  return {returns[t]:.2f}", fill=(0, 0, 0),
                                       font=font)
            yield frame
    finally:
        renderer.close()


def _write_gif(frames, path: Path) -> None:
    """Every frame in the first one's palette: a classic-control scene keeps its few colours throughout, and
    mapping to a palette costs a fraction of the adaptive quantisation PIL runs per frame by default."""
    from PIL import Image

    palette = next(frames).quantize(method=Image.Quantize.FASTOCTREE)
    rest = (frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in frames)
    palette.save(path, format="GIF", save_all=True, append_images=rest, duration=FRAME_MS, loop=0)
