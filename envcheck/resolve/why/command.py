"""`envcheck why PKG LOCK` / `why --not PKG RECIPE`: the flags WhyOptions declares (options.py)
-> pipeline.py -> Report."""

from __future__ import annotations

from envcheck import option
from envcheck.resolve.why.options import WhyOptions
from envcheck.resolve.why.pipeline import why

add_arguments, options_from_args, run = option.command(WhyOptions, why)
