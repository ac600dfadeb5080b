"""The command line: parse -> call -> render -> exit code.

Each verb's module exposes ``add_arguments(parser)`` and ``run(args) -> Report | int``. Beside
that walk live what only the command line does with a run: the verb table (COMMANDS) and its
lazy parser, the one-line refusal of bad flags (exit 4), the table or product on stdout, the
--json/--junit files (report_files.py) checked before the run, and the report of a run that a
signal or its command line stopped.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from envcheck.errors import EnvcheckError, ExitCode
from envcheck.report_files import REPORT_FLAGS, ReportNotWritten, write_reports
from envcheck.text import say
from envcheck.version import __version__

TYPE_CHECKING = False  # typing itself is not imported: `envcheck --version` stays cheap
if TYPE_CHECKING:
    from envcheck.report import Report

# imported only once a verb runs: --version and --help stay as cheap as Python's own start

DESCRIPTION = (
    "Provision and validate environments for multi-GPU, multi-node Dask / RAPIDS / PyTorch\n"
    "clusters: solve a recipe into a lock that installs, then prove a node, a live cluster or\n"
    "a launcher's ranks are right before the job lands on them."
)
EPILOG = (
    "start here:\n"
    "  envcheck verify node            check this machine (driver, GPUs, libraries, health)\n"
    "  envcheck verify cluster [ADDR]  audit a Dask cluster (none given: start a local one)\n"
    "  envcheck build RECIPE           lint and solve a recipe (or an environment.yml) into\n"
    "                                  conda-lock lockfiles\n"
    "  --html FILE (and --json, --junit) on any verb writes the report there\n"
    "shell completion: eval \"$(envcheck completion bash)\" (or zsh)\n"
    "exit codes:\n"
    "  0 pass (skips allowed)        5 build: the recipe cannot be solved\n"
    "  1 warnings, no failures       6 build --check: a lock is missing or stale\n"
    "  2 a check or smoke test fail  7 a scheduler, channel or registry unreachable\n"
    "  3 a check could not run, or   8 image: no podman/docker/buildah (command printed)\n"
    "    (slurm --submit) no Slurm\n"
    "  4 bad input (flags, files)    130 Ctrl-C, 143 SIGTERM: nothing was replaced\n"
    "each verb's cases: envcheck docs exit-codes; every page: envcheck docs"
)

# verb path -> module holding add_arguments/run; imported lazily so --help stays fast
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("build",): ("envcheck.resolve.build.command", "solve recipes into conda-lock lockfiles"),
    ("install",): (
        "envcheck.provision.install.command", "create an env from a lock, hashes checked"
    ),
    ("image",): ("envcheck.provision.image.command", "build the EL7 image of a lock"),
    ("diff",): ("envcheck.resolve.diff.command", "what changed between two lock files"),
    ("why",): ("envcheck.resolve.why.command", "which recipe entries pull a package into a lock"),
    ("recipe", "new"): (
        "envcheck.resolve.record.new.command",
        "write a recipe pinned from the RAPIDS release record",
    ),
    ("recipe", "import"): (
        "envcheck.resolve.recipe_import.command",
        "write a recipe from a conda environment.yml (build takes either)",
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
    ("verify", "ray"): (
        "envcheck.verify.ray.command",
        "audit a Ray cluster: nodes, skew, GPUs Ray advertises vs the driver's (default: local)",
    ),
    ("completion",): ("envcheck.completion", "print a bash or zsh completion script"),
    ("docs",): ("envcheck.docs_command", "print a page of the documentation (none: the topics)"),
    ("slurm", "script"): (
        "envcheck.slurm.command",
        "sbatch script: a Dask cluster that verifies itself before the work (--submit runs it)",
    ),
}


# Verbs whose modules live here need Python >= 3.10 (envcheck.extras)
BUILD_PACKAGE = "envcheck.resolve"


class _Parser(argparse.ArgumentParser):
    """argparse, but bad flags exit with ExitCode.BAD_INPUT and one line."""

    def error(self, message: str, prog: str = "") -> None:  # type: ignore[override]
        # one line, as every other bad input; the usage block is one --help away
        prog = prog or self.prog
        say(f"error: {message} (see {prog} --help)")
        raise _BadArguments(prog, f"{message} (see {prog} --help)")

    def parse_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """argparse's, but flags the verb does not take send to the verb's --help (the verb's
        parser hands them up to this one, whose --help does not list them)."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            verb = [w for w in (getattr(ns, "verb", None), getattr(ns, "subverb", None)) if w]
            self.error(f"unrecognized arguments: {' '.join(extras)}",
                       " ".join([self.prog, *verb]))
        return ns


