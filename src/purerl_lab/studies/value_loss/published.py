"""The value-loss study's published document, docs/results/value_loss.md: the committed evolutions re-evaluated on
held-out seeds (`purerl analyze value-loss`), a part per held-out stage."""

from __future__ import annotations

from purerl_lab.publish.catalog import EVOLUTION, TRAINING, Study
from purerl_lab.studies.value_loss.fingerprint import value_loss_part


SETTINGS = ("training_budget", "acrobot", "2x_budget", "5x_budget")
# Each held-out setting again on disjoint seeds (`value_loss.REPLICATION_SEED_START`): its replication
REPLICATIONS = {f"fresh_{setting}": setting for setting in SETTINGS}
STAGES = (*SETTINGS, "critic", *REPLICATIONS)
_TITLES = (("training_budget", "CartPole-v1, training budget"), ("acrobot", "Acrobot-v1, training budget"),
           ("2x_budget", "CartPole-v1, 2x budget"), ("5x_budget", "CartPole-v1, 5x budget"))
TITLES = (*_TITLES, *((f"fresh_{setting}", f"{title}, fresh seeds") for setting, title in _TITLES))

DIFFERENCES = (
    "Evolution budget: far below the walkthrough's, population 128 x 512 generations x 2 runs of 5e5 steps (4 envs "
    "x 64 steps), 6.6e10 env steps; each Evolution line under Method states its own budget, from the runs it read, and what "
    "fraction of the walkthrough's that is.",
    "Loss forms: the walkthrough's loss is an unconstrained 64-64 tanh MLP of v - t, which can be negative and can "
    "have a slope at zero. Ours are two: `scaled`, 0.5 (v - t)^2 exp(g(v, t)), L2 times a positive factor, so zero "
    "with zero slope at v = t; and `mlp`, exp(s) (0.5 e^2 + e h(e)) with e = v - t and h a 16-16 tanh MLP, which is "
    "zero at e = 0 (a constant offset changes no gradient) but free to have a slope there and to go negative.",
    "The scaled form's g sees the error v - t and the target t, the mlp form's h the error alone, as the "
    "walkthrough's net does (each asinh-scaled).",
    "The search starts exactly at L2 (a zero output layer on random tanh features, and s = 0); the walkthrough's "
    "OpenES starts at evosax's default mean, all-zero weights in the evosax 0.1 API it calls, a loss of 0 everywhere.",
)


# Re-evaluated from the committed evolutions, three ES seeds of each loss form (docs/results/value_loss/es_seedS,
# the scaled form, and mlp_es_seedS; each folder holds its run's config.json and the provenance.json of the
# sessions that made it on this 2-core CPU): L2 tuned on their training runs first, then 256 held-out seeds at the
# training budget and 64 per transfer.
STUDY = Study(
    "value_loss", "value_loss.md", TRAINING + EVOLUTION + ("purerl_lab/studies/value_loss/*.py",), STAGES, (
        "purerl analyze value-loss " + ",".join(f"docs/results/value_loss/{form}es_seed{seed}" for form in ("", "mlp_")
                                                 for seed in range(3))
        + " --seeds 256 --transfer-seeds 64 --tuned-l2 --report docs/results/value_loss.md",
    ),
    differences=DIFFERENCES, authors="luchris429/purejaxrl at 31756b1, examples/walkthrough.ipynb",
    render="purerl_lab.studies.value_loss.markdown:rerender", row_titles=TITLES,
    fingerprint=value_loss_part, by_part=True, cost=30.0, resumes=(("purerl analyze value-loss", "never"),),
)
