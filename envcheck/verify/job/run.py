"""One rank's run of verify job as phases (phase.Phase, in order); rank 0 builds the Report.

Rank 0's path (_rank0) and every other rank's (_other_rank) go through the same phases, each
one method with one way out: its value, or PhaseFailed carrying the step. A step that fails on
rank 0 (a collective raised or timed out) is diagnosed from the store: ranks whose heartbeat
stopped are dead or hung, ranks that never reached the phase are behind. A step that fails on
another rank leaves the diagnosis to rank 0 and waits for its verdict.

Every step ends by its deadline, its start + its limit (--timeout): a collective gives up
STALE seconds before it; after a failure rank 0's diagnosis and its wait for the others to read
the verdict fit in what is left, and the others wait for that verdict until SPARE seconds past
it. The watchdog ends a rank GRACE seconds past it: a hung step ends every rank within its
limit + BOUND seconds of its start.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import signal
import threading
import time
from typing import Any, Callable

from envcheck.errors import ExitCode
from envcheck.report import Measurement, Report, Result, Status
from envcheck.text import first_line
from envcheck.verify.expectations import Expectations
from envcheck.verify.facts import collect_node_facts, facts_to_dict
from envcheck.verify.facts.model import NodeFacts
from envcheck.verify.job import bench, facts_wire, horovod_job, roll, tf_job, verdict, wire
from envcheck.verify.job import group as grp
from envcheck.verify.job.bench import Timing, bench_measurements
from envcheck.verify.job.checks import (
    Collective,
    JobFacts,
    nccl_blocker,
    run_job_checks,
    skew_table,
)
from envcheck.verify.job.horovod_job import HorovodRank, horovod_rank_to_dict, run_horovod
from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.phase import Phase, PhaseFailed, Step
from envcheck.verify.job.rank import (
    RankFacts,
    collect_rank_facts,
    rank_facts_to_dict,
)
from envcheck.verify.job.watchdog import GRACE, SignalWatch, Watchdog

COLLECT_LIMIT = 120.0  # the facts of one rank (probes have their own --probe-timeout)
SPARE = 1.0  # a rank other than 0 waits for a failed step's verdict this long past its limit
VERDICT_WAIT = "waiting for rank 0's verdict"


class JobRun:
    def __init__(self, launch: LaunchInfo, exp: Expectations, timeout: float, *,
                 debug: bool = False, horovod: bool = False, tensorflow: bool = False,
                 bench: bool = False, strict: bool = False,
                 on_abort: Callable[[Report], None] | None = None) -> None:
        self.launch, self.exp, self.timeout = launch, exp, timeout
        self.strict = strict  # a WARN verdict exits 1 (default: 0, the launch goes on)
        # rank 0, when its watchdog ends the process: writes the report (--json/--junit)
        self.on_abort = on_abort
        self._final: Report | None = None  # rank 0's report, built, while the ranks read it
        self.bench = bench  # time the all-reduce over every rank and between host pairs
        self.horovod = horovod  # run Horovod's step (horovodrun, or --horovod)
        self.tensorflow = tensorflow  # MultiWorkerMirroredStrategy across the ranks
        self.tf_cluster = ""  # where its cluster came from, for the report
        # a collective gives up a little before --timeout: a rank that hangs is then named
        # (its heartbeat long stale) and every rank out before --timeout runs out
        self.collective_timeout = max(timeout / 2, timeout - grp.STALE)
        self.debug = debug
        self.rv: grp.Rendezvous | None = None
        self.heard_rank0 = False
        self._gathers = 0  # numbers each gather: a rank's bytes are signed for one step only
        self._digest = hashlib.sha256()  # of every byte gathered: rank 0's verdict names it
        self._step = Step(Phase.RENDEZVOUS)  # the step running now
        self._deadline = float("inf")  # when it must be done (the watchdog: GRACE later)
        self.t0 = time.monotonic()
        self.watchdog = Watchdog(self._fired)

    def run(self) -> Report:
        """Rank 0: the Report. Other ranks: a Report of rank 0's verdict, not shown."""
        signals = SignalWatch(self._signalled)  # SIGTERM while inside a collective
        try:
            return self._rank0() if self.launch.rank == 0 else self._other_rank()
        finally:
            signals.stop()
            self.watchdog.stop()
            if self.rv is not None:
                self.rv.stop()

    def _rank0(self) -> Report:
        """Rank 0: every phase in order, then its judgement; a phase that fails is reported
        (what it says, else who broke it)."""
        try:
            self._rendezvous()
            self._arrive()
            self._roll_call()
            job = self._job()
            self._enter(Phase.VERDICT)
            self._no_intruders()
        except PhaseFailed as e:
            return self._report(list(e.results) or self._diagnose(e))
        return self._report(run_job_checks(job, self.exp), job,
                            bench_measurements(job.bench, job.ranks, job.facts))

    def _other_rank(self) -> Report:
        """Every other rank: every phase in order, then rank 0's verdict (or why none came)."""
        try:
            self._rendezvous()
            self._arrive()
            self._await_roll()
            self._job()
        except PhaseFailed as e:
            if e.alone:
                return self._verdict(int(ExitCode.ERROR), e.alone)
            return self._await_verdict(e.step, e.fresh)
        return self._await_verdict(Step(Phase.VERDICT), fresh=True)

    def _job(self) -> JobFacts:
        """The phases every rank runs alike, from the gloo group to the last collective."""
        dist = self._group()
        ranks, facts = self._gather_facts(dist, self._collect_facts())
        collectives = [self._allreduce(dist, Phase.ALLREDUCE, "gloo", None)]
        horovod: tuple[HorovodRank, ...] = self._horovod(dist) if self.horovod else ()
        collectives += _horovod_collective(horovod, self.launch.world_size)
        if self.tensorflow:
            collectives.append(self._tensorflow(dist, ranks))
        nccl = None
        if not nccl_blocker(ranks):
            nccl = self._run(Phase.NCCL, lambda: dist.new_group(
                backend="nccl", timeout=grp._td(self.collective_timeout)), "forming the NCCL group")
            collectives.append(self._allreduce(dist, Phase.NCCL, "nccl", nccl))
        one = self.bench and self.launch.world_size < 2
        timings = self._bench(dist, ranks, nccl) if self.bench and not one else ()
        return JobFacts(self.launch, ranks, facts, collectives=tuple(collectives),
                        lock_packages=tuple(p.name for p in self.exp.lock_packages),
                        horovod=horovod, bench=timings,
                        bench_skipped="one rank: no all-reduce across ranks to time" if one else "")

    # --- the phases -------------------------------------------------------------------------

    def _enter(self, phase: Phase, what: str = "", limit: float | None = None) -> Step:
        """Start a step of `phase`: it must be done within `limit` (default --timeout)."""
        seconds = self.timeout if limit is None else limit
        said = f"--timeout {seconds:g} s" if limit is None else f"{seconds:g} s"
        self._step = step = Step(phase, what, said)
        self._deadline = time.monotonic() + seconds
        self.watchdog.arm(seconds + GRACE, step)
        return step

    def _run(self, phase: Phase, fn: Callable[[], Any], what: str = "") -> Any:
        """`fn()` as one step of `phase`; PhaseFailed carrying what it raised."""
        step = self._enter(phase, what)
        try:
            return fn()
        except Exception as e:
            raise PhaseFailed(step, cause=e) from e

    @property
    def _rv(self) -> grp.Rendezvous:
        assert self.rv is not None
        return self.rv

    def _rendezvous(self) -> None:
        step = self._enter(Phase.RENDEZVOUS)
        try:  # gives up when a collective does: its own error, before the watchdog's
            self.rv = rv = grp.connect(self.launch, self.collective_timeout)
        except grp.GroupError as e:
            raise PhaseFailed(step, results=(_err("job.ranks.rendezvous", str(e)),),
                              alone=str(e)) from None
        self.launch = rv.launch  # a derived port: the candidate rank 0 answered on
        self.heard_rank0 = True

    def _arrive(self) -> None:
        step = self._enter(Phase.ARRIVE)
        try:
            grp.arrive(self._rv)
        except grp.GroupError as e:
            raise PhaseFailed(step, results=(_err("job.ranks", str(e)),), alone=str(e)) from None

    def _roll_call(self) -> None:
        """Rank 0: every rank arrived and was admitted; then their heartbeats are watched."""
        step = self._enter(Phase.ROLL_CALL)
        rv = self._rv
        missing = roll.roll_call(rv, self.timeout)
        roll.publish_roll(rv, missing)
        if missing or rv.refused:
            raise PhaseFailed(step, results=tuple(self._missing(missing)))
        grp.watch_beats(rv)

    def _await_roll(self) -> None:
        """Another rank: rank 0's roll call for this launch, with nobody missing."""
        step = self._enter(Phase.ROLL_CALL)
        got, why = roll.await_roll(self._rv, self._deadline + SPARE)
        if got is None and not why.startswith(grp.NOTHING):
            # a roll call was there and refused: no verdict can be bound to this rank
            raise PhaseFailed(step, alone=f"the roll call: {why}")
        if got is None or got:
            raise PhaseFailed(step, fresh=got is not None)

    def _group(self) -> Any:
        return self._run(Phase.GROUP, lambda: grp.init_group(self._rv, self.collective_timeout))

    def _collect_facts(self) -> dict[str, Any]:
        self._enter(Phase.COLLECT, limit=COLLECT_LIMIT)
        mine = self._collect()
        self._rv.reached(Phase.GATHER.marker)
        return mine

    def _gather_facts(self, dist: Any, mine: dict[str, Any],
                      ) -> tuple[tuple[RankFacts, ...], tuple[NodeFacts, ...]]:
        """Every rank's facts, read alike on every rank: facts one cannot use stop them all."""
        rv = self._rv
        gathered = self._run(Phase.GATHER, lambda: wire.gather(
            dist, rv.binding, "facts", mine, wire.MAX_FACTS, self._digest))
        world = self.launch.world_size
        read = [facts_wire.read(g, r, world) for r, g in enumerate(gathered)]
        unusable = [(r, got) for r, got in enumerate(read) if isinstance(got, wire.Bad)]
        if unusable:
            raise PhaseFailed(self._step, fresh=True, results=tuple(
                facts_wire.refused(rv, r, bad) for r, bad in unusable))
        rv.reached(Phase.ALLREDUCE.marker)
        return (tuple(got[0] for got in read),  # type: ignore[index]
                tuple(got[1] for got in read))  # type: ignore[index]

    def _collect(self) -> dict[str, Any]:
        launch = self.launch
        ip = grp.route_ip(launch.master_addr) if launch.rank else _own_ip(launch.master_addr)
        facts = collect_node_facts(
            "worker", f"tcp://{ip}:0" if ip else "", health=True,
            import_modules=self.exp.import_modules, libraries=self.exp.libraries,
            probe_timeout=self.exp.probe_timeout,
            tensorflow_probe=False if "tensorflow" in self.exp.skip else None,
        )
        rank = collect_rank_facts(launch, ip, facts.address_link.interface)
        return {"rank": rank_facts_to_dict(rank), "facts": facts_to_dict(facts)}

    def _allreduce(self, dist: Any, phase: Phase, backend: str, group: Any) -> Collective:
        import torch

        world = self.launch.world_size
        expected = world * (world + 1) / 2

        def reduce() -> tuple[float, float]:
            device = "cuda" if backend == "nccl" else "cpu"
            t = torch.full((1 << 16,), float(self.launch.rank + 1), device=device)
            dist.all_reduce(t, group=group)
            return float(t.min()), float(t.max())

        lo, hi = self._run(phase, reduce, f"the {backend} all-reduce")
        got = self._run(phase, lambda: self._gather(dist, (self.launch.rank, lo, hi)),
                        f"gathering the {backend} all-reduce results")
        return Collective(backend, expected, tuple(tuple(g) for g in got))

    def _tensorflow(self, dist: Any, ranks: tuple[RankFacts, ...]) -> Collective:
        launch, mine = self.launch, ranks[self.launch.rank]
        port = tf_job.free_ports(tf_job.ports_needed(launch))
        where = self._run(Phase.TENSORFLOW, lambda: self._gather(dist, (launch.rank, mine.ip,
                          port)), "gathering TensorFlow's worker addresses")
        workers, slurm_port = tf_job.cluster(launch, sorted(where), ranks)
        self.tf_cluster = tf_job.describe(workers, slurm_port, launch)
        # the worker ends a few seconds before the others' gather of answers gives up on it
        budget = max(5.0, self.collective_timeout - 5)
        self._enter(Phase.TENSORFLOW, tf_job.STEP, limit=budget + 2)
        answer = tf_job.run_worker(workers, launch.rank, budget, slurm_port)
        got = self._run(Phase.TENSORFLOW, lambda: self._gather(dist, (launch.rank, answer)),
                        "gathering TensorFlow's answers")
        return tf_job.collective(sorted(got, key=lambda g: g[0]), launch.world_size)

    def _bench(self, dist: Any, ranks: tuple[RankFacts, ...], nccl: Any) -> tuple[Timing, ...]:
        backend = "gloo" if nccl is None else "nccl"

        def pair_group(members: list[int]) -> Any:
            return dist.new_group(members, backend=backend,
                                  timeout=grp._td(self.collective_timeout))

        return self._run(Phase.BENCH, lambda: bench.measure(
            dist, self.launch.rank, ranks, backend, nccl, pair_group,
            lambda obj: self._gather(dist, obj)), f"timing the {backend} all-reduce (--bench)")

    def _horovod(self, dist: Any) -> tuple[HorovodRank, ...]:
        mine = self._run(Phase.HOROVOD, lambda: run_horovod(self.launch,
                         self.collective_timeout), horovod_job.STEP)
        got = self._run(Phase.HOROVOD, lambda: self._gather(dist, horovod_rank_to_dict(mine)),
                        "gathering Horovod's answers")
        return self._run(Phase.HOROVOD, lambda: tuple(facts_wire.horovod_rank(g) for g in got),
                         "reading Horovod's answers")

    def _no_intruders(self) -> None:
        """Rank 0: nobody claimed a rank twice or came with another WORLD_SIZE."""
        odd = roll.intruders(self._rv)
        if odd:
            raise PhaseFailed(self._step, results=tuple(_err("job.ranks", why) for why in odd))

    # --- failures ---------------------------------------------------------------------------

    def _gather(self, dist: Any, obj: Any) -> list[Any]:
        """Every rank's `obj` as signed, bounded JSON (wire.gather_all): never pickle."""
        assert self.rv is not None
        self._gathers += 1
        return wire.gather_all(dist, self.rv.binding, f"step{self._gathers}", obj,
                               digest=self._digest)

    def _facts(self) -> str:
        """The digest of every byte gathered ("" before the first gather)."""
        got = self._digest.hexdigest()
        return "" if got == hashlib.sha256().hexdigest() else got

    def _await_verdict(self, step: Step, fresh: bool) -> Report:
        """Another rank: rank 0's verdict. After a failed step rank 0 gave up on the same step
        at about the same time and names the stuck ranks within what is left of its limit:
        wait until SPARE seconds past it. Else (``fresh``) rank 0 is judging, within a
        --timeout of its own and its watchdog's GRACE after it: wait that long and SPARE more,
        so that even the watchdog's verdict is read."""
        if fresh:
            self._enter(Phase.VERDICT, VERDICT_WAIT, self.timeout + GRACE + SPARE)
        else:
            self._step = dataclasses.replace(self._step, what=f"{VERDICT_WAIT} on {step.what}")
            self.watchdog.arm(self._deadline + GRACE - time.monotonic(), self._step)
        wait = max(0.5, self._deadline + (0 if fresh else SPARE) - time.monotonic())
        try:
            return self._verdict(*roll.await_verdict(self._rv, wait, self._facts()))
        except Exception as e:
            self.heard_rank0 = False
            return self._verdict(int(ExitCode.ERROR), f"{step.what}: rank 0 "
                                 f"({self.launch.master_addr}) is gone or silent: {first_line(e)}")

    def _fired(self, step: Step) -> None:
        """The watchdog, before it ends the process: rank 0 names the stuck ranks, leaves a
        verdict for the others and writes its report; every rank says one line. Store calls
        run on a thread of their own, given a second: the store may be what hangs."""
        line = (f"{step.what} did not finish within its limit ({step.limit} + {GRACE:g} s "
                "grace): the watchdog ended this rank")
        if self.launch.rank != 0:
            grp.debug_line(self.launch, f"error: {line}")
            return
        told: list[str] = []

        def tell() -> None:
            stuck = self._stuck(step)
            told.append(line + ("; stuck: " + ", ".join(stuck) if stuck else ""))
            if self.rv is not None:
                roll.publish_verdict(self.rv, int(ExitCode.ERROR), told[0][:2000], self._facts())

        t = threading.Thread(target=tell, name="envcheck-watchdog-verdict", daemon=True)
        t.start()
        t.join(1.0)
        line = told[0] if told else line
        report = self._final or Report(
            title="envcheck verify job", code=ExitCode.ERROR, environment=self._environment(None),
            results=(_err("job.ranks.watchdog", line, fix="look at the stuck rank's host (a driver "
                          "call, a stopped process, a dead link); run again with --debug"),))
        grp.debug_line(self.launch, f"error: {line}")
        if self.on_abort is not None:
            try:
                self.on_abort(report)
            except Exception as e:  # the process ends anyway: say why the files are missing
                grp.debug_line(self.launch, f"the report cannot be written: {first_line(e)}")

    def _signalled(self, signum: int) -> None:
        """A signal the main thread could not take within SignalWatch.LATE (it is inside a
        collective or a store call), before the process ends with 128 + signum: rank 0
        leaves a verdict for the others and writes its report; every rank says one line."""
        name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
        code = ExitCode.TERMINATED if signum == signal.SIGTERM else ExitCode.INTERRUPTED
        line = f"terminated by {name} during {self.watchdog.what or 'the run'}"
        grp.debug_line(self.launch, line)
        if self.launch.rank != 0:
            return
        if self.rv is not None:  # on its own thread: a store call may hang where main does
            rv, facts = self.rv, self._facts()
            t = threading.Thread(target=lambda: roll.publish_verdict(
                rv, int(code), f"verify job: error: {line}", facts), daemon=True)
            t.start()
            t.join(0.5)
        report = Report(title="verify job", code=code, environment=self._environment(None),
                        results=(_err("job.ranks.signal", line),))
        if self.on_abort is not None:
            with contextlib.suppress(Exception):
                self.on_abort(report)

    def _stuck(self, step: Step) -> list[str]:
        """The ranks that hold `step` up: heartbeat stopped, else never reached its phase."""
        rv = self.rv
        if rv is None:
            return []
        try:
            silent = grp.silent_ranks(rv)
            marker = step.phase.marker
            if not silent and marker:
                silent = grp.not_reached(rv, marker)
            return [grp.describe(rv, r) for r in silent]
        except Exception:  # the store itself is what hangs: the step is named, no rank
            return []

    def _verdict(self, code: int, line: str) -> Report:
        return verdict.other_rank_report(self.launch.rank, code, line)

    def _missing(self, missing: list[int]) -> list[Result]:
        return verdict.missing_results(self._rv, missing, self.timeout)

    def _diagnose(self, failed: PhaseFailed) -> list[Result]:
        return verdict.diagnosis(self._rv, failed, self._deadline)

    def _environment(self, job: JobFacts | None) -> dict[str, str]:
        return verdict.environment(self.launch, self.t0, job, self.tf_cluster)

    # --- the report -------------------------------------------------------------------------

    def _report(self, results: list[Result], job: JobFacts | None = None,
                measurements: list[Measurement] = ()) -> Report:  # type: ignore[assignment]
        tables = (skew_table(job)[0],) if job is not None and job.ranks else ()
        flood = grp.store_refusals(self.rv) if self.rv is not None else ""
        if flood:
            results = [*results, Result(
                "job.ranks.store", Status.WARN, flood, group="job",
                fix="something other than the launch's ranks reaches MASTER_ADDR:MASTER_PORT; "
                "see `envcheck docs security`")]
        report = Report(
            title="envcheck verify job",
            results=tuple(results),
            measurements=tuple(measurements),
            tables=tables,
            environment=self._environment(job),
        )
        report = verdict.launch_verdict(report, self.strict)
        if self.rv is not None:
            code = int(report.exit_code)
            first = next((r.message for r in results if r.status == Status.ERROR), "")
            line = f"verify job: {report.status.value}" + (f": {first}" if first else "")
            self._final = report
            # the ranks that can read it: neither silent nor refused; within the step's limit
            gone = set(grp.silent_ranks(self.rv)) | set(self.rv.refused)
            readers = sum(1 for r in self.rv.arrived if r != 0 and r not in gone)
            until = min(time.monotonic() + roll.ACK_WAIT, self._deadline + SPARE)
            with contextlib.suppress(Exception):
                roll.publish_verdict(self.rv, code, line[:2000], self._facts())
                roll.await_acks(self.rv, readers, until)
        return report

def _horovod_collective(ranks: tuple[HorovodRank, ...], world: int) -> list[Collective]:
    """The known-answer hvd.allreduce as a Collective, when every rank ran it in the world the
    launcher made (job.horovod names the ranks that could not, or saw another world)."""
    if not ranks or any(h.error or len(h.reduced) != 2 or h.size != world for h in ranks):
        return []
    got = tuple((h.rank, h.reduced[0], h.reduced[1]) for h in ranks)
    return [Collective("horovod", world * (world + 1) / 2, got)]


def _own_ip(master: str) -> str:
    """Rank 0: the master address as an IP of this host, else the route towards it."""
    import socket

    with contextlib.suppress(OSError, IndexError):
        ip = socket.getaddrinfo(master, None, proto=socket.IPPROTO_TCP)[0][4][0]
        if not ip.startswith("127."):
            return str(ip)
    return grp.route_ip(master)


def _err(check: str, message: str, node: str = "", fix: str = "") -> Result:
    return Result(check, Status.ERROR, message, node=node, fix=fix, group="job")
