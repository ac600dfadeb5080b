"""NVIDIA Xid events from the kernel log: /dev/kmsg (read on across collections), dmesg,
journalctl -k, or a saved log file."""

from __future__ import annotations

import os
import re
import stat
import time

from .caches import _CACHE
from .model import XidEvent
from .probes import _tail

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

# kernel log takes: /dev/kmsg records ("4,1234,5678901,-;NVRM: ..."), dmesg and journalctl -k
# -o short-monotonic ("[ 5.678901] NVRM: ..."), syslog files ("Nov 23 ... kernel: NVRM: ...").
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+),?\s*(.*)")
_MONOTONIC = re.compile(r"\[\s*(\d+\.\d+)\]")
_KMSG = re.compile(r"^\d+,\d+,(\d+),[^;]*;")

# path -> [fd, events, records]: /dev/kmsg is read on, not again, by later collections (a
# long-running node has ~10k records; a round of a cluster reads only what is new).
_KMSG_STATE: dict[str, list[Any]] = {}
# Bounds of their own (this package ships by value and cannot import envcheck.inputs): a saved
# log is read this far and no further, a line at most this long, /dev/kmsg for this long.
MAX_LOG_BYTES = 256 << 20
MAX_LINE_BYTES = 64 << 10
MAX_KMSG_SECONDS = 5.0
# a saved log outside these, as envcheck.inputs.open_input requires of every file it reads
_KERNEL_TREES = ("/proc", "/sys", "/dev")


def _kernel_devices() -> set[int]:
    devices = set()
    for tree in _KERNEL_TREES:
        try:
            devices.add(os.stat(tree).st_dev)
        except OSError:
            continue
    return devices


def parse_xid_line(line: str) -> XidEvent | None:
    """An XidEvent from one kernel log line in any of its formats, or None."""
    m = _XID.search(line)
    if not m:
        return None
    seconds = -1.0
    k = _KMSG.match(line)
    if k:
        seconds = int(k[1]) / 1e6
    else:
        t = _MONOTONIC.search(line[: m.start()])
        if t:
            seconds = float(t[1])
    return XidEvent(int(m[2]), m[1].lower(), seconds, m[3].strip()[:200])


def read_kernel_log(
    path: str = "", fallbacks: bool = True
) -> tuple[tuple[XidEvent, ...], str, str, int]:
    """(Xid events, source, why unreadable, lines scanned) from `path` or the first source of
    /dev/kmsg, `dmesg`, `journalctl -k -b` that this user may read.

    fallbacks=False reads /dev/kmsg only: no command is run by every worker in every round of
    a cluster.
    """
    if path:
        return _read_log_path(path)
    events, source, error, lines = _read_log_path("/dev/kmsg")
    if not error:
        return events, source, error, lines
    if not fallbacks:
        return (), "", f"{error} (dmesg and journalctl -k are tried by verify node only)", 0
    refused = _CACHE.get("kernel-log-refused")
    uid = os.getuid() if hasattr(os, "getuid") else -1
    if refused is not None and refused[0] == uid:
        # every source refused this user before: permissions do not change in a process's
        # life, and asking again costs two processes per collection on every worker
        return (), "", refused[1], 0
    import subprocess  # the fallbacks only

    why = [error]
    for cmd in (["dmesg"], ["journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            why.append(f"{cmd[0]}: {e}")
            continue
        if proc.returncode != 0:
            why.append(f"{cmd[0]}: {_tail(proc.stderr) or f'exit {proc.returncode}'}")
            continue
        text = proc.stdout.splitlines()
        if cmd[0] == "journalctl" and not any(_MONOTONIC.match(t) for t in text):
            # a user outside the systemd-journal / adm groups gets "-- No entries --", exit 0
            why.append("journalctl -k: no kernel entries visible to this user")
            continue
        found = tuple(e for e in map(parse_xid_line, text) if e is not None)
        return found, " ".join(cmd[:2]) if cmd[0] == "journalctl" else "dmesg", "", len(text)
    _CACHE["kernel-log-refused"] = (uid, "; ".join(why))
    return (), "", "; ".join(why), 0


def is_kmsg(path: str) -> bool:
    """`path` is the kernel's log device (char 1:11, /dev/kmsg under any name)."""
    try:
        return is_kmsg_device(os.stat(path))
    except OSError:
        return False


def is_kmsg_device(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 11)


def _read_log_path(path: str) -> tuple[tuple[XidEvent, ...], str, str, int]:
    try:
        st = os.stat(path)
    except OSError as e:
        return (), path, f"{path}: {e.strerror or e}", 0
    if is_kmsg(path):
        return _read_kmsg(path)
    if not stat.S_ISREG(st.st_mode):
        # /dev/zero or a FIFO would be read forever: only kmsg and saved logs are logs
        return (), path, f"{path}: {_kind(st.st_mode)}, not /dev/kmsg or a saved log file", 0
    real = os.path.realpath(path)
    if any(real == t or real.startswith(t + "/") for t in _KERNEL_TREES):
        # /proc/kmsg is "regular": a read of it waits for the kernel and consumes its log
        return (), path, f"{path}: under /{real.split('/')[1]}, not /dev/kmsg or a saved log", 0
    return _read_saved(path)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _read_saved(path: str) -> tuple[tuple[XidEvent, ...], str, str, int]:
    """A saved log (dmesg output, kern.log, journalctl -k), read to MAX_LOG_BYTES at most, one
    bounded line at a time (a file without newlines is not one huge line in memory)."""
    found, lines, size = [], 0, 0
    try:
        # O_NONBLOCK, kept: what became a FIFO or a kernel file since the stat cannot block
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_dev in _kernel_devices():
            os.close(fd)
            return (), path, f"{path}: not a saved log file", 0
        with os.fdopen(fd, "rb") as f:
            for raw in iter(lambda: f.readline(MAX_LINE_BYTES), b""):
                size += len(raw)
                if size > MAX_LOG_BYTES:
                    why = f"{path}: read only the first {MAX_LOG_BYTES >> 20} MiB"
                    return tuple(found), path, why, lines
                lines += 1
                if b"Xid" in raw:
                    event = parse_xid_line(raw.decode("utf-8", "replace"))
                    if event is not None:
                        found.append(event)
    except OSError as e:
        return tuple(found), path, f"{path}: {e.strerror or e}", lines
    return tuple(found), path, "", lines


def _read_kmsg(path: str) -> tuple[tuple[XidEvent, ...], str, str, int]:
    state = _KMSG_STATE.get(path)
    if state is None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            return (), path, f"{path}: {e.strerror or e}", 0
        state = _KMSG_STATE[path] = [fd, [], 0]
    fd, events, count = state
    deadline = time.monotonic() + MAX_KMSG_SECONDS
    while time.monotonic() < deadline:  # a flood is cut at the deadline
        try:
            record = os.read(fd, 8192)
        except BlockingIOError:  # no record left
            break
        except BrokenPipeError:  # records were overwritten before we read them: go on
            continue
        except OSError as e:
            os.close(fd)
            del _KMSG_STATE[path]
            return tuple(events), path, f"{path}: {e.strerror or e}", count
        if not record:
            break
        count += 1
        line = record.decode("utf-8", "replace")
        if "Xid" in line:
            event = parse_xid_line(line)
            if event is not None:
                events.append(event)
    state[2] = count
    return tuple(events), path, "", count
