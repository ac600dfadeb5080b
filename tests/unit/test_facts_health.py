"""The health collectors against the real sources this machine has: kernel log
files and /dev/kmsg, /sys/class/net and /sys/class/infiniband, rlimits, /dev/shm."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys

import pytest

from envcheck.cli import main
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import (
    XidEvent,
    collect_gpu_health,
    collect_host_health,
    collect_node_facts,
    facts_from_dict,
    facts_to_dict,
    read_ib_ports,
    read_kernel_log,
    read_net_interfaces,
)
from envcheck.verify.node.checks import run_node_checks
from envcheck.verify.shipping import standalone_source
from tests.support.factories import healthy_a100x8, healthy_host, with_gpu_health, with_health

# Real NVRM Xid lines as drivers wrote them (quoted in public troubleshooting notes and issue
# reports), in the forms the kernel log is read in: Xid 79 from journalctl (driver 450,
# Ubuntu 20.04), Xid 31 from a training job's log, Xid 119 from an OpenShift GPU operator
# runbook's dmesg, Xid 48 in the old form without "PCI:".
XID_119 = ("NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, Timeout after 6s of "
           "waiting for RPC response from GPU0 GSP! Expected function 10 (FREE) (0xc0000005 0x0).")
LINES = {
    "dmesg": (
        "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1122, GPU has fallen off the bus.",
        XidEvent(79, "0000:3b:00", 1234.56789, "pid=1122, GPU has fallen off the bus."),
    ),
    "journalctl -k -o short-monotonic": (
        "[86012.000123] gpu-node-1 kernel: NVRM: Xid (PCI:0000:00:06): 31, pid=79749, name=exe,"
        " Ch 0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_7 faulted @"
        " 0x2b57_b3000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
        XidEvent(31, "0000:00:06", 86012.000123, "pid=79749, name=exe, Ch 0000000a, intr "
                 "00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_T1_7 faulted @ "
                 "0x2b57_b3000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE"),
    ),
    "syslog (kern.log)": (
        "Okt 06 17:59:27 balrog kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1122, GPU has "
        "fallen off the bus.",
        XidEvent(79, "0000:01:00", -1.0, "pid=1122, GPU has fallen off the bus."),
    ),
    "dmesg, GSP timeout": (
        "[ 3947.590120] " + XID_119,
        XidEvent(119, "0000:61:00", 3947.59012, XID_119.split("119, ", 1)[1]),
    ),
    "/dev/kmsg record": (
        "3,2211,3947590120,-;" + XID_119,
        XidEvent(119, "0000:61:00", 3947.59012, XID_119.split("119, ", 1)[1]),
    ),
    "old driver, no PCI: prefix": (
        "[  301.2] NVRM: Xid (0000:AF:00): 48, pid='<unknown>', name=<unknown>, Ch 00000008",
        XidEvent(48, "0000:af:00", 301.2, "pid='<unknown>', name=<unknown>, Ch 00000008"),
    ),
}

NOISE = [
    "[    4.120000] nvidia: loading out-of-tree module taints kernel.",
    "[    4.320000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05",
    "[   10.0] NVRM: GPU at PCI:0000:3b:00: GPU-5b7d4c1e-0000-4000-8000-000000000000",
]


@pytest.mark.parametrize("form", list(LINES))
def test_an_xid_line_in_a_log_file_is_read_in_each_format(tmp_path, form):
    line, event = LINES[form]
    log = tmp_path / "kern.log"
    log.write_text("\n".join([*NOISE, line, NOISE[0]]) + "\n")
    events, source, error, lines = read_kernel_log(str(log))
    assert (events, source, error, lines) == ((event,), str(log), "", len(NOISE) + 2)


def test_verify_node_reads_a_kernel_log_file_and_fails_on_xid_79(tmp_path):
    log = tmp_path / "dmesg.txt"
    log.write_text("\n".join([*NOISE, *(line for line, _ in LINES.values())]) + "\n")
    out = tmp_path / "r.json"
    rc = main(["verify", "node", "--quiet", "--no-plugins", "--kernel-log", str(log),
               "--json", str(out)])
    report = json.loads(out.read_text())
    xid = {r["message"].split(" (")[0]: r["status"] for r in report["results"]
           if r["check"] == "xid"}
    assert xid == {"Xid 31": "warn", "Xid 48": "fail", "Xid 79": "fail", "Xid 119": "fail"}
    assert rc == 2


def test_a_missing_kernel_log_is_bad_input(tmp_path, capsys):
    rc = main(["verify", "node", "--kernel-log", str(tmp_path / "nope.log")])
    assert rc == 4 and "does not exist" in capsys.readouterr().err


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="/dev/kmsg not readable here")
def test_dev_kmsg_is_read_and_then_read_on_from_where_it_stopped():
    events, source, error, lines = read_kernel_log("/dev/kmsg")
    assert (source, error) == ("/dev/kmsg", "") and lines > 0
    again = read_kernel_log("/dev/kmsg")
    assert again[3] >= lines and again[0][: len(events)] == events


def test_the_default_kernel_log_lookup_never_raises_and_says_what_it_read():
    events, source, error, lines = read_kernel_log()
    assert bool(source) != bool(error)  # either it names what it read, or why it read nothing
    assert lines >= 0 and (lines == 0 or source)
    assert all(isinstance(e, XidEvent) for e in events)


def test_no_infiniband_on_this_machine_is_read_as_absent():
    if os.path.isdir("/sys/class/infiniband"):
        ports, error = read_ib_ports()
        assert ports or error
        pytest.skip("this machine has /sys/class/infiniband")
    ports, error = read_ib_ports()
    assert ports == () and "/sys/class/infiniband absent" in error


def test_ib_ports_are_read_from_a_sysfs_tree(tmp_path):
    # The layout and contents of /sys/class/infiniband/<dev>/ports/<n>/ on a ConnectX-6 host
    for dev, state, phys, rate in (("mlx5_0", "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)"),
                                   ("mlx5_1", "1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)")):
        port = tmp_path / dev / "ports" / "1"
        port.mkdir(parents=True)
        for name, value in (("state", state), ("phys_state", phys), ("rate", rate),
                            ("link_layer", "InfiniBand")):
            (port / name).write_text(value + "\n")
    ports, error = read_ib_ports(str(tmp_path))
    assert error == ""
    assert [(p.device, p.port, p.state, p.phys_state, p.rate) for p in ports] == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", "200 Gb/sec (4X HDR)"),
        ("mlx5_1", 1, "DOWN", "Polling", "10 Gb/sec (4X SDR)"),
    ]


def test_network_interfaces_match_sys_class_net_and_lo_is_up():
    got = {i.name: i for i in read_net_interfaces()}
    assert set(got) == set(os.listdir("/sys/class/net"))
    assert got["lo"].up
    if shutil.which("ip"):
        out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        up = {ln.split(": ")[1].split("@")[0] for ln in out.splitlines() if "<" in ln
              and "UP" in ln.split("<")[1].split(">")[0].split(",")}
        assert up == {n for n, i in got.items() if i.up}


def test_limits_and_shm_are_this_process_s():
    host = collect_host_health()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert (host.nofile_soft, host.nofile_hard) == (
        -1 if soft == resource.RLIM_INFINITY else soft, -1 if hard == resource.RLIM_INFINITY
        else hard)
    st = os.statvfs("/dev/shm")
    assert host.shm_bytes == st.f_blocks * st.f_frsize
    if shutil.which("df"):
        df = subprocess.run(["df", "-B1", "--output=size", "/dev/shm"], capture_output=True,
                            text=True).stdout.split()
        assert int(df[-1]) == host.shm_bytes
    assert host.collected


def test_interfaces_are_read_when_a_variable_names_one(monkeypatch, tmp_path):
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    monkeypatch.delenv("UCX_NET_DEVICES", raising=False)
    monkeypatch.delenv("NCCL_IB_HCA", raising=False)
    assert collect_host_health().net_interfaces == ()
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "lo")
    log = tmp_path / "empty.log"
    log.write_text("")
    host = collect_host_health(kernel_log=str(log))
    assert "lo" in {i.name for i in host.net_interfaces}
    assert host.uptime_seconds > 0 and host.kernel_log_source == str(log)
    facts = collect_node_facts()
    r = [r for r in run_node_checks(facts, Expectations(), "here", plugins=False)
         if r.check == "net-devices"]
    assert [(x.status.value, x.message) for x in r] == [("pass", "NCCL_SOCKET_IFNAME lo -> lo")]


def test_limits_set_for_a_worker_process_are_what_its_facts_say(tmp_path):
    # as a Slurm prolog or a container would: lower the limits, start the interpreter
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, resource.getrlimit(
            resource.RLIMIT_NOFILE)[1]))
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (65536, resource.getrlimit(
            resource.RLIMIT_MEMLOCK)[1]))

    out = subprocess.run([sys.executable, "-I", "-"], input=standalone_source(),
                         capture_output=True, text=True, preexec_fn=lower, check=True,
                         timeout=120)
    host = json.loads(out.stdout)["host_health"]
    assert (host["nofile_soft"], host["memlock_soft"]) == (512, 65536)


def test_without_nvml_there_is_no_gpu_health():
    if collect_node_facts(health=False).gpus:
        pytest.skip("this machine has GPUs: tests/gpu/test_health_gpu.py covers them")
    assert collect_gpu_health() == ()


def test_health_facts_round_trip_through_json():
    facts = with_health(healthy_a100x8(), healthy_host(xid_events=(
        XidEvent(79, "0000:37:00", 5.5, "GPU has fallen off the bus."),)))
    facts = with_gpu_health(facts, 2, pcie_width=8, errors=("mig_mode: Unknown Error",))
    facts = with_gpu_health(facts, 2, after=True, pcie_gen=1)
    back = facts_from_dict(json.loads(json.dumps(facts_to_dict(facts))))
    assert back == facts
    real = collect_node_facts()
    assert facts_from_dict(json.loads(json.dumps(facts_to_dict(real)))) == real


def test_facts_from_a_collector_without_health_load_with_defaults():
    old = facts_to_dict(healthy_a100x8())
    for key in ("gpu_health", "host_health", "gpu_health_after"):
        old.pop(key)
    facts = facts_from_dict(old)
    assert facts.gpu_health == () and not facts.host_health.collected


NOBODY_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import facts_standalone
facts = facts_standalone.load_facts(facts_standalone.DIGEST, facts_standalone.PAYLOAD)
first = facts.read_kernel_log()
print(json.dumps({"first": first[1:], "again": facts.read_kernel_log()[1:],
                  "worker": facts.read_kernel_log(fallbacks=False)[1:]}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"), reason="needs root")
def test_a_user_the_kernel_log_refuses_gets_every_reason_and_is_not_asked_again():
    import tempfile

    where = tempfile.mkdtemp(prefix="envcheck-kmsg-")
    try:
        os.chmod(where, 0o755)
        with open(os.path.join(where, "facts_standalone.py"), "w") as f:
            f.write(standalone_source())
        os.chmod(os.path.join(where, "facts_standalone.py"), 0o644)
        proc = subprocess.run(
            ["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", NOBODY_CHILD, where],
            capture_output=True, text=True, timeout=120, cwd=where,
        )
    finally:
        shutil.rmtree(where)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    source, error, _ = got["first"]
    if source == "/dev/kmsg":
        pytest.skip("kernel.dmesg_restrict=0: any user may read /dev/kmsg here")
    assert error.startswith("/dev/kmsg: ") and "dmesg" in error, error
    assert got["again"] == got["first"]  # kept: not asked again in this process
    assert got["worker"][0] == "" and "tried by verify node only" in got["worker"][1]
