"""Slurm: sbatch scripts whose Dask cluster verifies itself, and their submission."""
