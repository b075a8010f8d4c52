"""Data layer: manifest and verify, catalog build/cache/concurrency, user data, the as-of view."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from finenvs.data import (
    SPLITS,
    AsOfView,
    Catalog,
    LookAheadCounter,
    PriceSeries,
    check_ohlcv,
    ensure_catalog,
    load_manifest,
    load_prices,
    shipped_data_dir,
    split_bounds,
    to_day,
    verify_data,
    window_indices,
)
from finenvs.data.catalog import catalog_path
from finenvs.errors import DataError, DataFileError, UnknownSymbolError, WindowError
from helpers import perturb_after

CORE = ["AAPL", "ADBE", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "QQQ", "SPY", "TSLA"]


# ---------------------------------------------------------------- manifest and verify
def test_manifest_describes_every_shipped_file():
    manifest = load_manifest()
    files = {e.file for e in manifest.entries}
    on_disk = {p.relative_to(manifest.root).as_posix() for p in manifest.root.rglob("*.parquet")}
    on_disk |= {p.relative_to(manifest.root).as_posix() for p in manifest.root.rglob("questions/*.json")}
    on_disk |= {p.relative_to(manifest.root).as_posix() for p in (manifest.root / "xbrl").rglob("*") if p.is_file()}
    assert files == on_disk
    for entry in manifest.entries:
        assert len(entry.sha256) == 64 and entry.rows > 0
        assert entry.source and entry.licence and entry.date_min <= entry.date_max
    core = manifest.datasets("prices")["core"]
    assert sorted(core.symbols) == CORE
    assert (core.date_min, core.date_max) == ("2024-01-02", "2026-10-06")


def test_shipped_data_verifies():
    result = verify_data()
    assert result.ok, result.problems
    assert len(result.checked) == len(load_manifest().entries)


def test_the_xbrl_layer_recounts_its_files_when_it_passes_its_counters(data_copy):
    from finenvs.xbrl.corpus import ROW_COUNTERS

    xbrl = [e for e in load_manifest(data_copy).entries if e.kind in ROW_COUNTERS]
    assert xbrl
    plain = verify_data(data_copy)
    assert plain.ok and sum("not recounted" in line for line in plain.checked) == len(xbrl)
    full = verify_data(data_copy, row_counters=ROW_COUNTERS)
    assert full.ok and not any("not recounted" in line for line in full.checked)
    manifest_path = data_copy / "MANIFEST.json"
    doc = json.loads(manifest_path.read_text())
    entry = next(item for item in doc["files"] if item["file"] == xbrl[0].file)
    entry["rows"] += 1  # the manifest now disagrees with the file's own count
    manifest_path.write_text(json.dumps(doc))
    problems = verify_data(data_copy, row_counters=ROW_COUNTERS).problems
    assert [p for p in problems if xbrl[0].file in p and "rows, the manifest says" in p]


@pytest.fixture()
def data_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "envs_data"
    shutil.copytree(shipped_data_dir(), dest, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return dest


def _rewrite_parquet(path: Path, frame: pd.DataFrame) -> None:
    import duckdb

    con = duckdb.connect()
    con.register("frame", frame)
    con.execute(f"COPY (SELECT * FROM frame) TO '{path}' (FORMAT PARQUET)")
    con.close()


def _refresh_hash(root: Path, file: str) -> None:
    manifest_path = root / "MANIFEST.json"
    doc = json.loads(manifest_path.read_text())
    for item in doc["files"]:
        if item["file"] == file:
            item["sha256"] = hashlib.sha256((root / file).read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(doc))


def test_verify_reports_a_changed_file_by_name(data_copy):
    target = data_copy / "prices/core_2024_2026.parquet"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    target.write_bytes(bytes(raw))
    result = verify_data(data_copy)
    assert not result.ok
    assert any("prices/core_2024_2026.parquet" in p and "sha256" in p for p in result.problems)


def test_verify_reports_a_missing_file(data_copy):
    (data_copy / "rates/fred_dtb3.parquet").unlink()
    result = verify_data(data_copy)
    assert any("rates/fred_dtb3.parquet" in p and "not found" in p for p in result.problems)


def test_verify_names_file_and_row_of_a_broken_invariant(data_copy):
    import duckdb

    path = data_copy / "prices/core_2024_2026.parquet"
    frame = duckdb.connect().execute(f"SELECT * FROM read_parquet('{path}')").df()
    row = 700  # second symbol's block; rows are numbered 1-based in messages
    frame.loc[row, "high"] = frame.loc[row, ["open", "close"]].min() * 0.5
    _rewrite_parquet(path, frame)
    _refresh_hash(data_copy, "prices/core_2024_2026.parquet")
    result = verify_data(data_copy)
    assert not result.ok
    assert any(f"prices/core_2024_2026.parquet: row {row + 1} " in p and "high=" in p for p in result.problems)


def test_verify_catches_row_count_mismatch(data_copy):
    doc = json.loads((data_copy / "MANIFEST.json").read_text())
    doc["files"][-1]["rows"] += 1
    (data_copy / "MANIFEST.json").write_text(json.dumps(doc))
    assert any("rows, the manifest says" in p for p in verify_data(data_copy).problems)


def test_malformed_manifest_is_a_clear_error(tmp_path):
    (tmp_path / "MANIFEST.json").write_text("{not json")
    with pytest.raises(DataFileError, match="malformed manifest"):
        load_manifest(tmp_path)
    with pytest.raises(DataFileError, match="manifest not found"):
        load_manifest(tmp_path / "nowhere")


# ---------------------------------------------------------------- schema checks
def _series(**overrides):
    base = {
        "dates": ["2025-01-02", "2025-01-03", "2025-01-06"],
        "open": [10.0, 11.0, 12.0],
        "high": [11.0, 12.0, 13.0],
        "low": [9.0, 10.0, 11.0],
        "close": [10.5, 11.5, 12.5],
        "volume": [100.0, 200.0, 300.0],
    }
    base.update(overrides)
    return PriceSeries.from_arrays("X", validate=False, **base)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"dates": ["2025-01-02", "2025-01-02", "2025-01-06"]}, "row 2 .*duplicate date"),
        ({"dates": ["2025-01-03", "2025-01-02", "2025-01-06"]}, "row 2 .*goes back"),
        ({"close": [10.5, -1.0, 12.5]}, "row 2 .*close=-1.0 is not a positive"),
        ({"open": [10.0, 11.0, float("nan")]}, "row 3 .*open=nan"),
        ({"high": [11.0, 11.2, 13.0]}, r"row 2 .*high=11.2 < max\(open=11.0, close=11.5\)"),
        ({"low": [9.0, 10.0, 12.2]}, r"row 3 .*low=12.2 > min\(open=12.0, close=12.5\)"),
        ({"volume": [100.0, -5.0, 300.0]}, "row 2 .*volume=-5.0"),
    ],
)
def test_check_ohlcv_names_row_and_rule(overrides, match):
    with pytest.raises(DataError, match=match):
        check_ohlcv(_series(**overrides), source="my.csv")


def test_price_series_arrays_are_read_only_copies():
    close = np.array([10.5, 11.5, 12.5])
    s = PriceSeries.from_arrays("X", ["2025-01-02", "2025-01-03", "2025-01-06"], close - 0.5, close + 1, close - 2, close, [1, 2, 3])
    close[0] = 99.0
    assert s.close[0] == 10.5 and not s.close.flags.writeable


# ---------------------------------------------------------------- user data
def test_user_csv_parquet_and_dataframe_load_through_the_same_checks(tmp_path, aapl_frame):
    frame = aapl_frame.drop(columns=["symbol"]).head(100)
    csv = tmp_path / "mine.csv"
    frame.assign(date=frame["date"].dt.strftime("%Y-%m-%d")).to_csv(csv, index=False)
    parquet = tmp_path / "mine.parquet"
    _rewrite_parquet(parquet, frame)
    a = load_prices(csv)["mine"]
    b = load_prices(parquet, symbol="mine")["mine"]
    c = load_prices(frame, symbol="mine")["mine"]
    for s in (b, c):
        assert np.array_equal(a.close, s.close) and np.array_equal(a.dates, s.dates)


def test_user_csv_with_broken_row_names_file_and_row(tmp_path, aapl_frame):
    frame = aapl_frame.drop(columns=["symbol"]).head(50).copy()
    frame.loc[17, "low"] = frame.loc[17, "high"] * 2
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"bad.csv: row 18 \(bad "):
        load_prices(path)


@pytest.mark.parametrize(
    ("content", "name", "error", "match"),
    [
        ("date,open,high\n2025-01-02,1,2\n", "cols.csv", DataError, "missing column"),
        (None, "missing.csv", DataFileError, "not found"),
        ("x", "prices.xlsx", DataFileError, "unsupported file type"),
        ("date,open,high,low,close,volume\nnot-a-date,1,2,0.5,1,10\n", "dates.csv", DataError, "date is missing or unparsable"),
    ],
)
def test_user_file_errors(tmp_path, content, name, error, match):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(error, match=match):
        load_prices(path)


def test_multi_symbol_frame_splits_by_symbol(aapl_frame, catalog):
    both = pd.concat([aapl_frame.head(30), catalog.series("MSFT").to_frame().head(40)])
    loaded = load_prices(both)
    assert sorted(loaded) == ["AAPL", "MSFT"] and len(loaded["MSFT"]) == 40


# ---------------------------------------------------------------- catalog
def test_catalog_reads_symbols_series_and_rates(catalog):
    assert catalog.symbols() == CORE
    assert set(catalog.datasets()) == {"core", "yahoo_2000_2024", "yahoo_2015_2026", "stooq_etf_2005_2026"}
    s = catalog.series("MSFT")
    assert len(s) == 686 and str(s.dates[0]) == "2024-01-02" and str(s.dates[-1]) == "2026-09-25"
    assert not s.close.flags.writeable
    assert len(catalog.series("TSLA")) == 693
    hist = catalog.series("IBM", "yahoo_2000_2024")
    assert str(hist.dates[0]) == "2000-01-03"
    dates, values = catalog.rates("DTB3")
    assert str(dates[-1]) == "2026-03-26" and np.isfinite(values).all()


def test_catalog_unknown_symbol_and_dataset(catalog):
    with pytest.raises(UnknownSymbolError, match="unknown symbol 'IBM' in dataset 'core'.*AAPL"):
        catalog.series("IBM")
    with pytest.raises(DataError, match="unknown dataset 'daily'"):
        catalog.series("AAPL", "daily")
    with pytest.raises(UnknownSymbolError, match="unknown rate series"):
        catalog.rates("LIBOR")


def test_catalog_is_rebuilt_when_the_manifest_changes(tmp_path, data_copy):
    cache = tmp_path / "cache"
    first = Catalog(data_copy, cache)
    doc = json.loads((data_copy / "MANIFEST.json").read_text())
    doc["files"][0]["description"] += " (edited)"
    (data_copy / "MANIFEST.json").write_text(json.dumps(doc))
    second = Catalog(data_copy, cache)
    assert first.path != second.path and first.path.exists() and second.path.exists()
    assert second.series("AAPL").close.tobytes() == first.series("AAPL").close.tobytes()


def test_catalog_build_refuses_a_corrupt_file(tmp_path, data_copy):
    target = data_copy / "prices/yahoo_2015_2026.parquet"
    target.write_bytes(target.read_bytes()[:-100])
    with pytest.raises(DataFileError, match="yahoo_2015_2026.parquet: sha256 .* does not match"):
        Catalog(data_copy, tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*.duckdb"))


def _build_in_child(args):
    data_dir, cache = args
    from finenvs.data.catalog import Catalog as _Catalog

    cat = _Catalog(data_dir, cache)
    return str(cat.path), float(cat.series("NVDA").close.sum())


def test_concurrent_first_use_builds_one_valid_catalog(tmp_path):
    cache = tmp_path / "shared-cache"
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.map(_build_in_child, [(str(shipped_data_dir()), str(cache))] * 4)
    assert len({r[0] for r in results}) == 1 and len({r[1] for r in results}) == 1
    built = sorted(p.name for p in cache.iterdir())
    assert built == [Path(results[0][0]).name]  # no temporary files left behind
    assert catalog_path(load_manifest(), cache) == Path(results[0][0])
    assert ensure_catalog(load_manifest(), cache) == Path(results[0][0])


def test_nothing_writes_into_envs_data(catalog):
    root = shipped_data_dir()

    def snapshot():
        return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()
                and "__pycache__" not in p.parts}

    before = snapshot()
    import gymnasium as gym

    import finenvs  # noqa: F401

    env = gym.make("FinTrading-v0", symbol="SPY", split="eval")
    env.reset(seed=0)
    env.step(2)
    verify_data()
    catalog.series("QQQ", "stooq_etf_2005_2026")
    assert snapshot() == before


# ---------------------------------------------------------------- date lock
def test_as_of_view_clips_and_counts(catalog):
    counter = LookAheadCounter()
    view = catalog.as_of("2026-01-30", counter=counter)
    assert str(view.prices("AAPL").dates[-1]) == "2026-01-30"
    assert counter.attempts == 0
    future = view.prices("AAPL", start="2026-01-26", end="2026-02-20")
    assert [str(d) for d in future.dates] == ["2026-01-26", "2026-01-27", "2026-01-28", "2026-01-29", "2026-01-30"]
    assert counter.attempts == 1
    assert len(view.prices("AAPL", start="2026-03-01")) == 0 and counter.attempts == 2
    assert counter.log[0].requested == "2026-02-20" and counter.log[0].as_of == "2026-01-30"
    assert len(view.prices("AAPL", lookback=7)) == 7
    assert view.latest("AAPL")["date"] == "2026-01-30"
    weekend = catalog.as_of("2026-02-01")  # a Sunday: Friday's bar is the latest visible
    assert weekend.latest("AAPL")["date"] == "2026-01-30"
    assert str(view.calendar("MSFT")[-1]) == "2026-01-30"


def test_rate_as_of_reports_the_observation_date(catalog):
    view = catalog.as_of("2026-03-31")
    date, value = view.rate("DTB3")
    assert date == "2026-03-26" and value == pytest.approx(3.63)
    # H.15 publishes a day's print the next business day: at the close of 2026-03-26 it is not public yet
    assert catalog.as_of("2026-03-26").rate("DTB3")[0] == "2026-03-25"
    assert catalog.as_of("2026-03-27").rate("DTB3")[0] == "2026-03-26"
    earlier = view.rate("DTB3", date="2025-07-04")  # a holiday: the day before is the latest
    assert earlier[0] == "2025-07-03"
    view.rate("DTB3", date="2026-06-01")
    assert view.counter.attempts == 1


def test_as_of_view_is_invariant_to_the_future(catalog):
    """Change or delete every row after t: every read at t returns byte-identical data."""
    rng = np.random.default_rng(0)
    frame = catalog.series("META").to_frame()
    for cut in ("2024-06-28", "2025-03-14", "2026-01-30"):
        changed = load_prices(perturb_after(frame, cut, rng))["META"]
        base = load_prices(frame)["META"]
        deleted = base.slice(0, int(np.searchsorted(base.dates, np.datetime64(cut), side="right")))
        views = [AsOfView(lambda _s, src=src: src, cut) for src in (base, changed, deleted)]
        reads = []
        for v in views:
            a = v.prices("META", start="2024-01-01", end="2030-01-01")
            b = v.prices("META", lookback=25)
            reads.append((a.close.tobytes(), a.volume.tobytes(), b.high.tobytes(), v.latest("META")))
        assert reads[0] == reads[1] == reads[2]


def test_to_day_and_splits():
    assert str(to_day("2026-01-02")) == "2026-01-02"
    assert str(to_day(pd.Timestamp("2026-01-02 15:30"))) == "2026-01-02"
    with pytest.raises(WindowError, match="start='soon' is not a date"):
        to_day("soon", name="start")
    assert SPLITS["eval"] == ("2026-01-02", "2026-03-31")
    lo, hi = split_bounds("eval", end="2026-02-27")
    assert (str(lo), str(hi)) == ("2026-01-02", "2026-02-27")
    dates = np.array(["2026-01-02", "2026-01-05", "2026-01-06"], dtype="datetime64[D]")
    assert window_indices(dates, np.datetime64("2026-01-03"), None) == (1, 2)
    with pytest.raises(WindowError, match="empty window"):
        window_indices(dates, np.datetime64("2026-01-07"), None)
