"""argparse value types shared by the verbs (Python 3.8: the verify side imports this)."""

from __future__ import annotations

import argparse
import math


def seconds(text: str) -> float:
    """A finite, positive number of seconds; 'nan', 'inf', 0 and negatives are bad input."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: seconds must be a finite number greater than 0"
        )
    return value
