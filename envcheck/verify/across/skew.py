"""Version skew between the processes of one cluster: a per-process table and its verdicts.

Pure: takes the facts each process reported, returns a Table and Results. Unlike
``Client.get_versions`` it keeps every worker apart (grouping only identical ones), so the
message can say *which* worker differs, and it fails where a difference breaks jobs.
"""

from __future__ import annotations

import collections
import functools
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from envcheck.lockfile.names import pypi_name
from envcheck.report import Result, Status, Table
from envcheck.verify.facts import NodeFacts

# Always compared, in this order (the table's rows), whether or not a lock is given.
TRACKED: tuple[str, ...] = (
    "python",
    "dask",
    "distributed",
    "msgpack",
    "cloudpickle",
    "tornado",
    "toolz",
    "numpy",
    "pandas",
    "lz4",
    "torch",
    "cupy",
    "numba",
    "cudf",
    "dask-cudf",
    "dask-cuda",
    "xgboost",
    "ucx-py",
    "ucxx",
    "distributed-ucxx",
    "rmm",
)

# A difference here breaks jobs, not just results: tasks and messages are pickled by one side
# and unpickled by the other (cloudpickle, msgpack, python bytecode), the scheduler and workers
# speak one protocol version (dask, distributed), and DDP ranks must run one torch.
CRITICAL: frozenset[str] = frozenset(
    {"python", "dask", "distributed", "cloudpickle", "msgpack", "torch"}
)

# A difference here can crash a worker on a task or message from the others (they are pickled
# and framed by these): a worker that differs in one is given no smoke test.
WIRE: frozenset[str] = frozenset({"python", "dask", "distributed", "cloudpickle", "msgpack"})

ABSENT = "-"


def skew_by_process(results: Iterable[Result]) -> dict[str, tuple[str, ...]]:
    """Process label (a worker's address) -> the skew checks that failed or warned naming it,
    from skew_report's results (pure)."""
    out: dict[str, list[str]] = {}
    for r in results:
        if r.check.startswith("skew.") and r.status in (Status.FAIL, Status.WARN) and r.node:
            for label in r.node.split(", "):
                out.setdefault(label, []).append(r.check)
    return {label: tuple(checks) for label, checks in out.items()}


def wire_skew(checks: Iterable[str]) -> tuple[str, ...]:
    """Those of ``checks`` (skew check ids) on a WIRE package."""
    return tuple(c for c in checks if c[len("skew."):] in WIRE)



@functools.lru_cache(maxsize=4096)  # the same few hundred names, once per process each
def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=4096)
def canonical_name(name: str) -> str:
    """One name per library across pip and conda: cudf-cu12 -> cudf, cupy-cuda12x -> cupy."""
    n = _normalized(name)
    n = re.sub(r"-cu\d+$", "", n)  # RAPIDS wheels: cudf-cu12, rmm-cu13, ucxx-cu12 ...
    if re.fullmatch(r"cupy-cuda\d+x?", n):
        return "cupy"
    return pypi_name(n)


# process_versions' answers by id(facts), each with a weak reference that proves the id still
# names the same facts: the skew table, the hosts view and its checks each ask for every
# process, and a cluster of a thousand workers lists hundreds of packages on each.
_SEEN: collections.OrderedDict[int, tuple[weakref.ref, dict[str, str]]] = (
    collections.OrderedDict())
_SEEN_MAX = 4096


def process_versions(facts: NodeFacts) -> dict[str, str]:
    """canonical name -> version of what this process would import; 'python' included (a
    copy: the caller may change it)."""
    seen = _SEEN.get(id(facts))
    if seen is not None and seen[0]() is facts:
        _SEEN.move_to_end(id(facts))
        return dict(seen[1])
    out = _process_versions(facts)
    _SEEN[id(facts)] = (weakref.ref(facts), out)
    if len(_SEEN) > _SEEN_MAX:
        _SEEN.popitem(last=False)
    return dict(out)


def _process_versions(facts: NodeFacts) -> dict[str, str]:
    out: dict[str, str] = {}
    # A conda env lists its packages in conda-meta (facts.packages); pip installs into it show
    # only in python_packages. An exact name beats an alias (dask over dask-core).
    for source in (facts.python_packages, facts.packages):
        for name, version in source.items():
            canon = canonical_name(name)
            exact = canon == _normalized(name)
            if canon not in out or exact:
                out[canon] = version
    out["python"] = facts.python
    return out


def _python_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


@dataclass(frozen=True)
class Column:
    """One column of the table: one process, or several workers that report the same."""

    title: str
    labels: tuple[str, ...]  # process labels it stands for ("client", a worker address)


def _label_title(label: str, noun: str = "worker") -> str:
    return label if label in ("client", "scheduler") else f"{noun} {label}"


def _group_title(labels: list[str], noun: str = "worker") -> str:
    if len(labels) == 1:
        return _label_title(labels[0], noun)
    shown = ", ".join(labels[:3]) + (f", +{len(labels) - 3} more" if len(labels) > 3 else "")
    return f"{len(labels)} {noun}s: {shown}"


def _describe(labels: Iterable[str], noun: str = "worker") -> str:
    """'client, scheduler and 2 workers' style, naming workers (ranks) when they are few."""
    labels = list(labels)
    named = [lab for lab in labels if lab in ("client", "scheduler")]
    workers = [lab for lab in labels if lab not in ("client", "scheduler")]
    if len(workers) <= 3:
        named += [f"{noun} {w}" for w in workers]
    else:
        named.append(f"{len(workers)} {noun}s ({', '.join(workers[:3])}, ...)")
    if len(named) == 1:
        return named[0]
    return ", ".join(named[:-1]) + " and " + named[-1]


