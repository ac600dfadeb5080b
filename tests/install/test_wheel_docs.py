"""The built wheel carries the documentation: `envcheck docs` from the wheel's files alone,
away from the checkout, prints the pages (setup.py copies docs/ into envcheck/docs/)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_every_page_and_envcheck_docs_reads_them(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check",
                    "-w", str(tmp_path / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=300, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("cluster_envcheck-*.whl")
    pages = sorted(p.relative_to(ROOT / "docs").as_posix()
                   for p in (ROOT / "docs").rglob("*") if p.is_file())
    with zipfile.ZipFile(wheel) as z:
        shipped = sorted(n[len("envcheck/docs/"):] for n in z.namelist()
                         if n.startswith("envcheck/docs/"))
        z.extractall(tmp_path / "site")
    assert shipped == pages
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    proc = subprocess.run([sys.executable, "-m", "envcheck", "docs", "exit-codes"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
