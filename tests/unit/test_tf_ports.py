"""The ports verify job --tensorflow gives TensorFlow's gRPC servers (tf_job.free_ports)."""

from __future__ import annotations

import socket

from envcheck.verify.job import tf_job
from envcheck.verify.job.launch import PORT_RANGE, LaunchInfo
from envcheck.verify.job.tf_job import _ephemeral_low, free_ports, ports_needed


def test_a_block_of_free_ports_below_the_ephemeral_range():
    """Each port of the block binds, and none is one the kernel could hand another process's
    outgoing connection meanwhile."""
    for count in (1, 4):
        base = free_ports(count)
        assert base >= PORT_RANGE[0] and base + count <= min(PORT_RANGE[1], _ephemeral_low())
        held = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("", port))
        finally:
            for s in held:
                s.close()


def test_a_block_skips_a_port_one_address_holds(monkeypatch):
    """In a range of two ports whose first is held on 127.0.0.1 only (as verify job's
    rendezvous holds MASTER_ADDR's), the block is the second, every time."""
    held = None
    for first in range(*PORT_RANGE):
        held = socket.socket()
        try:
            held.bind(("127.0.0.1", first))
            with socket.socket() as probe:
                probe.bind(("", first + 1))
            break
        except OSError:
            held.close()
    try:
        monkeypatch.setattr(tf_job, "PORT_RANGE", (first, first + 2))
        assert {free_ports(1) for _ in range(20)} == {first + 1}
    finally:
        held.close()


def test_srun_needs_as_many_ports_as_one_node_has_tasks():
    slurm = LaunchInfo("slurm", 0, 5, 0, hosts=("a", "b"), tasks_per_node=(3, 2))
    assert ports_needed(slurm) == 3
    assert ports_needed(LaunchInfo("torchrun", 0, 4, 0)) == 1
    assert ports_needed(LaunchInfo("slurm", 0, 1, 0)) == 1  # srun said nothing of its nodes
