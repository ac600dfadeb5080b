"""`envcheck slurm script` as SlurmScriptOptions -> Report: the sbatch script as the report's
output, or (submit) the job submitted, waited for and its verify report read back."""

from __future__ import annotations

from pathlib import Path

from envcheck.report import Report, Result, Status
from envcheck.slurm.options import SlurmScriptOptions
from envcheck.slurm.script import ScriptOptions, render


def slurm_script(opts: SlurmScriptOptions) -> Report:
    script = opts.script()
    if not opts.submit:
        return script_report(script)
    from envcheck.slurm.submit import submit

    return submit(render(script), Path(script.shared_dir), opts.submit_timeout)


def script_report(script: ScriptOptions) -> Report:
    """The sbatch script as the report's output (printed as is, nothing else on stdout)."""
    shape = f"{script.nodes} node(s) x {script.gpus_per_node} GPU(s), " + (
        "verify job on every task" if script.job else f"a Dask cluster over {script.protocol}")
    result = Result("slurm script", Status.PASS, f"sbatch script: {shape}", group="slurm")
    return Report("envcheck slurm script", results=(result,), output=render(script))
