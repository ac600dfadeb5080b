"""How envcheck was installed, and so how to add one of its extras to that install.

The distribution is `cluster-envcheck` on PyPI (the name `envcheck` there is another project);
the command and the import package are `envcheck`. The install is told apart by its own
metadata: a checkout installed editable (PEP 610 direct_url.json), pipx or uv tool (the
interpreter lives in their environments' folders), or pip and the like (the INSTALLER file).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

DISTRIBUTION = "cluster-envcheck"


def _metadata_dir() -> Path | None:
    """The installed distribution's .dist-info folder; None when envcheck runs from a
    checkout that is not installed (PYTHONPATH, the source tree's own directory)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    meta = next((f for f in files if f.name == "METADATA"), None)
    return Path(str(dist.locate_file(meta))).parent if meta is not None else None


def _read(folder: Path | None, name: str) -> str:
    try:
        return (folder / name).read_text() if folder else ""
    except OSError:
        return ""


def _checkout() -> Path | None:
    """The source tree this envcheck is imported from, when it is one: a pyproject.toml that
    names this distribution beside the package (a clone, a tarball or an unpacked sdist alike;
    an installed envcheck sits in site-packages, which has none)."""
    root = Path(__file__).resolve().parent.parent
    found = re.search(rf'^name\s*=\s*"{DISTRIBUTION}"\s*$', _read(root, "pyproject.toml"), re.M)
    return root if found else None


def install_kind(prefix: str = sys.prefix, dist_info: Path | None = None) -> str:
    """'checkout', 'pipx', 'uv-tool', 'uv' (uv pip) or 'pip': how this envcheck was installed."""
    if _checkout() is not None:  # imported from a source tree (editable, or PYTHONPATH)
        return "checkout"
    dist_info = _metadata_dir() if dist_info is None else dist_info
    try:
        direct = json.loads(_read(dist_info, "direct_url.json") or "{}")
    except ValueError:
        direct = {}
    if direct.get("dir_info", {}).get("editable"):
        return "checkout"
    parts = Path(prefix).parts
    if "pipx" in parts and "venvs" in parts:  # ~/.local/share/pipx/venvs/NAME, $PIPX_HOME
        return "pipx"
    tool_dir = os.environ.get("UV_TOOL_DIR")
    in_tool_dir = bool(tool_dir) and Path(prefix).parent == Path(tool_dir or ".")
    if in_tool_dir or ("uv" in parts and "tools" in parts):  # ~/.local/share/uv/tools/NAME
        return "uv-tool"
    return "uv" if _read(dist_info, "INSTALLER").strip() == "uv" else "pip"


def extra_hint(extra: str, kind: str | None = None) -> str:
    """The command that adds ``extra`` (build, install, gpu, slurm) to this install."""
    kind = kind or install_kind()
    wanted = f"'{DISTRIBUTION}[{extra}]'"
    return {
        "checkout": f"pip install -e '.[{extra}]' in the checkout",
        "pipx": f"pipx install {wanted} --force",
        "uv-tool": f"uv tool install {wanted}",
        "uv": f"uv pip install {wanted}",
    }.get(kind, f"pip install {wanted}")
