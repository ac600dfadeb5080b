"""The process entry: the `envcheck` command and `python -m envcheck`. The verb's early work
(envcheck/early.py) starts before the CLI is imported; envcheck.cli.main takes it over."""

from __future__ import annotations

import sys


def main() -> int:
    from envcheck import early

    early.start(sys.argv[1:])
    from envcheck.cli import main as cli_main

    return cli_main()
