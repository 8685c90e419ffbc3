"""Model-Free Opponent Shaping (Lu, Willi, Schroeder de Witt, Foerster; ICML 2022, arXiv 2205.01447).

M-FOS treats a whole inner game as one step of a meta-game. At meta-step t the
M-FOS agent picks the 5 logits of its memory-one policy, both players play the
infinitely repeated game exactly (`envs.games`), M-FOS is paid its per-step
reward and the opponent, a learner, takes one learning step against the policy
it just met. A meta-episode is 100 such steps against one opponent, so M-FOS can
learn to *shape* its learning opponent, paying early to be paid later.

The meta-game is an ordinary purerl `Env` and the M-FOS agent is the library's
PPO, unchanged. The package, each module importing only those above it:

- `settings`: games, opponents, budget presets, the authors' PPO hyperparameters;
- `meta_game`: the meta-game against one learner, and its one-update-per-meta-episode loop;
- `self_play`: two M-FOS agents trained together (meta self-play, the lambda schedule);
- `analysis`: Press & Dyson's zero-determinant extortion tests on a trained M-FOS;
- `runs`: experiments on many seeds, checkpointed in chunks, and their summaries;
- `baselines`: the table's plain-learner rows (NL, LOLA, MAMAML);
- `report`: plots, run directories and the markdown report;
- `table`: every pairing in every game;
- `coin`, `coin_report`: M-FOS in the coin game against a PPO learner;
- `cli`: `purerl mfos`.

Seats: as in the authors' code, the learning opponent is player 1 (seat 0) and
M-FOS player 2 (seat 1). Every policy is written from its owner's perspective
(logits for start, CC, CD, DC, DD with its own action first).
"""
