"""envcheck: provision and validate environments for multi-GPU Dask / PyTorch clusters."""

__version__ = "0.1.0"
