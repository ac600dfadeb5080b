"""`envcheck image`: ImageOptions -> the EL7 image of a lock, built with podman, docker or
buildah -> Report. The flags are command.py; the Dockerfiles and build arguments context.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

from envcheck.errors import EnvcheckError, ExitCode, Unreachable
from envcheck.provision.engine_run import run_engine, unreachable_registry
from envcheck.provision.image.options import ImageOptions
from envcheck.report import Report, Result, Status
from envcheck.text import say


class ImageBuildFailed(EnvcheckError):
    exit_code = ExitCode.FAIL


def build_image(opts: ImageOptions) -> Report:
    """Build the image; with ``print_only`` or no engine here, the command that would (exit 8
    when no engine: the command is the report's output, to run where one is installed)."""
    from envcheck.provision.image.context import find_engine, plan_image, shell_line, write_context

    build = plan_image(
        opts.os_name,
        opts.lock,
        opts.tag,
        builder_image=opts.builder_image,
        base_image=opts.base_image,
        platform=opts.platform,
    )
    engine = find_engine(opts.engine)
    title = "envcheck image"
    if engine is None or opts.print_only:
        context = write_context(build, Path(tempfile.mkdtemp(prefix="envcheck-image-")) / "ctx")
        line = shell_line(build.command(engine or "podman", context)) + "\n"
        if engine is None:
            which = opts.engine or "podman, docker or buildah"
            missing = f"{which} not found: run the printed command where one is installed"
            result = Result("image", Status.ERROR, missing, group="image")
            return Report(title, results=(result,), code=ExitCode.NO_ENGINE, output=line)
        result = Result("image", Status.PASS, f"build context {context}", group="image")
        return Report(title, results=(result,), output=line)
    with tempfile.TemporaryDirectory(prefix="envcheck-image-") as tmp:
        context = write_context(build, Path(tmp) / "ctx")
        cmd = build.command(engine, context)
        if opts.show_command:
            say(shell_line(cmd), prefix="")
        code, said = run_engine(cmd)
    if code != 0:
        registry = unreachable_registry(said)
        if registry is not None:
            raise Unreachable(
                f"{engine} build of {build.tag} could not reach the registry {registry} to "
                "pull its base images: build where it is reachable, or name a mirror's images "
                "with --builder-image and --base-image"
            )
        raise ImageBuildFailed(
            f"{engine} build of {build.tag} from {opts.lock} failed (exit {code}); "
            "the build output above names the step (a damaged package is named with both hashes)"
        )
    message = (
        f"built {build.tag} ({opts.os_name}) from {opts.lock} "
        f"(lock sha256 {build.build_args['LOCK_SHA256'][:12]}) with {engine}"
    )
    result = Result("image", Status.PASS, message, group="image")
    return Report(title, results=(result,), environment={"tag": build.tag}, output=message + "\n")
