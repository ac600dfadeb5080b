"""`envcheck image LOCK --os rhel7|centos7`: the flags ImageOptions declares (options.py) ->
pipeline.py -> Report (--quiet: the build command is not echoed)."""

from __future__ import annotations

from envcheck import option
from envcheck.provision.image.options import ImageOptions
from envcheck.provision.image.pipeline import build_image

add_arguments, options_from_args, run = option.command(
    ImageOptions, build_image, lambda args: {"show_command": not args.quiet}
)
