"""What `envcheck verify node` imports: the start-up cuts (BENCHMARKS.md, "verify node --quiet
start-up") stay cut."""

from __future__ import annotations

import subprocess
import sys

# modules `verify node` with no --lock, --expect, --skip or --prefix has no use for
NOT_IMPORTED = (
    "dataclasses", "typing", "inspect", "traceback", "envcheck.lockfile.model",
    "envcheck.lockfile.read", "envcheck.verify.catalog", "envcheck.verify.expect_file",
    "envcheck.verify.shipping", "envcheck.verify.node.prefix", "envcheck.resolve",
)


def test_verify_node_imports_none_of_what_it_does_not_use() -> None:
    code = (
        "import sys\n"
        "from envcheck.cli import main\n"
        "main(['verify', 'node', '--quiet', '--no-plugins'])\n"
        f"print(sorted(m for m in {NOT_IMPORTED!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
