"""A cluster seen host by host: which processes each host runs, their key versions, and the
hosts that differ or went silent. Pure: reads the facts round's result.

A host is named by what its processes report (their hostname). A host none of whose processes
answered is named by the address its workers registered with: nothing else names it then.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from envcheck.report import Result, Status, Table
from envcheck.verify.across.processes import ClusterFacts
from envcheck.verify.across.skew import CRITICAL, process_versions
from envcheck.verify.facts import NodeFacts

GROUP = "hosts"
SHOWN = ("python", "dask", "distributed", "msgpack", "cloudpickle")


def address_host(address: str) -> str:
    """"tcp://10.0.0.7:40123" -> "10.0.0.7" ("[fe80::1]" -> "fe80::1")."""
    rest = address.split("://", 1)[-1]
    host = rest.rsplit(":", 1)[0] if rest.count(":") == 1 or rest.startswith("[") else rest
    return host.strip("[]")


def _hosts(cluster: ClusterFacts) -> dict[str, dict[str, NodeFacts]]:
    out: dict[str, dict[str, NodeFacts]] = {}
    for label, f in cluster.by_process().items():
        out.setdefault(f.host, {})[label] = f
    return out


def _versions(members: Mapping[str, NodeFacts]) -> dict[str, str]:
    """package -> version on this host; "a | b" where its processes disagree."""
    seen: dict[str, set[str]] = {}
    for f in members.values():
        v = process_versions(f)
        for name in (*SHOWN, *CRITICAL):
            seen.setdefault(name, set()).add(v.get(name, "-"))
    return {n: " | ".join(sorted(vs)) for n, vs in seen.items()}


def _roles(labels: list[str]) -> str:
    named = [lab for lab in labels if lab in ("client", "scheduler")]
    workers = [lab for lab in labels if lab not in ("client", "scheduler")]
    if len(workers) > 3:
        return ", ".join([*named, f"{len(workers)} workers"])
    return ", ".join([*named, *(f"worker {w}" for w in workers)])


def hosts_view(
    cluster: ClusterFacts, answered: Collection[str] = ()
) -> tuple[Table, list[Result]]:
    """A table with a row per host, and results naming hosts that differ or did not report.

    `answered`: workers that sent no facts but did answer (their versions): not silent.
    """
    hosts = _hosts(cluster)
    silent: dict[str, list[str]] = {}
    for address in cluster.expected_workers:
        if address not in cluster.workers and address not in answered:
            silent.setdefault(address_host(address), []).append(address)
    rows = []
    for host, members in sorted(hosts.items()):
        v = _versions(members)
        ips = sorted({address_host(f.address) for f in members.values() if f.address})
        roles = _roles(list(members))
        rows.append((host, ", ".join(ips) or "-", roles, *(v[n] for n in SHOWN), "yes"))
    for ip, addresses in sorted(silent.items()):
        rows.append(("?", ip, ", ".join(f"worker {a}" for a in addresses),
                     *("?" for _ in SHOWN), "no"))
    table = Table(
        "hosts (one row per host)",
        ("host", "address", "processes", *SHOWN, "reported"),
        tuple(rows),
    )
    return table, _skewed_hosts(hosts, cluster) + _silent_hosts(silent, cluster)


def _reference(hosts: Mapping[str, Mapping[str, NodeFacts]], cluster: ClusterFacts) -> str:
    """The host the others are compared with: the scheduler's (the cluster's protocol)."""
    if cluster.scheduler is not None:
        return cluster.scheduler.host
    return cluster.client.host


def _skewed_hosts(
    hosts: Mapping[str, Mapping[str, NodeFacts]], cluster: ClusterFacts
) -> list[Result]:
    ref_host = _reference(hosts, cluster)
    ref = cluster.scheduler or cluster.client
    ref_v = process_versions(ref)
    out: list[Result] = []
    for host, members in sorted(hosts.items()):
        if host == ref_host:
            continue
        differs = []
        for name in sorted(CRITICAL):
            theirs = {process_versions(f).get(name, "-") for f in members.values()}
            if theirs != {ref_v.get(name, "-")}:
                differs.append(f"{name} {' | '.join(sorted(theirs))} (not {ref_v.get(name, '-')})")
        if differs:
            out.append(
                Result(
                    "hosts.skew",
                    Status.FAIL,
                    f"host {host} ({len(members)} process{'es' if len(members) > 1 else ''}) "
                    f"differs from the scheduler's host {ref_host}: {'; '.join(differs)}",
                    node=host,
                    fix=f"install the scheduler's versions on {host} (one environment, built from "
                    "one lock, on every host)",
                    group=GROUP,
                )
            )
    if not out and len(hosts) > 1:
        out.append(
            Result(
                "hosts.skew",
                Status.PASS,
                f"{len(hosts)} hosts ({', '.join(sorted(hosts))}) run the same "
                f"{', '.join(sorted(CRITICAL))}",
                group=GROUP,
            )
        )
    return out


def _silent_hosts(silent: Mapping[str, list[str]], cluster: ClusterFacts) -> list[Result]:
    why = {r.node: r.message for r in cluster.errors}
    out = []
    for ip, addresses in sorted(silent.items()):
        reasons = sorted({why.get(a, "no answer").split(": ", 1)[-1] for a in addresses})
        out.append(
            Result(
                "hosts.unreachable",
                Status.ERROR,
                f"host {ip}: no worker there reported ({'; '.join(reasons)}); the scheduler "
                f"still lists {len(addresses)} there: {', '.join(addresses)}",
                node=ip,
                fix=f"check {ip}'s network link and its workers (ping it from the scheduler's "
                "host); restart them or remove the host from the cluster",
                group=GROUP,
            )
        )
    return out


def spans_hosts(cluster: ClusterFacts, answered: Collection[str] = ()) -> bool:
    """More than one host answered, or a worker that did not lives at an address none of the
    answering processes has (a host of its own)."""
    processes = cluster.by_process()
    if len({f.host for f in processes.values()}) > 1:
        return True
    known = {address_host(f.address) for f in processes.values() if f.address}
    return any(
        address_host(a) not in known
        for a in cluster.expected_workers
        if a not in cluster.workers and a not in answered
    )
