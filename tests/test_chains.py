"""Option chains: the shipped real snapshot, user CSVs, generated chains and the date lock."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from finenvs.data.asof import AsOfView
from finenvs.data.chains import (
    SPY_SURFACE,
    calibrate_shipped_surface,
    friday_expiries,
    load_chain_csv,
    realised_vol,
    strike_step,
    synthetic_chain,
    tbill_continuous_rate,
)
from finenvs.data.schema import PriceSeries
from finenvs.errors import DataError
from finenvs.pricing import bsm_price, implied_vol


def test_shipped_chain_is_read_through_the_date_lock(catalog):
    chain = catalog.as_of("2026-05-01").option_chain("SPY")
    assert chain.snapshot == np.datetime64("2026-05-01")
    assert len(chain) == 7648 and len(chain.expiries()) == 24
    assert chain.spot == pytest.approx(720.65, abs=0.01)
    assert np.all((chain.implied_vol > 0) & (chain.implied_vol <= 1))
    later = catalog.as_of("2026-06-01")
    assert later.option_chain("SPY").snapshot == chain.snapshot
    earlier = catalog.as_of("2026-04-30")
    with pytest.raises(DataError, match="no SPY option chain snapshot on or before 2026-04-30"):
        earlier.option_chain("SPY")
    assert earlier.option_snapshots("SPY") == []


def test_asking_for_a_future_snapshot_is_counted(catalog):
    view = catalog.as_of("2026-05-04")
    before = view.counter.attempts
    chain = view.option_chain("SPY", snapshot="2026-07-01")
    assert chain.snapshot == np.datetime64("2026-05-01")
    assert view.counter.attempts == before + 1


def test_quote_and_records(catalog):
    chain = catalog.as_of("2026-05-01").option_chain("SPY")
    quote = chain.quote("put", 700.0, "2026-05-29")
    assert quote["days_to_expiry"] == 28 and quote["bid"] <= quote["mid"] <= quote["ask"]
    with pytest.raises(DataError, match="nearest listed strikes"):
        chain.quote("put", 700.3, "2026-05-29")
    rows = chain.select("2026-05-29", "call").records()
    assert rows and all(r["option_type"] == "call" and r["expiry"] == "2026-05-29" for r in rows)


def test_shipped_surface_recomputes_from_the_shipped_data(catalog):
    surface, inputs = calibrate_shipped_surface(catalog)
    for name in ("atm_ratio", "term", "skew", "smile"):
        assert getattr(surface, name) == pytest.approx(getattr(SPY_SURFACE, name), rel=1e-6), name
    assert surface.rmse < 0.03  # the fit is within 3 vol points on average
    assert inputs["rate"] == pytest.approx(tbill_continuous_rate(catalog.as_of("2026-05-01").rate("DTB3")[1]))
    # a skewed surface: downside puts richer than upside calls
    T = 30 / 365
    lo, hi = SPY_SURFACE.iv(0.15, 100.0, [90.0, 110.0], T)
    assert lo > hi


def test_generated_chain_prices_from_date_locked_inputs(catalog):
    view = catalog.as_of("2025-03-14")
    chain = synthetic_chain(view, "AAPL")
    spot = float(view.latest("AAPL")["close"])
    assert chain.spot == pytest.approx(spot)
    assert chain.snapshot == view.as_of
    assert chain.meta["rate_date"] < "2025-03-14"
    # every mid is the BSM price at the chain's own vol, and inverts back to it
    T = chain.days_to_expiry() / 365.0
    prices = bsm_price(chain.spot, chain.strike, T, chain.rate, 0.0, chain.implied_vol, chain.option_type)
    np.testing.assert_allclose(chain.mid, prices, rtol=1e-12)
    i = 5
    iv = implied_vol(chain.mid[i], chain.spot, chain.strike[i], T[i], chain.rate, 0.0, chain.option_type[i])
    assert iv == pytest.approx(chain.implied_vol[i], rel=1e-6)
    assert all(np.datetime64(d).astype("datetime64[D]").item().weekday() == 4 for d in chain.expiries())
    assert np.all(chain.bid <= chain.ask)


def test_generated_chain_is_future_invariant(catalog):
    """Change every price after the snapshot: the generated chain is identical."""
    full = catalog.series("MSFT")
    cut = np.datetime64("2025-06-13")
    close = full.close.copy()
    close[full.dates > cut] *= 3.0
    perturbed = PriceSeries.from_arrays("MSFT", full.dates, full.open, np.maximum(full.high, close),
                                        np.minimum(full.low, close), close, full.volume)
    rates = catalog.rates

    def view_of(series):
        return AsOfView(lambda _s: series, cut, rate_lookup=rates)

    a, b = synthetic_chain(view_of(full), "MSFT"), synthetic_chain(view_of(perturbed), "MSFT")
    np.testing.assert_array_equal(a.mid, b.mid)
    np.testing.assert_array_equal(a.implied_vol, b.implied_vol)


def test_helpers():
    assert strike_step(720.0) == 10.0 and strike_step(212.0) == 2.5 and strike_step(45.0) == 0.5
    days = friday_expiries(np.datetime64("2026-05-01"), [7, 30])
    assert [str(d) for d in days] == ["2026-05-08", "2026-06-05"]  # +30 days is a Sunday: next Friday
    closes = 100 * np.exp(np.cumsum(np.r_[0.0, np.tile([0.01, -0.01], 15)]))
    assert realised_vol(closes) == pytest.approx(np.std(np.tile([0.01, -0.01], 15)[-21:], ddof=1) * math.sqrt(252))
    with pytest.raises(DataError, match="needs 22 closes"):
        realised_vol(closes[:5])
    assert tbill_continuous_rate(4.0) == pytest.approx(-math.log(1 - 0.04 * 91 / 360) / (91 / 365))


def test_user_csv_in_yahoo_layout(tmp_path):
    """The source files' layout (Yahoo's column names), IV placeholders 0 and > 1 dropped."""
    from finenvs.data.manifest import read_table, shipped_data_dir

    tidy = pd.DataFrame(read_table(shipped_data_dir() / "options/spy_chain_2026-05-01.parquet", "*")).head(200)
    yahoo = tidy.rename(columns={"symbol": "ticker", "snapshot_date": "spot_date", "last": "lastPrice",
                                 "implied_vol": "impliedVolatility", "open_interest": "openInterest", "spot": "S"})
    yahoo.loc[[3, 7], "impliedVolatility"] = [0.0, 1.5]
    path = tmp_path / "chain.csv"
    yahoo.to_csv(path, index=False)
    chain = load_chain_csv(path)
    assert len(chain) == 198 and chain.dropped == 2 and chain.symbol == "SPY"
    assert chain.snapshot == np.datetime64("2026-05-01") and chain.spot == pytest.approx(720.65, abs=0.01)


def test_user_csv_in_finenvs_layout_and_bad_input(tmp_path):
    frame = pd.DataFrame({
        "symbol": "XYZ", "snapshot_date": "2025-01-02", "expiry": ["2025-02-21", "2025-02-21", "2025-03-21"],
        "option_type": ["call", "put", "call"], "strike": [100.0, 100.0, 110.0], "bid": 1.0, "ask": 1.2,
        "last": 1.1, "implied_vol": [0.3, 0.0, 0.25], "spot": 101.0,
    })
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    chain = load_chain_csv(path)
    assert len(chain) == 2 and chain.dropped == 1 and chain.symbol == "XYZ"
    for column, value, message in (
        ("strike", -5.0, "must be a number > 0"),
        ("expiry", "2024-12-20", "before the snapshot date"),
        ("option_type", "future", "is not call or put"),
    ):
        broken = frame.copy()
        broken.loc[0, column] = value
        broken.to_csv(path, index=False)
        with pytest.raises(DataError, match=message):
            load_chain_csv(path)
    frame.drop(columns=["spot"]).to_csv(path, index=False)
    with pytest.raises(DataError, match="lacks columns"):
        load_chain_csv(path)
    with pytest.raises(DataError, match="not found"):
        load_chain_csv(tmp_path / "missing.csv")
