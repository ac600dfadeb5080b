"""The roll call and the verdict: who arrived, and rank 0's judgement, bound to one launch.

Store keys, under envcheck-job/<run id>/ (signed JSON, group.Rendezvous.set_json):
  roll       {"missing": the ranks rank 0 found missing or refused, "nonces": every admitted
             rank's nonce in rank order, rank 0's first ("" for one not admitted)}
  verdict    {"code", "line", "facts": the digest of every byte gathered}: rank 0's judgement
  acked      how many ranks read the verdict (unsigned counter: only bounds rank 0's wait)

Every rank draws a fresh nonce per launch; rank 0's comes in its hello, every other rank's in
its arrival. The roll call carries them all, and every message after it is bound to the
session nonce of them all (auth.session_nonce): a rank takes a roll call only where it carries
its own nonce, so no roll call, gathered value or verdict recorded from another launch
verifies. A passing verdict counts only where it also names the digest of what this rank
gathered: a rank that cannot verify a verdict computed over this launch's facts never exits 0.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from envcheck.verify.job import auth
from envcheck.verify.job.group import GroupError, Rendezvous, _text, _who, describe
from envcheck.verify.job.launch import MAX_WORLD

ACK_WAIT = 10.0  # rank 0 waits at most this long for the others to read the verdict
NOT_MINE = "a roll call without this rank's nonce"  # how await_roll names a replayed one


def roll_call(rv: Rendezvous, timeout: float) -> list[int]:
    """Rank 0: wait until every rank arrived or `timeout`; the ranks missing (sorted). A rank
    whose arrival is not signed by the job, or whose WORLD_SIZE differs, is in rv.refused."""
    world = rv.launch.world_size
    deadline = time.monotonic() + timeout
    missing = list(range(world))
    while True:
        missing = [r for r in missing if not rv.has(f"arrived/{r}")]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for r in range(world):
        if r not in missing:
            why = _admit(rv, r)
            if why:
                rv.refused[r] = why
    return missing


def _admit(rv: Rendezvous, r: int) -> str:
    """Rank 0: read rank r's arrival into rv.arrived; why it is refused ("" when admitted)."""
    try:
        seen = rv.get_json(f"arrived/{r}", r)
    except auth.AuthError as e:
        return (f"rank {r} was claimed by a process without this job's secret "
                f"(unauthenticated, untrusted: {e})")
    if not (isinstance(seen, dict) and isinstance(seen.get("host"), str)
            and all(type(seen.get(k)) is int for k in ("pid", "local_rank", "world"))
            and isinstance(seen.get("nonce"), str) and len(seen["nonce"]) <= 64):
        return f"rank {r} sent a malformed roll-call record"
    seen["host"] = _text(seen["host"])
    rv.arrived[r] = seen
    if seen["world"] != rv.launch.world_size:
        return (f"{describe(rv, r)}: WORLD_SIZE differs between ranks: {seen['world']} there, "
                f"{rv.launch.world_size} on rank 0")
    return ""


def intruders(rv: Rendezvous) -> list[str]:
    """Rank 0: second claimants of a rank, and ranks whose WORLD_SIZE differs from rank 0's
    that found so at their hello (signed records only), as sentences."""
    out = []
    for r in range(rv.launch.world_size):
        if rv.has(f"dup/{r}"):
            with contextlib.suppress(auth.AuthError):
                other = rv.early.verify(r, f"dup/{r}", rv.store.get(rv.key(f"dup/{r}")))
                out.append(f"rank {r} is claimed twice: by {describe(rv, r)} and by "
                           f"{_who(other)}")
    if rv.has("stranger"):
        with contextlib.suppress(auth.AuthError, TypeError, AttributeError, ValueError):
            _, body = auth.split(rv.store.get(rv.key("stranger")))
            sender = auth.loads(body)["rank"]  # the MAC covers it: checked next
            if type(sender) is not int or not 0 < sender < MAX_WORLD:
                raise ValueError(sender)
            s = rv.early.verify(sender, "stranger", rv.store.get(rv.key("stranger")))
            out.append(f"rank {_text(s.get('rank'))} ({_who(s)}) has WORLD_SIZE "
                       f"{_text(s.get('world'))}, rank 0 has {rv.launch.world_size}: WORLD_SIZE "
                       "differs between ranks")
    return out


