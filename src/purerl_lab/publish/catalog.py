"""The registry of published studies: each document under docs/results/, the source files its numbers depend
on (narrow, so that unrelated edits do not stale it, but complete; globs relative to src/), the parts
it must have, and the commands that regenerate it end to end. `provenance` checks documents against it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from purerl_lab.publish import authors
from purerl.run import rundir
from purerl.config import ConfigError

# What every PPO-based number depends on: the algorithm, the env stack, configs, nets, the run
# loop and the statistics. cli/, checkpointing, progress bars and benchmarks are left out.
TRAINING = ("purerl/algos/*.py", "purerl/envs/__init__.py", "purerl/envs/core.py", "purerl/envs/wrappers.py", "purerl/config.py", "purerl/nets/*.py",
            "purerl/run/population.py", "purerl/run/experiment.py", "purerl/run/results.py", "purerl/stats.py", "purerl/runtime/host_devices.py")
EVOLUTION = ("purerl/meta/evolve.py",)


@dataclass(frozen=True)
class Study:
    """One published document and how it is made."""

    name: str
    document: str  # relative to docs/results/; its manifest.json is the one beside it
    depends: tuple[str, ...]  # globs relative to src/
    parts: tuple[str, ...]  # every part the document must have
    commands: tuple[str, ...]  # regenerate it end to end; {runs} is a scratch folder for run directories
    # Where the study departs from its authors' code on purpose, one plain sentence each with its numbers, read
    # against `authors` (repository at commit); every document shows them (`publish.differences`).
    differences: tuple[str, ...] = ()
    authors: str = ""  # "" for a study with no authors' code to compare with
    # "module:function" that writes the document again from its committed records, with no training: run by
    # `purerl results --render` after a change to how a report words its numbers ("" where it cannot).
    render: str = ""
    # (part, the first cell of its table rows) where the document titles a part's rows otherwise than by its name:
    # `results --check --mark` marks a stale part there and beside its `- **part**:` bullet.
    row_titles: tuple[tuple[str, str], ...] = ()


_MINATAR = ("Breakout-MinAtar", "SpaceInvaders-MinAtar", "Asterix-MinAtar", "Freeway-MinAtar")
# MinAtar budgets: the minatar preset's 1e7 (PureJaxRL's) where PPO's curve had flattened there (its return at
# 80% of the budget within the CI of its final one), 2e7 where it was still rising.
_MINATAR_BUDGET = {env: " --total-timesteps 20000000" for env in ("SpaceInvaders-MinAtar", "Freeway-MinAtar")}
# Brax: two of the paper's tasks at the brax preset (2048 envs x 10 steps), 10 seeds (the fewest with a CI),
# 4,096,000 steps per run (200 updates), sized to finish on 2 CPU cores (benchmarks/README.md, "What the
# published studies' budgets cost"): 14% of the authors' ant budget (3e7) and 4% of their halfcheetah one (1e8).
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
_VALUE_LOSS_TITLES = (("training_budget", "CartPole-v1, training budget"), ("acrobot", "Acrobot-v1, training budget"),
                      ("2x_budget", "CartPole-v1, 2x budget"), ("5x_budget", "CartPole-v1, 5x budget"))
# The M-FOS modules that make numbers. The CLI, plots and markdown only print them, so editing their words
# does not stale a document (a document's words are re-rendered with its numbers when it is regenerated).
_MFOS_MATRIX = ("purerl_lab/studies/mfos/games.py", *(f"purerl_lab/studies/mfos/{name}.py" for name in (
    "analysis", "baselines", "meta_game", "runs", "self_play", "settings", "table")))
_MFOS_COIN = ("purerl_lab/studies/mfos/games.py", "purerl_lab/studies/mfos/coin_game.py", *(f"purerl_lab/studies/mfos/{name}.py" for name in (
    "analysis", "coin", "coin_nets", "coin_report", "meta_game", "runs", "self_play", "settings")))
_ACT_ENVS = ("CartPole-v1", "Pendulum-v1")
# Pendulum-v1's evaluation trains 64 fresh victims per condition, the fewest its verdicts rest on (act.VICTIMS).
_ACT_VICTIMS = {"Pendulum-v1": " --victims 64"}
# PBT, random search and the preset defaults, 10 repetitions x 8 members each (the PBT study): Pendulum-v1 at half
# its preset's budget (240 updates, 491,520 steps per member), Acrobot-v1 at its preset's own 500,000, sized to
# finish on 2 CPU cores (benchmarks/README.md, "What the published studies' budgets cost").
_PBT = "purerl pbt-study --seeds 8 --repetitions 10 --runs-dir {runs}/pbt --report docs/results/pbt.md --no-progress"
_PBT_SOURCES = ("purerl/run/pbt.py", "purerl/run/pbt_config.py", "purerl/run/pbt_files.py", "purerl/run/policy.py", "purerl_lab/studies/pbt/design.py")
# SAC beside PPO on Brax at the same env steps, each at its own brax preset. Hopper, not halfcheetah:
# halfcheetah's episodes never end early, so PPO's 2048 envs end their first at 2,048,000 env steps (no curve
# before); hopper's end early from the start. 819,200 env steps per run (PPO 40 updates, SAC 800), so the four
# marks' windows (10 PPO updates, 204,800 env steps) tile the run; 10 seeds, the fewest with a CI. SAC's gradient
# steps dominate its cost (benchmarks/README.md, "What the published studies' budgets cost").
_OFFPOLICY_ENVS = ("brax:hopper",)
_VERSUS = ("purerl versus --algos ppo,sac --seeds 10 --total-timesteps 819200 --runs-dir {runs}/versus "
           "--report docs/results/offpolicy.md --no-progress")


def _by_authors(study: str) -> tuple[tuple[str, ...], str]:
    return authors.DIFFERENCES[study], authors.CODE[study]


STUDIES = {s.name: s for s in (
    Study("dpo", "dpo.md", TRAINING + EVOLUTION + ("purerl/envs/brax.py", "purerl_lab/studies/compare.py", "purerl_lab/studies/lpo_report.py", "purerl_lab/studies/lpo.py"), DPO_ENVS, (
        f"purerl analyze drift {','.join(_LPO)} --out docs/results/dpo/lpo",
        f"{_COMPARE} --env CartPole-v1 --seeds 16 --total-timesteps 65536",
        f"{_COMPARE} --env Acrobot-v1 --seeds 16",
        f"{_COMPARE} --env Pendulum-v1 --seeds 16 --total-timesteps 262144",
        # DPO against PPO where budgets mean something, without the LPO transfer columns, at the MinAtar and Brax
        # budgets above. Long: `compare --resume` continues them.
        *(f"{_DPO_VS_PPO} --env {env} --seeds 10{_MINATAR_BUDGET.get(env, '')}" for env in _MINATAR),
        *(f"{_DPO_VS_PPO} --env {env} --seeds 10 --total-timesteps 4096000" for env in _BRAX),
    ), *_by_authors("dpo"), render="purerl_lab.studies.compare:render"),
    # Re-evaluated from the committed evolutions, three ES seeds of each loss form (docs/results/value_loss/es_seedS,
    # the scaled form, and mlp_es_seedS; each folder holds its run's config.json and the provenance.json of the
    # sessions that made it on this 2-core CPU): L2 tuned on their training runs first, then 256 held-out seeds at the
    # training budget and 64 per transfer.
    Study("value_loss", "value_loss.md", TRAINING + EVOLUTION + ("purerl_lab/studies/value_loss/*.py",), _VALUE_LOSS_STAGES, (
        "purerl analyze value-loss " + ",".join(f"docs/results/value_loss/{form}es_seed{seed}" for form in ("", "mlp_")
                                                 for seed in range(3))
        + " --seeds 256 --transfer-seeds 64 --tuned-l2 --report docs/results/value_loss.md",
    ), *_by_authors("value_loss"), render="purerl_lab.studies.value_loss.markdown:rerender", row_titles=_VALUE_LOSS_TITLES),
    Study("mfos", "mfos.md", TRAINING + _MFOS_MATRIX, ("ipd", "imp", "chicken"), (
        "purerl mfos table --preset small --report docs/results/mfos.md",
    ), *_by_authors("mfos"), render="purerl_lab.studies.mfos.cli:render"),
    # The paper's budget on a 2-core CPU: about 3.2 h, so rerun it with --resume until it finishes. Four seeds,
    # not the preset's three: over 2 CPU devices three seeds are padded to four, so the fourth costs nothing.
    Study("mfos_paper", "mfos_paper.md", TRAINING + _MFOS_MATRIX, ("ipd-vs-nl",), (
        "purerl mfos --game ipd --opponent nl --preset paper --seeds 4 --out {runs}/mfos-paper-ipd-nl "
        "--report docs/results/mfos_paper.md",
    ), *_by_authors("mfos_paper")),
    Study("mfos_coin", "mfos_coin.md", TRAINING + _MFOS_COIN, ("coin",), (
        "purerl mfos --game coin --preset cpu --seeds 10 --meta-episodes 1500 --out {runs}/mfos-coin "
        "--report docs/results/mfos_coin.md",
    ), *_by_authors("mfos_coin")),
    # Two ES seeds per train-time mode and env (CartPole-v1, and the authors' Pendulum-v1 victim); each report
    # command evaluates every run present under --runs-dir/ENV. Test-time is CartPole-v1's cart-position goal.
    Study("act", "act.md", TRAINING + EVOLUTION + ("purerl_lab/studies/act/*.py",),
          ("train-time", "train-time Pendulum-v1", "test-time"), (
        *(command for env in _ACT_ENVS for command in (  # an env's report right after its runs: it lands sooner
            *(f"purerl act train-time --env {env} --mode {mode} --seed {seed} --runs-dir {{runs}}/act --no-progress"
              for mode in ("anti", "pro") for seed in (0, 1)),
            f"purerl act train-time --env {env} --from-params {{runs}}/act/{env} --runs-dir {{runs}}/act "
            f"--report docs/results/act.md --no-progress{_ACT_VICTIMS.get(env, '')}")),
        "purerl act test-time --runs-dir {runs}/act --report docs/results/act.md --no-progress",
    ), *_by_authors("act"), render="purerl_lab.studies.act.cli:render"),
    # No authors' code: PBT is compared with Jaderberg et al.'s paper, and pbt.md states those differences itself.
    Study("pbt", "pbt.md", TRAINING + _PBT_SOURCES, ("Pendulum-v1", "Acrobot-v1"), (
        f"{_PBT} --env Pendulum-v1 --total-timesteps 491520",
        f"{_PBT} --env Acrobot-v1",
    ), render="purerl_lab.studies.pbt.report:write_report"),
    Study("offpolicy", "offpolicy.md", TRAINING + ("purerl/envs/brax.py", "purerl/run/policy.py", "purerl_lab/studies/versus/*.py"),
          _OFFPOLICY_ENVS,
          tuple(f"{_VERSUS} --env {env}" for env in _OFFPOLICY_ENVS), *_by_authors("offpolicy"),
          render="purerl_lab.studies.versus.report:write_report"),
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
