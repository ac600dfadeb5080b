"""The stamp an install leaves in the env, ``conda-meta/envcheck-install.json``: the lock (path
and sha256) and platform it was made from. An install whose stamp matches its lock does nothing
(unless forced)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from envcheck.provision.plan import Plan
from envcheck.version import __version__

STAMP = "envcheck-install.json"  # under <prefix>/conda-meta/


def read(prefix: Path) -> dict | None:
    try:
        return json.loads((prefix / "conda-meta" / STAMP).read_text())
    except (OSError, ValueError):
        return None


def is_current(prefix: Path, plan: Plan) -> bool:
    stamp = read(prefix)
    return bool(
        stamp
        and stamp.get("lock_sha256") == plan.lock_sha256
        and stamp.get("platform") == plan.platform
    )


def write(prefix: Path, plan: Plan) -> None:
    body = {
        "lock": str(plan.lock.resolve()),
        "lock_sha256": plan.lock_sha256,
        "platform": plan.platform,
        "conda_packages": len(plan.conda),
        "pip_packages": len(plan.pip),
        "envcheck": __version__,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = prefix / "conda-meta" / STAMP
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)