def publish_roll(rv: Rendezvous, missing: list[int]) -> None:
    """Rank 0: the ranks missing or refused, and every admitted rank's nonce (rank 0's own
    first); from here on every message is bound to the session nonce of them all."""
    nonces = [rv.nonce if r == 0 else "" if r in rv.refused else
              str(rv.arrived.get(r, {}).get("nonce", "")) for r in range(rv.launch.world_size)]
    rv.set_json("roll", {"missing": sorted(missing + list(rv.refused)), "nonces": nonces})
    rv.session = auth.session_nonce(rv.rank0_nonce, nonces)


def await_roll(rv: Rendezvous, deadline: float) -> tuple[list[int] | None, str]:
    """A rank other than 0: (the ranks rank 0 found missing, "") from a roll call signed for
    this launch and carrying this rank's own nonce, which binds every later message to this
    launch; (None, why) at `deadline`."""
    me = rv.launch.rank

    def fresh(roll: Any) -> str:
        if not (isinstance(roll, dict) and isinstance(roll.get("missing"), list)
                and isinstance(roll.get("nonces"), list)
                and len(roll["nonces"]) == rv.launch.world_size
                and all(isinstance(n, str) for n in roll["nonces"])):
            return "a malformed roll call was refused"
        if roll["nonces"][me] != rv.nonce:
            return (f"{NOT_MINE} was refused: it was recorded from another launch and "
                    "replayed, or rank 0 did not admit this rank")
        return ""

    roll, why = rv.wait_signed("roll", 0, deadline, fresh)
    if roll is None:
        return None, why
    rv.session = auth.session_nonce(rv.rank0_nonce, roll["nonces"])
    return [r for r in roll["missing"] if type(r) is int] or (
        [-1] if roll["missing"] else []), ""


def publish_verdict(rv: Rendezvous, code: int, line: str, facts: str = "") -> None:
    """Rank 0's verdict, bound to this launch (the session nonce once the roll call is done)
    and naming the digest of every byte gathered (`facts`; "" when nothing was)."""
    rv.set_json("verdict", {"code": int(code), "line": line, "facts": facts})


def await_verdict(rv: Rendezvous, timeout: float, facts: str = "") -> tuple[int, str]:
    """A rank other than 0: rank 0's (code, line), verified, then acknowledge it. A verdict
    not signed for this launch is never taken: GroupError when no signed one came. A passing
    verdict counts only where it is bound to this rank's own nonce (the roll call carried it)
    and covers what this rank gathered (`facts`, the digest of every gathered byte)."""
    got, why = rv.wait_signed("verdict", 0, time.monotonic() + timeout)
    if not (isinstance(got, dict) and type(got.get("code")) is int
            and 0 <= got["code"] < 256 and isinstance(got.get("line"), str)
            and isinstance(got.get("facts"), str)):
        raise GroupError(f"rank 0 ({rv.launch.master_addr}) gave no verdict within "
                         f"{timeout:g} s" + (f": {why}" if got is None else
                                             ": its verdict is malformed"))
    if got["code"] == 0 and not (rv.session and facts and got["facts"] == facts):
        raise GroupError("rank 0's passing verdict is not bound to this launch's facts "
                         "(" + ("this rank's roll call never came" if not rv.session else
                                 "this rank gathered nothing" if not facts else
                                 "its digest differs from what this rank gathered")
                         + "): refused")
    with contextlib.suppress(Exception):
        rv.store.add(rv.key("acked"), 1)
    return got["code"], _text(got["line"], 2000)


def await_acks(rv: Rendezvous, expected: int, deadline: float) -> None:
    """Rank 0: keep serving the store until `expected` ranks read the verdict, or `deadline`
    (time.monotonic(); ACK_WAIT from now at most)."""
    deadline = min(deadline, time.monotonic() + ACK_WAIT)
    while time.monotonic() < deadline:
        try:
            if int(rv.store.add(rv.key("acked"), 0)) >= expected:
                return
        except Exception:
            return
        time.sleep(0.05)