class _BadArguments(SystemExit):
    """The command line does not parse: exit 4, after the --json/--junit report if it named
    one (a SystemExit, so that a parse outside main exits as argparse's own would)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(ExitCode.BAD_INPUT)
        self.prog, self.message = prog, message


class _Quiet(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def _named_reports(argv: list[str]) -> argparse.Namespace | None:
    """--json and --junit as the command line gives them, read apart from the verb's parser
    (which refused the line); None when even they do not parse."""
    p = _Quiet(add_help=False)
    for flag in REPORT_FLAGS:
        p.add_argument(f"--{flag}", type=Path)
    try:
        return p.parse_known_args(argv)[0]
    except ValueError:
        return None


def _title_of(argv: list[str], prog: str) -> str:
    """The report title of the verb ``argv`` names ('envcheck verify node'), else ``prog``."""
    words = tuple(a for a in argv if not a.startswith("-"))
    path = next((p for p in COMMANDS if words[: len(p)] == p), None)
    return f"envcheck {' '.join(path)}" if path else prog


def _report_stopped(args: argparse.Namespace, title: str, message: str, code: ExitCode) -> None:
    """The --json/--junit report of a run that a signal or its command line stopped: one
    error result saying what stopped it. Nothing when no report was asked for, or its
    destination is refused (said on stderr: the run is over anyway)."""
    from envcheck import destinations
    from envcheck.report import error_report

    if not any(getattr(args, flag, None) for flag in REPORT_FLAGS):
        return
    try:
        destinations.check_destinations(_report_destinations(args))
        write_reports(error_report(title, message, code), args)
    except (EnvcheckError, ReportNotWritten) as e:
        say(f"the report cannot be written: {getattr(e, 'message', e)}")


_verb_ran: list[bool] = []  # True once _main's own handler covers a signal (the verb ran)


def _report_signal(args: argparse.Namespace, title: str, e: KeyboardInterrupt) -> None:
    """The report of a run Ctrl-C or SIGTERM stopped, written with signals held from here (the
    outcome is decided: a second signal does not cut the report short)."""
    from envcheck import interrupts

    interrupts.commit()
    if isinstance(e, interrupts.Terminated):
        _report_stopped(args, title, "terminated by SIGTERM before it finished",
                        ExitCode.TERMINATED)  # fmt: skip
    else:
        _report_stopped(args, title, "interrupted (SIGINT, Ctrl-C) before it finished",
                        ExitCode.INTERRUPTED)  # fmt: skip


def _add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="write the report as JSON (- for stdout: then all else goes to stderr)")
    p.add_argument("--junit", type=Path, metavar="FILE",
                   help="write the report as JUnit XML (- for stdout, as --json)")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write the report as a web page (- for stdout, as --json)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    p.add_argument(
        "-v", "--verbose", action="store_true",
        help="show every check with its message and the measurements (by default passes fold "
        "into one line per group, skips into one line per reason, measurements into a count)",
    )


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; given ``argv`` that names a verb, that verb's parser alone, and only
    its module is imported.

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
    for path, (module, help_) in _named(words).items():
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
        sub.set_defaults(_module=module, _title=f"envcheck {' '.join(path)}")
        if words is None or words[: len(path)] == path:
            if module.startswith(BUILD_PACKAGE + ".") and sys.version_info < (3, 10):
                from envcheck.extras import require_build_extra

                if words is None:
                    continue  # full parser (help): build verbs say what they need when run
                require_build_extra(" ".join(path))
            # a verb's flags need none of its extra: each run says what it lacks
            importlib.import_module(module).add_arguments(sub)
    return parser


def _named(words: tuple[str, ...] | None) -> dict[tuple[str, ...], tuple[str, str]]:
    """The verb ``words`` name, alone: a parse that has found its verb never looks at the
    others' parsers (each costs argparse's set-up of every flag). Every verb when none is
    named (--help, a typo), so that the choices and help list them all."""
    if words is not None:
        for path, entry in COMMANDS.items():
            if words[: len(path)] == path:
                return {path: entry}
    return COMMANDS


def _report_destinations(args: argparse.Namespace) -> list[tuple[str, Path | None]]:
    return [
        (f"--{flag} {getattr(args, flag, None)}", getattr(args, flag, None))
        for flag in REPORT_FLAGS
    ]


def render(report: Report, args: argparse.Namespace) -> None:
    """Write the report files, then print the verb's product or the table."""
    if not report.shown:
        return
    report = write_reports(report, args)  # stamped there, once: the table prints the same
    try:
        _print(report, args)
        sys.stdout.flush()
    except OSError as e:
        # stdout is gone or full: point it at /dev/null so the exit's own flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        if isinstance(e, BrokenPipeError):
            return  # its reader stopped reading (`| head -1`): the verdict's exit code stands
        raise ReportNotWritten(f"standard output: {e.strerror or e}") from None


