"""The process entry (the `envcheck` command, `python -m envcheck`): a verb's early work, then
the CLI.

A verb may start work before its flags are parsed and before the CLI's own imports (argparse
and the rest): `envcheck install` forks its linker child here, which imports py-rattler while
the parent parses and checks (envcheck/provision/linker.py). Python 3.8: the verify side runs
the CLI too.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable

# verb path -> (module, start, discard), both functions called without arguments
EARLY: dict[tuple[str, ...], tuple[str, str, str]] = {
    ("install",): ("envcheck.provision.linker", "prestart", "discard_prestarted"),
}


def start(argv: list[str]) -> Callable[[], None]:
    """Start the early work of the verb ``argv`` names (its first words that are not flags,
    as the parser reads them); what ends that work when the verb did not take it."""
    words = tuple(a for a in argv if not a.startswith("-"))
    for path, (module, begin, discard) in EARLY.items():
        if words[: len(path)] == path:
            import importlib

            loaded = importlib.import_module(module)
            getattr(loaded, begin)()
            return getattr(loaded, discard)
    return lambda: None


def main() -> int:
    """The console script: ``start``, then envcheck.cli.main (which ends the early work)."""
    start(sys.argv[1:])
    from envcheck.cli import main as cli_main

    return cli_main()
