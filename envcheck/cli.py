"""Parse -> call -> render -> exit code. Nothing else lives here.

Each verb's module exposes ``add_arguments(parser)`` and ``run(args) -> Report | int``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import stat
import sys
import traceback
from pathlib import Path

from envcheck import __version__, interrupts
from envcheck.errors import BadInput, EnvcheckError, ExitCode
from envcheck.report import Report, render_table, write_json, write_junit

DESCRIPTION = (
    "Provision and validate environments for multi-GPU, multi-node Dask / RAPIDS / PyTorch\n"
    "clusters: solve a recipe into a lock that installs, then prove a node, a live cluster or\n"
    "a launcher's ranks are right before the job lands on them."
)
EPILOG = (
    "start here:\n"
    "  envcheck verify node            check this machine (driver, GPUs, libraries, health)\n"
    "  envcheck verify cluster [ADDR]  audit a Dask cluster (none given: start a local one)\n"
    "  envcheck build RECIPE           lint and solve a recipe into conda-lock lockfiles\n"
    "exit codes: 0 pass, 1 warn, 2 fail, 3 error, 4 bad input (README: Exit codes)"
)

# verb path -> module holding add_arguments/run; imported lazily so --help stays fast
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("build",): ("envcheck.resolve.command", "solve recipes into conda-lock lockfiles"),
    ("install",): ("envcheck.provision.command", "create an env from a lock, hashes checked"),
    ("image",): ("envcheck.provision.image_command", "build the EL7 image of a lock"),
    ("diff",): ("envcheck.resolve.diff", "what changed between two lock files"),
    ("why",): ("envcheck.resolve.why", "which recipe entries pull a package into a lock"),
    ("recipe", "new"): (
        "envcheck.resolve.record.new",
        "write a recipe pinned from the RAPIDS release record",
    ),
    ("verify", "node"): ("envcheck.verify.node.command", "check this machine before a GPU job"),
    ("verify", "cluster"): (
        "envcheck.verify.cluster.command",
        "audit, smoke-test and measure a Dask cluster (default: start a local one)",
    ),
    ("verify", "job"): (
        "envcheck.verify.job.command",
        "run as every rank of srun/torchrun/mpirun/horovodrun: check the job's ranks",
    ),
    ("slurm", "script"): (
        "envcheck.slurm.command",
        "sbatch script: a Dask cluster that verifies itself before the work (--submit runs it)",
    ),
}


# Verbs whose modules live here need the `build` extra (solver, conda-lock's models, uv); the
# verify side needs only the core dependencies and runs on Python >= 3.8.
BUILD_PACKAGE = "envcheck.resolve"
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
        # one line, as every other bad input; the usage block is one --help away
        print(f"envcheck: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(ExitCode.BAD_INPUT)


def _add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", type=Path, metavar="FILE", help="write the report as JSON")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write the report as JUnit XML")
    p.add_argument("--quiet", action="store_true", help="print only the summary line")
    p.add_argument(
        "--verbose", action="store_true",
        help="show every skipped check as a row (by default skips fold into one line per reason)",
    )


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; given ``argv``, only the verb it names imports its module.

    A verb module may import heavy things (rattler, conda-lock, dask): `envcheck build` should
    not pay for verify's imports, nor `envcheck --help` for any. Top-level flags take no
    values, so the first words that are not flags name the verb.
    """
    words = None if argv is None else tuple(a for a in argv if not a.startswith("-"))
    parser = _Parser(prog="envcheck", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
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


def check_destinations(args: argparse.Namespace) -> None:
    """Bad report destinations are bad input before any work (a solve, a lock written).

    The same file for --json and --junit, a directory, a missing or unwritable directory, a
    device that refuses writes (/dev/full): each is refused here, with stdout when it refuses
    writes too. A zero-byte write reaches the device's write path without writing anything.
    """
    paths = [(flag, getattr(args, flag, None)) for flag in ("json", "junit")]
    paths = [(flag, p) for flag, p in paths if p is not None]
    if len(paths) == 2 and _same_file(paths[0][1], paths[1][1]):
        raise BadInput(f"--json and --junit name the same file ({paths[0][1]}): give each its own")
    for flag, path in paths:
        _check_destination(flag, path)
    try:
        fd = sys.stdout.fileno()
        os.write(fd, b"")
    except (OSError, ValueError, AttributeError) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise BadInput(f"standard output cannot be written: {e.strerror}") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _check_destination(flag: str, path: Path) -> None:
    where = f"--{flag} {path}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise BadInput(f"{where}: directory {parent} does not exist") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise BadInput(f"{where}: directory {parent} is not writable") from None
        return
    except OSError as e:
        raise BadInput(f"{where}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{where} is a directory")
    try:  # non-blocking: a FIFO without a reader fails at once instead of hanging
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        raise BadInput(f"{where} cannot be written: {e.strerror}") from None
    try:
        os.write(fd, b"")
    except OSError as e:
        raise BadInput(f"{where} cannot be written: {e.strerror}") from None
    finally:
        os.close(fd)


def _build_extra_present() -> bool:
    try:
        require_build_extra("build")
    except EnvcheckError:
        return False
    return True


def render(report: Report, args: argparse.Namespace) -> None:
    """Write the report files and the table; an OSError names the file it is about."""
    for flag, write in (("json", write_json), ("junit", write_junit)):
        path = getattr(args, flag, None)
        if path:
            try:
                write(report, path)
            except OSError as e:
                raise _ReportNotWritten(f"--{flag} {path}: {e.strerror or e}") from None
    try:
        _print(report, args)
        sys.stdout.flush()
    except OSError as e:
        # stdout is gone or full: point it at /dev/null so the exit's own flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise _ReportNotWritten(f"standard output: {e.strerror or e}") from None


class _ReportNotWritten(Exception):
    """The run finished but its report could not be written (checked before, failed after)."""


def _print(report: Report, args: argparse.Namespace) -> None:
    if args.quiet:
        from rich.console import Console

        c = report.counts()
        Console().print(
            f"{report.status.value.upper()}: "
            + ", ".join(f"{n} {s}" for s, n in c.items() if n)
        )
    else:
        render_table(report, verbose=getattr(args, "verbose", False))


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process is envcheck (console script, python -m envcheck)
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    restore = interrupts.install()
    try:
        return _main(argv)
    except KeyboardInterrupt as e:  # also Terminated (SIGTERM): every finally has run
        if debug:
            traceback.print_exc()
        if isinstance(e, interrupts.Terminated):
            print("envcheck: terminated (SIGTERM)", file=sys.stderr)
            code = ExitCode.TERMINATED
        else:
            print("envcheck: interrupted", file=sys.stderr)
            code = ExitCode.INTERRUPTED
        if program and not debug:
            _quiet_exit()
        return int(code)
    finally:
        interrupts.commit()  # the outcome is decided: a late Ctrl-C changes nothing
        restore()


def _quiet_exit() -> None:
    """After the one line: stderr to /dev/null for the rest of the process.

    Libraries clean up at exit (distributed's atexit closes a cluster an interrupt left half
    started) and print tracebacks about the interrupt itself; the user was told already.
    """
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser(argv)
    except EnvcheckError as e:
        print(f"envcheck: {e.message}", file=sys.stderr)
        return int(e.exit_code)
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        check_destinations(args)
        outcome = importlib.import_module(args._module).run(args)
        if isinstance(outcome, Report):
            render(outcome, args)
            return int(outcome.exit_code())
        return int(outcome)
    except _ReportNotWritten as e:
        written = " (the locks were written)" if interrupts.committed() else ""
        print(f"envcheck: the report cannot be written: {e}{written}", file=sys.stderr)
        return int(ExitCode.ERROR)
    except EnvcheckError as e:
        if debug:
            traceback.print_exc()
        print(f"envcheck: {e.message}", file=sys.stderr)
        if e.detail and (debug or getattr(args, "explain", False)):
            print(e.detail, file=sys.stderr)
        return int(e.exit_code)
    except OSError as e:  # an unwritable --save-facts path, and the like
        if debug:
            traceback.print_exc()
        print(f"envcheck: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
