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
- `report`: plots, a run directory's files and table cells;
- `markdown`: the table's report (docs/results/mfos.md);
- `run_report`: the report of one run (docs/results/mfos_paper.md, the IPD against NL at the paper's scale);
- `table`: every pairing in every game;
- `coin`, `coin_report`: M-FOS in the coin game against a PPO learner;
- `cli`: `purerl mfos`.

Seats: as in the authors' code, the learning opponent is player 1 (seat 0) and
M-FOS player 2 (seat 1). Every policy is written from its owner's perspective
(logits for start, CC, CD, DC, DD with its own action first).

Checked line by line against the authors' code (luchris429/model-free-opponent-shaping, src/):
- Games: IPD and IMP are memory-one, gamma 0.96, per-step reward (1 - gamma) V, learners step with
  lr 1 on V; chicken is one-shot (`envs.games`). Same here.
- Seats and state ordering: the opponent is player 1, M-FOS player 2; player 2's memory logits are
  reordered (CC, DC, CD, DD) into player 1's view. Same here (`games._PLAYER2_MEMORY`).
- What the meta-policy observes: sigmoid of (M-FOS's logits just played, the opponent's logits before
  its step), 10 numbers. Same here (`meta_game.observe`).
- Inner actions: M-FOS's logits are *sampled* from its Gaussian in training. Same here; the analysis
  looks at both the sampled actions and the Gaussian's mean (`analysis.play_meta_episode`).
- Meta-episode: `reset` takes one unscored opponent step against a random N(0, 1) M-FOS policy, then
  100 scored meta-steps. Same here with `scoring="authors"` (the default; "count-first" scores the
  first step instead, the earlier purerl rule).
- The authors' code has no ZD analysis; the paper reports extortion against NL in the IPD.

Deliberate differences: the `mfos`, `mfos_paper` and `mfos_coin` studies' `differences` in
`publish/catalog.py`, which every M-FOS document shows at its top.
"""

from purerl.run import rundir  # noqa: E402

# What M-FOS commands write into their run directories (`rundir` keeps them when a run is overwritten or resumed).
rundir.register_files("metrics.csv", "summary.json", "rewards.png", "policies.png", "learning.png", "mfos.md",
                      "table.json")
