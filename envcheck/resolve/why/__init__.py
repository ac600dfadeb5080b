"""why: the chains from recipe entries to a package in a lock (command, options, pipeline)."""
