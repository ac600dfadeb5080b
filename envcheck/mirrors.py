"""Channel mirrors: ENVCHECK_CHANNEL_MIRRORS maps a channel URL to a mirror of it.

    ENVCHECK_CHANNEL_MIRRORS="https://conda.anaconda.org/conda-forge=https://mirror.example/cf"

(pairs separated by whitespace). `envcheck build` fetches the channel's repodata from the
mirror (py-rattler's MirrorMiddleware, in the solver child) and the lock still records the
channel's own URLs, so it installs anywhere; `envcheck install` fetches a package whose URL
starts with a mapped channel from the mirror, its hashes checked as always.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from envcheck.errors import BadInput

VARIABLE = "ENVCHECK_CHANNEL_MIRRORS"
_SCHEMES = ("https://", "http://", "file://")


def mirrors(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Channel URL -> mirror URL (no trailing slashes); BadInput (one line) naming a bad pair."""
    out: dict[str, str] = {}
    for pair in env.get(VARIABLE, "").split():
        original, sep, mirror = pair.partition("=")
        original, mirror = original.rstrip("/"), mirror.rstrip("/")
        if not sep or not original.startswith(_SCHEMES) or not mirror.startswith(_SCHEMES):
            raise BadInput(
                f"{VARIABLE}: {pair!r} is not CHANNEL_URL=MIRROR_URL "
                "(e.g. https://conda.anaconda.org/conda-forge=https://mirror.example/conda-forge)"
            )
        out[original] = mirror
    return out


def mirrored(url: str, table: Mapping[str, str]) -> str:
    """``url`` on its mirror when it lies under a mapped channel (the longest match)."""
    for original in sorted(table, key=len, reverse=True):
        if url == original or url.startswith(original + "/"):
            return table[original] + url[len(original):]
    return url
