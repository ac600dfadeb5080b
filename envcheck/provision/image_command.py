"""envcheck image LOCK --os rhel7|centos7: build the EL7 image of a lock with podman or docker."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from envcheck.errors import EnvcheckError, ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("lock", type=Path, metavar="LOCK", help="conda-lock file the image installs")
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


def run(args: argparse.Namespace) -> int:
    from envcheck.provision.image import find_engine, plan_image, shell_line, write_context

    build = plan_image(
        args.os_name,
        args.lock,
        args.tag,
        builder_image=args.builder_image,
        base_image=args.base_image,
        platform=args.platform,
    )
    engine = find_engine(args.engine)
    if engine is None or args.print_only:
        context = write_context(build, Path(tempfile.mkdtemp(prefix="envcheck-image-")) / "ctx")
        print(shell_line(build.command(engine or "podman", context)))
        if engine is None:
            which = args.engine or "podman, docker or buildah"
            print(
                f"envcheck: {which} not found: run the command above where one is installed",
                file=sys.stderr,
            )
            return int(ExitCode.NO_ENGINE)
        return int(ExitCode.OK)
    with tempfile.TemporaryDirectory(prefix="envcheck-image-") as tmp:
        context = write_context(build, Path(tmp) / "ctx")
        cmd = build.command(engine, context)
        if not args.quiet:
            print(shell_line(cmd), file=sys.stderr)
        done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise ImageBuildFailed(
            f"{engine} build of {build.tag} from {args.lock} failed (exit {done.returncode}); "
            "the build output above names the step (a damaged package is named with both hashes)"
        )
    print(
        f"built {build.tag} ({args.os_name}) from {args.lock} "
        f"(lock sha256 {build.build_args['LOCK_SHA256'][:12]}) with {engine}"
    )
    return int(ExitCode.OK)
