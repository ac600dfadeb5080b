"""Which platform uv resolves a recipe's pip entries for, and which wheels the target loads.

uv's ``--python-platform`` takes only some ``manylinux_2_N`` values (uv 0.13: 2_17, 2_28 and
2_31 to 2_40). A target glibc is mapped to the newest of them at or below it: uv then admits
no wheel the target cannot load (a glibc 2.26 host resolves as manylinux_2_17, 2.29 as
manylinux_2_28). The wheel tags a target installs follow its exact glibc, so the file written
to the lock for a version uv chose may be a newer manylinux wheel the target still loads.
"""

from __future__ import annotations

from collections.abc import Mapping

from envcheck.errors import BadInput
from envcheck.lockfile.names import PLATFORM_ARCH

# the manylinux_2_N minors uv's --python-platform accepts (`uv pip compile --help`)
UV_MANYLINUX = (17, 28, *range(31, 41))


def uv_manylinux(minor: int) -> int:
    """The newest glibc 2.N uv accepts that is not newer than 2.``minor``."""
    if minor < UV_MANYLINUX[0]:
        raise BadInput(f"pip entries need glibc >= 2.{UV_MANYLINUX[0]} (manylinux_2_17)")
    return max(m for m in UV_MANYLINUX if m <= minor)


def glibc_minor(system: Mapping[str, str], platform: str) -> int:
    text = system.get("glibc", "2.17")
    try:
        major, minor = (int(x) for x in text.split(".")[:2])
    except ValueError:
        raise BadInput(f"system.glibc {text!r} is not a version like 2.28") from None
    if major != 2 or minor < 17:
        raise BadInput(f"pip entries need glibc >= 2.17 on {platform} (manylinux_2_17)")
    return minor


def linux_tags(arch: str, minor: int) -> list[str]:
    """The manylinux platform tags a glibc 2.``minor`` host loads, newest first."""
    tags = [f"manylinux_2_{m}_{arch}" for m in range(minor, 16, -1)]
    tags += [f"manylinux2014_{arch}"] + (
        [f"manylinux2010_{arch}", f"manylinux1_{arch}"] if arch == "x86_64" else []
    )
    return tags + [f"linux_{arch}"]


def target_platform(
    platform: str, system: Mapping[str, str]
) -> tuple[str, list[str], list[str]]:
    """(uv's --python-platform, the wheel platform tags the target loads, the tags uv admits),
    the tags newest first."""
    if platform in PLATFORM_ARCH:
        arch = PLATFORM_ARCH[platform]
        minor = glibc_minor(system, platform)
        uv_minor = uv_manylinux(minor)
        return f"{arch}-manylinux_2_{uv_minor}", linux_tags(arch, minor), linux_tags(arch, uv_minor)
    if platform == "osx-arm64":
        tags = [f"macosx_{v}_0_arm64" for v in range(14, 10, -1)]
        return "aarch64-apple-darwin", tags, tags
    if platform == "osx-64":
        tags = [f"macosx_10_{v}_x86_64" for v in range(15, 8, -1)]
        return "x86_64-apple-darwin", tags, tags
    if platform == "win-64":
        return "x86_64-pc-windows-msvc", ["win_amd64"], ["win_amd64"]
    raise BadInput(f"pip entries are not supported for platform {platform}")


def wheels_note(filenames: list[str], platform: str, system: Mapping[str, str]) -> str | None:
    """What the build says of the chosen wheels' tags against the exact target glibc (the
    lock's check, el7.check_solution, refuses any that need more); None off linux."""
    from envcheck.resolve import el7

    glibc = system.get("glibc")
    if platform not in PLATFORM_ARCH or not glibc or not filenames:
        return None
    arch = PLATFORM_ARCH[platform]
    needs = sorted(((n, fn) for fn in filenames if (n := el7.wheel_needs(fn, arch))),
                   key=lambda x: tuple(int(v) for v in x[0].split(".")))
    uv_minor = uv_manylinux(glibc_minor(system, platform))
    text = (f"{len(filenames)} pip files checked against glibc {glibc} (uv resolved for "
            f"{arch}-manylinux_2_{uv_minor}, the nearest it accepts that admits nothing newer)")
    if not needs:
        return text + ": none is tied to a glibc"
    top, fn = needs[-1]
    return text + f": the newest needs glibc {top} ({fn})"
