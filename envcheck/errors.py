"""Exit codes and the error tree: every expected failure is an EnvcheckError with one clear line."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented process exit codes (docs/exit-codes.md)."""

    OK = 0  # every result passed (skips allowed)
    WARN = 1  # warnings, no failures
    FAIL = 2  # at least one check or smoke test failed
    ERROR = 3  # a check could not run (it raised, a worker died or hung; no Slurm here)
    BAD_INPUT = 4  # bad recipe, lockfile, flags, missing file, unwritable output
    UNSOLVABLE = 5  # envcheck build: the recipe cannot be solved
    STALE = 6  # envcheck build --check: a lock is missing or stale
    UNREACHABLE = 7  # a scheduler, channel, package server or image registry cannot be reached
    NO_ENGINE = 8  # envcheck image: no podman/docker/buildah here; the build command is printed
    INTERRUPTED = 130  # Ctrl-C (SIGINT): nothing was replaced
    TERMINATED = 143  # SIGTERM, handled as Ctrl-C is: nothing was replaced


class EnvcheckError(Exception):
    """An expected failure: printed as one line, mapped to an exit code."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # long text shown only with --explain / --debug
        # tables the run had made when it failed (the lint's findings): the error report
        # (--json / --junit) carries them
        self.tables: tuple[object, ...] = ()


class BadInput(EnvcheckError):
    exit_code = ExitCode.BAD_INPUT


class Unsolvable(EnvcheckError):
    exit_code = ExitCode.UNSOLVABLE


class StaleLock(EnvcheckError):
    exit_code = ExitCode.STALE


class Unreachable(EnvcheckError):
    exit_code = ExitCode.UNREACHABLE
