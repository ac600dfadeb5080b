"""build: solve recipes into conda-lock lockfiles (command, options, pipeline)."""
