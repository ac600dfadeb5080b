"""The bounded facts reader runs on every Python the collector supports (>= 3.8): a client in
an old RAPIDS env reads its workers' facts through it, so `int | None` and `tuple[X, ...]` in
the model are read, not evaluated (3.8 and 3.9 cannot evaluate them)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"

CODE = """
import json
from envcheck.verify import bounded
from envcheck.verify.facts import NodeFacts, collect_node_facts, facts_to_dict
facts = collect_node_facts()
assert bounded.read_facts(json.dumps(facts_to_dict(facts))) == facts
assert bounded.conforms(NodeFacts, {"pid": "x"}) == "pid: str, not int"
assert bounded.conforms(NodeFacts, {"gpus": [{"index": "0"}]}).startswith("gpus[0].index")
print("ok")
"""


def _python(minor: str) -> Path | None:
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))
    return found[-1] if found else None


@pytest.mark.parametrize("minor", ["3.8", "3.9"])
def test_facts_are_read_within_bounds_on_old_pythons(minor: str) -> None:
    python = _python(minor)
    if python is None:
        pytest.skip(f"needs pyenv's Python {minor}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(python), "-c", CODE], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
