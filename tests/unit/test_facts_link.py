"""The interface under a worker's Dask address and its link speed, read on this machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from envcheck.verify.facts import (
    AddressLink,
    address_ip,
    address_link,
    collect_node_facts,
    facts_from_dict,
    facts_to_dict,
)
from tests.support.deadlines import HANG
from tests.support.factories import no_driver_node, with_link


def ip_addresses() -> list[tuple[str, str, int]]:
    """(interface, address, family) of every address here, as iproute2 lists them."""
    if shutil.which("ip") is None:
        pytest.skip("ip (iproute2) is missing")
    out = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout
    return [
        (link["ifname"], a["local"], 4 if a["family"] == "inet" else 6)
        for link in json.loads(out)
        for a in link.get("addr_info", ())
        if a.get("scope") != "link"  # fe80::/10 needs a scope id in an address
    ]


def test_loopback_address_is_on_lo_whose_speed_is_unknown():
    link = address_link("tcp://127.0.0.1:8786")
    assert (link.ip, link.interface, link.speed_mbps) == ("127.0.0.1", "lo", -1)
    assert link.error == "link speed unknown (/sys/class/net/lo/speed: unreadable)"
    assert address_link("tcp://[::1]:1").interface == "lo"


def test_every_address_here_is_found_on_the_interface_iproute2_shows():
    seen = ip_addresses()
    assert any(name == "lo" for name, _, _ in seen)
    for name, ip, family in seen:
        where = f"tcp://{ip}:1" if family == 4 else f"tcp://[{ip}]:1"
        link = address_link(where)
        assert (link.ip, link.interface) == (ip, name), where
        speed = _read(f"/sys/class/net/{name}/speed")
        if speed.isdigit() and int(speed) > 0:
            assert link.speed_mbps == int(speed) and link.error == ""
        else:  # lo, virtio (-1), a link that is down
            assert link.speed_mbps == -1 and name in link.error


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def test_addresses_without_an_interface_here_say_why():
    foreign = "203.0.113.77"  # TEST-NET-3: documentation only
    if any(ip == foreign for _, ip, _ in ip_addresses()):
        pytest.skip(f"this host holds {foreign}")
    assert address_link(f"tcp://{foreign}:1") == AddressLink(
        foreign, "", -1, f"no interface of this host holds {foreign}"
    )
    assert address_link("inproc://10.0.0.1/1/2") == AddressLink(
        "", "", -1, "no IP in the address 'inproc://10.0.0.1/1/2'"
    )
    assert address_ip("ucx://10.1.2.3:13337") == "10.1.2.3"
    assert address_ip("tls://[fd00::7]:8786") == "fd00::7"
    assert address_ip("tcp://localhost:8786") in ("127.0.0.1", "::1")


def test_only_workers_look_their_address_up_and_it_survives_json():
    worker = collect_node_facts("worker", "tcp://127.0.0.1:40000")
    assert worker.address_link.interface == "lo"
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(worker)))) == worker
    assert collect_node_facts("scheduler", "tcp://127.0.0.1:8786").address_link == AddressLink()
    known = with_link(no_driver_node(role="worker"), "10.0.0.5", "ens1f0", 100000)
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(known)))) == known
    older = facts_to_dict(known)
    del older["address_link"]  # facts from a collector older than the field
    assert facts_from_dict(older).address_link == AddressLink()


# A fresh interpreter counts, through audit hooks, the rtnetlink sockets address_link opens
# (the interface lookup) and the sysfs speed files it opens, over a first round and n more.
ROUNDS = """
import socket, sys
from envcheck.verify.facts import address_link, caches
seen = {"netlink": 0, "speed": 0}
def hook(event, args):
    if event == "socket.__new__" and args[1] == socket.AF_NETLINK:
        seen["netlink"] += 1
    elif event == "open" and str(args[0]).endswith("/speed"):
        seen["speed"] += 1
sys.addaudithook(hook)
for _ in range(1 + int(sys.argv[1])):
    address_link("tcp://127.0.0.1:1")
print(seen["netlink"], seen["speed"], caches._CACHE["address-link"][0])
"""


def test_a_facts_round_pays_one_speed_read_for_the_link():
    # the interface lookup once per address in a process's life; the speed every round
    n = 5
    done = subprocess.run([sys.executable, "-c", ROUNDS, str(n)], capture_output=True,
                          text=True, timeout=HANG, check=True)
    assert done.stdout.split() == ["1", str(1 + n), "tcp://127.0.0.1:1"], done.stderr
