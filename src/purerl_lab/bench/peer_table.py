"""The peers purerl is measured against: what each one installs, which script trains it, and how its
settings map onto purerl's (`mapping`) or cannot (`mismatches`). Data only; `peers.run_peer` runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent / "peer_scripts"


@dataclass(frozen=True)
class Peer:
    """One peer implementation: what to install in its venv and which script trains it.

    `requirements` are pip install stages, run in order: torch goes alone first so that
    the CPU wheel satisfies it before anything can ask pip for a CUDA build.
    """

    name: str
    description: str
    requirements: tuple[tuple[str, ...], ...]
    script: str
    env: str
    mapping: dict[str, str] = field(default_factory=dict)
    mismatches: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ("cartpole",)  # the harness tasks the peer's script can run
    # Tasks run by another script, which is given `--task TASK`, and what differs there from purerl.
    task_scripts: dict[str, str] = field(default_factory=dict)
    task_mismatches: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Seeds trained one after another in one process (SB3, sbx): the harness measures a few and the script
    # extrapolates the wall time to the rest (`--max-measured-seeds`).
    sequential_seeds: bool = False

    def script_path(self, task: str = "cartpole") -> Path:
        return SCRIPTS_DIR / self.task_scripts.get(task, self.script)

    def mismatches_for(self, task: str) -> tuple[str, ...]:
        return self.task_mismatches.get(task, self.mismatches)

    @property
    def flat_requirements(self) -> list[str]:
        return [req for stage in self.requirements for req in stage]


PEERS: dict[str, Peer] = {
    "sb3": Peer(
        name="sb3",
        description="Stable-Baselines3 PPO (PyTorch, CPU) on gymnasium CartPole-v1; seeds run one after another",
        requirements=(
            ("torch==2.13.0",),
            ("stable-baselines3==2.9.2", "gymnasium==1.4.0", "numpy==2.4.6"),
        ),
        script="sb3_ppo.py",
        sequential_seeds=True,
        env="gymnasium CartPole-v1 (make_vec_env: DummyVecEnv of 4, Monitor)",
        mapping={
            "num_envs=4": "make_vec_env('CartPole-v1', n_envs=4, seed=seed)",
            "num_steps=128": "n_steps=128",
            "total_timesteps": "learn(total_timesteps=(T // 512) * 512): whole updates, as CleanRL",
            "lr=2.5e-4, annealed": "learning_rate=lambda p: 2.5e-4 * min(1, p + 1/num_updates) "
                                   "(SB3 passes p = 1 - i/N before update i; CleanRL uses 1 - (i-1)/N)",
            "update_epochs=4": "n_epochs=4",
            "num_minibatches=4": "batch_size=128 (SB3's batch_size is the minibatch size)",
            "gamma=0.99": "gamma=0.99",
            "gae_lambda=0.95": "gae_lambda=0.95",
            "clip_eps=0.2": "clip_range=0.2, clip_range_vf=0.2",
            "ent_coef=0.01": "ent_coef=0.01",
            "vf_coef=0.5": "vf_coef=0.25 (SB3's value loss is MSE, CleanRL's 0.5 * MSE)",
            "max_grad_norm=0.5": "max_grad_norm=0.5 (clip_grad_norm_ over all parameters, as CleanRL)",
            "advantage normalisation": "normalize_advantage=True (per minibatch)",
            "tanh 64-64, separate actor and critic": "policy_kwargs: net_arch=dict(pi=[64, 64], vf=[64, 64]), "
                                                     "activation_fn=torch.nn.Tanh",
            "orthogonal init (sqrt 2, 0.01, 1)": "policy_kwargs: ortho_init=True (same gains)",
            "adam eps=1e-5": "policy_kwargs: optimizer_class=torch.optim.Adam, optimizer_kwargs=dict(eps=1e-5)",
        },
        mismatches=(
            "Value clipping: SB3 uses the clipped value only, mean((R - clip(V))^2); CleanRL and purerl use "
            "max(unclipped, clipped) squared error. Both stop the value moving more than 0.2 from its old "
            "estimate toward the target; only SB3 also stops pulling back an overshoot.",
            "Time limits: SB3 bootstraps the value at a TimeLimit truncation (as purerl does); CleanRL does not.",
            "Advantage std is torch's unbiased std (CleanRL too); purerl's jnp.std is the biased one.",
        ),
    ),
    "rejax": Peer(
        name="rejax",
        description="rejax PPO, DQN or PQN on gymnax CartPole-v1, SAC or TD3 on gymnax Pendulum-v1 (JAX); N seeds "
                    "vmapped in one compiled program",
        requirements=(
            (
                "rejax==0.1.3",
                # rejax 0.1.3 unpacks 5 values from env.step; gymnax 1.0 returns 6, so gymnax < 1.
                "gymnax==0.0.9",
                # rejax pins no jax (jax>=0.4.34); use purerl's jax so the XLA CPU backend is the same.
                "jax==0.10.2",
                "jaxlib==0.10.2",
                "flax==0.12.8",
                "optax==0.2.8",
                "chex==0.1.92",
                "distrax==0.1.9",
                "tfp-nightly==0.26.0.dev20261027",  # distrax's unpinned dependency
                "numpy==2.4.6",
            ),
        ),
        script="rejax_ppo.py",
        env="gymnax 0.0.9 CartPole-v1 or Pendulum-v1 (gymnax.make via rejax)",
        mapping={
            "num_envs=4": "num_envs=4",
            "num_steps=128": "num_steps=128",
            "total_timesteps": "total_timesteps=(T // 512) * 512 and eval_freq=the same (one block, no eval inside)",
            "lr=2.5e-4, annealed": "learning_rate=lambda count: 2.5e-4 * (1 - (count // 16) / num_updates) "
                                   "(rejax hands learning_rate to optax.adam, which accepts a schedule)",
            "update_epochs=4": "num_epochs=4",
            "num_minibatches=4": "num_minibatches=4 (minibatch 128)",
            "gamma=0.99": "gamma=0.99",
            "gae_lambda=0.95": "gae_lambda=0.95",
            "clip_eps=0.2": "clip_eps=0.2 (policy ratio and value clipping, max of clipped/unclipped as CleanRL)",
            "ent_coef=0.01": "ent_coef=0.01",
            "vf_coef=0.5": "vf_coef=0.5 (rejax's critic loss is vf_coef * 0.5 * max(...): CleanRL's scale)",
            "max_grad_norm=0.5": "max_grad_norm=0.5 (but see mismatches: element-wise clipping)",
            "advantage normalisation": "always on, per minibatch",
            "tanh 64-64, separate actor and critic": "agent_kwargs=dict(activation='tanh', "
                                                     "hidden_layer_sizes=(64, 64)); actor and critic are separate",
            "normalisation of obs / rewards off": "normalize_observations=False, normalize_rewards=False",
        },
        mismatches=(
            "Gradient clipping: rejax's max_grad_norm feeds optax.clip, which clips each gradient element to "
            "[-0.5, 0.5], not optax.clip_by_global_norm; actor and critic also have separate optimisers, so "
            "there is no joint norm.",
            "Adam eps: rejax hard-codes optax.adam's default eps=1e-8 (not configurable); CleanRL uses 1e-5.",
            "Initialisation: flax's default lecun_normal kernels and zero biases; CleanRL uses orthogonal "
            "(sqrt 2 hidden, 0.01 policy head, 1.0 value head). Not configurable without new network classes.",
            "Time limits: gymnax 0.0.9 merges truncation into done and rejax treats it as terminal (as CleanRL "
            "and PureJaxRL do); purerl and SB3 bootstrap truncated episodes.",
            "Order of updates: per minibatch rejax steps the actor, then the critic, with separate Adam states "
            "(equivalent to one joint step for separate networks apart from the clipping above).",
            "final_return comes from 128 evaluation episodes of the trained stochastic policy, run after "
            "training and outside run_s; SB3 and purerl report training episodes of the last 10 updates.",
        ),
        tasks=("cartpole", "dqn", "pqn", "sac", "td3"),
        task_scripts={"dqn": "rejax_value.py", "pqn": "rejax_value.py", "sac": "rejax_offpolicy.py",
                      "td3": "rejax_offpolicy.py"},
        task_mismatches={
            "dqn": (
                "Settings: purerl's classic DQN preset in rejax's names (10 envs, buffer 1e4 filled for 1e4 steps, "
                "batch 128, one gradient step per step of all envs, hard target copy every 500 steps (polyak 0), "
                "epsilon 1 -> 0.05 over 2.5e5 steps, lr 2.5e-4, no double DQN, 0.5 x squared TD error).",
                "Network: rejax hard-codes 64-64 hidden layers; a subclass's create_agent gives it purerl's "
                "120-84 relu instead (the only change to rejax). Initialisation stays flax's lecun_normal.",
                "Time limits: gymnax 0.0.9 merges truncation into done and rejax treats it as terminal; purerl "
                "bootstraps truncated transitions from the final observation.",
                "final_return: 128 evaluation episodes of the near-greedy policy (epsilon 0.005) after training; "
                "purerl reports training episodes of the last 10 updates (epsilon 0.05).",
            ),
            "pqn": (
                "Settings: purerl's classic PQN preset in rejax's names (32 envs x 64 steps, 4 epochs x 16 "
                "minibatches, lambda 0.95, epsilon 1 -> 0.2 over 20% of steps, lr 1e-4 decayed linearly per "
                "update, LayerNorm + relu).",
                "Network: rejax hard-codes 64-64 hidden layers; a subclass's create_agent gives it purerl's "
                "256-256 instead (the only change to rejax).",
                "Optimiser: rejax uses Adam after element-wise optax.clip(10); purerl uses RAdam after "
                "clip_by_global_norm(10), as purejaxql.",
                "Rewards: purerl scales rewards by 0.1 (purejaxql's CartPole); rejax has no reward scale.",
                "Time limits: as for DQN, rejax treats a truncation as terminal; purerl bootstraps it.",
                "final_return: as for DQN (epsilon 0.005 evaluation after training; purerl: training episodes "
                "of the last 10 updates at epsilon 0.2).",
            ),
            "sac": (
                "Settings: purerl's continuous SAC preset in rejax's names (1 env, buffer 1e5, fill_buffer 5e3, "
                "batch 256, num_epochs 1 = one gradient step per env step, gamma 0.99, polyak 0.995 = tau 0.005 "
                "every step, 256-256 relu via hidden_layer_sizes and agent_kwargs, autotuned temperature from "
                "log alpha 0 towards entropy -|A|, no observation or reward normalisation, no gradient clipping "
                "(rejax's default max_grad_norm is inf)).",
                "Learning rates: rejax builds one optimiser for actor, critic and temperature; a subclass's "
                "initialize_network_params gives the critic its own Adam at 1e-3 (actor and temperature 3e-4, as "
                "purerl); the only change to rejax.",
                "Policy delay: rejax has none for SAC; every gradient step is one actor step, one critic step and "
                "one temperature step, in that order. purerl (CleanRL) takes the critic step first and, every 2nd "
                "gradient step, 2 actor and temperature steps: the same number of actor steps, in another order.",
                "Temperature loss: rejax's is CleanRL's, -alpha (log pi + target entropy); purerl's is the "
                "authors' code's (softlearning), -log(alpha) (log pi + target entropy): the same fixed point, "
                "another step size.",
                "Critic loss: rejax's optax.l2_loss is half the squared error that purerl minimises (Adam makes "
                "this nearly irrelevant).",
                "Actor: log std clipped to [-10, 2] (rejax) vs squashed by tanh into [-5, 2] (purerl, CleanRL); "
                "mean and log std from two Dense heads (rejax) vs one Dense of 2|A| outputs split in two "
                "(purerl): the same parameters and initialisation. Both use flax's default lecun_normal kernels "
                "and zero biases, and the tanh Jacobian without the action scale.",
                "Before learning starts rejax acts with its untrained policy; purerl (CleanRL) acts uniformly at "
                "random for the first 5e3 steps.",
                "Replay sampling: rejax draws a batch without replacement with jax.random.choice(p=...) over the "
                "whole buffer's 1e5 slots, which costs O(buffer size) per gradient step; purerl draws with "
                "replacement from the stored transitions (O(batch)).",
                "Time limits: gymnax 0.0.9's Pendulum-v1 ends an episode at 200 steps as a terminal state and "
                "rejax stores done=1 with the next episode's first observation, so it never bootstraps there; "
                "gymnax 1.0.1 (purerl) calls it a truncation and purerl bootstraps from the final observation. "
                "Pendulum's dynamics and rewards are the same code in both gymnax versions.",
                "final_return: 128 evaluation episodes of the stochastic policy after training (outside run_s); "
                "purerl reports the training episodes of its last 10 updates (2,000 steps).",
            ),
            "td3": (
                "Settings: purerl's continuous TD3 preset in rejax's names (1 env, buffer 1e5, fill_buffer 5e3 of "
                "uniform actions, batch 256, num_epochs 1 = one critic step per env step, policy_delay 2, "
                "learning_rate 3e-4 for both, gamma 0.99, polyak 0.995 = tau 0.005, no gradient clipping). Noise "
                "is in the env's units in rejax, so purerl's [-1, 1]-space scales are multiplied by Pendulum's "
                "half-width 2: exploration_noise 0.2, target_noise 0.4, target_noise_clip 1.0.",
                "Network: rejax hard-codes 64-64 swish layers for TD3; a subclass's create_agent builds rejax's "
                "own DeterministicPolicy and QNetwork with purerl's 256-256 relu (the only change to rejax). "
                "Initialisation stays flax's lecun_normal, as purerl's.",
                "Actor loss: rejax maximises the mean of both critics' Q; purerl (and the authors' TD3, CleanRL) "
                "the first critic's.",
                "Policy delay: rejax takes 2 critic steps (2 env steps), then the actor step on the second's batch "
                "and the Polyak update of both targets; purerl takes the actor and target step right after "
                "critic steps 0, 2, 4, ... on that step's batch: the same rate, one step out of phase.",
                "Critic loss: rejax's optax.l2_loss is half the squared error that purerl minimises.",
                "Replay sampling: as for SAC, rejax samples without replacement over the whole 1e5-slot buffer "
                "(O(buffer size) per gradient step); purerl samples with replacement (O(batch)).",
                "Time limits: as for SAC, rejax treats Pendulum's 200-step limit as terminal (no bootstrap); "
                "purerl bootstraps the truncation from the final observation.",
                "final_return: 128 evaluation episodes of the deterministic policy (no exploration noise) after "
                "training; purerl reports the training episodes (with exploration noise) of its last 10 updates.",
            ),
        },
    ),
    "sbx": Peer(
        name="sbx",
        description="sbx (Stable-Baselines-Jax) SAC on gymnasium Pendulum-v1: SB3's Python loop and numpy replay "
                    "buffer, one jitted JAX gradient step per env step; seeds run one after another",
        requirements=(
            ("torch==2.13.0",),  # SB3's dependency, alone first so that the CPU wheel satisfies it (as the sb3 peer)
            (
                "sbx-rl==0.28.0",
                "stable-baselines3==2.9.2",
                "gymnasium==1.4.0",
                # purerl's JAX stack, so the XLA CPU backend is the same
                "jax==0.10.2",
                "jaxlib==0.10.2",
                "flax==0.12.8",
                "optax==0.2.8",
                "tfp-nightly==0.26.0.dev20261027",  # sbx's unpinned dependency
                "numpy==2.4.6",
            ),
        ),
        script="sbx_sac.py",
        env="gymnasium 1.4.0 Pendulum-v1 (make_vec_env: DummyVecEnv of 1, Monitor)",
        tasks=("sac",),
        sequential_seeds=True,
        mismatches=(
            "Settings: purerl's continuous SAC preset in sbx's names (buffer_size 1e5, learning_starts 5e3 of "
            "uniform actions, batch_size 256, train_freq 1 and gradient_steps 1, learning_rate 3e-4 for actor "
            "and temperature, qf_learning_rate 1e-3, tau 0.005, gamma 0.99, ent_coef 'auto' from 1.0 towards "
            "target_entropy -|A| with the paper's log(alpha) loss, net_arch 256-256 relu); nothing of sbx changed.",
            "Policy delay: policy_delay=1, one actor and temperature step after every critic step; purerl "
            "(CleanRL) takes 2 every 2nd step, the same number. sbx's own policy_delay=2 would halve them.",
            "Order: sbx updates the critic targets right after the critic step, before the actor step; purerl "
            "after both.",
            "Actor: log std clipped to [-20, 2] (SB3's bounds) vs squashed by tanh into [-5, 2] (purerl, CleanRL). "
            "Critic loss: half the squared error (sbx) vs the squared error (purerl).",
            "Env and loop: gymnasium's numpy Pendulum-v1 stepped in Python (SB3's DummyVecEnv and numpy replay "
            "buffer, sampled on the host and copied to JAX every gradient step) vs gymnax's in one compiled "
            "program. Time limits: both bootstrap the 200-step truncation (SB3's handle_timeout_termination).",
            "compile_s is a throwaway model's warm-up (learning just past its learning_starts), which compiles the "
            "jitted step and policy for the timed seeds; it includes that warm-up's few Python env steps.",
            "final_return: training episodes that end in the last 2,000 steps, as purerl's last 10 updates.",
        ),
    ),
    "purejaxrl": Peer(
        name="purejaxrl",
        description="PureJaxRL's own purejaxrl/ppo.py (JAX) from a user's checkout (--purejaxrl PATH), run on a "
                    "patched temporary copy; N seeds vmapped in one compiled program",
        requirements=(
            (
                # the same JAX stack and gymnax as purerl, plus distrax, which ppo.py imports
                "jax==0.10.2",
                "jaxlib==0.10.2",
                "flax==0.12.8",
                "optax==0.2.8",
                "chex==0.1.92",
                "gymnax==1.0.1",
                "distrax==0.1.9",
                "tfp-nightly==0.26.0.dev20261027",  # distrax's unpinned dependency
                "numpy==2.4.6",
            ),
        ),
        script="purejaxrl_ppo.py",
        env="gymnax 1.0.1 CartPole-v1 and Breakout-MinAtar (gymnax.make, PureJaxRL's own wrappers)",
        mapping={
            "config": "CartPole: the dict in ppo.py's __main__ (DEBUG off); MinAtar: the dict in "
                      "examples/brax_minatar.ipynb with ENV_NAME=Breakout-MinAtar; TOTAL_TIMESTEPS from the harness",
            "total_timesteps": "TOTAL_TIMESTEPS = purerl's step count, a whole number of updates, so both sides "
                               "run the same updates",
            "patches": "wrappers.py: brax/navix imports dropped; FlattenObservationWrapper unpacks gymnax 1.x's "
                       "six-value step (done = terminated or truncated); ppo.py's network.init runs seed by seed "
                       "under vmap (jaxlib 0.10's CPU deadlock on batched QRs). Applied to a temporary copy only.",
        },
        mismatches=(
            "Patched, on a temporary copy only: wrappers.py's brax and navix imports are dropped, and its "
            "FlattenObservationWrapper unpacks gymnax 1.x's six-value step, passing on done = terminated or "
            "truncated. ppo.py's network.init runs seed by seed under vmap (jax.custom_batching.sequential_vmap; "
            "same keys, same parameters): vmapped, its orthogonal initialisers' batched QRs can deadlock jaxlib "
            "0.10 on a CPU. Config: CartPole's is ppo.py's own (DEBUG off), MinAtar's is examples/brax_minatar.ipynb's "
            "with ENV_NAME=Breakout-MinAtar; TOTAL_TIMESTEPS is set to purerl's step count.",
            "Time limits: PureJaxRL treats a truncated episode as terminal (no bootstrap); purerl bootstraps "
            "from the final observation.",
            "Seeds: PureJaxRL's keys are jax.random.split(PRNGKey(30), N); purerl's members are seeds 0..N-1.",
            "final_return: PureJaxRL's returned_episode_returns of the training episodes that ended in the last "
            "10 updates, as purerl reports its own.",
        ),
        tasks=("cartpole", "minatar"),
    ),
}
