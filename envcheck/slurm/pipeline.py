"""`envcheck slurm script` as Options -> Report: the sbatch script as the report's output, or
(submit) the job submitted, waited for and its verify report read back."""

from __future__ import annotations

from pathlib import Path

from envcheck.report import Report, Result, Status
from envcheck.slurm.options import Options
from envcheck.slurm.script import render


def slurm_script(opts: Options) -> Report:
    script = render(opts, opts.target_slurm())
    if not opts.submit:
        return script_report(opts, script)
    from envcheck.slurm.submit import submit

    return submit(script, Path(opts.shared_dir), opts.submit_timeout)


def script_report(opts: Options, script: str) -> Report:
    """The sbatch script as the report's output (printed as is, nothing else on stdout)."""
    shape = f"{opts.nodes} node(s) x {opts.gpus_per_node} GPU(s), " + (
        "verify job on every task" if opts.job else f"a Dask cluster over {opts.protocol}")
    result = Result("slurm script", Status.PASS, f"sbatch script: {shape}", group="slurm")
    return Report("envcheck slurm script", results=(result,), output=script)
