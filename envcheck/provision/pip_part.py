"""The lock's pip wheels, installed with uv into the new env's own interpreter, inside the env.

A package may ship ``bin/python`` as a link to another interpreter; pip work done through it
would land in that interpreter's site-packages. So before any pip work the interpreter must
resolve inside the env (realpath), and so must every install location it reports (sysconfig);
uv is given the env as ``--prefix`` as well, so the wheels' destination is the env whatever
the interpreter says. The env is linked in a staging directory and renamed into place
afterwards: the scripts uv writes name the staging interpreter in their ``#!`` line, so those
lines are pointed at the final prefix (and the wheel's RECORD updated to match).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from envcheck.errors import BadInput, EnvcheckError
from envcheck.provision.fetch import Fetched
from envcheck.provision.plan import Plan

_PATHS = (
    "import json, sys, sysconfig;print(json.dumps(dict(sysconfig.get_paths(), prefix=sys.prefix)))"
)
_KEYS = ("purelib", "platlib", "scripts", "data", "prefix")


class Escapes(BadInput):
    """pip work would write outside the env."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_interpreter(env: Path, final: Path) -> Path:
    """``env``'s bin/python when it and its install locations are inside ``env``; Escapes
    (naming ``final``, the prefix the user gave) otherwise."""
    python = env / "bin" / "python"
    shown = final / "bin" / "python"
    if not os.path.lexists(python):
        raise EnvcheckError(f"the lock has pip packages but {shown} does not exist")
    root = os.path.realpath(env)
    real = os.path.realpath(python)
    import subprocess  # here: a lock without pip packages never gets this far

    if not _inside(real, root):
        raise Escapes(
            f"{shown} resolves to {real}, outside the prefix: refusing to install the lock's "
            "pip packages through another interpreter"
        )
    try:
        done = subprocess.run(
            [python, "-I", "-B", "-c", _PATHS], capture_output=True, text=True, timeout=120
        )
        paths = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        raise EnvcheckError(f"{shown} cannot report its install locations: {e}") from None
    for key in _KEYS:
        where = os.path.realpath(str(paths.get(key, "")))
        if not _inside(where, root):
            shown_where = where.replace(root, str(final), 1)
            raise Escapes(
                f"{shown} installs {key} files into {shown_where}, outside the prefix: "
                "refusing the pip part"
            )
    return python


def install(plan: Plan, fetched: Sequence[Fetched], env: Path, final: Path) -> None:
    """Install the checked wheels into ``env`` (to be renamed to ``final``)."""
    if not plan.pip:
        return
    import tempfile

    from envcheck.uv_runner import run_uv  # here: imported only for a lock with pip packages

    python = check_interpreter(env, final)
    by_url = {f.artifact.url: f for f in fetched}
    lines = [f"{a.name} @ {by_url[a.url].path.as_uri()} --hash=sha256:{a.sha256}" for a in plan.pip]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("\n".join(lines) + "\n")
    try:
        done = run_uv(
            "pip", "install", "--python", str(python), "--prefix", str(env), "--no-deps",
            "--no-index", "--require-hashes", "--offline", "--no-cache",
            "--break-system-packages", "--quiet", "-r", req.name,
            # no bytecode from the staging tree: it would name the staging path
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        )
    finally:
        os.unlink(req.name)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise EnvcheckError(f"pip part failed in {final}: {last}", detail=done.stderr)
    relocate_scripts(env, final)


def _record_hash(data: bytes) -> str:
    import base64

    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def relocate_scripts(env: Path, final: Path) -> int:
    """Point ``#!`` lines of pip-installed scripts from ``env`` at ``final``; the count."""
    old, new = os.fsencode(env), os.fsencode(final)
    changed = 0
    for record in env.glob("lib/python*/site-packages/*.dist-info/RECORD"):
        rows = record.read_text().splitlines()
        out = []
        for row in rows:
            rel = row.partition(",")[0]
            target = (record.parent.parent / rel).resolve()
            if target.parent == (env / "bin").resolve() and target.is_file():
                data = target.read_bytes()
                # the #! line, or uv's three-line /bin/sh form for long interpreter paths
                lines = data.split(b"\n", 3)
                head = b"\n".join(lines[: 3 if lines[0] == b"#!/bin/sh" else 1])
                if data[:2] == b"#!" and old in head:
                    data = head.replace(old, new) + data[len(head) :]
                    target.write_bytes(data)
                    row = f"{rel},{_record_hash(data)},{len(data)}"
                    changed += 1
            out.append(row)
        if changed:
            record.write_text("\n".join(out) + "\n")
    return changed
