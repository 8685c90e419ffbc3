"""`python -m purerl.cli`: the same as the `purerl` command."""

import sys

from purerl.cli import main

sys.exit(main())
