"""Host health: rlimits, /dev/shm, network interfaces, the interface under a Dask address
(rtnetlink), InfiniBand ports, kernel modules."""

from __future__ import annotations

import ipaddress
import os
import struct

from .caches import _CACHE
from .kernel_log import read_kernel_log
from .model import AddressLink, HostHealth, IbPort, NetInterface

# Kernel modules whose presence a check asks about (/sys/module/<name>).
KERNEL_MODULES = ("nvidia", "nvidia_uvm", "nvidia_peermem", "nv_peer_mem", "gdrdrv", "ib_core")


NET_VARIABLES = ("NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES", "NCCL_IB_HCA")


def collect_host_health(kernel_log: str = "", log_fallbacks: bool = True) -> HostHealth:
    """Limits of this process, /dev/shm, network and InfiniBand ports, modules, Xid events.

    Network interfaces are read only when NCCL_SOCKET_IFNAME, UCX_NET_DEVICES or NCCL_IB_HCA
    is set; modules other than nvidia only on hosts with an RDMA device; the kernel log (and
    uptime) only where the NVIDIA driver is loaded. kernel_log: "" looks for Xid lines in
    /dev/kmsg, else `dmesg`, else `journalctl -k`; a path reads that file (or device).
    """
    memlock = _rlimit("RLIMIT_MEMLOCK")
    nofile = _rlimit("RLIMIT_NOFILE")
    shm_bytes = shm_free = None
    shm_error = ""
    try:
        st = os.statvfs("/dev/shm")
        shm_bytes, shm_free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    except OSError as e:
        shm_error = f"/dev/shm: {e.strerror or e}"
    ib_ports, ib_error = read_ib_ports()
    wanted = KERNEL_MODULES if ib_ports else ("nvidia",)
    modules = tuple(m for m in wanted if os.path.isdir(f"/sys/module/{m}"))
    uptime = -1.0
    if kernel_log or "nvidia" in modules:
        events, source, error, lines = read_kernel_log(kernel_log, log_fallbacks)
        uptime = _uptime()
    else:
        events, source, lines = (), "", 0
        error = "no NVIDIA kernel driver loaded (/sys/module/nvidia absent): no Xid to look for"
    nets = read_net_interfaces() if any(v in os.environ for v in NET_VARIABLES) else ()
    return HostHealth(
        collected=True,
        memlock_soft=memlock[0],
        memlock_hard=memlock[1],
        nofile_soft=nofile[0],
        nofile_hard=nofile[1],
        shm_bytes=shm_bytes,
        shm_free_bytes=shm_free,
        shm_error=shm_error,
        net_interfaces=nets,
        ib_ports=ib_ports,
        ib_error=ib_error,
        modules=modules,
        kernel_log_source=source,
        kernel_log_error=error,
        kernel_log_lines=lines,
        xid_events=events,
        uptime_seconds=uptime,
    )


def _rlimit(name: str) -> tuple[int | None, int | None]:
    try:
        import resource

        soft, hard = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, ValueError, OSError):
        return None, None
    inf = resource.RLIM_INFINITY
    return (-1 if soft == inf else soft), (-1 if hard == inf else hard)


def _uptime() -> float:
    try:
        with open("/proc/uptime") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def _read_sys(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def read_net_interfaces(root: str = "/sys/class/net") -> tuple[NetInterface, ...]:
    """Every interface in /sys/class/net: name, IFF_UP, operstate."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return ()
    out = []
    for name in names:
        flags = _read_sys(os.path.join(root, name, "flags"))
        try:
            up = bool(int(flags, 16) & 0x1)  # IFF_UP
        except ValueError:
            up = False
        out.append(NetInterface(name, up, _read_sys(os.path.join(root, name, "operstate"))))
    return tuple(out)


def address_link(address: str, root: str = "/sys/class/net") -> AddressLink:
    """The interface holding the IP of a Dask address ("tcp://10.0.0.5:40123") and its speed.

    Which interface holds the IP is looked up once per address in a process's life (one
    rtnetlink dump); the speed is link state and is read every time (one sysfs file). Never
    raises: what is unknown says why.
    """
    hit = _CACHE.get("address-link")
    if hit is not None and hit[0] == address:
        ip, name, error = hit[1]
    else:
        ip, name, error = found = _interface_of(address)
        if not error.startswith(_UNREADABLE):  # a failed read is tried again next round
            _CACHE["address-link"] = (address, found)
    if not name:
        return AddressLink(ip, "", -1, error)
    speed = _read_small(os.path.join(root, name, "speed"))
    try:
        mbps = int(speed)
    except ValueError:
        mbps = -1
    if mbps <= 0:  # -1 (virtio, down links), or EINVAL (lo, bridges, dummy): unreadable
        why = f"{root}/{name}/speed: " + (speed if speed else "unreadable")
        return AddressLink(ip, name, -1, f"link speed unknown ({why})")
    return AddressLink(ip, name, mbps, "")


def _read_small(path: str) -> str:
    # os.read, not open(): 13 us against 28 us for a sysfs file read on every facts round
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        return os.read(fd, 64).decode(errors="replace").strip()
    except OSError:  # EINVAL: the driver has no speed to give (lo, bridges, dummy)
        return ""
    finally:
        os.close(fd)


def address_ip(address: str) -> str:
    """The host part of a Dask address, as an IP ("" when it has none, e.g. inproc://)."""
    scheme, sep, rest = address.partition("://")
    if not sep or scheme == "inproc":
        return ""
    host = rest[1:].partition("]")[0] if rest.startswith("[") else rest.rpartition(":")[0]
    host = host or rest
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    import socket  # a worker's address only

    try:  # a host name: resolved once per process (this runs behind the address cache)
        return str(socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0])
    except (OSError, IndexError, UnicodeError):
        return ""


