"""image: build the EL7 image of a lock (command, options, pipeline; context, source)."""
