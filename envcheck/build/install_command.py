"""`envcheck install` lives in envcheck.provision; registered here so the CLI treats it as a
build-side verb (Python >= 3.10 and the build extra: py-rattler links, uv installs pip wheels)."""

from envcheck.provision.command import add_arguments, run

__all__ = ["add_arguments", "run"]
