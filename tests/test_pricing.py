"""finenvs.pricing: BSM against QuantLib and finite differences, parity, implied vol, CRR, positions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from finenvs.pricing import (
    Leg,
    Position,
    PricingError,
    bsm_greeks,
    bsm_price,
    crr_price,
    implied_vol,
    no_arbitrage_bounds,
    parity_gap,
    year_fraction,
)


def _grid(n: int = 200, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        out.append((
            float(rng.uniform(20, 500)),  # S
            float(rng.uniform(0.5, 1.5)),  # K / S
            int(rng.integers(1, 3 * 365)),  # calendar days
            float(rng.uniform(-0.01, 0.08)),  # r
            float(rng.uniform(0.0, 0.05)),  # q
            float(rng.uniform(0.05, 1.0)),  # sigma
            "call" if rng.random() < 0.5 else "put",
        ))
    return out


def test_bsm_matches_quantlib_to_1e8_on_a_random_grid():
    ql = pytest.importorskip("QuantLib", reason="QuantLib is not installed (pip install QuantLib; in the dev extra)")
    today = ql.Date(2, 1, 2026)
    ql.Settings.instance().evaluationDate = today
    dc = ql.Actual365Fixed()
    checked = 0
    for S, moneyness, days, r, q, sigma, kind in _grid():
        K = S * moneyness
        spot = ql.SimpleQuote(S)
        process = ql.BlackScholesMertonProcess(
            ql.QuoteHandle(spot),
            ql.YieldTermStructureHandle(ql.FlatForward(today, q, dc, ql.Continuous)),
            ql.YieldTermStructureHandle(ql.FlatForward(today, r, dc, ql.Continuous)),
            ql.BlackVolTermStructureHandle(ql.BlackConstantVol(today, ql.NullCalendar(), sigma, dc)),
        )
        option = ql.VanillaOption(
            ql.PlainVanillaPayoff(ql.Option.Call if kind == "call" else ql.Option.Put, K),
            ql.EuropeanExercise(today + days),
        )
        option.setPricingEngine(ql.AnalyticEuropeanEngine(process))
        g = bsm_greeks(S, K, float(year_fraction(days)), r, q, sigma, kind)
        scale = max(1.0, option.NPV())
        assert g["price"] == pytest.approx(option.NPV(), abs=1e-8 * scale)
        assert g["delta"] == pytest.approx(option.delta(), abs=1e-8)
        assert g["gamma"] == pytest.approx(option.gamma(), abs=1e-8)
        assert g["vega"] == pytest.approx(option.vega() / 100.0, abs=1e-8 * max(1.0, option.vega() / 100))
        assert g["rho"] == pytest.approx(option.rho() / 100.0, abs=1e-8 * max(1.0, abs(option.rho()) / 100))
        # QuantLib's theta is per year; finenvs' per calendar day
        assert g["theta"] == pytest.approx(option.theta() / 365.0, abs=1e-8 * max(1.0, abs(option.theta()) / 365))
        checked += 1
    assert checked == 200


def test_put_call_parity_holds_for_engine_prices():
    for S, moneyness, days, r, q, sigma, _ in _grid(100, seed=1):
        K, T = S * moneyness, days / 365
        c, p = bsm_price(S, K, T, r, q, sigma, "call"), bsm_price(S, K, T, r, q, sigma, "put")
        assert parity_gap(c, p, S, K, T, r, q) == pytest.approx(0.0, abs=1e-10 * max(1.0, S))
    # a mispriced pair shows its gap
    assert parity_gap(10.0, 5.0, 100, 100, 1.0, 0.0, 0.0) == pytest.approx(5.0)


@pytest.mark.parametrize("kind", ["call", "put"])
def test_greeks_match_finite_differences(kind):
    S, K, T, r, q, sigma = 100.0, 95.0, 0.75, 0.04, 0.015, 0.3
    g = bsm_greeks(S, K, T, r, q, sigma, kind)

    def price(**kw):
        args = {"S": S, "K": K, "T": T, "r": r, "q": q, "sigma": sigma} | kw
        return bsm_price(args["S"], args["K"], args["T"], args["r"], args["q"], args["sigma"], kind)

    h = 1e-4
    assert g["delta"] == pytest.approx((price(S=S + h) - price(S=S - h)) / (2 * h), abs=1e-7)
    assert g["gamma"] == pytest.approx((price(S=S + h) - 2 * price() + price(S=S - h)) / h**2, abs=1e-4)
    assert g["vega"] == pytest.approx((price(sigma=sigma + h) - price(sigma=sigma - h)) / (2 * h) / 100, abs=1e-7)
    assert g["rho"] == pytest.approx((price(r=r + h) - price(r=r - h)) / (2 * h) / 100, abs=1e-7)
    day = 1 / 365
    assert g["theta"] == pytest.approx(price(T=T - day) - price(), rel=2e-3)  # one calendar day passing


def test_vectorised_over_arrays():
    S = np.array([90.0, 100.0, 110.0])
    prices = bsm_price(S, 100.0, 0.5, 0.03, 0.0, 0.2, ["call", "put", "call"])
    assert prices.shape == (3,)
    assert prices[1] == pytest.approx(bsm_price(100.0, 100.0, 0.5, 0.03, 0.0, 0.2, "put"))
    assert isinstance(bsm_price(100, 100, 0.5, 0.03, 0.0, 0.2), float)


def test_implied_vol_round_trips_and_rejects_prices_outside_bounds():
    for S, moneyness, days, r, q, sigma, kind in _grid(60, seed=2):
        K, T = S * moneyness, days / 365
        price = bsm_price(S, K, T, r, q, sigma, kind)
        lo, hi = no_arbitrage_bounds(S, K, T, r, q, kind)
        if price - lo < 1e-9 * S:  # no time value left to invert
            continue
        assert implied_vol(price, S, K, T, r, q, kind) == pytest.approx(sigma, rel=1e-6)
    vols = implied_vol([5.0, 10.0], 100.0, 100.0, 1.0, 0.0, 0.0, "call")
    assert np.all(np.diff(vols) > 0)
    with pytest.raises(PricingError, match="outside the no-arbitrage bounds"):
        implied_vol(150.0, 100.0, 100.0, 1.0, 0.0, 0.0, "call")  # above the spot
    with pytest.raises(PricingError, match="outside the no-arbitrage bounds"):
        implied_vol(0.5, 100.0, 50.0, 1.0, 0.0, 0.0, "call")  # below intrinsic


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -0.2}, "sigma"),
        ({"T": 0.0}, "T "),
        ({"T": -1.0}, "T "),
        ({"S": -5.0}, "S "),
        ({"K": 0.0}, "K "),
        ({"r": float("nan")}, "r "),
        ({"kind": "straddle"}, "kind"),
    ],
)
def test_bad_pricer_input_names_the_argument(kwargs, match):
    args = {"S": 100.0, "K": 100.0, "T": 1.0, "r": 0.05, "q": 0.0, "sigma": 0.2, "kind": "call"} | kwargs
    with pytest.raises(PricingError, match=match):
        bsm_price(**args)
    with pytest.raises(ValueError):  # PricingError is a ValueError
        bsm_greeks(**args)


def test_crr_converges_to_bsm_and_prices_early_exercise():
    S, K, T, r, q, sigma = 100.0, 105.0, 1.0, 0.05, 0.0, 0.25
    euro = bsm_price(S, K, T, r, q, sigma, "put")
    assert crr_price(S, K, T, r, q, sigma, "put", american=False, steps=2000) == pytest.approx(euro, abs=2e-3)
    american = crr_price(S, K, T, r, q, sigma, "put", steps=2000)
    assert american > euro + 0.1  # early exercise of a put with r > 0 is worth something
    # an American call without dividends is never exercised early: equal to the European
    assert crr_price(S, K, T, r, 0.0, sigma, "call", steps=1000) == pytest.approx(
        crr_price(S, K, T, r, 0.0, sigma, "call", american=False, steps=1000), abs=1e-12)
    with pytest.raises(PricingError, match="steps"):
        crr_price(S, K, T, r, q, sigma, "put", steps=0)


def test_crr_american_put_matches_quantlib():
    ql = pytest.importorskip("QuantLib", reason="QuantLib is not installed (pip install QuantLib; in the dev extra)")
    today = ql.Date(2, 1, 2026)
    ql.Settings.instance().evaluationDate = today
    dc = ql.Actual365Fixed()
    S, K, days, r, q, sigma = 100.0, 110.0, 365, 0.05, 0.01, 0.3
    process = ql.BlackScholesMertonProcess(
        ql.QuoteHandle(ql.SimpleQuote(S)),
        ql.YieldTermStructureHandle(ql.FlatForward(today, q, dc, ql.Continuous)),
        ql.YieldTermStructureHandle(ql.FlatForward(today, r, dc, ql.Continuous)),
        ql.BlackVolTermStructureHandle(ql.BlackConstantVol(today, ql.NullCalendar(), sigma, dc)),
    )
    option = ql.VanillaOption(ql.PlainVanillaPayoff(ql.Option.Put, K), ql.AmericanExercise(today, today + days))
    option.setPricingEngine(ql.BinomialVanillaEngine(process, "crr", 2000))
    ours = crr_price(S, K, days / 365, r, q, sigma, "put", steps=2000)
    assert ours == pytest.approx(option.NPV(), abs=5e-3)  # two CRR trees, set up slightly differently


# ---------------------------------------------------------------------------- positions
def test_worked_iron_condor():
    """Short 4420/4580 strangle inside long 4400/4600 wings for a net credit of 8."""
    ic = Position([
        Leg("put", "long", 1, 4400, 1.0), Leg("put", "short", 1, 4420, 5.0),
        Leg("call", "short", 1, 4580, 5.0), Leg("call", "long", 1, 4600, 1.0),
    ])
    assert ic.net_premium == pytest.approx(-8.0)
    assert ic.max_profit() == pytest.approx(8.0)
    assert ic.max_loss() == pytest.approx(12.0)
    assert ic.breakevens() == [4412.0, 4588.0]
    assert ic.pnl([4300, 4412, 4500, 4588, 4700]) == pytest.approx([-12, 0, 8, 0, -12])


def test_worked_bull_call_spread():
    spread = Position([Leg("call", "long", 1, 100, 7.0), Leg("call", "short", 1, 110, 2.0)])
    assert (spread.max_profit(), spread.max_loss(), spread.breakevens()) == (5.0, 5.0, [105.0])
    contracts = Position(spread.legs, multiplier=100)
    assert (contracts.max_profit(), contracts.max_loss()) == (500.0, 500.0)


def test_unbounded_and_stock_positions():
    straddle = Position([Leg("call", "long", 1, 100, 4.0), Leg("put", "long", 1, 100, 3.0)])
    assert straddle.max_profit() == math.inf and straddle.max_loss() == pytest.approx(7.0)
    assert straddle.breakevens() == [93.0, 107.0]
    naked = Position([Leg("call", "short", 2, 100, 4.0)])
    assert naked.max_loss() == math.inf and naked.max_profit() == pytest.approx(8.0)
    covered = Position([Leg("stock", "long", 1, None, 100.0), Leg("call", "short", 1, 110, 3.0)])
    assert covered.max_profit() == pytest.approx(13.0) and covered.max_loss() == pytest.approx(97.0)
    assert covered.breakevens() == [97.0]


def test_probability_of_profit_matches_monte_carlo():
    spread = Position([Leg("call", "long", 1, 100, 7.0), Leg("call", "short", 1, 110, 2.0)])
    S, T, sigma, mu = 100.0, 0.5, 0.3, 0.06
    exact = spread.probability_of_profit(S, T, sigma, mu)
    # above the 105 breakeven: P(S_T > 105) in closed form
    z = (math.log(105 / S) - (mu - 0.5 * sigma**2) * T) / (sigma * math.sqrt(T))
    assert exact == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), abs=1e-12)
    rng = np.random.default_rng(0)
    st = S * np.exp((mu - 0.5 * sigma**2) * T + sigma * math.sqrt(T) * rng.standard_normal(400_000))
    assert exact == pytest.approx(float(np.mean(spread.pnl(st) > 0)), abs=3e-3)
    with pytest.raises(PricingError, match="sigma"):
        spread.probability_of_profit(S, T, 0.0, mu)


def test_position_greeks_sum_the_legs():
    legs = [Leg("call", "long", 2, 100, 5.0), Leg("put", "short", 1, 95, 2.0), Leg("stock", "short", 50, None, 100.0)]
    g = Position(legs).greeks(100.0, 0.5, 0.03, 0.01, 0.25)
    c = bsm_greeks(100.0, 100, 0.5, 0.03, 0.01, 0.25, "call")
    p = bsm_greeks(100.0, 95, 0.5, 0.03, 0.01, 0.25, "put")
    assert g["delta"] == pytest.approx(2 * c["delta"] - p["delta"] - 50)
    assert g["vega"] == pytest.approx(2 * c["vega"] - p["vega"])
    assert g["theta"] == pytest.approx(2 * c["theta"] - p["theta"])


@pytest.mark.parametrize(
    ("leg", "match"),
    [
        ({"kind": "swaption", "side": "long", "strike": 100}, "kind"),
        ({"kind": "call", "side": "buy", "strike": 100}, "side"),
        ({"kind": "call", "side": "long", "strike": -100}, "strike"),
        ({"kind": "put", "side": "long"}, "strike"),
        ({"kind": "call", "side": "long", "strike": 100, "quantity": -1}, "quantity"),
        ({"kind": "call", "side": "long", "strike": 100, "premium": float("nan")}, "premium"),
        ({"kind": "stock", "side": "long", "strike": 100}, "no strike"),
    ],
)
def test_bad_legs_name_the_problem(leg, match):
    with pytest.raises(PricingError, match=match):
        Leg(**leg)
    with pytest.raises(PricingError, match="at least one leg"):
        Position([])
