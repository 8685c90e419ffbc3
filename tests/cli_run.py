"""Running the CLI in-process for tests: exit code, stdout and stderr of one `purerl ...` call."""

from purerl.cli import main

# A CartPole run small enough to compile and train in seconds.
SMALL = ["--num-envs", "4", "--num-steps", "32", "--total-timesteps", "1024", "--update-epochs", "2",
         "--num-minibatches", "2", "--no-progress"]
# A small recurrent run (add --preset and --env): the tests that train it on the same task share its programs.
GRU = ["--network", "gru", "--total-timesteps", "512", "--num-steps", "32", "--seeds", "2", "--hidden-sizes", "16",
       "--no-progress"]


class ReachedTraining(Exception):
    """Every check passed: the command would now compile and train."""


def reached(*args, **kwargs):
    """What a test patches over the training call: reaching it counts as exit 0 (`run_cli`)."""
    raise ReachedTraining


def run_cli(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse-level errors
        code = exit_.code
    except ReachedTraining:
        code = 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err
