"""One rank's gathered facts, read back from the JSON it sent: checked field by field against
RankFacts and NodeFacts (bounded.conforms) before they are built, so that a rank's malformed facts
are a result naming that rank and its host, never a traceback."""

from __future__ import annotations

from typing import Any

from envcheck.report import Result, Status
from envcheck.verify import bounded
from envcheck.verify.facts import NodeFacts, facts_from_dict
from envcheck.verify.job import group as grp
from envcheck.verify.job import wire
from envcheck.verify.job.horovod_job import HorovodRank, horovod_rank_from_dict
from envcheck.verify.job.rank import RankFacts, first_line, rank_facts_from_dict


def read(got: Any, sender: int, world: int) -> tuple[RankFacts, NodeFacts] | wire.Bad:
    """(RankFacts, NodeFacts) from rank `sender`'s {"rank": ..., "facts": ...}, or why not:
    facts that claim another rank's number or another world are refused."""
    if isinstance(got, wire.Bad):
        return got
    if not isinstance(got, dict) or set(got) != {"rank", "facts"}:
        return wire.Bad(-1, "not an object of 'rank' and 'facts'")
    why = bounded.conforms(RankFacts, got["rank"], "rank.") or bounded.conforms(
        NodeFacts, got["facts"], "facts.")
    if why:
        return wire.Bad(-1, f"facts do not match envcheck's model ({why[:200]})")
    claim = got["rank"]
    for field, want in (("rank", sender), ("world_size", world)):
        if claim.get(field) != want:
            return wire.Bad(sender, f"its facts claim {field} {_number(claim.get(field))}, "
                            f"but it sent them as rank {sender} of {world}")
    try:
        return rank_facts_from_dict(got["rank"]), facts_from_dict(got["facts"])
    except Exception as e:  # noqa: BLE001 - any way the data fails to build is the same answer
        return wire.Bad(-1, f"facts do not build ({first_line(e)})")


def _number(value: Any) -> str:
    """A number another rank sent, short: 10**4000 is 'a number of 4001 digits'."""
    if type(value) is not int:
        return repr(value)[:40]
    if abs(value) < 10**12:
        return str(value)
    return f"a number of {len(str(abs(value)))} digits"


def refused(rv: grp.Rendezvous, rank: int, bad: wire.Bad) -> Result:
    """The error naming the rank (and its host, from its signed roll-call record)."""
    return Result("job.ranks.facts", Status.ERROR,
                  f"{grp.describe(rv, rank)} sent facts that cannot be used: {bad.why}",
                  node=f"rank {rank}", group="job",
                  fix="run the same envcheck version on every rank; only the launch's own "
                  "processes may join (envcheck docs security)")


def horovod_rank(got: Any) -> HorovodRank:
    """HorovodRank from one rank's gathered dict; ValueError naming the field otherwise."""
    why = bounded.conforms(HorovodRank, got)
    if why:
        raise ValueError(f"a rank's Horovod answer does not match envcheck's model ({why[:200]})")
    return horovod_rank_from_dict(got)
