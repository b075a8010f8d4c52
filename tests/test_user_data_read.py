"""A user's file read right: the adjusted close traded, unadjusted splits warned of, aware timestamps as New York dates."""

from __future__ import annotations

import duckdb
import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import finenvs  # noqa: F401  (registers the envs)
from finenvs.cli import main
from finenvs.data.catalog import load_prices
from finenvs.data.schema import split_like_jumps
from finenvs.errors import DataError, WindowError

N = 300
SPLIT_ROW = 150  # after the first decision (row 48 with the default window)


def _split_bars(adj_label: str | None = "Adj Close") -> tuple[pd.DataFrame, np.ndarray]:
    """Bars as a data vendor writes them: Close unadjusted with a 4:1 split at SPLIT_ROW, Adj Close smooth."""
    rng = np.random.default_rng(7)
    adj = 100.0 * np.exp(np.cumsum(rng.normal(0.0004, 0.01, N)))
    close = adj.copy()
    close[:SPLIT_ROW] *= 4.0
    frame = pd.DataFrame({
        "Date": pd.bdate_range("2024-01-02", periods=N).strftime("%Y-%m-%d"),
        "Open": close * 0.998, "High": close * 1.01, "Low": close * 0.99, "Close": close, "Volume": 1e6,
    })
    if adj_label is not None:
        frame[adj_label] = adj
    return frame, adj


def _parquet(path, frame: pd.DataFrame) -> None:
    con = duckdb.connect()
    try:
        con.register("bars", frame)
        con.execute(f"COPY (SELECT * FROM bars) TO '{path}' (FORMAT parquet)")
    finally:
        con.close()


def _buy_and_hold(data, **kwargs) -> tuple[float, int, int]:
    env = gym.make("FinTrading-v0", data=data, symbol="X", fee_bps=0.0, **kwargs)
    _, info = env.reset(seed=0)
    # the first decision's row (n_decisions counts XNYS sessions: these business-day bars include US holidays)
    first = int(np.searchsorted(env.unwrapped.market.dates, np.datetime64(info["window_start"])))
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(2)
        done = terminated or truncated
    return info["equity"], first, N - 1


# ------------------------------------------------------------------ adjusted close
@pytest.mark.parametrize("label", ["Adj Close", "adj_close", "ADJCLOSE", " adj close "])
def test_buy_and_hold_of_a_split_file_earns_the_adjusted_return(tmp_path, label):
    frame, adj = _split_bars(label)
    path = tmp_path / "X.csv"
    frame.to_csv(path, index=False)
    series = load_prices(path)["X"]
    assert series.adjusted_from == label.strip()
    assert series.price_basis == f"adjusted close ({label.strip()})"
    np.testing.assert_allclose(series.close, adj, rtol=1e-15)
    equity, first, last = _buy_and_hold(path, split=None)
    assert equity == pytest.approx(adj[last] / adj[first], rel=1e-12)
    assert equity > 0.5  # the raw close would show the split as a -75% loss


def test_without_the_adjusted_column_the_close_is_traded_as_given(tmp_path):
    frame, adj = _split_bars(None)
    series = load_prices(frame, symbol="X")["X"]
    assert series.adjusted_from is None and series.price_basis == "close as given"
    equity, first, last = _buy_and_hold(frame, split=None)
    assert equity == pytest.approx(adj[last] / adj[first] / 4.0, rel=1e-12)


def test_the_bar_is_scaled_with_its_close(tmp_path):
    frame, adj = _split_bars()
    path = tmp_path / "X.parquet"
    _parquet(path, frame.assign(Date=pd.to_datetime(frame["Date"])))
    s = load_prices(path)["X"]
    assert s.adjusted_from == "Adj Close"
    np.testing.assert_allclose(s.open / s.close, 0.998, rtol=1e-12)
    np.testing.assert_allclose(s.high / s.close, 1.01, rtol=1e-12)
    np.testing.assert_allclose(s.low / s.close, 0.99, rtol=1e-12)
    np.testing.assert_array_equal(s.volume, 1e6)
    assert s.slice(10, 20).adjusted_from == "Adj Close"


def test_a_bad_or_doubled_adjusted_close_is_named(tmp_path):
    frame, _ = _split_bars()
    frame.loc[20, "Adj Close"] = -1.0
    with pytest.raises(DataError, match=r"^DataFrame: row 21: Adj Close=-1.0 is not a positive finite price"):
        load_prices(frame, symbol="X")
    frame["Adj Close"] = frame["Adj Close"].astype(object)
    frame.loc[20, "Adj Close"] = "abc"
    path = tmp_path / "X.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"row 21: Adj Close is not a number: 'abc'"):
        load_prices(path)
    frame.loc[20, "Adj Close"] = ""
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"row 21: Adj Close=nan is missing or not a number"):
        load_prices(path)
    doubled, _ = _split_bars()
    doubled["adj_close"] = doubled["Adj Close"]
    with pytest.raises(DataError, match=r"column 'adj_close' appears 2 times \('Adj Close', 'adj_close'\)"):
        load_prices(doubled, symbol="X")
    broken, _ = _split_bars()
    broken.loc[5, "High"] = broken.loc[5, "Close"] * 0.5  # the raw bar's own fault is still reported
    with pytest.raises(DataError, match=r"row 6 \(X 2024-01-09\): high=.* < max"):
        load_prices(broken, symbol="X")


