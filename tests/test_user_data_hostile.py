"""A user's own prices: hostile input gets one clear error naming file, row and column; memory stays proportional."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import duckdb
import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import finenvs  # noqa: F401  (registers the envs)
import finenvs.data.catalog as catalog_module
import finenvs.tasks.trading.core as trading_core
from finenvs.data import load_prices
from finenvs.data.schema import PRICE_MAX, PRICE_MIN
from finenvs.errors import DataError

ROOT = Path(__file__).resolve().parents[1]


def _bars(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, n)))
    open_ = close * np.exp(rng.normal(0.0, 0.003, n))
    return pd.DataFrame({
        "date": (np.datetime64("2024-01-01") + np.arange(n)).astype(str),
        "open": open_,
        "high": np.maximum(open_, close) * 1.004,
        "low": np.minimum(open_, close) * 0.996,
        "close": close,
        "volume": rng.integers(1_000, 100_000, n).astype(float),
    })


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "mine.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _set(frame: pd.DataFrame, row: int, column: str, value: object) -> pd.DataFrame:
    out = frame.astype({column: object})
    out.loc[row, column] = value
    return out


# ------------------------------------------------------------------ values
@pytest.mark.parametrize(
    ("column", "value", "match"),
    [
        ("close", 1e-300, r"row 8 \(mine 2024-01-08\): close=1e-300 is outside the valid price range \[1e-06, 1e\+09\]"),
        ("high", 1e300, r"row 8 \(mine 2024-01-08\): high=1e\+300 is outside the valid price range"),
        ("close", float("inf"), r"row 8 \(mine 2024-01-08\): close=inf is not a positive finite price"),
        ("open", -3.0, r"row 8 \(mine 2024-01-08\): open=-3.0 is not a positive finite price"),
        ("low", float("nan"), r"row 8 \(mine 2024-01-08\): low=nan is missing or not a number"),
        ("close", "", r"row 8 \(mine 2024-01-08\): close=nan is missing or not a number"),
        ("close", "12,5", r"row 8: close is not a number: '12,5'"),
        ("volume", -5.0, r"row 8 \(mine 2024-01-08\): volume=-5.0 is not a finite number >= 0"),
        ("volume", float("nan"), r"row 8 \(mine 2024-01-08\): volume=nan is missing or not a number"),
        ("volume", "many", r"row 8: volume is not a number: 'many'"),
    ],
)
def test_a_bad_value_names_file_row_and_column(tmp_path, column, value, match):
    frame = _set(_bars(), 7, column, value)
    path = _csv(tmp_path, frame)
    with pytest.raises(DataError, match=rf"^{path}: {match}"):
        load_prices(path)
    with pytest.raises(DataError, match=rf"^DataFrame: row 8\b.*{column}"):  # '' in a frame: not a number
        load_prices(frame, symbol="SYN")
    with pytest.raises(DataError, match=match):  # the env says the same
        gym.make("FinTrading-v0", data=path, split=None)


def test_prices_from_1e_300_to_1e300_are_refused_and_the_range_edges_give_finite_rewards(tmp_path):
    frame = _bars(80)
    frame.loc[40:, ["open", "high", "low", "close"]] *= 1e300 / frame.loc[40, "close"]
    frame.loc[:39, ["open", "high", "low", "close"]] *= 1e-300 / frame.loc[39, "close"]
    with pytest.raises(DataError, match=r"row 1 \(SYN 2024-01-01\): open=.* outside the valid price range"):
        load_prices(frame, symbol="SYN")
    # the same jumps between the edges of the valid range: every reward stays finite, whatever the policy
    edges = _bars(80)
    scale = np.where(np.arange(80) % 25 < 12, PRICE_MIN * 1.01, PRICE_MAX / 1.01) / edges["close"].to_numpy()
    for col in ("open", "high", "low", "close"):
        edges[col] = np.clip(edges[col] * scale, PRICE_MIN, PRICE_MAX)
    for actions in ([2], [0], [2, 0], [0, 1, 2]):
        env = gym.make("FinTrading-v0", data=edges, symbol="EDGE", split=None)
        env.reset(seed=0)
        for k in range(200):
            _, reward, terminated, truncated, info = env.step(actions[k % len(actions)])
            assert np.isfinite(reward) and np.isfinite(info["equity"])
            if terminated or truncated:
                break


# ------------------------------------------------------------------ columns
def test_a_duplicated_column_is_named_in_a_frame_a_csv_and_a_parquet_file(tmp_path):
    frame = _bars()
    doubled = pd.concat([frame, frame[["close"]]], axis=1)
    with pytest.raises(DataError, match=r"^DataFrame: column 'close' appears 2 times"):
        load_prices(doubled, symbol="X")
    cased = frame.assign(Close=frame["close"])
    with pytest.raises(DataError, match=r"column 'close' appears 2 times \('close', 'Close'\)"):
        load_prices(cased, symbol="X")
    path = tmp_path / "doubled.csv"
    doubled.to_csv(path, index=False)
    with pytest.raises(DataError, match=rf"^{path}: column 'close' appears 2 times"):
        load_prices(path)
    # a Parquet file whose footer names two columns 'close' (written as closx, renamed in place)
    pq = tmp_path / "doubled.parquet"
    con = duckdb.connect()
    con.register("bars", frame.assign(date=pd.to_datetime(frame["date"]), closx=frame["close"]))
    con.execute(f"COPY (SELECT * FROM bars) TO '{pq}' (FORMAT parquet)")
    con.close()
    pq.write_bytes(pq.read_bytes().replace(b"closx", b"close"))
    with pytest.raises(DataError, match=rf"^{pq}: column 'close' appears 2 times"):
        load_prices(pq)


def test_missing_columns_and_a_number_for_a_date_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"missing column\(s\) \['volume'\]"):
        load_prices(_bars().drop(columns=["volume"]), symbol="X")
    numeric = _bars().assign(date=np.arange(20240101, 20240161))
    with pytest.raises(DataError, match=r"^DataFrame: column 'date' holds numbers"):  # not nanoseconds since 1970
        load_prices(numeric, symbol="X")
    path = _csv(tmp_path, numeric)  # in a file, text: ISO 8601's basic form YYYYMMDD, checked as a date
    with pytest.raises(DataError, match=rf"^{path}: row 32: date is missing or unparsable .*'20240132'"):
        load_prices(path)


# ------------------------------------------------------------------ dates and symbols
@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda f: _set(f, 20, "date", f.loc[19, "date"]), r"row 21 \(mine 2024-01-20\): duplicate date"),
        (lambda f: _set(f, 20, "date", "2023-12-01"), r"row 21 \(mine 2023-12-01\): date goes back from 2024-01-20"),
        (lambda f: _set(f, 20, "date", "01/21/2024"),
         r"row 21: date is missing or unparsable \(write dates as YYYY-MM-DD\): '01/21/2024'"),
        (lambda f: _set(f, 20, "date", ""), r"row 21: date is missing or unparsable"),
    ],
)
def test_unsorted_duplicated_or_unreadable_dates_name_the_row(tmp_path, edit, match):
    path = _csv(tmp_path, edit(_bars()))
    with pytest.raises(DataError, match=rf"^{path}: {match}"):
        load_prices(path)


def test_a_missing_symbol_names_the_row(tmp_path):
    frame = _bars().assign(symbol="AAA")
    frame.loc[12, "symbol"] = None
    path = _csv(tmp_path, frame)
    with pytest.raises(DataError, match=rf"^{path}: row 13: symbol is missing or empty"):
        load_prices(path)


def test_rows_are_numbered_across_csv_chunks_and_symbols_stay_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog_module, "CSV_CHUNK_ROWS", 7)
    a, b = _bars(40, seed=1).assign(symbol="AAA"), _bars(30, seed=2).assign(symbol="BBB")
    mixed = pd.concat([a.iloc[:15], b, a.iloc[15:]], ignore_index=True)  # AAA split around BBB
    path = _csv(tmp_path, mixed)
    loaded = load_prices(path)
    whole = load_prices(mixed)
    assert list(loaded) == ["AAA", "BBB"] and len(loaded["AAA"]) == 40 and len(loaded["BBB"]) == 30
    for sym in loaded:
        assert np.array_equal(loaded[sym].close, whole[sym].close)
        assert np.array_equal(loaded[sym].dates, whole[sym].dates)
    bad = _set(mixed, 52, "volume", -1.0)  # file row 53: AAA's 23rd bar
    with pytest.raises(DataError, match=rf"^{_csv(tmp_path, bad, 'bad.csv')}: row 53 \(AAA 2024-01-23\): volume=-1.0"):
        load_prices(tmp_path / "bad.csv")


def test_a_parquet_file_read_in_chunks_equals_its_csv(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog_module, "CSV_CHUNK_ROWS", 2048)  # duckdb's chunk: 2,048 rows
    frame = pd.concat([_bars(3000, seed=3).assign(symbol="AAA"), _bars(2500, seed=4).assign(symbol="BBB")],
                      ignore_index=True)
    pq = tmp_path / "both.parquet"
    con = duckdb.connect()
    con.register("bars", frame.assign(date=pd.to_datetime(frame["date"])))
    con.execute(f"COPY (SELECT * FROM bars) TO '{pq}' (FORMAT parquet)")
    con.close()
    from_parquet, from_csv = load_prices(pq), load_prices(_csv(tmp_path, frame))
    assert list(from_parquet) == ["AAA", "BBB"] and [len(s) for s in from_parquet.values()] == [3000, 2500]
    for sym, series in from_csv.items():
        for field in ("dates", "open", "high", "low", "close", "volume"):
            assert np.array_equal(getattr(from_parquet[sym], field), getattr(series, field)), (sym, field)
    bad = frame.assign(date=pd.to_datetime(frame["date"]))
    bad.loc[4500, "close"] = 0.0
    con = duckdb.connect()
    con.register("bars", bad)
    con.execute(f"COPY (SELECT * FROM bars) TO '{pq}' (FORMAT parquet)")
    con.close()
    with pytest.raises(DataError, match=rf"^{pq}: row 4501 \(BBB .*\): close=0.0 is not a positive finite price"):
        load_prices(pq)


def test_loaded_series_own_their_memory(tmp_path):
    frame = _bars().assign(date=lambda f: pd.to_datetime(f["date"]))
    series = load_prices(frame, symbol="X")["X"]
    frame.loc[:, "close"] = 1.0
    assert series.close[0] != 1.0 and not series.close.flags.writeable


# ------------------------------------------------------------------ memory
def test_a_long_series_reads_the_same_episode_through_the_compact_path(monkeypatch, catalog):
    """Above COMPACT_ROWS prices, dates and observation templates are kept compactly: same rollout, bit for bit."""
    frame = catalog.series("AAPL").to_frame()

    def rollout():
        env = gym.make("FinTrading-v0", data=frame, split=None, fill="next_open")
        obs, info = env.reset(seed=0)
        out = [(obs.tobytes(), info["date"], info["price"])]
        for k in range(10_000):
            obs, reward, terminated, truncated, info = env.step((k * 7 + k // 5) % 3)
            out.append((obs.tobytes(), reward, info["date"], info["price"], info["equity"]))
            if terminated or truncated:
                return out, env.unwrapped
        raise AssertionError("episode did not end")

    full, env_full = rollout()
    monkeypatch.setattr(trading_core, "COMPACT_ROWS", 50)
    monkeypatch.setattr(trading_core, "OBS_BLOCK_ROWS", 16)
    compact, env_compact = rollout()
    assert isinstance(env_compact._episode.obs_rows, trading_core.ObservationBlocks)
    assert not isinstance(env_full._episode.obs_rows, trading_core.ObservationBlocks)
    assert len(full) > 600 and compact == full
    assert all(type(x[2]) is str and type(x[3]) is float for x in compact[1:])


def test_memory_per_bar_stays_small(catalog):
    """200k bars through load, reset and steps: traced peak per bar (the full table of observations was ~730 B)."""
    n = 200_000
    rng = np.random.default_rng(0)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, n)))
    # one bar every calendar day, counted on the "24/7" calendar; the exchange calendars end in 2262 (pandas'
    # timestamp range), so the 200k days run 1700..2247
    frame = pd.DataFrame({"date": np.datetime64("1700-01-01") + np.arange(n), "open": close,
                          "high": close * 1.01, "low": close * 0.99, "close": close, "volume": 1e6})
    gym.make("FinTrading-v0", data=frame.head(100), symbol="X", split=None, calendar="24/7").reset(seed=0)
    tracemalloc.start()
    try:
        env = gym.make("FinTrading-v0", data=frame, symbol="X", split=None, calendar="24/7")
        env.reset(seed=0)
        for k in range(1_000):
            env.step(k % 3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / n < 400, f"{peak / n:.0f} bytes per bar"


@pytest.mark.slow
def test_a_million_bars_stay_under_300_mb(tmp_path):
    """The benchmark's own measurement: peak RSS of load + reset + 1,000 steps of 1M bars (interpreter included)."""
    script = ROOT / "benchmarks" / "bench_user_data_memory.py"
    subprocess.run([sys.executable, str(script), "--write", str(tmp_path), "--bars", "1000000"], check=True)
    sys.path.insert(0, str(script.parent))
    try:
        from bench_user_data_memory import measure
    finally:
        sys.path.remove(str(script.parent))
    for case, name in (("csv", "SYN.csv"), ("parquet", "SYN.parquet"), ("dataframe", "SYN.csv")):
        result = measure(case, tmp_path / name, 1_000, 1_000_000)
        assert result["peak_mib"] < 300, result
