"""envcheck's version: the package, the stamp an install writes and the image label carry it."""

__version__ = "0.1.0"