# ------------------------------------------------------------------ split-like jumps
def test_split_like_jumps_name_the_days():
    frame, _ = _split_bars(None)
    jumps = split_like_jumps(load_prices(frame, symbol="X")["X"])
    assert [str(d) for d, _ in jumps] == [frame["Date"][SPLIT_ROW]]
    assert "like 1:4" in jumps[0][1] and "-75%" in jumps[0][1]
    adjusted, _ = _split_bars()
    assert split_like_jumps(load_prices(adjusted, symbol="X")["X"]) == []
    dates = pd.bdate_range("2024-01-02", periods=6).strftime("%Y-%m-%d")
    close = np.array([100.0, 70.0, 23.4, 23.0, 231.0, 230.0])  # -30%, 1:3, flat, 10:1 reverse, flat
    bars = pd.DataFrame({"date": dates, "open": close, "high": close, "low": close, "close": close, "volume": 1.0})
    found = split_like_jumps(load_prices(bars, symbol="Y")["Y"])
    assert [(str(d), "1:3" in w or "10:1 reverse" in w) for d, w in found] == [(dates[2], True), (dates[4], True)]
    overnight = bars.assign(open=[100.0, 45.0, 23.4, 23.0, 231.0, 230.0], low=[100.0, 45.0, 23.4, 23.0, 231.0, 230.0])
    assert str(split_like_jumps(load_prices(overnight, symbol="Y")["Y"])[0][0]) == dates[1]  # -55% overnight


