"""Shared fixtures: an isolated catalog cache, one small bench run shared by the tests that read a scorecard, and
small helpers for market data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import types
from pathlib import Path

# One BLAS/OpenMP thread per process: the suite already runs a pytest-xdist worker per core, and each worker's
# numpy, statsmodels and torch would otherwise start a thread per core too. On a busy 2-core machine those threads
# spin waiting for each other (a cointegration test took 4.3 s of CPU with them and 2.4 s without, beside two
# busy loops). Set before numpy loads in the workers and in every subprocess; a value already set is kept.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers import SUBPROCESS_TIMEOUT  # noqa: E402

# Compile each module once per machine, not once per process. With PYTHONDONTWRITEBYTECODE set (as in many
# containers) every pytest-xdist worker re-compiles finenvs and re-rewrites every test module's asserts, and
# each of the suite's `finenvs` subprocesses compiles the package again: about a minute of CPU per test run on
# two cores. The bytecode goes to a folder of its own under the temp dir (keyed by each source's full path and
# mtime, as Python keys it), never into the checkout; the subprocesses inherit both settings.
if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if not sys.pycache_prefix:
        sys.pycache_prefix = os.path.join(tempfile.gettempdir(), "finenvs-test-pycache")
        os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix

# Build the catalog into a private cache for the whole test session (before anything
# reads the data), so tests never depend on, or write to, a user's cache.
_CACHE = tempfile.mkdtemp(prefix="finenvs-test-cache-")
os.environ["FINENVS_DATA"] = _CACHE
# Run folders are sealed with a per-user key (finenvs.evaluation.seal): the tests' runs use a key of their own,
# never the user's ~/.config/finenvs/run-key. Under pytest-xdist the workers of one test run share it, so a run
# folder one worker wrote (the shared small bench below) verifies in the other.
_RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID")
_KEY_DIR = (os.path.join(tempfile.gettempdir(), f"finenvs-test-key-{_RUN_ID}") if _RUN_ID
            else tempfile.mkdtemp(prefix="finenvs-test-key-"))
os.environ["FINENVS_RUN_KEY"] = os.path.join(_KEY_DIR, "run-key")

try:  # no property test depends on the wall clock: hypothesis' 200 ms deadline per example fails on a busy machine
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("finenvs", deadline=None)
    _hypothesis_settings.load_profile("finenvs")
except ImportError:  # hypothesis comes with the dev extra
    pass

#: The bench plan the tests share (``small_bench``): every family with every baseline and the scripted agents, on
#: two of HERCULEAN's four symbols (so the reproduction check has published rows), with the charts and HTML page.
SMALL_BENCH_ARGS = ("--symbols", "MSFT", "AAPL")


@pytest.fixture(scope="session")
def catalog():
    from finenvs.data import default_catalog

    return default_catalog()


@pytest.fixture(scope="session")
def aapl_frame(catalog) -> pd.DataFrame:
    """AAPL core bars as a DataFrame in the finenvs schema (user-data path)."""
    return catalog.series("AAPL").to_frame()


def _run_folder(tmp_path_factory) -> Path:
    """A folder of this test run that every pytest-xdist worker sees (the parent of the workers' base temp), or the
    session's own base temp without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _small_bench_folder(base: Path) -> Path:
    shared = base / "small-bench"
    shared.mkdir(exist_ok=True)
    return shared


def _run_small_bench(shared: Path) -> None:
    """Run the shared bench into ``shared`` unless a worker already did (under the folder's file lock)."""
    from filelock import FileLock

    outcome = shared / "outcome.json"
    with FileLock(str(shared / "lock")):
        if not outcome.is_file():
            proc = subprocess.run([sys.executable, str(Path(__file__).with_name("cli_keeping_the_card.py")),
                                   str(shared / "card.pickle"), "bench", *SMALL_BENCH_ARGS, "--out", str(shared),
                                   "--name", "t"], capture_output=True, text=True, env=dict(os.environ),
                                  timeout=SUBPROCESS_TIMEOUT)
            outcome.write_text(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout,
                                           "stderr": proc.stderr}))


_EARLY: dict[str, threading.Thread] = {}


def pytest_collection_finish(session):
    """Start the shared bench as soon as the run's tests are known, when any of them reads it: it runs beside the
    first tests instead of holding up the first one that needs it."""
    if getattr(session.config.option, "collectonly", False) or not any(
            "small_bench" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    shared = _small_bench_folder(_run_folder(session.config._tmp_path_factory))
    _EARLY["thread"] = threading.Thread(target=_run_small_bench, args=(shared,), daemon=True, name="small-bench")
    _EARLY["thread"].start()


@pytest.fixture(scope="session")
def small_bench(tmp_path_factory):
    """``finenvs bench --symbols MSFT AAPL`` run once per test run, as a user runs it (a fresh process), for
    every test that reads a scorecard: ``dir`` (the run folder; read it, never write it), ``card``
    (scorecard.json), ``md`` (scorecard.md), ``stdout``, ``stderr``, and ``pickled_card``, the
    :class:`~finenvs.evaluation.bench.Scorecard` the bench returned (tests/cli_keeping_the_card.py runs the CLI).

    Once per test run, not once per worker: started when collection finds a test that reads it, by the first
    pytest-xdist worker to take the folder's file lock, which records the outcome there; the other worker waits on
    the lock and reads it. The whole bench on every symbol is ``tests/test_cli.py::test_full_bench_on_shipped_data``
    (``slow``).
    """
    shared = _small_bench_folder(_run_folder(tmp_path_factory))
    outcome = shared / "outcome.json"
    _run_small_bench(shared)
    done = json.loads(outcome.read_text())
    assert done["returncode"] == 0, done["stderr"][-4000:]
    run = shared / "t"
    return types.SimpleNamespace(dir=run, card=json.loads((run / "scorecard.json").read_text()),
                                 md=(run / "scorecard.md").read_text(), stdout=done["stdout"],
                                 stderr=done["stderr"], pickled_card=shared / "card.pickle")
