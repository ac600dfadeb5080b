"""A scheduler that dies during a run: one `error` result naming it, and Dask's own log noise
(reconnect tracebacks from distributed.client) kept off the user's terminal unless --debug.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from envcheck.report import Result, Status

if TYPE_CHECKING:
    from distributed import Client

CHECK = "scheduler"
ANSWER_WITHIN_S = 3.0
# distributed's loggers that report a lost scheduler with tracebacks; the report says it once
_NOISY = ("distributed", "tornado")


def quiet_dask_logs(debug: bool) -> None:
    """Raise distributed's loggers to CRITICAL (unless --debug) for the rest of the process.

    Not restored afterwards: a client whose scheduler died keeps logging reconnect tracebacks
    while it closes, after the report is out; envcheck reports what went wrong itself.
    """
    if debug:
        return
    import distributed  # noqa: F401  (its logging config sets levels per logger: set them after)

    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in _NOISY]
    for name in {*_NOISY, *names}:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def scheduler_lost(client: Client, address: str) -> list[Result]:
    """An error result when the client lost its scheduler during the run, else none."""
    status = str(getattr(client, "status", "running"))
    if status == "running":
        # the client may not have noticed yet: ask the scheduler itself, briefly
        try:
            client.sync(client.scheduler.identity, callback_timeout=ANSWER_WITHIN_S)
            return []
        except Exception as e:  # refused, reset, timed out: all mean it is gone
            status = f"no answer: {type(e).__name__}"
    return [
        Result(
            CHECK,
            Status.ERROR,
            f"the scheduler {address} stopped answering during the run (client {status}): "
            "results after that point are incomplete",
            fix="see the scheduler's log (killed, out of memory, its host gone?), then run "
            "envcheck verify cluster again",
            group="cluster",
        )
    ]
