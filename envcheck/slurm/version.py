"""Which Slurm the sbatch script is written for: what its srun lines may use.

`srun --overlap` exists from Slurm 20.11 (before it, steps share the allocation's CPUs by
default and the flag is refused); `--gpus-per-task` from 19.05. An older target (down to
17.11, common on EL7 sites) gets `--gres=gpu:G` per node and each task picks the GPU of its
node-local rank from CUDA_VISIBLE_DEVICES. The version is `--slurm-version`, else what
`sinfo --version` says here, else the oldest supported, whose script runs everywhere.
"""

from __future__ import annotations

import re
import subprocess

from envcheck.errors import BadInput

OLDEST = (17, 11)
OVERLAP = (20, 11)  # srun --overlap
GPUS_PER_TASK = (19, 5)  # srun --gpus-per-task
_VERSION = re.compile(r"^(\d{2})\.(\d{1,2})(?:\.\d+)?$")


def parse(text: str) -> tuple[int, int]:
    """'23.02' or '17.11.13' -> (23, 2); BadInput for anything else or older than 17.11."""
    found = _VERSION.match(text.strip())
    if found is None:
        raise BadInput(f"--slurm-version {text!r}: a Slurm release, e.g. 17.11 or 23.02")
    version = (int(found.group(1)), int(found.group(2)))
    if version < OLDEST:
        raise BadInput(f"--slurm-version {text}: the scripts need Slurm >= 17.11")
    return version


def detect(timeout: float = 10.0) -> tuple[int, int] | None:
    """This host's Slurm per `sinfo --version` ('slurm 23.02.7'); None when it cannot say."""
    try:
        out = subprocess.run(["sinfo", "--version"], capture_output=True, text=True,
                             timeout=timeout, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"slurm[- ](\d+\.\d+)", out)
    return parse(found.group(1)) if found else None


def text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]:02d}"
