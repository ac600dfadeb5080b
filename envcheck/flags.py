"""argparse value types shared by the verbs (Python 3.8: the verify side imports this)."""

from __future__ import annotations

import argparse
import math


def seconds(text: str) -> float:
    """A finite number of seconds: 'nan' and 'inf' are bad input (exit 4), not a traceback or
    a limit that never ends. Whether it must be positive is each verb's check."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be a finite number")
    return value
