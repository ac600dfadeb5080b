"""diff: what changed between two lock files, per platform (command, options, pipeline)."""