def _print(report: Report, args: argparse.Namespace) -> None:
    from envcheck.report import Status, nagios_text, render_table

    if report.form == "nagios":  # one line, the whole verdict: nothing beside it
        sys.stdout.write(nagios_text(report))
    elif report.output:  # a recipe, a script: the product itself, never mixed with a table
        sys.stdout.write(report.output)
        for r in report.results:  # what went wrong goes beside it, one line each
            if r.status not in (Status.PASS, Status.SKIP):
                say(r.message)
    elif args.quiet:
        c = report.counts
        print(f"{report.status.value.upper()}: " + ", ".join(f"{n} {s}" for s, n in c.items() if n))
    else:
        verbose = getattr(args, "verbose", False)
        render_table(report, verbose=verbose, measurements=getattr(args, "bench", False))


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process is envcheck (console script, python -m envcheck)
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # what argparse would print, without building the parser
        print(f"envcheck {__version__}")
        return 0
    if not argv:  # bare `envcheck`: the help `envcheck --help` prints, not an error
        build_parser().print_help()
        return 0
    from envcheck import interrupts

    debug = "--debug" in argv
    restore = interrupts.install(held=True)  # signals wait for release(), inside the try
    try:
        interrupts.release()
        return _main(argv)
    except KeyboardInterrupt as e:  # also Terminated (SIGTERM): every finally has run
        if debug:
            import traceback

            traceback.print_exc()
        interrupts.commit()
        if not _verb_ran:  # stopped while its flags were read: no report was written yet
            named = _named_reports(argv)
            if named is not None:
                _report_signal(named, _title_of(argv, "envcheck"), e)
        return interrupts.exit_for(e, quiet=program and not debug)
    finally:
        interrupts.commit()  # the outcome is decided: a late Ctrl-C changes nothing
        del _verb_ran[:]
        restore()
        if program:
            _leave_objects_to_exit()


def _leave_objects_to_exit() -> None:
    """The process is about to end: the interpreter's collections at exit would walk every
    object the imports made only to find them alive.
    Frozen, they are skipped; reference counting still frees them at exit, and only garbage
    in reference cycles goes unfinalized, which Python's exit never promises to finalize."""
    import gc

    gc.freeze()


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser(argv)
    except EnvcheckError as e:
        say(e.message)
        return int(e.exit_code)
    try:
        args = parser.parse_args(argv)
    except _BadArguments as e:  # said on stderr already; it leaves as argparse's exit would
        named = _named_reports(argv)
        if named is not None:
            _report_stopped(named, _title_of(argv, e.prog), f"error: {e.message}",
                            ExitCode.BAD_INPUT)
        raise
    from envcheck import destinations, progress
    from envcheck.run_info import RunInfo

    args._run = RunInfo.now(["envcheck", *argv])
    try:  # nothing is written anywhere when a destination is bad
        destinations.check_destinations(_report_destinations(args))
        destinations.check_stdout()
    except EnvcheckError as e:
        say(e.message)
        return int(e.exit_code)
    to_stdout = any(destinations.is_stdout(getattr(args, f, None)) for f in REPORT_FLAGS)
    _verb_ran.append(True)
    progress.allow(not args.quiet and not to_stdout)  # and only where stderr is a terminal
    try:
        with destinations.claim_stdout(to_stdout):  # the report alone on stdout, the rest on 2
            outcome = _call(args)
            if isinstance(outcome, int):
                return outcome
            render(outcome, args)
            return int(outcome.exit_code)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (Terminated): the report says so
        _report_signal(args, args._title, e)
        raise
    except ReportNotWritten as e:
        from envcheck import interrupts

        written = " (the locks were written)" if interrupts.committed() else ""
        say(f"the report cannot be written: {e}{written}")
        return int(ExitCode.ERROR)
    finally:
        progress.allow(False)  # a later main() in this process (a test, the API) decides anew


def _call(args: argparse.Namespace) -> Report | int:
    """The verb's Report; a failure is one line on stderr and an error report (--json/--junit
    carry it too) with the failure's exit code."""
    from envcheck.report import error_report

    debug = getattr(args, "debug", False)
    try:
        return importlib.import_module(args._module).run(args)
    except EnvcheckError as e:
        if debug:
            import traceback

            traceback.print_exc()
        say(e.message)
        if e.detail and (debug or getattr(args, "explain", False)):
            say(e.detail, prefix="")
        failed = error_report(args._title, e.message, e.exit_code, tables=e.tables)  # type: ignore[arg-type]
    except OSError as e:  # an unwritable --save-facts path, and the like
        if debug:
            import traceback

            traceback.print_exc()
        message = f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")
        say(message)
        failed = error_report(args._title, message, ExitCode.BAD_INPUT)
    write_reports(failed, args)
    return int(failed.exit_code)
