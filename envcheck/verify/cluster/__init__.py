"""verify cluster: reach a cluster, gather every process's facts, skew, pinning, hosts, Slurm."""
