"""Host checks: glibc, limits UCX and NCCL need, network and InfiniBand devices, UCX."""
