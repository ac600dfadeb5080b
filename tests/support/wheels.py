"""Hand-made pure-Python wheels standing in for a lock's PyPI entry (six 1.17.0, as the install
world's lock pins it): real zip files with METADATA, WHEEL and a RECORD of their own hashes."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

DIST = "six-1.17.0.dist-info"


def record_digest(data: bytes) -> str:
    """A RECORD row's hash and size: `sha256=<urlsafe base64, unpadded>,<bytes>`."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def six_wheel(dest: Path, files: dict[str, bytes]) -> Path:
    """dest/six-1.17.0-py3-none-any.whl holding `files` (path in the wheel -> bytes; a
    `{DIST}/...` path adds to the dist-info) besides its METADATA, WHEEL and RECORD."""
    files = {
        **files,
        f"{DIST}/METADATA": b"Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n",
        f"{DIST}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    rows = [f"{name},{record_digest(data)}" for name, data in files.items()]
    record = "\n".join([*rows, f"{DIST}/RECORD,,"]) + "\n"
    path = dest / "six-1.17.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{DIST}/RECORD", record)
    return path
