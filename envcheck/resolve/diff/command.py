"""`envcheck diff OLD NEW`: the flags DiffOptions declares (options.py) -> pipeline.py -> Report."""

from __future__ import annotations

from envcheck import option
from envcheck.resolve.diff.options import DiffOptions
from envcheck.resolve.diff.pipeline import diff

add_arguments, options_from_args, run = option.command(DiffOptions, diff)
