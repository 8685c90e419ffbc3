"""The DPO/LPO study's published document, docs/results/dpo.md: PPO, DPO and the evolved LPO drifts compared on
identical seeds (`purerl compare`), env by env, with the drift analysis (`purerl analyze drift`)."""

from __future__ import annotations

from purerl_lab.publish.catalog import EVOLUTION, FRESH, TRAINING, Study, by_env
from purerl_lab.publish.replication import fresh_part
from purerl_lab.studies.dpo.fingerprint import compare_part


_MINATAR = ("Breakout-MinAtar", "SpaceInvaders-MinAtar", "Asterix-MinAtar", "Freeway-MinAtar")
# MinAtar budgets: the minatar preset's 1e7 (PureJaxRL's) where PPO's curve had flattened there (its return at
# 80% of the budget within the CI of its final one), 2e7 where it was still rising.
_MINATAR_BUDGET = {env: " --total-timesteps 20000000" for env in ("SpaceInvaders-MinAtar", "Freeway-MinAtar")}
# Brax: two of the paper's tasks at the brax preset (2048 envs x 10 steps), 10 seeds (the fewest with a CI),
# 4,096,000 steps per run (200 updates), sized to finish on 2 CPU cores (benchmarks/README.md, "What the
# published studies' budgets cost"): 14% of the authors' ant budget (3e7) and 4% of their halfcheetah one (1e8).
_BRAX = ("brax:ant", "brax:halfcheetah")
ENVS = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1", *_MINATAR, *_BRAX)
# The committed LPO evolutions (`purerl evolve lpo --seed S`, CartPole-v1 at 65,536 steps: each folder's
# provenance.json says which commit and machine ran it); CartPole-v1 at that budget is their training task,
# every other row a transfer.
_LPO = tuple(f"docs/results/dpo/lpo/es{seed}/mean_meta_params.msgpack" for seed in (0, 1))
_COMPARE = (f"purerl compare --objectives ppo,dpo,{','.join(f'lpo:{path}' for path in _LPO)} --runs-dir {{runs}}/compare "
            "--report docs/results/dpo.md --no-progress")
_DPO_VS_PPO = "purerl compare --objectives ppo,dpo --runs-dir {runs}/compare --report docs/results/dpo.md --no-progress"

DIFFERENCES = (
    "Brax runs on Brax's 'spring' backend (brax 0.14); the authors' DPO code pins brax 0.0.11 (requirements.txt), "
    "whose single physics engine predates Brax's backends, and their PureJaxRL DPO (luchris429/purejaxrl, "
    "dpo_continuous_action.py) uses the 'positional' backend (wrappers.py).",
    "Brax budget: 4,096,000 env steps per run, 10 seeds: 14% of the authors' ant budget (3e7 steps) and 4% of their "
    "halfcheetah one (1e8) (dpo/main_drift_brax.py).",
    "Brax PPO: PureJaxRL's settings on both tasks (2048 envs x 10 steps, 4 epochs x 32 minibatches, gamma 0.99, lr "
    "3e-4, clip 0.2, no entropy bonus, observation and reward normalisation, gradients clipped at norm 0.5, a clipped "
    "value loss); the authors' are per task (ant: 5-step unrolls, 32 minibatches of 1024, 4 epochs, gamma 0.97, "
    "entropy 0.01, rewards x 10; halfcheetah: 20-step unrolls, 32 minibatches of 512, 8 epochs, gamma 0.95, entropy "
    "0.001), with clip epsilon 0.3 handed to the drift, no gradient clipping and an unclipped value loss "
    "(dpo/main_drift_brax.py, dpo/dpo.py).",
    "Brax networks: separate 256-256 tanh MLPs for actor and critic, a state-independent log-std, actions clipped to "
    "[-1, 1]; brax 0.0.11's PPO, which the authors' code uses, has a 32-32-32-32 swish policy with a state-dependent "
    "std and tanh-squashed actions and a 256 x 5 swish critic.",
    "The gymnax classic-control and MinAtar rows have no counterpart in the authors' code, whose tasks are all Brax "
    "(dpo/main_drift_brax.py).",
    "LPO's drift is evolved on CartPole-v1 at 65,536 steps per run (population 32 x 300 generations, fitness the mean "
    "return over training, lr 0.01 to 0.002, std 0.05 to 0.02) from fixed random hidden weights and a zero output "
    "layer; the authors' on Brax ant at 3e7 steps (population 32 x 1025 generations, fitness the final "
    "evaluation's return, evosax 0.0.4's defaults) from all-zero weights (dpo/main_drift_brax.py).",
)


_RUNS = (
    f"{_COMPARE} --env CartPole-v1 --seeds 16 --total-timesteps 65536",
    f"{_COMPARE} --env Acrobot-v1 --seeds 16",
    f"{_COMPARE} --env Pendulum-v1 --seeds 16 --total-timesteps 262144",
    # DPO against PPO where budgets mean something, without the LPO transfer columns, at the MinAtar and Brax
    # budgets above. Long: `compare --resume` continues them.
    *(f"{_DPO_VS_PPO} --env {env} --seeds 10{_MINATAR_BUDGET.get(env, '')}" for env in _MINATAR),
    *(f"{_DPO_VS_PPO} --env {env} --seeds 10 --total-timesteps 4096000" for env in _BRAX),
)

STUDY = Study(
    "dpo", "dpo.md",
    TRAINING + EVOLUTION + ("purerl/envs/brax.py", *(f"purerl_lab/studies/dpo/{name}.py" for name in ("compare", "lpo_report", "lpo"))),
    # each env's replication (part fresh_ENV): its command with --fresh-seeds (`publish.replication`)
    (*ENVS, *map(fresh_part, ENVS)),
    (f"purerl analyze drift {','.join(_LPO)} --out docs/results/dpo/lpo", *_RUNS, *(f"{c} {FRESH}" for c in _RUNS)),
    differences=DIFFERENCES, authors="luchris429/discovered-policy-optimisation at c412884",
    render="purerl_lab.studies.dpo.compare:render",
    fingerprint=compare_part, part_commands=by_env,
    cost=lambda part: 20.0 if "brax:" in part else 5.0,  # a Brax env: tracing the physics pipeline
    resumes=(("purerl compare", "always"), ("purerl analyze drift", "never")),
)
