"""Each published study's authors' code (repository at commit, the version its differences were read against)
and where purerl departs from it on purpose: one plain sentence per difference, with its numbers and the file
it was checked in. `publish.differences` shows them in every document; they are words, so editing them stales
no document.
"""

_DPO_CODE = "luchris429/discovered-policy-optimisation at c412884"
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
    "seed, 5.1e8 env steps, 3 ES seeds per loss form; the walkthrough evolves population 128 x 512 generations x 2 "
    "runs of 5e5 steps (4 envs x 64 steps), 6.6e10 env steps, 128 times as many.",
    "Loss forms: the walkthrough's loss is an unconstrained 64-64 tanh MLP of v - t, which can be negative and can "
    "have a slope at zero. Ours are two: `scaled`, 0.5 (v - t)^2 exp(g(v, t)), L2 times a positive factor, so zero "
    "with zero slope at v = t; and `mlp`, exp(s) (0.5 e^2 + e h(e)) with e = v - t and h a 16-16 tanh MLP, which is "
    "zero at e = 0 (a constant offset changes no gradient) but free to have a slope there and to go negative.",
    "The scaled form's g sees the error v - t and the target t, the mlp form's h the error alone, as the "
    "walkthrough's net does (each asinh-scaled).",
    "The search starts exactly at L2 (a zero output layer on random tanh features, and s = 0); the walkthrough's "
    "OpenES starts at evosax's default mean, all-zero weights in the evosax 0.1 API it calls, a loss of 0 everywhere.",
)
_MFOS_CODE = "luchris429/model-free-opponent-shaping at 3efb169"
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
_OFFPOLICY_CODE = "vwxyzjn/cleanrl at 004f8a0 (SAC) and luchris429/purejaxrl at 146b485 (PPO)"
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

CODE = {
    "dpo": _DPO_CODE,
    "value_loss": "luchris429/purejaxrl at 31756b1, examples/walkthrough.ipynb",
    "mfos": _MFOS_CODE, "mfos_paper": _MFOS_CODE, "mfos_coin": _MFOS_CODE,
    "act": "luchris429/adversarial-cheap-talk at 1cbf68c",
    "offpolicy": _OFFPOLICY_CODE,
}
DIFFERENCES = {
    "dpo": _DPO_DIFFERENCES,
    "value_loss": _VALUE_LOSS_DIFFERENCES,
    "mfos": _MFOS_DIFFERENCES,
    "mfos_paper": _MFOS_PAPER_DIFFERENCES,
    "mfos_coin": _MFOS_COIN_DIFFERENCES,
    "act": _ACT_DIFFERENCES,
    "offpolicy": _OFFPOLICY_DIFFERENCES,
}
