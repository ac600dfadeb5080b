"""Build an EL7 image from a lock: the build context, the build args and the engine command."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envcheck.errors import BadInput
from envcheck.lockfile import read_lock
from envcheck.version import __version__

OSES = {"rhel7": "Dockerfile.rhel7", "centos7": "Dockerfile.centos7"}
ENGINES = ("podman", "docker", "buildah")  # first one found builds
LOCK_DIR = "lock"  # the lock's folder inside the build context


@dataclass(frozen=True)
class ImageBuild:
    os: str
    lock: Path
    tag: str
    build_args: Mapping[str, str]

    def command(self, engine: str, context: Path | str) -> list[str]:
        """The exact build command for ``engine`` (podman, docker or buildah)."""
        verb = ["bud"] if engine == "buildah" else ["build"]
        args = [f"--build-arg={k}={v}" for k, v in self.build_args.items()]
        dockerfile = f"{context}/{OSES[self.os]}"
        return [engine, *verb, "-f", dockerfile, "-t", self.tag, *args, str(context)]


def lock_facts(lock: Path, platform: str) -> tuple[str, str]:
    """(recipe name, sha256 of the file) of a lock that has ``platform``; the name is '' when
    the lock has none. BadInput when it is not a lock or lacks the platform."""
    read = read_lock(lock, platform)
    return read.recipe, read.sha256


def plan_image(
    os_name: str,
    lock: Path,
    tag: str | None,
    *,
    builder_image: str | None = None,
    base_image: str | None = None,
    platform: str = "linux-64",
) -> ImageBuild:
    if os_name not in OSES:
        raise BadInput(f"unknown image OS {os_name!r}: one of {', '.join(OSES)}")
    recipe, sha = lock_facts(lock, platform)
    name = recipe or lock.name.split(".")[0]
    args = {
        "LOCK": f"{LOCK_DIR}/{lock.name}",
        "PLATFORM": platform,
        "RECIPE": name,
        "LOCK_SHA256": sha,
        "ENVCHECK_VERSION": __version__,
    }
    if builder_image:
        args["BUILDER_IMAGE"] = builder_image
    if base_image:
        args["BASE_IMAGE"] = base_image
    return ImageBuild(os_name, lock, tag or f"envcheck/{name}:{os_name}", args)


def write_context(build: ImageBuild, dest: Path) -> Path:
    """A build context holding envcheck's source, its Dockerfiles and the lock (nothing else is
    sent): from a checkout or any install (envcheck.provision.image.source)."""
    from envcheck.provision.image.source import write_source

    write_source(dest, tuple(OSES.values()))
    (dest / LOCK_DIR).mkdir()
    from envcheck.inputs import MAX_LOCK_BYTES, read_bytes

    # the bytes of the file as opened and checked, not whatever is at its path by now
    (dest / LOCK_DIR / build.lock.name).write_bytes(read_bytes(build.lock, "lock file",
                                                               MAX_LOCK_BYTES))
    return dest


def find_engine(preferred: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    path = env.get("PATH")
    for engine in [preferred] if preferred else ENGINES:
        if engine and shutil.which(engine, path=path):
            return engine
    return None


def shell_line(cmd: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(c) for c in cmd)
