"""What one `envcheck image` build does, as one typed object (from flags or keyword
arguments): each field declared once, its flag, help and check beside it (envcheck/option.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values
from envcheck.option import REQUIRED, Option, declared

OSES = ("rhel7", "centos7")  # Dockerfile.rhel7, Dockerfile.centos7
ENGINES = ("podman", "docker", "buildah")


def _os(value: object, said: str) -> str:
    return values.choice(value, said, OSES)


def _engine(value: object, said: str) -> str | None:
    return None if value is None else values.choice(value, said, ENGINES)


@dataclass(frozen=True)
@declared
class ImageOptions:
    lock: Path = Option(REQUIRED, positional=True, type=Path, metavar="LOCK", check=values.path,
                        help="conda-lock file or pixi.lock the image installs")
    os_name: str = Option(  # rhel7 or centos7
        REQUIRED, flag="--os", choices=OSES, check=_os,
        help="which Dockerfile: Dockerfile.rhel7 or Dockerfile.centos7")
    tag: str | None = Option(  # default envcheck/<recipe>:<os>
        check=values.optional_text, help="image tag (default envcheck/<recipe>:<os>)")
    builder_image: str | None = Option(check=values.optional_text,
                                       help="BUILDER_IMAGE: any image with Python >= 3.10")
    base_image: str | None = Option(check=values.optional_text,
                                    help="BASE_IMAGE: the runtime base (default: the OS's)")
    platform: str = Option("linux-64", check=values.text, help="the lock's platform (linux-64)")
    engine: str | None = Option(  # default: the first of podman, docker, buildah found
        choices=ENGINES, check=_engine,
        help="build with this one (default: the first of podman, docker, buildah)")
    print_only: bool = Option(  # write the context and print the command, build nothing
        False, flag="--print", action="store_true", check=values.flag,
        help="write the build context and print the build command instead of running it")
    show_command: bool = True  # echo the build command on stderr before it runs (off: --quiet)

    def __post_init__(self) -> None:
        values.flag(self.show_command, "show_command")
