"""install: create an environment from a lock, every hash checked (command, options, pipeline)."""
