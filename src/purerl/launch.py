"""The `purerl` command's first line: SIGINT and SIGTERM are heard before JAX is imported (about a second), not
lost in it (a KeyboardInterrupt raised inside JAX's import or a gc callback is ignored, and SIGTERM's default kills
without a word). A first signal there is kept and honoured as the command starts (`run.stopping`: a run stops before
it compiles, exit 128 + N); a second one exits at once with 128 + N."""

from __future__ import annotations

import sys


def main() -> int:
    from purerl.run import stopping  # the standard library only: no JAX yet

    with stopping.held_from_the_start():
        from purerl.cli import main as command_line

    return command_line()


if __name__ == "__main__":
    sys.exit(main())
