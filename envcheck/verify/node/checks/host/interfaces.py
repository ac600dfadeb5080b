"""NCCL_SOCKET_IFNAME, UCX_NET_DEVICES, NCCL_IB_HCA: they name interfaces and HCAs that are up."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

CHECK = "net-devices"


def _spec(value: str) -> tuple[bool, bool, list[str]]:
    """NCCL's list syntax: '^' excludes, '=' matches exactly, else prefixes. (exclude, exact,
    entries)."""
    v = value.strip()
    exclude = v.startswith("^")
    v = v[1:] if exclude else v
    exact = v.startswith("=")
    v = v[1:] if exact else v
    return exclude, exact, [e.strip() for e in v.split(",") if e.strip()]


def check_net_devices(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Each interface / HCA these variables name exists here and is up (ACTIVE for HCAs)."""
    hh = facts.host_health
    env = facts.env
    names = [k for k in ("NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES", "NCCL_IB_HCA") if k in env]
    if not names:
        return [Result(CHECK, Status.SKIP, "nothing asked: NCCL_SOCKET_IFNAME, UCX_NET_DEVICES, "
                       "NCCL_IB_HCA unset (NCCL and UCX pick interfaces themselves)")]
    if not hh.collected:
        return [Result(CHECK, Status.SKIP, "no host health facts (older collector)")]
    ifaces = {i.name: i for i in hh.net_interfaces}
    up_ifaces = sorted(n for n, i in ifaces.items() if i.up and i.operstate in ("up", "unknown"))
    ports = {(p.device, p.port): p for p in hh.ib_ports}
    hcas = sorted({p.device for p in hh.ib_ports})
    problems: list[str] = []
    fine: list[str] = []
    if "NCCL_SOCKET_IFNAME" in env:
        exclude, exact, entries = _spec(env["NCCL_SOCKET_IFNAME"])
        if not exclude:
            for e in entries:
                hits = [n for n in up_ifaces if (n == e if exact else n.startswith(e))]
                if not hits:
                    state = f" (it is {ifaces[e].operstate or 'down'})" if e in ifaces else ""
                    problems.append(f"NCCL_SOCKET_IFNAME entry {e!r} matches no interface "
                                    f"that is up{state}")
                else:
                    fine.append(f"NCCL_SOCKET_IFNAME {e} -> {', '.join(hits)}")
    if "UCX_NET_DEVICES" in env:
        for e in [x.strip() for x in env["UCX_NET_DEVICES"].split(",") if x.strip()]:
            if e == "all":
                continue
            if ":" in e:  # mlx5_0:1 -> an HCA port
                dev, _, port = e.partition(":")
                p = ports.get((dev, int(port))) if port.isdigit() else None
                if p is None:
                    problems.append(f"UCX_NET_DEVICES entry {e!r}: no such HCA port "
                                    f"(have {', '.join(f'{d}:{n}' for d, n in ports) or 'none'})")
                elif p.state != "ACTIVE":
                    problems.append(f"UCX_NET_DEVICES entry {e!r}: port is {p.state}")
                else:
                    fine.append(f"UCX_NET_DEVICES {e} ACTIVE")
            elif e not in ifaces:
                problems.append(f"UCX_NET_DEVICES entry {e!r}: no such interface")
            elif e not in up_ifaces:
                problems.append(f"UCX_NET_DEVICES entry {e!r}: interface is "
                                f"{ifaces[e].operstate or 'down'}")
            else:
                fine.append(f"UCX_NET_DEVICES {e} up")
    if "NCCL_IB_HCA" in env:
        exclude, exact, entries = _spec(env["NCCL_IB_HCA"])
        if not exclude:
            for e in entries:
                dev, _, port = e.partition(":")
                hits = [p for (d, n), p in ports.items()
                        if (d == dev if exact else d.startswith(dev))
                        and (not port or str(n) == port)]
                if not hits:
                    problems.append(f"NCCL_IB_HCA entry {e!r} matches no HCA "
                                    f"(have {', '.join(hcas) or 'none'})")
                elif not any(p.state == "ACTIVE" for p in hits):
                    problems.append(f"NCCL_IB_HCA entry {e!r}: no ACTIVE port")
                else:
                    fine.append(f"NCCL_IB_HCA {e} ACTIVE")
    if problems:
        return [
            Result(
                CHECK,
                Status.FAIL,
                "; ".join(problems),
                fix="name interfaces that are up here (ip -br link: "
                f"{', '.join(up_ifaces) or 'none'}) and HCAs that exist (ibstat: "
                f"{', '.join(hcas) or 'none'}); NCCL then falls back or aborts with 'no socket "
                "interface found' / 'no IB device found'",
            )
        ]
    return [Result(CHECK, Status.PASS, "; ".join(fine) or f"{', '.join(names)} exclude only")]
