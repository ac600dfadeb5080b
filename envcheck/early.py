"""A verb's early work: started by the process entry (envcheck/entry.py) before its flags are
parsed and before the CLI's own imports (argparse and the rest), taken over by envcheck.cli.

`envcheck install` forks its linker child here, which imports py-rattler while the parent
parses and checks (envcheck/provision/linker.py). Python 3.8: the verify side runs the CLI too.
"""

from __future__ import annotations

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
