"""argparse value types shared by the verbs (Python 3.8: the verify side imports this)."""

from __future__ import annotations

import argparse
import math

from envcheck.text import shown

MAX_SECONDS = 30 * 86400.0  # 30 days: longer than any run; 1e308 overflows a deadline


def seconds(text: str) -> float:
    """A finite number of seconds of at most MAX_SECONDS: 'nan', 'inf' and '1e308' are bad
    input (exit 4), not a traceback or a limit that never ends. Whether it must be positive
    is each verb's check."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {shown(text)}") from None
    if not math.isfinite(value) or abs(value) > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{shown(text)}: seconds must be a finite number of at most {MAX_SECONDS:g} "
            "(30 days)")
    return value
