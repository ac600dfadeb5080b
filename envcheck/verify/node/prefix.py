"""Facts of an environment envcheck is not installed in: a conda prefix or a venv.

The environment's own interpreter runs the standard-library collector (the facts package, as
verify/shipping.py's standalone source on stdin) with ``-I``, so it sees its own site-packages
and conda-meta and nothing of envcheck's environment; its import and library probes run under
that interpreter too. Nothing is
installed into the environment and nothing in it changes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput, EnvcheckError
from envcheck.verify.facts import NodeFacts, facts_from_dict
from envcheck.verify.shipping import standalone_source

# The collector's own work beyond the probes (a cold interpreter, NVML, ucx_info).
_OVERHEAD_SECONDS = 60.0


def interpreter(prefix: Path) -> Path:
    """The environment's python: bin/python or bin/python3 of a venv or conda prefix."""
    if not prefix.is_dir():
        raise BadInput(f"--prefix: no such directory: {prefix}")
    for name in ("python", "python3"):
        candidate = prefix / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BadInput(
        f"--prefix {prefix}: no Python interpreter in it (looked for bin/python, bin/python3): "
        "not a conda environment or venv"
    )


def collect_prefix_facts(
    prefix: Path,
    import_modules: tuple[str, ...] = (),
    libraries: tuple[str, ...] = (),
    probe_timeout: float = 60.0,
) -> NodeFacts:
    """NodeFacts as the environment at ``prefix`` sees itself, from its own interpreter."""
    python = interpreter(prefix)
    kwargs: dict[str, Any] = {
        "import_modules": list(import_modules),
        "libraries": list(libraries),
        "probe_timeout": probe_timeout,
    }
    limit = _OVERHEAD_SECONDS + (probe_timeout if import_modules or libraries else 0.0)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}
    try:
        proc = subprocess.run(
            # the script on stdin ("-"): it loads the package and prints the facts as one JSON
            # line, collected with the keyword arguments in argv[1]
            [str(python), "-I", "-", json.dumps(kwargs)],
            input=standalone_source(),
            capture_output=True,
            text=True,
            timeout=limit,
            env=env,
            cwd=str(prefix),  # not the caller's directory: nothing of it on the path
        )
    except subprocess.TimeoutExpired:
        raise EnvcheckError(
            f"--prefix {prefix}: its python did not finish collecting facts in {limit:g} s"
        ) from None
    except OSError as e:
        raise BadInput(f"--prefix {prefix}: cannot run {python}: {e.strerror or e}") from None
    if proc.returncode != 0:
        raise BadInput(f"--prefix {prefix}: {_failure(python, proc.stderr)}")
    try:
        return facts_from_dict(json.loads(proc.stdout))
    except (ValueError, TypeError, KeyError) as e:
        raise EnvcheckError(f"--prefix {prefix}: unreadable facts from {python} ({e})") from None


def _failure(python: Path, stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "no message"
    if "SyntaxError" in last or "invalid syntax" in stderr:
        return f"{python} is too old for envcheck's collector (Python >= 3.8 needed): {last}"
    return f"{python} could not collect facts: {last[:300]}"


def prefix_summary(prefix: Path, facts: NodeFacts) -> dict[str, str]:
    """What the report's environment says about a checked prefix."""
    versions = {**facts.python_packages, **facts.packages}
    return {
        "prefix": str(prefix),
        "prefix python": facts.python,
        "prefix dask": versions.get("dask") or versions.get("dask-core") or "not installed",
        "prefix distributed": versions.get("distributed") or "not installed",
    }
