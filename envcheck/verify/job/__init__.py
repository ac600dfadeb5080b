"""verify job: the launcher's own ranks (srun, torchrun, mpirun, horovodrun) check themselves.

launch   LaunchInfo from the launcher's environment (pure)
rank     RankFacts: what torch gives the rank (device, CUDA runtime, NCCL, a kernel)
group    the rendezvous store, roll call, heartbeats, watchdog, the gloo group
checks   JobFacts and the judgements over them (a registry)
run      one rank's steps; rank 0 builds the Report
command  the verb
"""
