"""Every entry point that reads a path a user names, given the kernel's files and what is not a
file: the real /proc/kmsg (as root a read of it waits for the kernel to log, and consumes
what it returns), a symlink to it, a FIFO nobody writes, a device node made with mknod in a
temp dir, a directory. Each is refused before it is read: exit 4, one line naming the path
and what it is, no hang (a 60 s deadline catches one)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from envcheck.errors import BadInput
from envcheck.inputs import check_regular, open_input, read_bytes
from envcheck.verify.facts.kernel_log import is_kmsg_device, read_kernel_log
from tests.unit.test_inputs import READERS, run_cli

KMSG = Path("/proc/kmsg")
SAYS = {
    "kmsg": "is under /proc: a kernel interface, not a regular file",
    "kmsg-link": "resolves to /proc/kmsg, under /proc: a kernel interface",
    "fifo": "is a FIFO, not a regular file",
    "mknod": "is a character device, not a regular file",
    "directory": "is a directory, not a regular file",
}
LOCK = Path(__file__).parents[1] / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"

ENTRY_POINTS = {
    **READERS,
    "verify node --expect": lambda p, t: ["verify", "node", "--expect", str(p), "--no-plugins"],
    "why PKG LOCK": lambda p, t: ["why", "python", str(p)],
    "why --not PKG RECIPE": lambda p, t: ["why", "--not", "python", str(p)],
    "why --recipe": lambda p, t: ["why", "python", str(LOCK), "--recipe", str(p)],
    "diff OLD (a good NEW)": lambda p, t: ["diff", str(p), str(LOCK)],
    "diff NEW (a good OLD)": lambda p, t: ["diff", str(LOCK), str(p)],
    "image LOCK": lambda p, t: ["image", str(p), "--os", "centos7", "--print"],
    "verify cluster --tls-cert": lambda p, t: ["verify", "cluster", "tls://127.0.0.1:1",
                                               "--tls-ca-file", str(LOCK), "--tls-cert", str(p),
                                               "--tls-key", str(LOCK)],
    "verify cluster --tls-key": lambda p, t: ["verify", "cluster", "tls://127.0.0.1:1",
                                              "--tls-ca-file", str(LOCK), "--tls-cert", str(LOCK),
                                              "--tls-key", str(p)],
}


def planted(tmp_path: Path, kind: str) -> Path:
    if kind == "kmsg":
        if not KMSG.exists():
            pytest.skip("no /proc/kmsg here")
        return KMSG
    p = tmp_path / kind
    if kind == "kmsg-link":
        p.symlink_to(KMSG)
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "mknod":
        if os.geteuid() != 0:
            pytest.skip("mknod of a character device needs root")
        os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 11))  # /dev/kmsg's numbers
    elif kind == "directory":
        p.mkdir()
    return p


@pytest.mark.parametrize("kind", list(SAYS))
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_refuses_kernel_files_and_non_files_before_reading(
        tmp_path, capsys, entry, kind):
    if kind == "fifo" and entry == "verify node --facts":
        pytest.skip("--facts reads a FIFO to its deadline (test_inputs.py)")
    if kind == "mknod" and entry == "verify node --kernel-log":
        pytest.skip("--kernel-log reads a kmsg device: the test below")
    if entry == "verify cluster --jobqueue-config":
        pytest.importorskip("dask_jobqueue")
    p = planted(tmp_path, kind)
    rc = run_cli(ENTRY_POINTS[entry](p, tmp_path), seconds=60)
    err = capsys.readouterr().err
    assert rc == 4, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(p) in err and SAYS[kind] in err, err


def test_kernel_log_still_reads_a_kmsg_device_but_not_proc_kmsg(tmp_path):
    """--kernel-log's one device: a kmsg node (char 1:11) under any name; /proc/kmsg, the
    same log as a "regular" file that blocks, is refused by the CLI and by the collector."""
    p = planted(tmp_path, "mknod")
    check_regular(p, "kernel log", 1 << 20, device=is_kmsg_device)
    with pytest.raises(BadInput, match="is under /proc"):
        check_regular(KMSG, "kernel log", 1 << 20, device=is_kmsg_device)
    events, _, error, lines = read_kernel_log(str(KMSG))
    assert events == () and lines == 0 and "not /dev/kmsg or a saved log" in error


def test_a_pipe_named_by_its_descriptor_is_read_where_a_fifo_is_allowed(tmp_path):
    """--facts <(cmd) names /dev/fd/63, which resolves into /proc: a pipe there is what
    process substitution gives, read to its deadline; where no FIFO is allowed it is refused."""
    r, w = os.pipe()
    try:
        os.write(w, b'{"a": 1}')
        os.close(w)
        assert read_bytes(f"/dev/fd/{r}", "facts file", 1 << 20, fifo_timeout=5) == b'{"a": 1}'
    finally:
        os.close(r)
    r, w = os.pipe()
    try:
        with pytest.raises(BadInput, match=f"lock /dev/fd/{r} is a pipe, not a regular file"):
            read_bytes(f"/dev/fd/{r}", "lock", 1 << 20)  # no FIFO allowed: refused
    finally:
        os.close(r)
        os.close(w)


def test_a_link_is_refused_where_one_is_not_wanted(tmp_path):
    target = tmp_path / "target"
    target.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(BadInput, match=f"secret {link} is a symbolic link"):
        open_input(link, "secret", follow=False)
    os.close(open_input(link, "input"))  # followed where a link is fine


def test_a_bind_mount_of_proc_is_refused_by_the_descriptors_device(tmp_path):
    """A file reached through a mount of /proc elsewhere: its name is outside /proc, its
    descriptor's device is procfs'."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    import subprocess

    where = tmp_path / "proc"
    where.mkdir()
    if subprocess.run(["mount", "--bind", "/proc", str(where)], capture_output=True).returncode:
        pytest.skip("this container cannot bind-mount /proc")
    try:
        with pytest.raises(BadInput, match="is on the /proc file system"):
            read_bytes(where / "kmsg", "lock", 1 << 20)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
