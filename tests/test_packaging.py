"""Packaging: what `import finenvs` loads and changes, and what the wheel ships."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import SUBPROCESS_TIMEOUT

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                          env=dict(os.environ), cwd="/")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_registers_envs_and_stays_light():
    out = _python(
        "import sys, json, warnings\n"
        "import numpy, gymnasium as gym  # they set their own filters on import\n"
        "before = list(warnings.filters)\n"
        "import finenvs\n"
        "heavy = [m for m in ('torch', 'stable_baselines3', 'pettingzoo', 'openai', 'mcp', 'matplotlib', 'pandas',"
        " 'duckdb', 'statsmodels', 'a2a', 'uvicorn') if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy, 'filters_same': before == list(warnings.filters),"
        " 'ids': sorted(i for i in gym.registry if i.startswith('Fin'))}))\n"
    )
    report = json.loads(out)
    assert report["heavy"] == []
    assert report["filters_same"] is True
    names = ["Audit", "DeltaHedge", "Hedging", "Options", "QA", "Report", "Trading"]
    assert report["ids"] == sorted(i for n in names for i in (f"Fin{n}-v0", f"Fin{n}-text-v0"))


def test_extras_split_what_users_install_and_all_has_each():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def names(reqs: list[str]) -> set[str]:
        return {r.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip() for r in reqs}

    assert "statsmodels" not in names(project["dependencies"])  # one baseline's test: the `stats` extra
    assert names(extras["stats"]) == {"statsmodels"}
    assert names(extras["llm"]) == {"openai", "tiktoken"}  # endpoints and token counts: no MCP, A2A or web server
    assert names(extras["mcp"]) == {"mcp", "uvicorn"}  # `finenvs mcp`, and the harness's HTTP server
    assert names(extras["a2a"]) == {"a2a-sdk", "uvicorn"}
    (everything,) = extras["all"]
    in_all = set(everything.split("[")[1].rstrip("]").split(","))
    assert {"plot", "rl", "marl", "stats", "llm", "mcp", "a2a", "sandbox"} <= in_all


def test_subpackages_live_in_the_finenvs_namespace():
    out = _python(
        "import finenvs.wrappers, finenvs.baselines, finenvs.scoring, finenvs.envs_data, finenvs.data\n"
        "import importlib.util as u\n"
        "print([n for n in ('wrappers', 'baselines', 'scoring', 'envs_data') if u.find_spec(n) is not None])\n"
    )
    assert out.strip() == "[]"  # no bare top-level names importable from outside the checkout


#: The family folders of the source tree (``finenvs/tasks/<family>/``).
FAMILY_FOLDERS = sorted(p.parent.name for p in (ROOT / "finenvs" / "tasks").glob("*/spec.py"))


def test_every_family_folder_is_registered_packaged_and_documented():
    import tomllib

    import finenvs

    assert len(FAMILY_FOLDERS) >= 7
    assert sorted(spec.family for spec in finenvs.BUILTIN) == FAMILY_FOLDERS
    for spec in finenvs.BUILTIN:  # each spec's objects come from its own folder
        assert spec.env.__module__.startswith(f"finenvs.tasks.{spec.family}."), spec.family
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    missing = [f for f in FAMILY_FOLDERS if f"finenvs.tasks.{f}" not in packages]
    assert not missing, f"add to pyproject.toml's [tool.setuptools] packages: {missing}"
    nav = (ROOT / "mkdocs.yml").read_text()
    undocumented = [f for f in FAMILY_FOLDERS if not (ROOT / "docs" / "envs" / f"{f}.md").is_file()
                    or f"envs/{f}.md" not in nav]
    assert not undocumented, f"write docs/envs/<family>.md and add it to mkdocs.yml's nav: {undocumented}"


def test_wheel_ships_only_the_finenvs_package_with_its_data(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
    )
    if proc.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{proc.stderr[-2000:]}")
    wheel = glob.glob(str(tmp_path / "finenvs-*.whl"))[0]
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"finenvs", "finenvs-0.1.0.dist-info"}
    for required in (
        "finenvs/py.typed",
        "finenvs/envs_data/MANIFEST.json",
        "finenvs/envs_data/README.md",
        "finenvs/envs_data/prices/core_2024_2026.parquet",
        "finenvs/envs_data/rates/fred_dtb3.parquet",
        "finenvs/envs_data/news/news.parquet",
        "finenvs/envs_data/filings/sections.parquet",
        "finenvs/tools/__init__.py",
        "finenvs/wrappers/text.py",
        "finenvs/wrappers/__init__.py",
        "finenvs/baselines/__init__.py",
        "finenvs/scoring/__init__.py",
        "finenvs/tasks/options/options_answer.schema.json",
        *(f"finenvs/tasks/{family}/spec.py" for family in FAMILY_FOLDERS),
    ):
        assert required in names, required
    metadata = zipfile.ZipFile(wheel).read("finenvs-0.1.0.dist-info/METADATA").decode()
    for extra in ("rl", "marl", "stats", "llm", "mcp", "a2a", "dev", "all", "plot"):
        assert f"Provides-Extra: {extra}" in metadata
    for dep in ("gymnasium>=1.0", "numpy", "pandas", "scipy", "duckdb"):
        assert f"Requires-Dist: {dep}" in metadata


def test_old_env_module_paths_still_import_with_a_warning():
    out = _python(
        "import json, warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    from finenvs.envs.trading import FinTradingEnv\n"
        "    from finenvs.envs import options_core\n"
        "import finenvs.envs, finenvs.tasks.trading.env as new, finenvs.tasks.options.core as core, importlib\n"
        "same = all(importlib.import_module('finenvs.envs.' + old) is importlib.import_module(to)\n"
        "           for old, to in finenvs.envs.MOVED.items())\n"
        "print(json.dumps({'same': same and FinTradingEnv is new.FinTradingEnv and options_core is core,\n"
        "                  'spec': new.__spec__.name, 'warned': [str(w.message) for w in caught]}))\n"
    )
    report = json.loads(out)
    assert report["same"] is True and report["spec"] == "finenvs.tasks.trading.env"
    assert report["warned"] == ["finenvs.envs.trading moved to finenvs.tasks.trading.env; import it from there",
                                "finenvs.envs.options_core moved to finenvs.tasks.options.core; import it from there"]


def test_the_library_uses_no_old_env_module_path():
    used = [str(p.relative_to(ROOT)) for folder in ("finenvs", "wrappers", "baselines", "scoring", "tests", "docs")
            for p in (ROOT / folder).rglob("*.py") if "finenvs.envs." in p.read_text(encoding="utf-8")
            and p.relative_to(ROOT).as_posix() not in ("finenvs/envs/__init__.py", "tests/test_packaging.py")]
    assert not used, used
