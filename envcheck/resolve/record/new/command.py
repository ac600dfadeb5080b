"""`envcheck recipe new`: the flags Options declares (options.py) -> pipeline.py's recipe_new
-> Report."""

from __future__ import annotations

from envcheck import option
from envcheck.resolve.record.new.options import Options
from envcheck.resolve.record.new.pipeline import recipe_new

add_arguments, options_from_args, run = option.command(Options, recipe_new)
