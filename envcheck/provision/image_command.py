"""envcheck image LOCK --os rhel7|centos7: build the EL7 image of a lock with podman or docker."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from envcheck.errors import EnvcheckError, ExitCode
from envcheck.report import Report, Result, Status


@dataclass(frozen=True)
class ImageOptions:
    """What one image build does; ``envcheck image``'s flags, typed."""

    lock: Path
    os_name: str  # rhel7 or centos7
    tag: str | None = None  # default envcheck/<recipe>:<os>
    builder_image: str | None = None
    base_image: str | None = None
    platform: str = "linux-64"
    engine: str | None = None  # default: the first of podman, docker, buildah found
    print_only: bool = False  # write the context and print the command, build nothing
    show_command: bool = True  # echo the build command on stderr before it runs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "lock",
        type=Path,
        metavar="LOCK",
        help="conda-lock file or pixi.lock the image installs",
    )
    p.add_argument(
        "--os",
        required=True,
        choices=["rhel7", "centos7"],
        dest="os_name",
        help="which Dockerfile: Dockerfile.rhel7 or Dockerfile.centos7",
    )
    p.add_argument("--tag", help="image tag (default envcheck/<recipe>:<os>)")
    p.add_argument("--builder-image", help="BUILDER_IMAGE: any image with Python >= 3.10")
    p.add_argument("--base-image", help="BASE_IMAGE: the runtime base (default: the OS's)")
    p.add_argument("--platform", default="linux-64", help="the lock's platform (linux-64)")
    p.add_argument(
        "--engine",
        choices=["podman", "docker", "buildah"],
        help="build with this one (default: the first of podman, docker, buildah)",
    )
    p.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="write the build context and print the build command instead of running it",
    )


class ImageBuildFailed(EnvcheckError):
    exit_code = ExitCode.FAIL


def options_from_args(args: argparse.Namespace) -> ImageOptions:
    return ImageOptions(
        lock=args.lock,
        os_name=args.os_name,
        tag=args.tag,
        builder_image=args.builder_image,
        base_image=args.base_image,
        platform=args.platform,
        engine=args.engine,
        print_only=args.print_only,
        show_command=not args.quiet,
    )


def run(args: argparse.Namespace) -> Report:
    return build_image(options_from_args(args))


def build_image(opts: ImageOptions) -> Report:
    """Build the image; with ``print_only`` or no engine here, the command that would (exit 8
    when no engine: the command is the report's output, to run where one is installed)."""
    from envcheck.provision.image import find_engine, plan_image, shell_line, write_context

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
            print(shell_line(cmd), file=sys.stderr)
        done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise ImageBuildFailed(
            f"{engine} build of {build.tag} from {opts.lock} failed (exit {done.returncode}); "
            "the build output above names the step (a damaged package is named with both hashes)"
        )
    message = (
        f"built {build.tag} ({opts.os_name}) from {opts.lock} "
        f"(lock sha256 {build.build_args['LOCK_SHA256'][:12]}) with {engine}"
    )
    result = Result("image", Status.PASS, message, group="image")
    return Report(title, results=(result,), environment={"tag": build.tag}, output=message + "\n")
