"""The M-FOS study's three published documents: the matrix-game table at the small preset (docs/results/mfos.md, a part
per game), one run at the paper's budget (mfos_paper.md) and the coin game (mfos_coin.md)."""

from __future__ import annotations

from purerl_lab.publish.catalog import FRESH, TRAINING, Study, by_fresh
from purerl_lab.publish.replication import fresh_part
from purerl_lab.studies.mfos.fingerprint import mfos_part


# The M-FOS modules that make numbers. The CLI, plots and markdown only print them, so editing their words
# does not stale a document (a document's words are re-rendered with its numbers when it is regenerated).
_MATRIX = ("purerl_lab/studies/mfos/games.py", *(f"purerl_lab/studies/mfos/{name}.py" for name in (
    "analysis", "baselines", "meta_game", "runs", "self_play", "settings", "table")))
_COIN = ("purerl_lab/studies/mfos/games.py", "purerl_lab/studies/mfos/coin_game.py", *(f"purerl_lab/studies/mfos/{name}.py" for name in (
    "analysis", "coin", "coin_nets", "meta_game", "runs", "self_play", "settings")))

AUTHORS = "luchris429/model-free-opponent-shaping at 3efb169"
_MFOS_PPO = (
    "PPO: GAE with lambda 1 bootstrapped at the 100-step limit, a running reward normalisation, per-batch advantage "
    "normalisation, a clipped value loss and gradients clipped at norm 1; theirs fits the critic by plain squared "
    "error to Monte-Carlo returns (gamma 0.99, nothing after the 100th step) standardised over the batch, without "
    "gradient clipping (src/ppo.py).")
_MFOS_FINAL = ("Final numbers average each seed's last 10% of training meta-episodes; their code logs every "
               "meta-episode's mean and fixes no window (src/main_mfos_ppo.py).")
DIFFERENCES = (
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

PAPER_DIFFERENCES = (
    "M-FOS's actor and critic have one hidden layer of 256 tanh units, as theirs, but a state-independent log-std; "
    "theirs has a state-dependent variance, the softplus of a second actor head (src/ppo.py).",
    _MFOS_PPO,
    _MFOS_FINAL,
)

COIN_DIFFERENCES = (
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


_TABLE = "purerl mfos table --preset small --report docs/results/mfos.md"
_GAMES = ("ipd", "imp", "chicken")
# The table's replication (a part fresh_GAME per game): the same command with --fresh-seeds
TABLE = Study(
    "mfos", "mfos.md", TRAINING + _MATRIX, (*_GAMES, *map(fresh_part, _GAMES)), (_TABLE, f"{_TABLE} {FRESH}"),
    differences=DIFFERENCES, authors=AUTHORS, render="purerl_lab.studies.mfos.cli:render",
    fingerprint=mfos_part, part_commands=by_fresh, by_part=True, cost=25.0, resumes=(("purerl mfos table", "never"),),
)
# The paper's budget on a 2-core CPU: about 3.2 h, so rerun it with --resume until it finishes. Four seeds,
# not the preset's three: over 2 CPU devices three seeds are padded to four, so the fourth costs nothing.
PAPER = Study(
    "mfos_paper", "mfos_paper.md", TRAINING + _MATRIX, ("ipd-vs-nl",), (
        "purerl mfos --game ipd --opponent nl --preset paper --seeds 4 --out {runs}/mfos-paper-ipd-nl "
        "--report docs/results/mfos_paper.md",
    ), differences=PAPER_DIFFERENCES, authors=AUTHORS, render="purerl_lab.studies.mfos.run_report:render",
    fingerprint=mfos_part, cost=4.0,
    resumes=(("purerl mfos --game", "its --out"),),
)
_COIN_RUN = "purerl mfos --game coin --preset cpu --seeds 10 --meta-episodes 1500"
# About 3.5 h each on a 2-core CPU: rerun with --resume until they finish. The replication (part fresh_coin) runs the
# same command on fresh seeds into a run folder of its own.
COIN = Study(
    "mfos_coin", "mfos_coin.md", TRAINING + _COIN, ("coin", fresh_part("coin")), (
        f"{_COIN_RUN} --out {{runs}}/mfos-coin --report docs/results/mfos_coin.md",
        f"{_COIN_RUN} --out {{runs}}/fresh-mfos-coin --report docs/results/mfos_coin.md {FRESH}",
    ), differences=COIN_DIFFERENCES, authors=AUTHORS, render="purerl_lab.studies.mfos.coin_report:render",
    fingerprint=mfos_part, part_commands=by_fresh, cost=4.0, resumes=(("purerl mfos --game", "its --out"),),
)
