"""What reaches the terminal: control characters escaped and long lines cut (text.for_terminal,
through text.say), and values named by type and size in messages (text.shown)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from envcheck.text import for_terminal, shown

ROOT = Path(__file__).resolve().parents[2]
EXCERPT = ROOT / "tests" / "data" / "pangeo-pytorch-excerpt.conda-lock.yml"


def test_for_terminal_escapes_controls_and_cuts_each_long_line():
    out = for_terminal("a\x1b[2Jb\0c\rd\n" + "x" * 5_000_000 + "\ntail")
    assert out.startswith("a\\x1b[2Jb\\x00c\\x0dd\n")
    first, second, third = out.split("\n")
    assert second == "x" * 2000 + "... (4998000 more characters)"
    assert third == "tail"


def test_shown_names_long_or_nested_values_by_type_and_size():
    assert shown("eight") == "'eight'"
    assert shown("x" * 41) == "a str of 41 characters"
    assert shown(b"\0" * 100) == "a bytes of 100 bytes"
    assert shown([[1]] * 3) == "a list of 3 items"
    assert shown({"a": 1}) == "a mapping of 1 keys"
    assert shown(float("inf")) == "inf" and shown(True) == "True"
    assert shown(10**5000) == "an int of 40+ digits"
    assert shown("\x1b[31m") == "'\\x1b[31m'"


def test_a_lock_error_carrying_escapes_and_a_5_mb_value_is_one_short_clean_line(tmp_path):
    text = EXCERPT.read_text()
    assert "  version: '11.8'\n" in text
    hostile = tmp_path / "hostile.conda-lock.yml"
    big = "x" * (5 << 20)
    hostile.write_text(text.replace("  version: '11.8'\n", f'  version: "9\\0\\e[2J{big}"\n'))
    # py-rattler refuses the version and quotes it whole: the message carries both
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", "install", str(hostile), "--prefix",
         str(tmp_path / "env")],
        capture_output=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 4, done.stderr[:2000]
    assert b"\0" not in done.stderr and b"\x1b" not in done.stderr
    assert done.stderr.count(b"\n") == 1 and len(done.stderr) < 3000, done.stderr[:3000]
    assert b"more characters)" in done.stderr
