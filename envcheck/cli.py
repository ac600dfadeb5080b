"""Parse -> call -> render -> exit code. Nothing else lives here.

Each verb's module exposes ``add_arguments(parser)`` and ``run(args) -> Report | int``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

from envcheck import __version__
from envcheck.errors import BadInput, EnvcheckError, ExitCode
from envcheck.report import Report, render_table, write_json, write_junit

# verb path -> module holding add_arguments/run; imported lazily so --help stays fast
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("build",): ("envcheck.build.command", "solve recipes into conda-lock lockfiles"),
    ("install",): ("envcheck.provision.command", "create an env from a lock, hashes checked"),
    ("image",): ("envcheck.provision.image_command", "build the EL7 image of a lock"),
    ("diff",): ("envcheck.build.diff", "what changed between two lock files"),
    ("why",): ("envcheck.build.why", "which recipe entries pull a package into a lock"),
    ("recipe", "new"): (
        "envcheck.build.record.new",
        "write a recipe pinned from the RAPIDS release record",
    ),
    ("verify", "node"): ("envcheck.verify.node_command", "check this machine before a GPU job"),
    ("verify", "cluster"): (
        "envcheck.verify.cluster_command",
        "audit, smoke-test and measure a Dask cluster (default: start a local one)",
    ),
    ("slurm", "script"): (
        "envcheck.slurm.command",
        "sbatch script: a Dask cluster that verifies itself before the work (--submit runs it)",
    ),
}


# Verbs whose modules live here need the `build` extra (solver, conda-lock's models, uv); the
# verify side needs only the core dependencies and runs on Python >= 3.8.
BUILD_PACKAGE = "envcheck.build"
BUILD_MODULES = ("rattler", "conda_lock", "uv")


def require_build_extra(verb: str) -> None:
    """BadInput (one line) when this interpreter cannot run a build-side verb."""
    if sys.version_info < (3, 10):
        raise BadInput(
            f"envcheck {verb} needs Python >= 3.10 (this is {sys.version.split()[0]}); "
            "verify runs here, build on a newer Python"
        )
    missing = [m for m in BUILD_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise BadInput(
            f"envcheck {verb} needs the build extra (missing: {', '.join(missing)}): "
            "pip install 'envcheck[build]'"
        )


class _Parser(argparse.ArgumentParser):
    """argparse, but bad flags exit with ExitCode.BAD_INPUT and one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"envcheck: error: {message}", file=sys.stderr)
        raise SystemExit(ExitCode.BAD_INPUT)


def _add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", type=Path, metavar="FILE", help="write the report as JSON")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write the report as JUnit XML")
    p.add_argument("--quiet", action="store_true", help="print only the summary line")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; given ``argv``, only the verb it names imports its module.

    A verb module may import heavy things (rattler, conda-lock, dask): `envcheck build` should
    not pay for verify's imports, nor `envcheck --help` for any. Top-level flags take no
    values, so the first words that are not flags name the verb.
    """
    words = None if argv is None else tuple(a for a in argv if not a.startswith("-"))
    parser = _Parser(prog="envcheck", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"envcheck {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    groups: dict[str, argparse._SubParsersAction] = {}
    for path, (module, help_) in COMMANDS.items():
        if len(path) == 1:
            sub = verbs.add_parser(path[0], help=help_)
        else:
            if path[0] not in groups:
                grp = verbs.add_parser(path[0], help=f"{path[0]} commands")
                groups[path[0]] = grp.add_subparsers(
                    dest="subverb", required=True, parser_class=_Parser
                )
            sub = groups[path[0]].add_parser(path[1], help=help_)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)
        _add_report_arguments(sub)
        sub.set_defaults(_module=module)
        if words is None or words[: len(path)] == path:
            if module.startswith(BUILD_PACKAGE + "."):
                if words is None and not _build_extra_present():
                    continue  # full parser (help): build verbs say what they need when run
                if words is not None:
                    require_build_extra(" ".join(path))
            importlib.import_module(module).add_arguments(sub)
    return parser


def _build_extra_present() -> bool:
    try:
        require_build_extra("build")
    except EnvcheckError:
        return False
    return True


def render(report: Report, args: argparse.Namespace) -> None:
    if args.json:
        write_json(report, args.json)
    if args.junit:
        write_junit(report, args.junit)
    if args.quiet:
        from rich.console import Console

        c = report.counts()
        Console().print(
            f"{report.status.value.upper()}: "
            + ", ".join(f"{n} {s}" for s, n in c.items() if n)
        )
    else:
        render_table(report)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        parser = build_parser(argv)
    except EnvcheckError as e:
        print(f"envcheck: {e.message}", file=sys.stderr)
        return int(e.exit_code)
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        outcome = importlib.import_module(args._module).run(args)
        if isinstance(outcome, Report):
            render(outcome, args)
            return int(outcome.exit_code())
        return int(outcome)
    except EnvcheckError as e:
        if debug:
            traceback.print_exc()
        print(f"envcheck: {e.message}", file=sys.stderr)
        if e.detail and (debug or getattr(args, "explain", False)):
            print(e.detail, file=sys.stderr)
        return int(e.exit_code)
    except OSError as e:  # unwritable --json/--junit path, and the like
        if debug:
            traceback.print_exc()
        print(f"envcheck: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        print("envcheck: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
