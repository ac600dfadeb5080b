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


def test_the_sdist_is_complete_and_its_wheel_carries_the_docs(tmp_path: Path) -> None:
    """The sdist holds what builds, tests and documents envcheck (docs, recipes, locks, the
    conda recipe, tests), and a wheel built from it alone still ships the pages."""
    import tarfile

    made = subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
         "print(build_meta.build_sdist(sys.argv[1]))", str(tmp_path / "sdist")],
        check=True, capture_output=True, text=True, timeout=300, cwd=ROOT)
    sdist = tmp_path / "sdist" / made.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        tar.extractall(tmp_path / "src", filter="data")
    for needed in ("docs/exit-codes.md", "docs/expect/README.md", "conda/recipe.yaml",
                   "recipes/pangeo-ml-2023.10.yaml", "locks/pangeo-ml-2023.10.conda-lock.yml",
                   "tests/unit/test_docs_links.py", "setup.py", "README.md", "LICENSE"):
        assert needed in names, needed
    (src,) = (tmp_path / "src").iterdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check",
                    "-w", str(tmp_path / "dist"), str(src)],
                   check=True, capture_output=True, timeout=300, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("cluster_envcheck-*.whl")
    with zipfile.ZipFile(wheel) as z:
        assert "envcheck/docs/exit-codes.md" in z.namelist()
