"""The ACT study's published document, docs/results/act.md: adversaries evolved at train time (CartPole-v1, and the
authors' Pendulum-v1 victim), each evaluated on fresh victims, and CartPole-v1's test-time goal."""

from __future__ import annotations

from purerl_lab.publish.catalog import EVOLUTION, TRAINING, Study
from purerl_lab.publish.replication import FLAG, PREFIX, fresh_part, is_fresh
from purerl_lab.studies.act import env_suffix as act_suffix
from purerl_lab.studies.act.fingerprint import act_part


_ENVS = ("CartPole-v1", "Pendulum-v1")
# Pendulum-v1's evaluation trains 64 fresh victims per condition, the fewest its verdicts rest on (act.VICTIMS).
_VICTIMS = {"Pendulum-v1": " --victims 64"}

DIFFERENCES = (
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


def _part_commands(study: Study, part: str) -> list[str]:
    """A train-time part is that env's ES runs and the report that evaluates them; test-time its own command; a
    replication (fresh_PART) its evaluation's command with --fresh-seeds."""
    fresh = is_fresh(part)
    part = part.removeprefix(PREFIX)
    mine = [c for c in study.commands if c.endswith(FLAG) == fresh]
    if part == "test-time":
        return [c for c in mine if c.startswith("purerl act test-time")]
    env = part.partition(" ")[2] or "CartPole-v1"
    return [c for c in mine if c.startswith("purerl act train-time") and f" --env {env} " in c]


_PARTS = ("train-time", "train-time Pendulum-v1", "test-time")
# Each evaluation's replication: the committed adversaries (the report's params folders, so that it reruns from a
# clone as written) on victims from PRNGKey(70000) on.
_FRESH = (*(f"purerl act train-time --env {env} --from-params docs/results/act/params{act_suffix(env)} --runs-dir "
            f"{{runs}}/act --report docs/results/act.md --no-progress{_VICTIMS.get(env, '')} {FLAG}" for env in _ENVS),
          f"purerl act test-time --from-params docs/results/act/params --runs-dir {{runs}}/act --report "
          f"docs/results/act.md --no-progress {FLAG}")


# Two ES seeds per train-time mode and env; each report command evaluates every run present under --runs-dir/ENV.
# Test-time is CartPole-v1's cart-position goal.
STUDY = Study(
    "act", "act.md", TRAINING + EVOLUTION + ("purerl_lab/studies/act/*.py",),
    (*_PARTS, *map(fresh_part, _PARTS)), (
        *(command for env in _ENVS for command in (  # an env's report right after its runs: it lands sooner
            *(f"purerl act train-time --env {env} --mode {mode} --seed {seed} --runs-dir {{runs}}/act --no-progress"
              for mode in ("anti", "pro") for seed in (0, 1)),
            f"purerl act train-time --env {env} --from-params {{runs}}/act/{env} --runs-dir {{runs}}/act "
            f"--report docs/results/act.md --no-progress{_VICTIMS.get(env, '')}")),
        "purerl act test-time --runs-dir {runs}/act --report docs/results/act.md --no-progress",
        *_FRESH,
    ),
    differences=DIFFERENCES, authors="luchris429/adversarial-cheap-talk at 1cbf68c",
    render="purerl_lab.studies.act.cli:render",
    fingerprint=act_part, part_commands=_part_commands, versions=("evosax",), cost=12.0,
    resumes=(("purerl act", "always"),),
)
