"""`envcheck slurm script`: print (or --submit) an sbatch script whose Dask cluster verifies
itself before the work runs. docs/slurm.md has the script's anatomy.

This module only parses: the flags Options declares (options.py) -> pipeline.py -> Report."""

from __future__ import annotations

from envcheck import option
from envcheck.slurm.options import Options
from envcheck.slurm.pipeline import slurm_script

add_arguments, options_from_args, run = option.command(Options, slurm_script)
