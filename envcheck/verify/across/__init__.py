"""Judges that compare processes or hosts, pure functions of gathered facts: version skew,
hosts, GPU pinning, Slurm's binding (with its hostlists), verify node's checks on every worker
folded per host. verify cluster, verify job and verify ray all judge with them."""
