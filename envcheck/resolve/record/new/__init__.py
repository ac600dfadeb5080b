"""recipe new: a recipe pinned from the RAPIDS release record (command, options, pipeline)."""
