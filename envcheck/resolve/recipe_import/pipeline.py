"""`envcheck recipe import`: ImportOptions (options.py) -> recipe_import() -> Report: an
environment.yml -> the recipe it reads as (envcheck.resolve.environment_yml), as the report's
output or written to a file."""

from __future__ import annotations

from envcheck.report import Report, Result, Status
from envcheck.resolve.recipe_import.options import ImportOptions


def recipe_import(options: ImportOptions) -> Report:
    from envcheck.extras import require_build_extra

    require_build_extra("recipe import")
    from envcheck.destinations import check_destination
    from envcheck.inputs import read_text
    from envcheck.resolve.environment_yml import from_environment, recipe_text
    from envcheck.resolve.recipe import MAX_RECIPE_BYTES
    from envcheck.resolve.yaml_nodes import compose

    environment, platform, out = options.environment, options.platform, options.out
    if out is not None:
        check_destination(out, f"--out {out}")
    text = read_text(environment, "environment.yml", MAX_RECIPE_BYTES)
    recipe = from_environment(compose(text, environment), environment, platform)
    written = recipe_text(recipe, environment.name)
    n = len(recipe.dependencies) + len(recipe.pip)
    where = "printed" if out is None else f"written to {out}"
    result = Result("recipe import", Status.PASS,
                    f"{recipe.name}: {n} entries for {', '.join(recipe.platforms)}, {where}")
    if out is None:
        return Report("envcheck recipe import", results=(result,), output=written)
    from envcheck.atomic import write_files_atomically

    write_files_atomically({out: written.encode()})
    return Report("envcheck recipe import", results=(result,), output=f"wrote {out}\n")
