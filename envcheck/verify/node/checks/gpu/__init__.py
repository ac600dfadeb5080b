"""GPU checks: driver, visibility to the job, busy GPUs; health (ECC, Xid, PCIe, NVLink, clocks)."""
