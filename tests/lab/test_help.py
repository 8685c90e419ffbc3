"""`--help` says every default (as tyro and SB3 users expect), `compare --help` lists only what compare takes, and
help that needs the study modules does not slow down parsing."""

import argparse
import re
import subprocess
import sys

import pytest

from purerl.algos import registry
from purerl.cli import build_parser, main

SETTINGS = {a.name: {f"--{n.replace('_', '-')}" for n in [*registry.config_fields([a]), *a.hyperparams._fields,
                                                         "hidden_sizes", "activation"]}
            for a in registry.ALGORITHMS.values()}
EVERY_SETTING = set().union(*SETTINGS.values())
# Options whose default comes from a preset (so argparse's is None), which must still say it.
PRESET_DRIVEN = {
    "train": EVERY_SETTING | {"--preset"},
    "compare": SETTINGS["ppo"] | {"--preset"},
    "evolve": {"--env", "--strategy", "--population-size", "--generations", "--rollouts", "--fitness-shaping",
               "--optimizer", "--es-lr", "--es-lr-final", "--std", "--std-final", "--seed", "--max-parallel",
               "--fitness", "--total-timesteps"},
    "act": {"--population-size", "--generations", "--seed", "--max-parallel"},
    "mfos": {"--num-games", "--meta-episodes"},
}


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def option_help(text: str) -> dict[str, str]:
    """Each option's help block in a rendered --help, by each of its option strings."""
    blocks, current = {}, None
    for line in text.splitlines():
        if re.match(r"^  -", line):
            current = []
            for option in re.findall(r"(--?[\w-]+)", line.split("  ")[1] if "  " in line.strip() else line):
                blocks[option] = current
            current.append(line)
        elif current is not None and line.startswith("    "):
            current.append(line)
        else:
            current = None
    return {option: " ".join(" ".join(lines).split()) for option, lines in blocks.items()}


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_with_a_default_shows_it(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    parser = commands()[name]
    shown = option_help(parser.format_help())
    must = set(PRESET_DRIVEN.get(name, ()))
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        if action.default not in (None, False, [], argparse.SUPPRESS):
            must.add(action.option_strings[0])
    missing = sorted(option for option in must if "default" not in shown.get(option, ""))
    assert not missing, (name, missing)


def test_help_that_needs_the_studies_is_worked_out_when_shown_and_parsing_imports_none():
    """The ES defaults of every meta-task, and ACT's victims, come from the study modules, which import evosax,
    orbax and scipy: about 2 s that every command's start would pay if the parser built them."""
    shown = option_help(commands()["evolve"].format_help())
    assert "value-loss cpu 40" in shown["--generations"] and "default: open_es" in shown["--strategy"]
    assert "Pendulum-v1 64" in option_help(commands()["act"].format_help())["--victims"]
    heavy = ("evosax", "orbax.checkpoint", "scipy.stats", "purerl_lab.studies.dpo.lpo", "purerl_lab.studies.act")
    probe = ("import sys; from purerl.cli import build_parser; build_parser().parse_args(['evolve', 'lpo']); "
             f"print(sorted(m for m in {heavy} if m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_settings_show_each_algorithms_default():
    shown = option_help(commands()["train"].format_help())
    assert "default: ppo 4, dqn 10, pqn 32, sac/td3 1" in shown["--num-envs"]
    assert "default: 0.99" in shown["--gamma"] and "default: ppo/pqn on, dqn off" in shown["--anneal-lr"]
    assert "default: 60.0" in shown["--checkpoint-every"] and "default: ppo" in shown["--algo"]
    assert "(default: ppo/pqn 0, dqn/sac/td3 10)" in shown["--final-eval-episodes"]


def test_compare_lists_and_accepts_only_ppos_settings(capsys):
    compare = commands()["compare"]
    options = {option for action in compare._actions for option in action.option_strings}
    assert SETTINGS["ppo"] <= options
    assert not (EVERY_SETTING - SETTINGS["ppo"]) & options  # --buffer-size, --tau, --q-lr, ...: not PPO's
    text = compare.format_help()
    assert "--buffer-size" not in text and "default: 4)" in option_help(text)["--num-envs"]
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "--buffer-size", "5000"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "unrecognized arguments: --buffer-size" in err


def test_a_field_without_a_description_still_gets_its_flag(monkeypatch, capsys):
    """An algorithm registered with a config field DESCRIPTIONS does not know: every parser still builds."""
    monkeypatch.delitem(registry.DESCRIPTIONS, "rollout_unroll")
    with pytest.raises(SystemExit) as stop:
        main(["train", "--help"])
    assert stop.value.code == 0
    assert "rollout unroll" in " ".join(capsys.readouterr().out.split())
