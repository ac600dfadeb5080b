"""What one `envcheck image` build does, as one typed object (from flags or keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envcheck import values

OSES = ("rhel7", "centos7")  # Dockerfile.rhel7, Dockerfile.centos7
ENGINES = ("podman", "docker", "buildah")


@dataclass(frozen=True)
class ImageOptions:
    lock: Path
    os_name: str  # rhel7 or centos7
    tag: str | None = None  # default envcheck/<recipe>:<os>
    builder_image: str | None = None
    base_image: str | None = None
    platform: str = "linux-64"
    engine: str | None = None  # default: the first of podman, docker, buildah found
    print_only: bool = False  # write the context and print the command, build nothing
    show_command: bool = True  # echo the build command on stderr before it runs

    def __post_init__(self) -> None:
        object.__setattr__(self, "lock", values.path(self.lock, "LOCK"))
        values.choice(self.os_name, "--os", OSES)
        if self.engine is not None:
            values.choice(self.engine, "--engine", ENGINES)
        for name in ("tag", "builder_image", "base_image"):
            values.optional_text(getattr(self, name), "--" + name.replace("_", "-"))
        values.text(self.platform, "--platform")
        values.flag(self.print_only, "--print")
        values.flag(self.show_command, "show_command")
