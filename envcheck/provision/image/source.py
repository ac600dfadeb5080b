"""What an image's build context carries of envcheck: the Dockerfiles (package data, here in
images/) at its root, and a source tree the Dockerfiles `pip install /src` from.

From a checkout the tree is the checkout's own (pyproject.toml, README.md, envcheck/). From an
installed wheel it is the installed package with a pyproject.toml written from the install's
metadata (name, version, dependencies, the install extra, the console script): the image gets
the envcheck that built it either way.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from envcheck.distribution import DISTRIBUTION
from envcheck.errors import BadInput

IMAGES = Path(__file__).resolve().parents[1] / "images"  # provision/images
PACKAGE = Path(__file__).resolve().parents[2]  # the envcheck package these modules are in
EXTRA = re.compile(r"""\s*(?:\band\s+)?extra\s*==\s*["']([\w.-]+)["']""")


def dockerfile(name: str) -> Path:
    path = IMAGES / name
    if not path.is_file():
        raise BadInput(f"{path} is missing: this envcheck was installed without its Dockerfiles")
    return path


def write_source(dest: Path, dockerfiles: tuple[str, ...]) -> None:
    """envcheck's source tree and the Dockerfiles into the build context ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PACKAGE, dest / "envcheck", ignore=shutil.ignore_patterns("__pycache__"))
    for name in dockerfiles:
        shutil.copy2(dockerfile(name), dest / name)
    root = PACKAGE.parent
    if (root / "pyproject.toml").is_file() and (root / "README.md").is_file():
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(root / name, dest / name)
        return
    pyproject, readme = from_metadata()
    (dest / "pyproject.toml").write_text(pyproject)
    (dest / "README.md").write_text(readme)


def from_metadata() -> tuple[str, str]:
    """(pyproject.toml, README.md) of the installed distribution, from its metadata."""
    from importlib import metadata

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise BadInput(
            f"building an image needs envcheck's source: {PACKAGE} is neither in a checkout "
            f"nor an installed {DISTRIBUTION}"
        ) from None
    core: list[str] = []
    extras: dict[str, list[str]] = {}
    for req in dist.requires or []:
        found = EXTRA.search(req)
        if found is None:
            core.append(req)
            continue
        rest = EXTRA.sub("", req).strip().rstrip(";").strip()
        extras.setdefault(found.group(1), []).append(rest)
    meta = dist.metadata
    lines = [
        "[build-system]", 'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"', "", "[project]",
        f"name = {json.dumps(meta['Name'])}", f"version = {json.dumps(meta['Version'])}",
        f"requires-python = {json.dumps(meta['Requires-Python'] or '>=3.8')}",
        'readme = "README.md"', f"dependencies = {json.dumps(core)}", "",
        "[project.optional-dependencies]",
        *(f"{json.dumps(name)} = {json.dumps(reqs)}" for name, reqs in sorted(extras.items())),
        "", "[project.scripts]",
        *(f"{ep.name} = {json.dumps(ep.value)}" for ep in dist.entry_points
          if ep.group == "console_scripts"),
        "", "[tool.setuptools.packages.find]", 'include = ["envcheck*"]', "",
        "[tool.setuptools.package-data]", '"*" = ["*.json", "images/Dockerfile.*"]', "",
    ]
    return "\n".join(lines), (meta.get_payload() or meta["Summary"] or "") + "\n"
