"""Placeholder sdists: NVIDIA publishes some packages on pypi.org as an sdist only (cuml-cu12
25.8 and older, for one), whose build downloads the real wheel from NVIDIA's own index. A lock
cannot hold such a build; the recipe must name that index (``pip_extra_index``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from packaging.utils import canonicalize_name

from envcheck.errors import Unsolvable
from envcheck.resolve.pypi_index import IndexFile

NVIDIA_INDEX = "https://pypi.nvidia.com"
_FAILED_BUILD = re.compile(r"Failed to (?:download and )?build `([A-Za-z0-9._-]+)==([^`\s]+)`")
_CUDA_SUFFIX = re.compile(r"-cu\d+$")  # cuml-cu12, libcudf-cu11: NVIDIA's per-CUDA wheels
_INDEX_SAID = re.compile(r"https?://pypi\.nvidia\.com/?")


def is_placeholder(name: str, files: Sequence[IndexFile], build_text: str = "") -> bool:
    """A version with an sdist and no wheel, of an NVIDIA per-CUDA package or whose build
    failure names NVIDIA's index."""
    if not files or any(f.tags for f in files):
        return False
    return bool(_CUDA_SUFFIX.search(canonicalize_name(name)) or _INDEX_SAID.search(build_text))


def placeholder_error(name: str, version: str, index_url: str,
                      extra_index: Sequence[str], detail: str = "") -> Unsolvable:
    where = f"{NVIDIA_INDEX} is among the recipe's pip_extra_index, yet uv took the " \
        "placeholder: that index has no wheel of it for this target or could not be read" \
        if NVIDIA_INDEX in extra_index else \
        f"add it to the recipe: pip_extra_index: [{NVIDIA_INDEX}]"
    return Unsolvable(
        f"pip: {name} {version} on {index_url} is a placeholder sdist (no wheel; building it "
        f"downloads the real wheel from {NVIDIA_INDEX}); {where}",
        detail=detail,
    )


def from_build_failure(
    stderr: str,
    files_of: Callable[[str, str], Sequence[IndexFile]],
    index_url: str,
    extra_index: Sequence[str],
) -> Unsolvable | None:
    """uv's "Failed to build `name==version`" read as a placeholder sdist, from the index's
    file list; None for any other build failure."""
    m = _FAILED_BUILD.search(stderr)
    if not m:
        return None
    name, version = canonicalize_name(m.group(1)), m.group(2)
    if not is_placeholder(name, files_of(name, version), stderr):
        return None
    return placeholder_error(name, version, index_url, extra_index, stderr)
