"""Shared fixtures: an isolated catalog cache and small helpers for market data."""

from __future__ import annotations

import os
import tempfile

import pandas as pd
import pytest

# Build the catalog into a private cache for the whole test session (before anything
# reads the data), so tests never depend on, or write to, a user's cache.
_CACHE = tempfile.mkdtemp(prefix="finenvs-test-cache-")
os.environ["FINENVS_DATA"] = _CACHE
# Run folders are sealed with a per-user key (finenvs.evaluation.seal): the tests' runs use a key of their own,
# never the user's ~/.config/finenvs/run-key.
os.environ["FINENVS_RUN_KEY"] = os.path.join(tempfile.mkdtemp(prefix="finenvs-test-key-"), "run-key")


@pytest.fixture(scope="session")
def catalog():
    from finenvs.data import default_catalog

    return default_catalog()


@pytest.fixture(scope="session")
def aapl_frame(catalog) -> pd.DataFrame:
    """AAPL core bars as a DataFrame in the finenvs schema (user-data path)."""
    return catalog.series("AAPL").to_frame()
