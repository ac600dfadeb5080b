"""verify job: the launcher's own ranks (srun, torchrun, mpirun, horovodrun) check themselves.

launch   LaunchInfo from the launcher's environment (pure)
rank     RankFacts: what torch gives the rank (device, CUDA runtime, NCCL, a kernel)
group    the rendezvous store, roll call, heartbeats, the gloo group, the verdict
listen   the store bound to MASTER_ADDR, the derived-port announcement
auth     the job's secret, and the HMAC every value carries
wire     the all-gather of signed, bounded JSON (never pickle); facts_wire reads facts back
watchdog ends a rank whose step overruns its deadline
checks   JobFacts and the judgements over them (a registry)
phase    the phases of a rank's run, in order (Phase), a step of one, and PhaseFailed
run      one rank's run as those phases: rank 0's path and every other rank's
verdict  what rank 0 says of a run (who broke a step, the environment), another rank's Report
command  the verb
"""
