"""Processes as /proc shows them: one process's owner, parent and command line, and the ppid
chain above a process. Standard library only.

    /proc/<pid>/status     Name:, PPid:, Uid: (real, effective, ...)
    /proc/<pid>/cmdline    argv, NUL-separated ("" for kernel threads and zombies)

A process another pid namespace hides, or one that exits while it is read, is left out (no
ProcessInfo), never guessed.
"""

from __future__ import annotations

import os

from .model import ProcessInfo

# A command line is kept to this many characters: enough to tell `dask cuda worker` from
# `torchrun` from `python train.py`, short enough for a report line.
COMMAND_CHARS = 160
# The ppid chain is followed this far at most (a chain that loops means /proc changed under us).
MAX_DEPTH = 64


def read_process(pid: int) -> ProcessInfo | None:
    """pid's parent, owner and command line from /proc; None when it cannot be read."""
    fields: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key in ("Name", "PPid", "Uid"):
                    fields[key] = value.strip()
                    if len(fields) == 3:
                        break
        ppid = int(fields["PPid"])
        uid = int(fields["Uid"].split()[0])
    except (OSError, KeyError, ValueError, IndexError):
        return None
    return ProcessInfo(pid=pid, ppid=ppid, user=user_name(uid),
                       command=_command(pid) or fields.get("Name", ""))


def ancestors(pid: int) -> tuple[ProcessInfo, ...]:
    """pid's parent, grandparent, ... up the ppid chain, nearest first; ends at a process with
    no parent (pid 1, a pid namespace's top), at one that cannot be read, or at MAX_DEPTH."""
    me = read_process(pid)
    out: list[ProcessInfo] = []
    seen = {pid}
    parent = me.ppid if me else 0
    while parent > 0 and parent not in seen and len(out) < MAX_DEPTH:
        info = read_process(parent)
        if info is None:
            break
        out.append(info)
        seen.add(parent)
        parent = info.ppid
    return tuple(out)


def user_name(uid: int) -> str:
    """The account name of uid, or the uid as text when no account has it."""
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(COMMAND_CHARS * 4)
    except OSError:
        return ""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    text = " ".join(text.split())  # no newlines or tabs from argv into a report line
    return text[:COMMAND_CHARS]


def own_pids(root: int) -> tuple[int, ...]:
    """root and all its descendants, from /proc/<pid>/stat parent links."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return (root,)
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name in (...) may contain spaces and parentheses: split after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return tuple(sorted(out))
