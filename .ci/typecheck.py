"""Type-check the library with mypy, each source folder under the package name it installs as.

pyproject.toml installs some folders under other names (``[tool.setuptools.package-dir]``: ``wrappers/`` is
``finenvs.wrappers``, ``scoring/`` is ``finenvs.scoring``, ...). mypy names a file after its folder and cannot
follow the import hook of setuptools' editable install, so run bare it would check ``wrappers/text.py`` as
``wrappers.text`` and find no ``finenvs.wrappers`` at all. This runs mypy's own command line (the options and
``files`` of ``[tool.mypy]``, plus any arguments given here) and renames each source of a mapped folder to its
installed module before the build, so every ``finenvs.*`` import resolves to the file in this checkout.

Usage, from the repository root: ``python .ci/typecheck.py`` (exit status 0 when there is no error).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mypy import util
from mypy.fscache import FileSystemCache
from mypy.main import process_options, run_build

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def installed_names() -> dict[str, str]:
    """Source folder -> the package it installs as (pyproject.toml's package-dir)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {folder: package for package, folder in pyproject["tool"]["setuptools"]["package-dir"].items()}


def main(argv: list[str]) -> int:
    began = time.time()
    os.chdir(ROOT)  # where [tool.mypy] is read and its files are found
    fscache = FileSystemCache()
    sources, options = process_options(argv, fscache=fscache)
    renames = installed_names()
    for source in sources:
        top, dot, rest = (source.module or "").partition(".")
        if top in renames:
            source.module = renames[top] + dot + rest
    _, messages, blockers = run_build(sources, options, fscache, began, sys.stdout, sys.stderr)
    errors, _, files = util.count_stats(messages)
    formatter = util.FancyFormatter(sys.stdout, sys.stderr, options.hide_error_codes)
    if errors:
        print(formatter.format_error(errors, files, len(sources), blockers=blockers))
    else:
        print(formatter.format_success(len(sources)))
    return 2 if blockers else int(errors > 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
