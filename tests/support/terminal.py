"""`python -m envcheck` with its stderr a real pseudo-terminal (or a pipe) and its stdout a
pipe: what a person at a terminal sees of its progress, apart from the report."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

from tests.support.deadlines import HANG

ROOT = Path(__file__).resolve().parents[2]
# a launcher's rank variables (envcheck.progress.RANK_VARIABLES): none set unless a test says
RANKS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "HOROVOD_RANK", "SLURM_PROCID")


def run_envcheck(args: list[object], *, tty: bool, env: dict[str, str] | None = None,
                 timeout: float = HANG * 5) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of `python -m envcheck ARGS`, stderr a pseudo-terminal
    when ``tty`` (80 columns by COLUMNS: a fresh one says 0), else a pipe."""
    full = {k: v for k, v in os.environ.items() if k not in RANKS}
    full.update(PYTHONPATH=str(ROOT), COLUMNS="120", **(env or {}))
    argv = [sys.executable, "-m", "envcheck", *map(str, args)]
    if not tty:
        done = subprocess.run(argv, capture_output=True, env=full, timeout=timeout)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    got: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every end of the terminal's other side is closed
                return
            if not chunk:
                return
            got.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=full)
    os.close(slave)
    out, _ = proc.communicate(timeout=timeout)
    reader.join(HANG)
    os.close(master)
    return proc.returncode, out, b"".join(got)
