"""A free local TCP port, for a server a test starts (a scheduler, a rendezvous, slurmctld)."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
