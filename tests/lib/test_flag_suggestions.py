"""A mistyped flag is one line, exit 2, with the command's closest flag suggested (issue 86), as the Python API
suggests a setting's name."""

import pytest

from purerl.cli import main


@pytest.mark.parametrize("argv, suggestion", [
    (["train", "--lrr", "0.1"], "(did you mean --lr?)"),
    (["train", "--num-env=8"], "(did you mean --num-envs?)"),
    (["evolve", "value-loss", "--generation", "3"], "(did you mean --generations?)"),
    (["eval", "RUN", "--episode", "3"], "(did you mean --episodes?)"),
])
def test_a_mistyped_flag_names_the_closest_one(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and err.rstrip().endswith(suggestion), err


def test_a_flag_like_no_other_gets_no_guess(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--foo", "1"])
    assert capsys.readouterr().err == "purerl: error: unrecognized arguments: --foo 1\n"


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_train_help_by_algorithm_lists_that_algorithms_flags_and_each_flag_says_whose_it_is(capsys):
    """Issue 86: `purerl train --algo sac --help` is SAC's flags alone; in the full list, a flag only some
    algorithms take names them; a flag the chosen algorithm ignores is one line, exit 2."""
    sac = _help(capsys, "train", "--algo", "sac", "--help")
    assert "--q-lr" in sac and "--alpha" in sac and "--clip-eps" not in sac and "--epsilon-decay" not in sac
    assert sac.count("\n") < _help(capsys, "train", "--help").count("\n") * 0.7
    assert _help(capsys, "train", "--algo=pqn", "-h").count("--reward-scale") >= 1
    every = " ".join(_help(capsys, "train", "--help").split())
    assert "[pqn] reward multiplier" in every and "[dqn] env steps, over all envs, between gradient steps" in every
    assert "[sac, td3] the critics' learning rate" in every
    assert "--algo NAME --help" in every
    assert main(["train", "--algo", "sac", "--env", "Pendulum-v1", "--clip-eps", "0.1", "--out", "never"]) == 2
    err = capsys.readouterr().err
    assert err == "purerl: error: --clip-eps does not apply to --algo sac\n"
