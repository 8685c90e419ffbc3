"""The registry of published studies: each document under docs/results/, the source files its numbers depend
on (narrow, so that unrelated edits do not stale it, but complete; globs relative to src/purerl/), the parts
it must have, and the commands that regenerate it end to end. `provenance` checks documents against it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from purerl.run import rundir
from purerl.config import ConfigError

# What every PPO-based number depends on: the algorithm, the env stack, configs, nets, the run
# loop and the statistics. cli/, checkpointing, progress bars and benchmarks are left out.
TRAINING = ("algos/*.py", "envs/__init__.py", "envs/core.py", "envs/wrappers.py", "config.py", "nets/*.py",
            "run/population.py", "run/experiment.py", "run/results.py", "stats.py", "runtime/host_devices.py")
EVOLUTION = ("meta/evolve.py",)


@dataclass(frozen=True)
class Study:
    """One published document and how it is made."""

    name: str
    document: str  # relative to docs/results/; its manifest.json is the one beside it
    depends: tuple[str, ...]  # globs relative to src/purerl/
    parts: tuple[str, ...]  # every part the document must have
    commands: tuple[str, ...]  # regenerate it end to end; {runs} is a scratch folder for run directories
    # Where the study departs from its authors' code on purpose, one plain sentence each with its numbers, read
    # against `authors` (repository at commit); every document shows them (`publish.differences`).
    differences: tuple[str, ...] = ()
    authors: str = ""  # "" for a study with no authors' code to compare with


_MINATAR = ("Breakout-MinAtar", "SpaceInvaders-MinAtar", "Asterix-MinAtar", "Freeway-MinAtar")
# MinAtar budgets: the minatar preset's 1e7 (PureJaxRL's) where PPO's curve had flattened there (its return at
# 80% of the budget within the CI of its final one, at d1ea257), 2e7 where it was still rising.
_MINATAR_BUDGET = {env: " --total-timesteps 20000000" for env in ("SpaceInvaders-MinAtar", "Freeway-MinAtar")}
# Brax: two of the paper's tasks at the brax preset (2048 envs x 10 steps), 10 seeds (the fewest with a CI).
# Measured here with 8 seeds on 2 cores: ant 20.2k, halfcheetah 13.8k env steps/s (hopper, not a paper task,
# 42.7k), so 4,096,000 steps per run (200 updates): 14% of the authors' ant budget (3e7) and 4% of their
# halfcheetah one (1e8); ant's 20 runs take about 65 min, halfcheetah's about 100.
_BRAX = ("brax:ant", "brax:halfcheetah")
DPO_ENVS = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1", *_MINATAR, *_BRAX)
# The committed LPO evolutions (`purerl evolve lpo --seed S`, CartPole-v1 at 65,536 steps: each folder's
# provenance.json says which commit and machine ran it); CartPole-v1 at that budget is their training task,
# every other row a transfer.
_LPO = tuple(f"docs/results/dpo/lpo/es{seed}/mean_meta_params.msgpack" for seed in (0, 1))
_COMPARE = (f"purerl compare --objectives ppo,dpo,{','.join(f'lpo:{path}' for path in _LPO)} --runs-dir {{runs}}/compare "
            "--report docs/results/dpo.md --no-progress")
_DPO_VS_PPO = "purerl compare --objectives ppo,dpo --runs-dir {runs}/compare --report docs/results/dpo.md --no-progress"
_VALUE_LOSS_STAGES = ("training_budget", "acrobot", "2x_budget", "5x_budget", "critic")
# The M-FOS modules that make numbers. The CLI, plots and markdown only print them, so editing their words
# does not stale a document (a document's words are re-rendered with its numbers when it is regenerated).
_MFOS_MATRIX = ("studies/mfos/games.py", *(f"studies/mfos/{name}.py" for name in (
    "analysis", "baselines", "meta_game", "runs", "self_play", "settings", "table")))
_MFOS_COIN = ("studies/mfos/games.py", "studies/mfos/coin_game.py", *(f"studies/mfos/{name}.py" for name in (
    "analysis", "coin", "coin_nets", "coin_report", "meta_game", "runs", "self_play", "settings")))
_ACT_ENVS = ("CartPole-v1", "Pendulum-v1")
# Pendulum-v1's evaluation trains 64 fresh victims per condition, the fewest its verdicts rest on (act.VICTIMS): on 32
# they moved with the CPU model and with a fresh seed set. 32 took 573 s on 2 cores, and 64 victims cost 2.1x what 32
# do (measured in turns on one machine), so about 20 min.
_ACT_VICTIMS = {"Pendulum-v1": " --victims 64"}
# PBT, random search and the preset defaults, 10 repetitions x 8 members each (the PBT study). Measured here with 8
# members of `train --pbt` on 2 busy cores (load 3-4): Pendulum-v1 48k env steps/s, Acrobot-v1 130k. Pendulum at half
# its preset's budget (240 updates, 491,520 steps per member): 30 runs x 8 members take about 41 min, Acrobot at its
# preset's own 500,000 about 15 min; compiles (from the cache after each method's first) and evaluations add minutes.
_PBT = "purerl pbt-study --seeds 8 --repetitions 10 --runs-dir {runs}/pbt --report docs/results/pbt.md --no-progress"
_PBT_SOURCES = ("run/pbt.py", "run/pbt_config.py", "run/pbt_files.py", "run/policy.py", "studies/pbt/design.py")
# SAC beside PPO on Brax at the same env steps (issue 54), each at its own brax preset. Hopper, not halfcheetah:
# halfcheetah's episodes never end early, so PPO's 2048 envs end their first at 2,048,000 env steps (no curve
# before); hopper's end early from the start. Measured on this 2-core CPU at nice 19 beside a regeneration (load 5-6):
# SAC's preset learning from the first step, 4 seeds on hopper 235 env steps/s in all and 2 on halfcheetah 258/s,
# 2.3-2.6 ms of CPU per env step of one seed on both (its 1/4 gradient step per env step dominates, not the physics);
# PPO's, 2 seeds on hopper, 7,400/s (dpo's 8 seeds on free cores: 42.7k). 819,200 env steps per run (PPO 40 updates,
# SAC 800), so the four marks' windows (10 PPO updates, 204,800 env steps) tile the run; 10 seeds, the fewest with a
# CI: SAC about 8.2M env steps x 2.5 ms = 5.7 CPU-hours, about 2.9 h on two free cores (twice that shared), PPO
# minutes.
_OFFPOLICY_ENVS = ("brax:hopper",)
_VERSUS = ("purerl versus --algos ppo,sac --seeds 10 --total-timesteps 819200 --runs-dir {runs}/versus "
           "--report docs/results/offpolicy.md --no-progress")
# Deliberate differences from the authors' code, each checked against the file it names in `authors`.
_DPO_AUTHORS = "luchris429/discovered-policy-optimisation at c412884"
_DPO_DIFFERENCES = (
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
_VALUE_LOSS_DIFFERENCES = (
    "Evolution budget: population 32 x 40 generations x 4 inner runs of 100,000 steps (4 envs x 64 steps) per ES "
    "seed, 5.1e8 env steps, 3 ES seeds; the walkthrough evolves population 128 x 512 generations x 2 runs of 5e5 "
    "steps (4 envs x 64 steps), 6.6e10 env steps, 128 times as many.",
    "Loss form: 0.5 (v - t)^2 exp(g(v, t)), L2 times a positive factor, so zero with zero slope at v = t; the "
    "walkthrough's loss is an unconstrained 64-64 tanh MLP of v - t, which can be negative and can have a slope at "
    "zero. `purerl evolve value-loss --loss-form mlp` evolves a loss that can have one; this document's evolutions "
    "use the scaled form.",
    "g sees the error v - t and the target t (each asinh-scaled); the walkthrough's net sees the error alone.",
    "The search starts exactly at L2 (a zero output layer on random tanh features); the walkthrough's OpenES starts "
    "at evosax's default mean, all-zero weights in the evosax 0.1 API it calls, a loss of 0 everywhere.",
)
_MFOS_AUTHORS = "luchris429/model-free-opponent-shaping at 3efb169"
_MFOS_PPO = (
    "PPO: GAE with lambda 1 bootstrapped at the 100-step limit, a running reward normalisation, per-batch advantage "
    "normalisation, a clipped value loss and gradients clipped at norm 1; theirs fits the critic by plain squared "
    "error to Monte-Carlo returns (gamma 0.99, nothing after the 100th step) standardised over the batch, without "
    "gradient clipping (src/ppo.py).")
_MFOS_FINAL = ("Final numbers average each seed's last 10% of training meta-episodes; their code logs every "
               "meta-episode's mean and fixes no window (src/main_mfos_ppo.py).")
_MFOS_DIFFERENCES = (
    "Budget: 32 games in parallel x 100 meta-episodes (meta self-play: 128 games x 400), 10 seeds; theirs 4096 games "
    "x 1024 meta-episodes, against learners and in self-play (src/main_mfos_ppo.py, src/main_mfos_self.py).",
    "M-FOS's actor and critic are 64-64 tanh MLPs with a state-independent log-std; theirs have one hidden layer of "
    "256 tanh units and a state-dependent variance, the softplus of a second actor head (src/ppo.py).",
    _MFOS_PPO,
    "Meta self-play: lr 2e-3 (theirs 2e-4; both 2e-3 against learners). Against naive learners theirs plays each "
    "agent in seat 2 in its own rollout; ours plays agent 0 in seat 1 and agent 1 in seat 2 in one rollout (this "
    "matters only in IMP, which is not symmetric). Their lambda falls by 0.0015 before the first meta-episode; ours "
    "starts at 1 and falls by 0.0015 x 1024 / meta-episodes, so it reaches 0 after the same 65% of training on any "
    "budget (src/main_mfos_self.py).",
    "Chicken: theirs gives each player one parameter; ours keeps the 5 logits of the memory-one games with gamma 0, "
    "which gives the same payoffs and learner steps (the 4 memory logits get zero gradient), but M-FOS still outputs "
    "5 numbers and observes 10 probabilities, 8 of them irrelevant (src/environments.py).",
    "MAMAML meta-learns its initial logits only, with 100 Adam steps (lr 0.1) against 64 naive learners, one "
    "initialisation per game and seat, and steps with lr 1 when played; theirs meta-learns the logits and its own "
    "step size with 1000 Adam steps (lr 0.01) and keeps 10 such initialisations (src/environments.py, data/).",
    "The plain-learner rows average 32 games per seed over 10 seeds; theirs average 8192 games once "
    "(src/main_non_mfos.py).",
    _MFOS_FINAL,
)
_MFOS_PAPER_DIFFERENCES = (
    "M-FOS's actor and critic have one hidden layer of 256 tanh units, as theirs, but a state-independent log-std; "
    "theirs has a state-dependent variance, the softplus of a second actor head (src/ppo.py).",
    _MFOS_PPO,
    _MFOS_FINAL,
)
_MFOS_COIN_DIFFERENCES = (
    "Budget: 32 boards x 1500 meta-episodes of 16 inner episodes x 16 steps, 10 seeds; theirs 512 boards x 1000 "
    "meta-episodes (src/coin_game/main_mfos_coin_game.py).",
    "Every one of an inner episode's 16 steps is a move; theirs makes 15 moves and spends the 16th step on the "
    "reset, where the opponent learns (src/coin_game/coin_game_envs.py, CoinGamePPO).",
    "A coin that is taken reappears on a cell no player stands on; theirs is redrawn uniformly over the 9 cells, so "
    "it can land on a player (CoinGameGPU._generate_coins).",
    "Seats: M-FOS plays red and each player sees the board from its own seat; theirs plays M-FOS as blue "
    "(CoinGamePPO's first=False) and shows it the red opponent's planes first. The game is symmetric, so this only "
    "relabels the seats and M-FOS's input planes.",
    "M-FOS's memory is one GRU per stream (actor, critic) carried through the whole meta-episode; theirs resets its "
    "GRUs every inner episode and gates them with a summary of the previous inner episode from a third conv-GRU, "
    "averaged over all boards (src/coin_game/coin_game_mfos_agent.py).",
    "PPO: both agents use GAE with lambda 1, per-batch advantage normalisation and a clipped value loss (M-FOS also "
    "a running reward normalisation); theirs fit the critic by plain squared error to Monte-Carlo returns "
    "standardised over the batch (src/coin_game/coin_game_ppo_agent.py, coin_game_mfos_agent.py).",
)
_ACT_DIFFERENCES = (
    "Pendulum-v1 is gymnax's: reward -(theta^2 + 0.1 theta_dot^2 + 0.001 u^2), torque clipped to [-2, 2], speed "
    "clipped to 8, semi-implicit Euler, every episode from step 0. The authors' act/pendulum.py pays "
    "(cos theta + 1) / 2, applies tanh(action) as the torque (so within [-1, 1]), has no speed limit, integrates "
    "with explicit Euler and starts each env's first episode at a random step in [0, 200).",
    "Test-time goals (target cart positions) are drawn from [-1.5, 1.5]; act/cartpole_goal.py draws them from "
    "[-2.4, 2.4], the whole track.",
    "Test-time messages are scaled by 2 pi, as at train time; act/main_test_time.py's default scale is pi "
    "(act/main_train_time.py's is 2 pi).",
    "The test-time exploiter is a 64-64 ReLU MLP of (state, goal) with a tanh output, like the adversary; theirs is "
    "the mean action of a 32-32 tanh actor-critic, squashed by tanh (act/main_test_time.py, act/cartpole_goal.py).",
    "The train-time adversary is a 64-64 ReLU MLP of the current state (their --static option); their README's "
    "train-time command leaves --static out, so it runs their default adversary, a 32-unit LSTM.",
    "An adversary's train-time fitness is the victim's mean episode return over its whole training; their README's "
    "command passes --end-only, which scores only the victim's last update (act/main_train_time.py).",
    "Victims see raw observations and messages; their README's commands pass --normalize-obs, a running mean and "
    "variance over both (act/evo_utils.py).",
    "Victim PPO: the lr is annealed linearly to 0, actor and critic are separate 32-32 tanh MLPs, and the 200-step "
    "time limit is a truncation, bootstrapped (a CartPole episode has at most 200 steps); theirs keeps the lr "
    "constant, shares one 32-32 torso and ends an episode at the limit as a termination (at most 201 CartPole "
    "steps; act/ppo.py, act/cartpole.py).",
    "ES budget: population 32 x 48 generations x 2 victims per candidate on CartPole-v1 (at test time with 8 goals "
    "per victim), 16 x 48 x 1 on Pendulum-v1; theirs 1024 x 2049 x 1 on CartPole, 768 x 2049 x 1 on Pendulum, and "
    "1024 x 2049 x 4 with 64 goal episodes per victim at test time (act/main_train_time.py, act/main_test_time.py).",
    "OpenES: lr 0.03 to 0.003 and std 0.1 to 0.03 over the 48 generations, from a random initialisation of the "
    "adversary; theirs (evosax 0.0.4's defaults) lr 0.01 and std 0.04, each multiplied by 0.999 a generation down "
    "to 0.001 and 0.01, from all-zero weights.",
    "Tasks: train time on CartPole-v1 and Pendulum-v1, test time on CartPole-v1 only; their Reacher and MinAtar "
    "Breakout victims, and their Pendulum, Reacher and Breakout test-time tasks, are not run.",
)
_OFFPOLICY_AUTHORS = "vwxyzjn/cleanrl at 004f8a0 (SAC) and luchris429/purejaxrl at 146b485 (PPO)"
_OFFPOLICY_DIFFERENCES = (
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
    "the paper's loss -log(alpha) (log pi + target entropy); CleanRL's uses the critics' lr 1e-3, a fresh sample "
    "from the updated actor, and alpha in place of log alpha (cleanrl/sac_continuous_action.py).",
    "SAC's networks use flax's default (LeCun-normal) initialisation; CleanRL's PyTorch's (Kaiming-uniform).",
    "PPO's brax preset keeps PureJaxRL's Brax settings (2048 envs x 10 steps, 4 epochs x 32 minibatches, lr 3e-4 "
    "constant, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, observation and reward normalisation, "
    "256-256 tanh, gradients clipped at norm 0.5) but bootstraps at the time limit "
    "(purejaxrl/ppo_continuous_action.py).",
    "A curve point is the mean return of the episodes that ended in one update (2048 x 10 env steps for PPO, 16 x "
    "64 for SAC); CleanRL logs every episode's return.",
)
STUDIES = {s.name: s for s in (
    Study("dpo", "dpo.md", TRAINING + EVOLUTION + ("envs/brax.py", "meta/compare.py", "meta/lpo_report.py", "studies/lpo.py"), DPO_ENVS, (
        f"purerl analyze drift {','.join(_LPO)} --out docs/results/dpo/lpo",
        f"{_COMPARE} --env CartPole-v1 --seeds 16 --total-timesteps 65536",
        f"{_COMPARE} --env Acrobot-v1 --seeds 16",
        f"{_COMPARE} --env Pendulum-v1 --seeds 16 --total-timesteps 262144",
        # DPO against PPO where budgets mean something, without the LPO transfer columns, at the MinAtar and Brax
        # budgets above. Long: `compare --resume` continues them.
        *(f"{_DPO_VS_PPO} --env {env} --seeds 10{_MINATAR_BUDGET.get(env, '')}" for env in _MINATAR),
        *(f"{_DPO_VS_PPO} --env {env} --seeds 10 --total-timesteps 4096000" for env in _BRAX),
    ), _DPO_DIFFERENCES, _DPO_AUTHORS),
    # Re-evaluated from the committed evolutions (docs/results/value_loss/es_seedS, each holding its own
    # `purerl evolve value-loss --preset cpu --seed S` record): they were evolved on a GPU, whose float
    # rounding a CPU re-evolution would not reproduce. Re-evolving is docs/results/README.md's recipe.
    Study("value_loss", "value_loss.md", TRAINING + EVOLUTION + ("studies/value_loss/*.py",), _VALUE_LOSS_STAGES, (
        "purerl analyze value-loss docs/results/value_loss/es_seed0,docs/results/value_loss/es_seed1,"
        "docs/results/value_loss/es_seed2 --seeds 256 --transfer-seeds 16 --report docs/results/value_loss.md",
    ), _VALUE_LOSS_DIFFERENCES, "luchris429/purejaxrl at 31756b1, examples/walkthrough.ipynb"),
    Study("mfos", "mfos.md", TRAINING + _MFOS_MATRIX, ("ipd", "imp", "chicken"), (
        "purerl mfos table --preset small --report docs/results/mfos.md",
    ), _MFOS_DIFFERENCES, _MFOS_AUTHORS),
    # The paper's budget on a 2-core CPU: about 3.2 h, so rerun it with --resume until it finishes. Four seeds,
    # not the preset's three: over 2 CPU devices three seeds are padded to four, so the fourth costs nothing.
    Study("mfos_paper", "mfos_paper.md", TRAINING + _MFOS_MATRIX, ("ipd-vs-nl",), (
        "purerl mfos --game ipd --opponent nl --preset paper --seeds 4 --out {runs}/mfos-paper-ipd-nl "
        "--report docs/results/mfos_paper.md",
    ), _MFOS_PAPER_DIFFERENCES, _MFOS_AUTHORS),
    Study("mfos_coin", "mfos_coin.md", TRAINING + _MFOS_COIN, ("coin",), (
        "purerl mfos --game coin --preset cpu --seeds 10 --meta-episodes 1500 --out {runs}/mfos-coin "
        "--report docs/results/mfos_coin.md",
    ), _MFOS_COIN_DIFFERENCES, _MFOS_AUTHORS),
    # Two ES seeds per train-time mode and env (CartPole-v1, and the authors' Pendulum-v1 victim); each report
    # command evaluates every run present under --runs-dir/ENV. Test-time is CartPole-v1's cart-position goal.
    Study("act", "act.md", TRAINING + EVOLUTION + ("studies/act/*.py",),
          ("train-time", "train-time Pendulum-v1", "test-time"), (
        *(command for env in _ACT_ENVS for command in (  # an env's report right after its runs: it lands sooner
            *(f"purerl act train-time --env {env} --mode {mode} --seed {seed} --runs-dir {{runs}}/act --no-progress"
              for mode in ("anti", "pro") for seed in (0, 1)),
            f"purerl act train-time --env {env} --from-params {{runs}}/act/{env} --runs-dir {{runs}}/act "
            f"--report docs/results/act.md --no-progress{_ACT_VICTIMS.get(env, '')}")),
        "purerl act test-time --runs-dir {runs}/act --report docs/results/act.md --no-progress",
    ), _ACT_DIFFERENCES, "luchris429/adversarial-cheap-talk at 1cbf68c"),
    # No authors' code: PBT is compared with Jaderberg et al.'s paper, and pbt.md states those differences itself.
    Study("pbt", "pbt.md", TRAINING + _PBT_SOURCES, ("Pendulum-v1", "Acrobot-v1"), (
        f"{_PBT} --env Pendulum-v1 --total-timesteps 491520",
        f"{_PBT} --env Acrobot-v1",
    )),
    Study("offpolicy", "offpolicy.md", TRAINING + ("envs/brax.py", "studies/versus/design.py"), _OFFPOLICY_ENVS,
          tuple(f"{_VERSUS} --env {env}" for env in _OFFPOLICY_ENVS), _OFFPOLICY_DIFFERENCES, _OFFPOLICY_AUTHORS),
)}


# How a registered command continues after a stop, by its first words. compare, act, pbt-study and versus, given
# --resume, continue every run they find under --runs-dir and start the missing ones. A command with its own --out
# continues only a run that folder already holds (--resume never starts a fresh run). The rest are minutes long and
# start over.
RESUME_RULES = {
    "always": ("compare", "act", "pbt-study", "versus"),
    "its --out": ("mfos --game", "evolve", "train"),
    "never": ("analyze", "mfos table"),
}


def resume_rule(command: str) -> str | None:
    """The `RESUME_RULES` entry a command follows, None for a kind no rule names."""
    return next((rule for rule, kinds in RESUME_RULES.items()
                 if command.startswith(tuple(f"purerl {kind} " for kind in kinds))), None)


def continuing(command: str) -> str:
    """`command` with --resume where that continues what an earlier, stopped run of it left."""
    rule = resume_rule(command)
    if rule == "its --out":
        words = shlex.split(command)
        resumes = rundir.holds_run(Path(words[words.index("--out") + 1]))
    else:
        resumes = rule == "always"
    return f"{command} --resume" if resumes else command


def commands(names: list[str], runs: str, resume: bool = False) -> list[str]:
    """The commands that regenerate the named studies (all when none is named) into scratch folder `runs`;
    with `resume`, each continues what an earlier run of the same commands into `runs` left."""
    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        raise ConfigError(f"unknown study '{unknown[0]}'; choose from {', '.join(STUDIES)}")
    listed = [c.format(runs=runs) for n in (names or list(STUDIES)) for c in STUDIES[n].commands]
    return [continuing(c) for c in listed] if resume else listed
