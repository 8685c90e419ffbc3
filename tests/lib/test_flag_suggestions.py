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