def _has(labels: list[str], version: str | None) -> str:
    one = len(labels) == 1
    if version is None:
        return "lacks it" if one else "lack it"
    return f"{'has' if one else 'have'} {version}"


def compare_package(
    package: str,
    versions: Mapping[str, str | None],
    noun: str = "worker",
    critical: frozenset[str] = CRITICAL,
) -> tuple[Status, str, tuple[str, ...], str]:
    """Judge one package across processes: (status, message, odd labels, reference version).

    The reference is the version most processes have; ties go to the client's (the user's
    environment), then the scheduler's. Absent counts as a version of its own.
    """
    groups: dict[str | None, list[str]] = {}
    for label, version in versions.items():
        groups.setdefault(version, []).append(label)
    if len(groups) <= 1:
        return Status.PASS, "", (), next(iter(groups), None) or ""

    def rank(item: tuple[str | None, list[str]]) -> tuple[int, int, int]:
        version, labels = item
        return (len(labels), "client" in labels, "scheduler" in labels)

    ordered = sorted(groups.items(), key=rank, reverse=True)
    ref_version, ref_labels = ordered[0]
    odd = tuple(lab for _, labels in ordered[1:] for lab in labels)
    parts = [f"{_describe(labels, noun)} {_has(labels, v)}" for v, labels in ordered[1:]]
    message = (
        f"{package} differs: {'; '.join(parts)}; "
        f"{_describe(ref_labels, noun)} {_has(ref_labels, ref_version)}"
    )
    if package == "python":
        minors = {_python_minor(v) for v in groups if v is not None}
        status = Status.FAIL if len(minors) > 1 else Status.WARN
    else:
        status = Status.FAIL if package in critical else Status.WARN
    return status, message, odd, ref_version or ""


def skew_report(
    processes: Mapping[str, NodeFacts],
    extra_packages: Iterable[str] = (),
    *,
    noun: str = "worker",
    critical: frozenset[str] = CRITICAL,
    group: str = "cluster",
    tracked: tuple[str, ...] = TRACKED,
) -> tuple[Table, list[Result]]:
    """The skew table (tracked rows present anywhere, plus extra rows that differ) and verdicts.

    `processes` maps a label ("client", "scheduler", a worker address) to its facts, in the
    order the columns should appear. `tracked` rows are always shown (when installed
    anywhere). `extra_packages` are a lock's packages: compared too,
    but shown only where they differ (a lock has hundreds). `noun` names the processes that
    are not client or scheduler ("worker", "rank"); a difference in a `critical` package fails.
    """
    labels = list(processes)
    versions = {label: process_versions(f) for label, f in processes.items()}
    extra = [canonical_name(p) for p in extra_packages]
    names = list(dict.fromkeys([*tracked, *(p for p in extra if p not in tracked)]))

    verdicts: dict[str, tuple[Status, str, tuple[str, ...], str]] = {}
    rows_wanted: list[str] = []
    for name in names:
        per = {label: versions[label].get(name) for label in labels}
        if all(v is None for v in per.values()):
            continue
        verdict = compare_package(name, per, noun, critical)
        verdicts[name] = verdict
        if name in tracked or verdict[0] is not Status.PASS:
            rows_wanted.append(name)

    columns = _columns(labels, versions, rows_wanted, noun)
    rows = []
    for name in rows_wanted:
        cells = [versions[col.labels[0]].get(name) or ABSENT for col in columns]
        state = verdicts[name][0]
        rows.append((name, *cells, "ok" if state is Status.PASS else state.value))
    table = Table(
        title=f"version skew (one column per process; identical {noun}s grouped)",
        columns=("package", *(c.title for c in columns), "verdict"),
        rows=tuple(rows),
    )
    return table, _results(verdicts, labels, len(names), noun, group)


def _columns(
    labels: list[str],
    versions: Mapping[str, Mapping[str, str]],
    rows: list[str],
    noun: str = "worker",
) -> list[Column]:
    cols: list[Column] = []
    worker_groups: dict[tuple[str | None, ...], list[str]] = {}
    for label in labels:
        if label in ("client", "scheduler"):
            cols.append(Column(label, (label,)))
        else:
            key = tuple(versions[label].get(name) for name in rows)
            worker_groups.setdefault(key, []).append(label)
    cols += [Column(_group_title(g, noun), tuple(g)) for g in worker_groups.values()]
    return cols


def _results(
    verdicts: Mapping[str, tuple[Status, str, tuple[str, ...], str]],
    labels: list[str],
    compared: int,
    noun: str = "worker",
    group: str = "cluster",
) -> list[Result]:
    out: list[Result] = []
    for name, (status, message, odd, ref) in verdicts.items():
        if status is Status.PASS:
            continue
        why = (
            f"processes that pickle tasks and messages for each other must run the same {name}; "
            if status is Status.FAIL
            else ""
        )
        if not ref:  # most processes lack it
            action = f"uninstall {name} from {_describe(odd, noun)} or install it everywhere"
        elif name == "python":
            action = f"run python {ref} on {_describe(odd, noun)}"
        else:
            action = f"install {name}=={ref} on {_describe(odd, noun)}"
        out.append(
            Result(
                check=f"skew.{name}",
                status=status,
                message=message,
                node=", ".join(odd),
                fix=f"{why}{action}, or build every environment from one lock (envcheck build)",
                group=group,
            )
        )
    if not out:
        present = len(verdicts)
        out.append(
            Result(
                check="skew",
                status=Status.PASS,
                message=f"{present} of {compared} tracked packages installed somewhere, "
                f"all identical on {_describe(labels, noun)}",
                group=group,
            )
        )
    return out
