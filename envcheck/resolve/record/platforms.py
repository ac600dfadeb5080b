"""rapids.platform: a platform the recipe targets that the release built no conda package for,
with the CUDA majors the recipe can take (pure function).

The record's ``platforms`` fact holds, per CUDA major, the conda platforms of the release's
build matrix (ARCH amd64: linux-64, arm64: linux-aarch64): 23.08 and 23.10 built CUDA 12 for
linux-64 only. The majors a recipe can take are those its toolkit entries (cuda-version,
cudatoolkit) admit and its target driver (system.cuda) is not older than.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envcheck.resolve.record.entries import TOOLKITS, Entry
from envcheck.resolve.record.finding import ERROR, Finding
from envcheck.resolve.record.specs import overlaps
from envcheck.resolve.record.table import Release


def platform_rules(
    release: Release,
    anchor: str,
    entries: Sequence[Entry],
    system: Mapping[str, str],
    platforms: Sequence[str],
) -> list[Finding]:
    fact = release.get("platforms")
    if not platforms or not fact.known:
        return []
    built: dict[str, list[str]] = fact.value
    toolkits = [e for e in entries if e.name in TOOLKITS and e.version]
    driver = system.get("cuda")
    majors = [
        m
        for m in built
        if all(overlaps(e.version, f"{m}.*") for e in toolkits if e.version)
        and (not driver or int(m) <= int(driver.split(".")[0]))
    ]
    if not majors:
        return []  # no CUDA the recipe can take: the CUDA rules say so
    out = []
    for plat in platforms:
        if any(plat in built[m] for m in majors):
            continue
        have = [f"CUDA {m}: {', '.join(built[m])}" for m in built]
        took = f"CUDA {', '.join(majors)}" + (
            f" ({', '.join(repr(e.text) for e in toolkits)})" if toolkits else ""
        )
        out.append(
            Finding(
                "rapids.platform",
                ERROR,
                f"RAPIDS {release.label} ({anchor!r}) built no {plat} package for {took}: its "
                f"conda build matrix has {'; '.join(have)}",
                (anchor, *(e.text for e in toolkits)),
                fact.sources,
            )
        )
    return out
