"""Lock files: one model of a locked package, its readers, its writer and the name tables.

``model`` and ``read`` run on Python 3.8 with the standard library and PyYAML, so verify
(which runs inside old environments) reads locks with them; ``read`` reaches for conda-lock or
py-rattler only in the functions build and install call. ``write`` needs the build extra.
This package imports nothing from verify or provision.
"""
