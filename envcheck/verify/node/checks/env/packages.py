"""Installed packages against the lock: missing, wrong version, wrong build, by name."""

from __future__ import annotations

from envcheck.report import Result, Status
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import NodeFacts

TYPE_CHECKING = False  # the lock's model is imported only where a --lock was read
if TYPE_CHECKING:
    from envcheck.lockfile.model import LockedPackage

CHECK = "packages"
SHOW = 12  # names listed per kind of drift before "... and N more"


def _names(items: list[str]) -> str:
    more = f" ... and {len(items) - SHOW} more" if len(items) > SHOW else ""
    return ", ".join(items[:SHOW]) + more


def check_packages(facts: NodeFacts, exp: Expectations) -> list[Result]:
    """Every package of the lock (--lock) is installed at the locked version and build."""
    if not exp.lock_packages:
        return [
            Result(CHECK, Status.SKIP,
                   f"nothing asked: no lock given ({len(facts.packages)} packages installed)")
        ]
    locked = [p for p in exp.lock_packages if p.platform == facts.platform]
    if not locked:
        platforms = sorted({p.platform for p in exp.lock_packages})
        return [
            Result(
                CHECK,
                Status.FAIL,
                f"the lock has no packages for {facts.platform} (it covers {', '.join(platforms)})",
                fix=f"add {facts.platform} to the recipe's platforms and rebuild the lock",
            )
        ]
    conda = [p for p in locked if p.manager == "conda"]
    pip = [p for p in locked if p.manager != "conda"]
    if conda and facts.package_source != "conda-meta":
        return [
            Result(
                CHECK,
                Status.FAIL,
                f"the lock lists {len(conda)} conda packages but {facts.python_executable} is "
                "not in a conda environment (no conda-meta)",
                fix=f"create the environment from the lock (envcheck install "
                f"{exp.lock_path or 'LOCK'} --prefix PREFIX) and run from it",
            )
        ]
    missing: list[str] = []
    version: list[str] = []
    build: list[str] = []
    _compare(conda, facts.packages, facts.package_builds, missing, version, build)
    _compare(pip, facts.python_packages, {}, missing, version, build)
    if not (missing or version or build):
        return [
            Result(
                CHECK,
                Status.PASS,
                f"all {len(locked)} locked packages installed as locked ({exp.lock_path})",
            )
        ]
    parts = []
    if missing:
        parts.append(f"missing {len(missing)}: {_names(missing)}")
    if version:
        parts.append(f"wrong version {len(version)}: {_names(version)}")
    if build:
        parts.append(f"wrong build {len(build)}: {_names(build)}")
    return [
        Result(
            CHECK,
            Status.FAIL,
            f"environment drifted from {exp.lock_path or 'the lock'}: " + "; ".join(parts),
            fix=f"recreate the environment from the lock (envcheck install "
            f"{exp.lock_path or 'LOCK'} --prefix PREFIX), or rebuild the lock if the change "
            "was intended",
        )
    ]


def _compare(
    locked: list[LockedPackage],
    versions: dict[str, str],
    builds: dict[str, str],
    missing: list[str],
    version: list[str],
    build: list[str],
) -> None:
    for p in locked:
        have = versions.get(p.name)
        if have is None:
            missing.append(f"{p.name} {p.version}".rstrip())
        elif p.version and have != p.version:  # no version: a package the lock builds (pixi)
            version.append(f"{p.name} {have} (lock {p.version})")
        elif p.build and builds and builds.get(p.name, p.build) != p.build:
            build.append(f"{p.name} {p.version} build {builds[p.name]} (lock {p.build})")
