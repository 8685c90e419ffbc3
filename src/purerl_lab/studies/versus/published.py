"""The off-policy study's published document, docs/results/offpolicy.md: SAC beside PPO on Brax at the same env steps
(`purerl versus`), a part per env."""

from __future__ import annotations

from purerl_lab.publish.catalog import FRESH, TRAINING, Study, by_env
from purerl_lab.publish.replication import fresh_part
from purerl_lab.studies.versus.fingerprint import versus_part


# Hopper, not halfcheetah: halfcheetah's episodes never end early, so PPO's 2048 envs end their first at 2,048,000
# env steps (no curve before); hopper's end early from the start. 819,200 env steps per run (PPO 40 updates, SAC
# 800), so the four marks' windows (10 PPO updates, 204,800 env steps) tile the run; 10 seeds, the fewest with a CI.
# SAC's gradient steps dominate its cost (benchmarks/README.md, "What the published studies' budgets cost").
_ENVS = ("brax:hopper",)
_VERSUS = ("purerl versus --algos ppo,sac --seeds 10 --total-timesteps 819200 --runs-dir {runs}/versus "
           "--report docs/results/offpolicy.md --no-progress")

DIFFERENCES = (
    "Budget: 819,200 env steps per run, 10 seeds, on Brax's hopper; CleanRL's SAC trains MuJoCo's Hopper-v4 for 1e6 "
    "steps (cleanrl/sac_continuous_action.py), PureJaxRL's PPO Brax's hopper for 5e7 "
    "(purejaxrl/ppo_continuous_action.py).",
    "Hopper is Brax's on the 'spring' backend (brax 0.14) with a 1000-step limit that both algorithms bootstrap "
    "through; PureJaxRL's PPO runs the 'positional' backend and ends an episode at the limit as a termination "
    "(purejaxrl/wrappers.py), CleanRL's SAC runs MuJoCo's Hopper-v4 through gymnasium.",
    "SAC's brax preset is ours, sized for a CPU, not a paper's: 16 envs x 64 steps per update, 4 gradient steps per "
    "vectorised step (update-to-data 1/4), learning from 1e4 env steps, a 1e6-transition buffer; CleanRL's steps 1 "
    "env with one gradient step per env step, learning from 5e3 (cleanrl/sac_continuous_action.py).",
    "SAC learns its temperature with the actor's lr 3e-4, from the log-probabilities the actor step sampled, and "
    "the loss of the authors' code (softlearning), -log(alpha) (log pi + target entropy); CleanRL's uses the "
    "critics' lr 1e-3, a fresh sample from the updated actor, and alpha in place of log alpha "
    "(cleanrl/sac_continuous_action.py).",
    "SAC's networks use flax's default (LeCun-normal) initialisation; CleanRL's PyTorch's (Kaiming-uniform).",
    "PPO's brax preset keeps PureJaxRL's Brax settings (2048 envs x 10 steps, 4 epochs x 32 minibatches, lr 3e-4 "
    "constant, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, observation and reward normalisation, "
    "256-256 tanh, gradients clipped at norm 0.5) but bootstraps at the time limit "
    "(purejaxrl/ppo_continuous_action.py).",
    "PPO's normalised observations and rewards are clipped to [-10, 10] (as SB3's VecNormalize); PureJaxRL's "
    "normalisers do not clip (purejaxrl/wrappers.py). SAC normalises neither, as CleanRL's.",
    "Every Brax episode starts from a fresh random reset; PureJaxRL wraps Brax's AutoResetWrapper, which restarts "
    "each env from the state its first reset drew (purejaxrl/wrappers.py, brax/envs/wrappers/training.py).",
    "The score is an evaluation of each seed's policy at 25/50/75/100% of the budget on 16 fresh episodes run to "
    "the 1000-step limit, greedy and sampled; CleanRL's SAC and PureJaxRL's PPO report only the returns of their "
    "training episodes, which PPO's 2048 envs censor here (each has taken 400 steps by the end).",
    "A training curve point is the mean return of the episodes that ended in one update (2048 x 10 env steps for "
    "PPO, 16 x 64 for SAC); CleanRL logs every episode's return.",
)


STUDY = Study(
    "offpolicy", "offpolicy.md",
    TRAINING + ("purerl/envs/brax.py", "purerl/run/policy.py", "purerl_lab/studies/versus/*.py"),
    (*_ENVS, *map(fresh_part, _ENVS)),  # each env's replication (part fresh_ENV): its command with --fresh-seeds
    (*(f"{_VERSUS} --env {env}" for env in _ENVS), *(f"{_VERSUS} --env {env} {FRESH}" for env in _ENVS)),
    differences=DIFFERENCES, authors="vwxyzjn/cleanrl at 004f8a0 (SAC) and luchris429/purejaxrl at 146b485 (PPO)",
    render="purerl_lab.studies.versus.report:write_report",
    fingerprint=versus_part, part_commands=by_env, cost=40.0, resumes=(("purerl versus", "always"),),
)
