"""The built catalog's integrity: recorded checksums, `data verify` of the cache, rebuild, no stale temporaries."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pytest

from finenvs.cli import main as cli_main
from finenvs.data.catalog import (
    STALE_BUILD_SECONDS,
    Catalog,
    CatalogRebuiltWarning,
    _host,
    catalog_path,
    catalog_problems,
    ensure_catalog,
    remove_stale_builds,
    verify_catalog,
)
from finenvs.data.manifest import load_manifest


@pytest.fixture()
def cache(tmp_path, catalog):
    """A private cache holding a copy of the session's built catalog (no rebuild needed to start)."""
    directory = tmp_path / "cache"
    directory.mkdir()
    shutil.copy2(catalog.path, directory / catalog.path.name)
    return directory


def _edit(path: Path, sql: str, params: list | None = None) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute(sql, params or [])
    finally:
        con.close()


def test_catalog_records_manifest_digest_and_a_checksum_per_table(catalog):
    manifest = load_manifest()
    con = duckdb.connect(str(catalog.path), read_only=True)
    try:
        digest = con.execute("SELECT value FROM meta WHERE key = 'manifest_sha256'").fetchone()[0]
        recorded = dict(con.execute("SELECT table_name, rows FROM checksums").fetchall())
        prices = con.execute("SELECT count(*) FROM prices").fetchone()[0]
    finally:
        con.close()
    assert digest == manifest.digest
    assert {"prices", "rates", "news", "filing_sections", "option_chains", "files", "meta"} <= set(recorded)
    assert recorded["prices"] == prices
    assert catalog_problems(catalog.path, manifest) == []


def test_one_sql_update_of_a_cached_price_is_reported_and_the_next_open_restores_it(cache, monkeypatch, capsys):
    path = catalog_path(load_manifest(), cache)
    con = duckdb.connect(str(path), read_only=True)
    try:
        date, close = con.execute("SELECT date, close FROM prices WHERE dataset = 'core' AND symbol = 'AAPL' "
                                  "ORDER BY date LIMIT 1 OFFSET 100").fetchone()
    finally:
        con.close()
    _edit(path, "UPDATE prices SET close = close * 1.01 WHERE dataset = 'core' AND symbol = 'AAPL' AND date = ?",
          [date])

    result = verify_catalog(directory=cache)
    assert not result.ok
    assert len(result.problems) == 1 and "table prices: content checksum differs" in result.problems[0]

    monkeypatch.setenv("FINENVS_DATA", str(cache))
    assert cli_main(["data", "verify"]) == 1
    out, err = capsys.readouterr()
    assert "FAILED cache " in err and "table prices: content checksum differs" in err
    assert "table rates: ok" in out and "table prices: ok" not in out

    with pytest.warns(CatalogRebuiltWarning, match=r"failed its integrity check \(table prices"):
        reopened = Catalog(cache=cache)
    assert reopened.path == path
    bars = reopened.series("AAPL")
    assert float(bars.close[bars.dates == np.datetime64(date)][0]) == close
    assert verify_catalog(directory=cache).ok


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("DELETE FROM rates WHERE date = (SELECT max(date) FROM rates)", r"table rates: \d+ rows, the build recorded"),
        ("INSERT INTO news SELECT * FROM news LIMIT 1", r"table news: \d+ rows, the build recorded"),
        ("UPDATE filing_sections SET text = text || ' ' WHERE section = 'item_7_mdna'",
         "table filing_sections: content checksum differs"),
        ("DROP TABLE option_chains", "table option_chains: missing"),
        ("CREATE TABLE extra AS SELECT 1 AS x", "table extra: not in the recorded build"),
        ("UPDATE meta SET value = 'x' WHERE key = 'manifest_sha256'", "was built from another manifest"),
    ],
)
def test_every_kind_of_edit_is_caught(cache, sql, problem):
    path = catalog_path(load_manifest(), cache)
    _edit(path, sql)
    problems = catalog_problems(path, load_manifest())
    assert problems and any(re.search(problem, p) for p in problems), problems


def test_a_catalog_that_is_not_a_database_is_rebuilt(cache):
    path = catalog_path(load_manifest(), cache)
    path.write_bytes(b"not a duckdb file")
    with pytest.warns(CatalogRebuiltWarning, match="cannot be opened"):
        ensure_catalog(load_manifest(), cache)
    assert verify_catalog(directory=cache).ok


def test_an_intact_catalog_opens_without_a_warning(cache):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ensure_catalog(load_manifest(), cache) == catalog_path(load_manifest(), cache)


def test_verify_of_a_cache_not_built_yet_is_not_a_failure(tmp_path):
    result = verify_catalog(directory=tmp_path / "empty")
    assert result.ok and "not built yet" in result.checked[0]


# ------------------------------------------------------------- interrupted builds
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_build_killed_mid_way_leaves_a_temporary_the_next_ensure_catalog_removes(tmp_path):
    cache = tmp_path / "cache"
    # the child builds the complete temporary, then stalls before publishing it: a SIGKILL there is the worst
    # case (the whole ~11 MB file written, never renamed)
    child = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        import finenvs.data.catalog as catalog

        build = catalog._build

        def stalled(manifest, dest):
            build(manifest, dest)
            print("built", flush=True)
            time.sleep(120)

        catalog._build = stalled
        catalog.ensure_catalog(directory=Path(sys.argv[1]))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child, str(cache)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "built"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    leftovers = [p for p in cache.iterdir() if p.name.endswith(".building.duckdb")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 1_000_000 and f".{proc.pid}." in leftovers[0].name

    path = ensure_catalog(directory=cache)
    assert sorted(p.name for p in cache.iterdir()) == [path.name]
    assert verify_catalog(directory=cache).ok


def test_stale_temporaries_go_and_live_ones_stay(tmp_path):
    stem = catalog_path(load_manifest(), tmp_path).stem
    now = time.time()
    old = now - STALE_BUILD_SECONDS - 60
    dead = _dead_pid()
    files = {
        f".{stem}.{_host()}.{dead}.0a1b.building.duckdb": (now, False),  # this host, process gone
        f".{stem}.{_host()}.{dead}.0a1b.building.duckdb.wal": (now, False),
        f".{stem}.{dead}.{'c' * 32}.building.duckdb": (now, False),  # the name older versions used
        f".{stem}.{_host()}.{os.getpid()}.0a1c.building.duckdb": (now, True),  # a build running now
        f".{stem}.{_host()}.{os.getpid()}.0a1d.building.duckdb": (old, False),  # running, but hours old
        f".{stem}.other-host.{dead}.0a1e.building.duckdb": (now, True),  # another host: only age tells
        f".{stem}.other-host.{dead}.0a1f.building.duckdb": (old, False),
        f"{stem}.duckdb": (old, True),  # a catalog, never a temporary
        "notes.txt": (old, True),
    }
    if sys.platform == "win32":  # no process probe: only age counts
        files = {name: (t, keep or t == now) for name, (t, keep) in files.items()}
    for name, (mtime, _) in files.items():
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (mtime, mtime))
    removed = remove_stale_builds(tmp_path, now=now)
    assert sorted(p.name for p in removed) == sorted(n for n, (_, keep) in files.items() if not keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n for n, (_, keep) in files.items() if keep)