def test_data_verify_warns_of_split_like_jumps_and_says_which_price(tmp_path, capsys):
    raw, _ = _split_bars(None)
    path = tmp_path / "raw.csv"
    raw.to_csv(path, index=False)
    assert main(["data", "verify", "--file", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "raw: ok (300 rows" in out and "prices: close as given" in out
    day = raw["Date"][SPLIT_ROW]
    assert f"warning: {path}: raw: 1 split-like jump and no adjusted-close column: {day} close" in err
    adjusted, _ = _split_bars()
    path = tmp_path / "adj.csv"
    adjusted.to_csv(path, index=False)
    assert main(["data", "verify", "--file", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "prices: adjusted close (Adj Close)" in out and "warning" not in err


# ------------------------------------------------------------------ time zones
def _stamped(stamps: list[str]) -> pd.DataFrame:
    close = 100.0 + np.arange(len(stamps), dtype=float)
    return pd.DataFrame({"Date": stamps, "Open": close, "High": close, "Low": close, "Close": close, "Volume": 1.0})


def test_new_york_offsets_across_daylight_saving_are_exchange_dates(tmp_path):
    # as a vendor writes New York midnights: -05:00 before 2024-03-10, -04:00 after
    stamps = ["2024-03-07 00:00:00-05:00", "2024-03-08 00:00:00-05:00", "2024-03-11 00:00:00-04:00",
              "2024-03-12 00:00:00-04:00"]
    path = tmp_path / "ny.csv"
    _stamped(stamps).to_csv(path, index=False)
    dates = [str(d) for d in load_prices(path)["ny"].dates]
    assert dates == ["2024-03-07", "2024-03-08", "2024-03-11", "2024-03-12"]


def test_utc_stamps_after_midnight_keep_the_new_york_date(tmp_path):
    # closes stamped in UTC: 16:00 New York is 21:00 UTC in winter; a 20:00 New York stamp is 01:00 UTC next day
    stamps = ["2024-03-07T21:00:00Z", "2024-03-09T01:00:00+00:00", "2024-03-12T00:30:00+0000", "2024-03-12T20:00:00Z"]
    path = tmp_path / "utc.csv"
    _stamped(stamps).to_csv(path, index=False)
    want = ["2024-03-07", "2024-03-08", "2024-03-11", "2024-03-12"]
    assert [str(d) for d in load_prices(path)["utc"].dates] == want
    aware = _stamped(stamps).assign(Date=pd.to_datetime(stamps, format="ISO8601", utc=True))  # a tz-aware column
    assert [str(d) for d in load_prices(aware, symbol="X")["X"].dates] == want
    pq = tmp_path / "utc.parquet"
    _parquet(pq, aware)
    assert [str(d) for d in load_prices(pq)["utc"].dates] == want


def test_daily_bars_stamped_at_midnight_keep_their_day_in_any_offset(tmp_path):
    # a vendor's daily export: each bar at midnight UTC (New York time would put it on the day before)
    stamps = ["2024-03-07T00:00:00Z", "2024-03-08T00:00:00+00:00", "2024-03-11 00:00:00.000+0000",
              "2024-03-12T00:00+09:00"]
    want = ["2024-03-07", "2024-03-08", "2024-03-11", "2024-03-12"]
    path = tmp_path / "midnight.csv"
    _stamped(stamps).to_csv(path, index=False)
    assert [str(d) for d in load_prices(path)["midnight"].dates] == want
    aware = _stamped(stamps[:3]).assign(Date=pd.to_datetime(stamps[:3], format="ISO8601", utc=True))
    assert [str(d) for d in load_prices(aware, symbol="X")["X"].dates] == want[:3]
    pq = tmp_path / "midnight.parquet"
    _parquet(pq, aware)
    assert [str(d) for d in load_prices(pq)["midnight"].dates] == want[:3]
    # a time of day other than midnight still converts; an unreadable offset is still refused
    mixed = tmp_path / "mixed.csv"
    _stamped(["2024-03-07T00:00:00Z", "2024-03-09T01:00:00Z"]).to_csv(mixed, index=False)
    assert [str(d) for d in load_prices(mixed)["mixed"].dates] == ["2024-03-07", "2024-03-08"]
    bad = tmp_path / "bad.csv"
    _stamped(["2024-03-07T00:00:00Z", "2024-03-08T00:00:00+25:00"]).to_csv(bad, index=False)
    with pytest.raises(DataError, match=r"row 2: date is missing or unparsable"):
        load_prices(bad)


def test_naive_dates_stay_as_written_and_strict(tmp_path):
    stamps = ["2024-03-07", "2024-03-08 23:30:00", "2024-03-11T00:00:00"]
    path = tmp_path / "naive.csv"
    _stamped(stamps).to_csv(path, index=False)
    assert [str(d) for d in load_prices(path)["naive"].dates] == ["2024-03-07", "2024-03-08", "2024-03-11"]
    for bad in ("03/12/2024", "03/12/2024 00:00:00-04:00", "2024-03-12 25:00:00-04:00"):
        path = tmp_path / "bad.csv"
        _stamped(["2024-03-11", bad]).to_csv(path, index=False)
        with pytest.raises(DataError, match=r"row 2: date is missing or unparsable"):
            load_prices(path)


# ------------------------------------------------------------------ default window
def test_user_data_defaults_to_its_whole_series_and_named_splits_keep_their_dates():
    rng = np.random.default_rng(3)
    close = 50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, 120)))
    dates = pd.bdate_range("2015-01-02", periods=120).strftime("%Y-%m-%d")  # outside every shipped split
    bars = pd.DataFrame({"date": dates, "open": close, "high": close, "low": close, "close": close, "volume": 1.0})
    env = gym.make("FinTrading-v0", data=bars, symbol="OLD")
    assert env.unwrapped.split is None
    _, info = env.reset(seed=0)
    assert (info["window_start"], info["window_end"]) == (dates[48], dates[-1])  # first day with full history
    with pytest.raises(WindowError, match="empty window 2024-01-02..2025-12-31"):
        gym.make("FinTrading-v0", data=bars, symbol="OLD", split="train")
    assert gym.make("FinTrading-v0", symbol="AAPL").unwrapped.split == "train"  # the shipped data: unchanged


def test_every_env_taking_user_data_defaults_to_its_whole_series():
    """FinHedging-v0 and FinDeltaHedge-v0 as FinTrading-v0: a user's 2015 series runs without naming a split."""
    rng = np.random.default_rng(4)
    dates = pd.bdate_range("2015-01-02", periods=160).strftime("%Y-%m-%d")
    frames = []
    for sym in ("OLDA", "OLDB"):
        close = 50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, dates.size)))
        frames.append(pd.DataFrame({"date": dates, "symbol": sym, "open": close, "high": close, "low": close,
                                    "close": close, "volume": 1.0}))
    bars = pd.concat(frames, ignore_index=True)
    hedging = gym.make("FinHedging-v0", data=bars, symbols=["OLDA", "OLDB"])
    assert hedging.unwrapped.split is None
    _, info = hedging.reset(seed=0)
    assert info["date"].startswith("2015")
    delta = gym.make("FinDeltaHedge-v0", source="real", data=bars, symbol="OLDA", maturity_days=20)
    assert delta.unwrapped.split is None
    _, info = delta.reset(seed=0)
    assert info["date"].startswith("2015")
    assert gym.make("FinHedging-v0").unwrapped.split == "train"  # the shipped data: unchanged
    assert gym.make("FinDeltaHedge-v0", source="real", symbol="AAPL").unwrapped.split == "train"
