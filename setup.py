"""The wheel carries the documentation: docs/ is copied into the package as envcheck/docs/
(``envcheck docs TOPIC`` reads it there; from a checkout it reads docs/ itself). Everything
else about the build is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithDocs(build_py):
    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "docs"
        if source.is_dir() and not self.dry_run:
            target = Path(self.build_lib) / "envcheck" / "docs"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)


setup(cmdclass={"build_py": BuildWithDocs})