_UNREADABLE = "interfaces not readable"


def _interface_of(address: str) -> tuple[str, str, str]:
    """(ip, interface, why none) for a Dask address."""
    ip = address_ip(address)
    if not ip:
        return "", "", f"no IP in the address {address!r}"
    try:
        name = interface_holding(ip)
    # AttributeError: no socket.AF_NETLINK (not Linux)
    except (OSError, ValueError, AttributeError, struct.error) as e:
        return ip, "", f"{_UNREADABLE}: {e}"
    return ip, name, "" if name else f"no interface of this host holds {ip}"


# rtnetlink (linux/netlink.h, linux/rtnetlink.h, linux/if_addr.h)
_NLMSG_ERROR, _NLMSG_DONE, _RTM_NEWADDR, _RTM_GETADDR = 2, 3, 20, 22
_NLM_F_DUMP_REQUEST = 0x301  # NLM_F_REQUEST | NLM_F_DUMP
_IFA_ADDRESS, _IFA_LOCAL = 1, 2


def interface_holding(ip: str) -> str:
    """The interface (device, not label: "eth0" for eth0:1) that holds ``ip``; "" if none.

    One RTM_GETADDR dump over rtnetlink, as `ip addr` does: it lists every address, secondary
    ones too (SIOCGIFADDR shows only an interface's first IPv4 address). Linux only: OSError
    elsewhere.
    """
    import socket

    want = ipaddress.ip_address(ip)
    family = socket.AF_INET if want.version == 4 else socket.AF_INET6
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as s:  # 0: NETLINK_ROUTE
        s.settimeout(2.0)
        s.bind((0, 0))
        # nlmsghdr (len, type, flags, seq, pid) + ifaddrmsg (family, prefixlen, flags, scope,
        # index)
        s.send(struct.pack("=LHHLLBBBBL", 24, _RTM_GETADDR, _NLM_F_DUMP_REQUEST, 1, 0,
                           family, 0, 0, 0, 0))
        while True:
            data = s.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                length, kind = struct.unpack_from("=LH", data, off)
                if kind == _NLMSG_DONE or length < 16:
                    return ""
                if kind == _NLMSG_ERROR:
                    raise OSError(f"rtnetlink error {struct.unpack_from('=i', data, off + 16)[0]}")
                if kind == _RTM_NEWADDR and length >= 24:
                    index = struct.unpack_from("=L", data, off + 20)[0]
                    attrs: dict[int, bytes] = {}
                    at = off + 24
                    while at + 4 <= off + length:
                        size, atype = struct.unpack_from("=HH", data, at)
                        if size < 4:
                            break
                        attrs[atype] = data[at + 4:at + size]
                        at += (size + 3) & ~3
                    # IFA_LOCAL is this host's end; IFA_ADDRESS the peer's on point-to-point
                    if attrs.get(_IFA_LOCAL, attrs.get(_IFA_ADDRESS)) == want.packed:
                        return socket.if_indextoname(index)
                off += (length + 3) & ~3
            if not data:
                return ""


def read_ib_ports(root: str = "/sys/class/infiniband") -> tuple[tuple[IbPort, ...], str]:
    """(ports, why none): state, physical state, rate and link layer of each HCA port."""
    try:
        devices = sorted(os.listdir(root))
    except FileNotFoundError:
        return (), f"{root} absent: no InfiniBand / RoCE driver"
    except OSError as e:
        return (), f"{root}: {e.strerror or e}"
    out = []
    for dev in devices:
        ports_dir = os.path.join(root, dev, "ports")
        try:
            ports = sorted(os.listdir(ports_dir), key=lambda p: int(p) if p.isdigit() else 0)
        except OSError:
            continue
        for port in ports:
            base = os.path.join(ports_dir, port)

            def value(name: str, base: str = base) -> str:
                # "4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp"
                text = _read_sys(os.path.join(base, name))
                return text.split(":", 1)[1].strip() if ":" in text else text

            out.append(
                IbPort(
                    dev,
                    int(port) if port.isdigit() else 0,
                    value("state"),
                    value("phys_state"),
                    _read_sys(os.path.join(base, "rate")),
                    _read_sys(os.path.join(base, "link_layer")),
                )
            )
    return tuple(out), "" if out else f"{root} lists no port"
