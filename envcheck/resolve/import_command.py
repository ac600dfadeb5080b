"""`envcheck recipe import`: an environment.yml -> the recipe file it reads as
(envcheck.resolve.environment_yml), printed or written to --out."""

from __future__ import annotations

import argparse
from pathlib import Path

from envcheck.report import Report, Result, Status


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("environment", type=Path, metavar="ENVIRONMENT_YML",
                   help="a conda environment.yml (conda env create -f, conda-lock)")
    p.add_argument("--platform", help="the platform to lock when the file names none "
                   "(default: this machine's)")
    p.add_argument("--out", type=Path, help="write the recipe here instead of printing it")


def run(args: argparse.Namespace) -> Report:
    from envcheck.extras import require_build_extra

    require_build_extra("recipe import")
    from envcheck.destinations import check_destination
    from envcheck.inputs import read_text
    from envcheck.resolve.environment_yml import from_environment, recipe_text
    from envcheck.resolve.recipe import MAX_RECIPE_BYTES, _compose

    out: Path | None = args.out
    if out is not None:
        check_destination(out, f"--out {out}")
    path: Path = args.environment
    recipe = from_environment(_compose(read_text(path, "environment.yml", MAX_RECIPE_BYTES),
                                       path), path, args.platform)
    text = recipe_text(recipe, path.name)
    n = len(recipe.dependencies) + len(recipe.pip)
    where = "printed" if out is None else f"written to {out}"
    result = Result("recipe import", Status.PASS,
                    f"{recipe.name}: {n} entries for {', '.join(recipe.platforms)}, {where}")
    if out is None:
        return Report("envcheck recipe import", results=(result,), output=text)
    from envcheck.atomic import write_files_atomically

    write_files_atomically({out: text.encode()})
    return Report("envcheck recipe import", results=(result,), output=f"wrote {out}\n")
