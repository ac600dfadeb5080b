"""One rank's run of verify job, step by step, every step bounded; rank 0 builds the Report.

A step that fails on rank 0 (a collective raised or timed out) is diagnosed from the store:
ranks whose heartbeat stopped are dead or hung, ranks that never reached the step are behind.
A step that fails on another rank leaves the diagnosis to rank 0 and waits for its verdict.
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
from envcheck.verify.job import bench, facts_wire, roll, tf_job, wire
from envcheck.verify.job import group as grp
from envcheck.verify.job.bench import Timing, bench_measurements
from envcheck.verify.job.checks import (
    Collective,
    JobFacts,
    nccl_blocker,
    run_job_checks,
    skew_table,
)
from envcheck.verify.job.horovod_job import (
    STEP,
    HorovodRank,
    horovod_rank_to_dict,
    run_horovod,
)
from envcheck.verify.job.launch import LaunchInfo
from envcheck.verify.job.rank import (
    RankFacts,
    collect_rank_facts,
    rank_facts_to_dict,
)
from envcheck.verify.job.watchdog import SignalWatch, Watchdog

GRACE = 10.0  # the watchdog fires this long after a step's own timeout should have
COLLECT_LIMIT = 120.0  # the facts of one rank (probes have their own --probe-timeout)


class StepFailed(Exception):
    def __init__(self, step: str, cause: BaseException) -> None:
        super().__init__(f"{step}: {first_line(cause)}")
        self.step, self.cause = step, cause


def launch_verdict(report: Report, strict: bool) -> Report:
    """The exit policy of a verdict inside a launch: a WARN exits 0 (the launcher would count
    exit 1 a failed job: torchrun prints ChildFailedError and srun/mpirun end the step), unless
    `strict`; FAIL exits 2 and ERROR 3 as everywhere. The report still says warn."""
    if report.status == Status.WARN and not strict and report.code is None:
        return dataclasses.replace(report, code=ExitCode.OK)
    return report


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
        self._step_t0 = time.monotonic()  # when the current step began
        self.t0 = time.monotonic()
        self.watchdog = Watchdog(self._fired)

    # --- the steps --------------------------------------------------------------------------

    def run(self) -> Report:
        """Rank 0: the Report. Other ranks: a Report of rank 0's verdict, not shown."""
        signals = SignalWatch(self._signalled)  # SIGTERM while inside a collective
        try:
            return self._run()
        finally:
            signals.stop()
            self.watchdog.stop()
            if self.rv is not None:
                self.rv.stop()

    def _run(self) -> Report:
        launch, rank0 = self.launch, self.launch.rank == 0
        self.watchdog.arm(self.timeout + GRACE, "reaching rank 0's rendezvous")
        try:
            self.rv = rv = grp.connect(launch, self.timeout)
        except grp.GroupError as e:
            if rank0:
                return self._report([_err("job.ranks.rendezvous", str(e))])
            return self._verdict(int(ExitCode.ERROR), str(e))
        self.launch = rv.launch  # a derived port: the candidate rank 0 answered on
        self.heard_rank0 = True
        try:
            grp.arrive(rv)
        except grp.GroupError as e:
            if rank0:
                return self._report([_err("job.ranks", str(e))])
            return self._verdict(int(ExitCode.ERROR), str(e))
        self.watchdog.arm(self.timeout + GRACE, "the roll call")
        if rank0:
            missing = roll.roll_call(rv, self.timeout)
            roll.publish_roll(rv, missing)
            if missing or rv.refused:
                return self._missing(missing)
            grp.watch_beats(rv)
        else:
            got, why = roll.await_roll(rv, time.monotonic() + self.timeout + 5)
            if got is None and not why.startswith(grp.NOTHING):
                # a roll call was there and refused: no verdict can be bound to this rank
                return self._verdict(int(ExitCode.ERROR), f"the roll call: {why}")
            if got is None or got:
                return self._verdict_or_error("the roll call")
        try:
            return self._steps()
        except StepFailed as e:
            if rank0:
                return self._report(self._diagnose(e))
            return self._verdict_or_error(e.step, failed=True)

    def _steps(self) -> Report:
        rv = self.rv
        assert rv is not None
        dist = self._step("forming the gloo group",
                          lambda: grp.init_group(rv, self.collective_timeout))
        self.watchdog.arm(COLLECT_LIMIT, "collecting this rank's facts")
        mine = self._collect()
        rv.reached("gather")
        gathered = self._step("gathering every rank's facts", lambda: wire.gather(
            dist, rv.binding, "facts", mine, wire.MAX_FACTS, self._digest))
        world = self.launch.world_size
        read = [facts_wire.read(g, r, world) for r, g in enumerate(gathered)]
        unusable = [(r, got) for r, got in enumerate(read) if isinstance(got, wire.Bad)]
        if unusable:  # every rank read the same bytes alike: all stop here
            if self.launch.rank != 0:
                return self._verdict_or_error("gathering every rank's facts")
            return self._report([facts_wire.refused(rv, r, bad) for r, bad in unusable])
        ranks = tuple(got[0] for got in read)  # type: ignore[index]
        facts = tuple(got[1] for got in read)  # type: ignore[index]
        rv.reached("allreduce")
        collectives = [self._allreduce(dist, "gloo", None)]
        horovod: tuple[HorovodRank, ...] = ()
        if self.horovod:
            horovod = self._horovod(dist)
            collectives += _horovod_collective(horovod, self.launch.world_size)
        if self.tensorflow:
            collectives.append(self._tensorflow(dist, ranks))
        nccl = None
        if not nccl_blocker(ranks):
            nccl = self._step("forming the NCCL group", lambda: dist.new_group(
                backend="nccl", timeout=grp._td(self.collective_timeout)))
            collectives.append(self._allreduce(dist, "nccl", nccl))
        one = self.bench and self.launch.world_size < 2
        timings = self._bench(dist, ranks, nccl) if self.bench and not one else ()
        self.watchdog.disarm()
        if self.launch.rank != 0:
            return self._verdict_or_error("the verdict")
        odd = roll.intruders(rv)
        if odd:
            return self._report([_err("job.ranks", why) for why in odd])
        job = JobFacts(self.launch, ranks, facts, collectives=tuple(collectives),
                       lock_packages=tuple(p.name for p in self.exp.lock_packages),
                       horovod=horovod, bench=timings,
                       bench_skipped="one rank: no all-reduce across ranks to time" if one else "")
        return self._report(run_job_checks(job, self.exp), job,
                            bench_measurements(timings, ranks, facts))

    def _step(self, what: str, fn: Any) -> Any:
        self.watchdog.arm(self.timeout + GRACE, what)
        self._step_t0 = time.monotonic()
        try:
            return fn()
        except Exception as e:
            raise StepFailed(what, e) from e

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

    def _allreduce(self, dist: Any, backend: str, group: Any) -> Collective:
        import torch

        world = self.launch.world_size
        expected = world * (world + 1) / 2

        def reduce() -> tuple[float, float]:
            device = "cuda" if backend == "nccl" else "cpu"
            t = torch.full((1 << 16,), float(self.launch.rank + 1), device=device)
            dist.all_reduce(t, group=group)
            return float(t.min()), float(t.max())

        lo, hi = self._step(f"the {backend} all-reduce", reduce)
        got = self._step(f"gathering the {backend} all-reduce results",
                         lambda: self._gather(dist, (self.launch.rank, lo, hi)))
        return Collective(backend, expected, tuple(tuple(g) for g in got))

    def _tensorflow(self, dist: Any, ranks: tuple[RankFacts, ...]) -> Collective:
        launch, mine = self.launch, ranks[self.launch.rank]
        port = tf_job.free_ports(tf_job.ports_needed(launch))
        where = self._step("gathering TensorFlow's worker addresses",
                           lambda: self._gather(dist, (launch.rank, mine.ip, port)))
        workers, slurm_port = tf_job.cluster(launch, sorted(where), ranks)
        self.tf_cluster = tf_job.describe(workers, slurm_port, launch)
        # the worker ends a few seconds before the others' gather of answers gives up on it
        budget = max(5.0, self.collective_timeout - 5)
        self.watchdog.arm(budget + 2 + GRACE, tf_job.STEP)
        answer = tf_job.run_worker(workers, launch.rank, budget, slurm_port)
        got = self._step("gathering TensorFlow's answers",
                         lambda: self._gather(dist, (launch.rank, answer)))
        return tf_job.collective(sorted(got, key=lambda g: g[0]), launch.world_size)

    def _bench(self, dist: Any, ranks: tuple[RankFacts, ...], nccl: Any) -> tuple[Timing, ...]:
        backend = "gloo" if nccl is None else "nccl"

        def pair_group(members: list[int]) -> Any:
            return dist.new_group(members, backend=backend,
                                  timeout=grp._td(self.collective_timeout))

        return self._step(f"timing the {backend} all-reduce (--bench)", lambda: bench.measure(
            dist, self.launch.rank, ranks, backend, nccl, pair_group,
            lambda obj: self._gather(dist, obj)))

    def _horovod(self, dist: Any) -> tuple[HorovodRank, ...]:
        mine = self._step(STEP, lambda: run_horovod(self.launch, self.collective_timeout))
        got = self._step("gathering Horovod's answers",
                         lambda: self._gather(dist, horovod_rank_to_dict(mine)))
        return self._step("reading Horovod's answers",
                          lambda: tuple(facts_wire.horovod_rank(g) for g in got))

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

    def _verdict_or_error(self, step: str, failed: bool = False) -> Report:
        """Rank 0's verdict. After a failed step (``failed``) rank 0 gave up on the same step
        at the same time, and names the stuck ranks within STALE seconds: wait until the step's
        --timeout is spent and that long more, not another whole --timeout."""
        assert self.rv is not None
        wait = self.timeout + grp.STALE + 2
        if failed:
            spent = time.monotonic() - self._step_t0
            wait = max(grp.STALE + 2 * grp.BEAT + 4, wait - spent)
        self.watchdog.arm(wait + GRACE, "waiting for rank 0's verdict")
        try:
            return self._verdict(*roll.await_verdict(self.rv, wait, self._facts()))
        except Exception as e:
            self.heard_rank0 = False
            return self._verdict(int(ExitCode.ERROR), f"{step}: rank 0 "
                                 f"({self.launch.master_addr}) is gone or silent: {first_line(e)}")

    def _verdict(self, code: int, line: str) -> Report:
        """A rank other than 0: rank 0's verdict (or why there is none), one result, not shown
        (the command line prints and writes nothing for it)."""
        status = {ExitCode.OK: Status.PASS, ExitCode.WARN: Status.WARN,
                  ExitCode.FAIL: Status.FAIL}.get(ExitCode(code), Status.ERROR)
        result = Result("job.ranks.verdict", status, line or f"rank 0 ended with exit {code}",
                        node=f"rank {self.launch.rank}", group="job")
        return Report(title="envcheck verify job", code=ExitCode(code), results=(result,),
                      shown=False)

    def _missing(self, missing: list[int]) -> Report:
        rv = self.rv
        assert rv is not None
        results = [_err("job.ranks", why, node=f"rank {r}", fix="only the launch's own "
                        "processes may join: see envcheck docs security")
                   for r, why in sorted(rv.refused.items())]
        results += [_err("job.ranks", f"{grp.describe(rv, r)} did not arrive within "
                         f"{self.timeout:g} s", node=f"rank {r}",
                         fix="look at that rank's output and host: it failed to start, "
                         "crashed, or cannot reach MASTER_ADDR:MASTER_PORT") for r in missing]
        results += [_err("job.ranks", why) for why in roll.intruders(rv)]
        return self._report(results)

    def _diagnose(self, failed: StepFailed) -> list[Result]:
        """Who broke the step: ranks whose heartbeat stopped, else those that never got there."""
        rv = self.rv
        assert rv is not None
        deadline = time.monotonic() + grp.STALE + 2 * grp.BEAT
        silent = grp.silent_ranks(rv)
        while not silent and time.monotonic() < deadline:  # a death is seen after STALE
            time.sleep(grp.BEAT / 2)
            silent = grp.silent_ranks(rv)
        # steps after a phase marker: who never set it is behind (before the first, nobody is)
        phase = ("allreduce" if "all-reduce" in failed.step
                 else "gather" if "gathering" in failed.step else "")
        behind = [r for r in grp.not_reached(rv, phase) if r not in silent] if phase else []
        out = [_err("job.ranks", f"{grp.describe(rv, r)} stopped answering during "
                    f"{failed.step} (its heartbeat stopped: it died or hangs)",
                    node=f"rank {r}", fix="look at that rank's output and host (killed, "
                    "out of memory, stuck in a driver call)") for r in silent]
        out += [_err("job.ranks", f"{grp.describe(rv, r)} never reached {failed.step}",
                     node=f"rank {r}", fix="run again with --debug to see where it stopped")
                for r in behind]
        if not out:
            out.append(_err("job.ranks.step", f"{failed.step} failed on rank 0: "
                            f"{first_line(failed.cause)}",
                            fix="run again with --debug; check the network between the hosts"))
        return out

    def _fired(self, what: str) -> None:
        """The watchdog, before it ends the process: rank 0 names the stuck ranks, leaves a
        verdict for the others and writes its report; every rank says one line."""
        line = f"{what} did not finish within its limit (--timeout {self.timeout:g} s + " \
               f"{GRACE:g} s grace): the watchdog ended this rank"
        if self.launch.rank != 0:
            grp.debug_line(self.launch, f"error: {line}")
            return
        stuck = self._stuck(what)
        if stuck:
            line += "; stuck: " + ", ".join(stuck)
        if self.rv is not None:
            with contextlib.suppress(Exception):
                roll.publish_verdict(self.rv, int(ExitCode.ERROR), line[:2000], self._facts())
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

    def _stuck(self, what: str) -> list[str]:
        """The ranks that hold `what` up: heartbeat stopped, else never reached its phase."""
        rv = self.rv
        if rv is None:
            return []
        try:
            silent = grp.silent_ranks(rv)
            if not silent:
                phase = ("allreduce" if "all-reduce" in what
                         else "gather" if "gathering" in what else "")
                silent = grp.not_reached(rv, phase) if phase else []
            return [grp.describe(rv, r) for r in silent]
        except Exception:  # the store itself is what hangs: the step is named, no rank
            return []

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
        report = launch_verdict(report, self.strict)
        if self.rv is not None:
            code = int(report.exit_code)
            first = next((r.message for r in results if r.status == Status.ERROR), "")
            line = f"verify job: {report.status.value}" + (f": {first}" if first else "")
            self._final = report
            # the acks wait has its own bound: the step before it must not run the watchdog out
            self.watchdog.arm(roll.ACK_WAIT + GRACE, "waiting for the ranks to read the verdict")
            with contextlib.suppress(Exception):
                roll.publish_verdict(self.rv, code, line[:2000], self._facts())
                roll.await_acks(self.rv, len(self.rv.arrived) - 1)
        return report

    def _environment(self, job: JobFacts | None) -> dict[str, str]:
        launch = self.launch
        env = {
            "launcher": launch.launcher,
            "world size": str(launch.world_size),
            "rendezvous": f"{launch.master_addr}:{launch.master_port} ({launch.port_source})"
            + (" via torchrun's agent store" if launch.agent_store else ""),
            "seconds": f"{time.monotonic() - self.t0:.2f}",
        }
        if job is not None and job.ranks:
            r0 = job.ranks[0]
            env["torch"] = r0.torch + (f" (CUDA {r0.torch_cuda})" if r0.torch_cuda else "")
        if self.tf_cluster:
            env["tensorflow cluster"] = self.tf_cluster
        if job is not None and job.horovod and job.horovod[0].version:
            h0 = job.horovod[0]
            env["horovod"] = h0.version + (f" ({h0.controller} controller)" if h0.controller
                                           else "")
        return env


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

