"""Every check envcheck's verify verbs can run, by id: node checks (built in and plugins),
cluster checks, smoke tests. `--list-checks` prints this; `--skip` is validated against it.

The registries are imported only as far as a question needs: validating `--skip driver` reads
the node registry alone; the smoke suite (which imports distributed) and the entry-point scan
for plugins are reached only for an id not found before them, or for the full listing.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.errors import BadInput

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Callable, Iterable, Iterator


@dataclass(frozen=True)
class CheckInfo:
    id: str
    kind: str  # "node", "cluster", "smoke", "job" or "ray"
    summary: str  # one line: the first line of the check's docstring


def _first_line(fn: Callable) -> str:
    """The docstring's first sentence-line: its first paragraph, on one line."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())


def _node() -> Iterator[CheckInfo]:
    from envcheck.verify.node.checks import BUILTIN_CHECKS

    for check_id, fn in BUILTIN_CHECKS.items():
        yield CheckInfo(check_id, "node", _first_line(fn))


def _cluster() -> Iterator[CheckInfo]:
    from envcheck.verify.cluster.registry import CLUSTER_CHECKS

    for check_id, fn in CLUSTER_CHECKS.items():
        yield CheckInfo(check_id, "cluster", _first_line(fn))


def _smoke() -> Iterator[CheckInfo]:
    from envcheck.verify.smoke.suite import SMOKE_TESTS

    for test in SMOKE_TESTS.values():
        yield CheckInfo(test.id, "smoke", test.summary)


def _job() -> Iterator[CheckInfo]:
    from envcheck.verify.job.checks import JOB_CHECKS

    for check_id, fn in JOB_CHECKS.items():
        yield CheckInfo(check_id, "job", _first_line(fn))


def _ray() -> Iterator[CheckInfo]:
    from envcheck.verify.ray.checks import RAY_CHECKS

    for check_id, fn in RAY_CHECKS.items():
        yield CheckInfo(check_id, "ray", _first_line(fn))


def _plugins() -> Iterator[CheckInfo]:
    from envcheck.verify.plugins import load_plugins

    loaded, _ = load_plugins()
    for p in loaded:
        yield CheckInfo(p.name, "node", f"plugin {p.target}: {_first_line(p.check)}".rstrip(": "))


SOURCES = (_node, _cluster, _smoke, _job, _ray, _plugins)


def all_checks() -> list[CheckInfo]:
    """Every check: node, cluster, smoke, then plugins (entry-point group envcheck.checks)."""
    return [info for source in SOURCES for info in source()]


def validate_skip(ids: Iterable[str]) -> frozenset:
    """The ids as a set; BadInput naming the unknown ones and listing the valid ids."""
    wanted = {i for i in ids if i}
    if not wanted:
        return frozenset()
    missing = set(wanted)
    seen: list[CheckInfo] = []
    for source in SOURCES:
        found = list(source())
        seen += found
        missing -= {info.id for info in found}
        if not missing:
            return frozenset(wanted)
    raise BadInput(
        f"unknown check id {', '.join(sorted(missing))} for --skip (valid: "
        f"{', '.join(info.id for info in seen)}; see --list-checks)"
    )


def parse_skip(values: Iterable[str]) -> tuple:
    """`--skip a,b --skip c` -> ('a', 'b', 'c'), blanks dropped, first occurrence kept."""
    out = [part.strip() for value in values for part in value.split(",")]
    return tuple(dict.fromkeys(p for p in out if p))


def render_list(checks: Iterable[CheckInfo]) -> str:
    """The --list-checks text: id, kind, description, one check a line."""
    rows = [("ID", "KIND", "DESCRIPTION")] + [(c.id, c.kind, c.summary) for c in checks]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{i:<{width}}  {k:<7}  {s}".rstrip() for i, k, s in rows) + "\n"


def print_list(*kinds: str) -> int:
    """--list-checks: print the catalog (only ``kinds`` and node checks, when given); exit 0."""
    import sys

    wanted = {"node", *kinds} if kinds else None
    sys.stdout.write(render_list(c for c in all_checks() if wanted is None or c.kind in wanted))
    return 0
