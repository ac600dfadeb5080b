"""`envcheck recipe import ENVIRONMENT_YML`: the flags ImportOptions declares (options.py) ->
pipeline.py -> Report."""

from __future__ import annotations

from envcheck import option
from envcheck.resolve.recipe_import.options import ImportOptions
from envcheck.resolve.recipe_import.pipeline import recipe_import

add_arguments, options_from_args, run = option.command(ImportOptions, recipe_import)
