"""finenvs.scoring: cross-checks against empyrical and quantstats, the NaN policy, hand cases, presets.

Oracle conventions (read from the installed sources):

* empyrical (empyrical-reloaded) takes per-period ``risk_free`` / ``required_return``,
  uses ddof=1 for volatility and Sharpe, anchors drawdowns at a starting value (so
  the starting wealth is part of the path, like finenvs) and reports max drawdown
  as a negative number.  Its annualisation is ``annualization=`` periods per year.
* quantstats (``quantstats.stats``) takes an *annual* ``rf`` and de-annualises it as
  ``(1 + rf) ** (1 / periods) - 1`` (= ``finenvs.scoring.per_period_rate``); it only
  applies ``rf`` when ``rf > 0``.  ``sharpe`` uses pandas ``std(ddof=1)`` and
  multiplies by ``sqrt(periods)`` when ``annualize=True`` (the default).
  ``volatility`` is pandas ``std()`` (ddof=1) x sqrt(periods).  ``max_drawdown`` of a
  return series adds a phantom baseline of 1.0 before the first return (same as
  finenvs' wealth path starting at 1) and is negative; it needs a DatetimeIndex to
  place that phantom point.  ``sortino`` is mean / sqrt(sum(min(r, 0)^2) / n) x
  sqrt(periods), i.e. finenvs' mean x periods / downside_risk.  ``cagr`` uses
  years = n / periods.  ``win_rate`` is positives / non-zero periods but returns 0.0
  (not nan) when there is no non-zero period.
"""

from __future__ import annotations

import math
import statistics
import warnings

import empyrical as ep
import numpy as np
import pandas as pd
import pytest
import quantstats.stats as qs
from hypothesis import given, settings
from hypothesis import strategies as st

from finenvs import scoring as sc

RTOL = 1e-9
ATOL = 1e-12  # absolute floor for values that are (or cancel to) ~0
SEEDS = [0, 1, 2, 3, 2024]

# ----------------------------------------------------------------------------- strategies
# Sensible daily returns: finite, within +-50 %, no denormal dust (|r| < 1e-9 is snapped
# to an exact 0, which also makes flat days frequent), lengths 2..500.
_nonzero = st.floats(-0.5, 0.5, allow_nan=False, allow_infinity=False, allow_subnormal=False).map(
    lambda x: 0.0 if abs(x) < 1e-9 else x
)
_daily = st.one_of(st.just(0.0), _nonzero, _nonzero, _nonzero)
returns_st = st.lists(_daily, min_size=2, max_size=500).map(lambda xs: np.asarray(xs, dtype=np.float64))
# per-period risk-free / required return (about +-25 % a year at daily frequency)
per_period_st = st.one_of(st.just(0.0), st.floats(-1e-3, 1e-3, allow_nan=False, allow_subnormal=False))


def seeded_returns(seed: int, n: int = 3 * 252) -> np.ndarray:
    """A realistic daily series: fat-ish tails, some flat days."""
    rng = np.random.default_rng(seed)
    r = rng.standard_t(4, n) * 0.01 + 0.0004
    r[rng.random(n) < 0.1] = 0.0
    return np.clip(r, -0.5, 0.5)


def as_series(r: np.ndarray) -> pd.Series:
    """quantstats wants a pandas Series with a DatetimeIndex (max_drawdown subtracts a day)."""
    return pd.Series(r, index=pd.bdate_range("2000-01-03", periods=len(r)))


def close(actual: float, expected: float, *, rel: float = RTOL, abs_: float = ATOL) -> bool:
    return math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_)


def assert_close(name: str, actual: float, expected: float, r: np.ndarray, **kw) -> None:
    assert math.isfinite(actual), f"{name}: finenvs gave {actual} for {r!r}"
    assert close(actual, float(expected), **kw), (
        f"{name}: finenvs {actual!r} != oracle {expected!r} for {r!r}"
    )


def well_conditioned(x: np.ndarray) -> bool:
    """std(x) not lost in rounding relative to |mean(x)|.

    For a near-constant series the sample std is ill-conditioned (relative error
    ~ eps * |mean| / std), so two correct implementations that sum in a different
    order (numpy pairwise vs bottleneck/pandas) legitimately disagree beyond 1e-9.
    """
    sd = float(np.std(x, ddof=1))
    return sd > 1e-6 * max(float(np.max(np.abs(x))), 1e-300)


# ----------------------------------------------------------------------------- empyrical
def check_against_empyrical(r: np.ndarray, rf: float, req: float, periods: int = 252) -> None:
    ann = {"annualization": periods}
    assert_close("cumulative_return", sc.cumulative_return(r), ep.cum_returns_final(r), r)
    assert_close("annual_return", sc.annual_return(r, periods), ep.annual_return(r, **ann), r)
    assert_close("annual_volatility", sc.annual_volatility(r, periods), ep.annual_volatility(r, **ann), r)
    assert_close("downside_risk", sc.downside_risk(r, req, periods), ep.downside_risk(r, req, **ann), r)
    # finenvs reports a positive fraction, empyrical a negative number
    mdd = sc.max_drawdown(r)
    assert mdd >= 0.0
    assert_close("max_drawdown", mdd, -ep.max_drawdown(r), r)

    excess = r - rf
    if np.ptp(excess) == 0.0:
        # zero dispersion: empyrical gives +-inf (or nan for 0/0) where finenvs documents nan;
        # finenvs' side is checked in test_zero_dispersion_* and test_sharpe_nan_for_constant_*.
        assert not np.isfinite(ep.sharpe_ratio(r, rf, **ann))
    elif well_conditioned(excess):
        assert_close("sharpe_ratio", sc.sharpe_ratio(r, rf, periods), ep.sharpe_ratio(r, rf, **ann), r)

    if sc.downside_risk(r, req, periods) == 0.0:
        # no downside: finenvs documents nan where empyrical gives +inf (or nan for 0/0)
        assert math.isnan(sc.sortino_ratio(r, req, periods))
        assert np.isinf(ep.sortino_ratio(r, req, **ann)) or np.isnan(ep.sortino_ratio(r, req, **ann))
    else:
        assert_close("sortino_ratio", sc.sortino_ratio(r, req, periods), ep.sortino_ratio(r, req, **ann), r)

    if mdd == 0.0:
        # no drawdown: both libraries say nan
        assert math.isnan(sc.calmar_ratio(r, periods))
        assert np.isnan(ep.calmar_ratio(r, **ann))
    else:
        # both compute the drawdown to an absolute accuracy of ~n*eps (finenvs 1 - W/peak on a
        # path from 1, empyrical (W - peak)/peak on a path from 100), so Calmar = AR / MDD is
        # only as relatively accurate as n*eps/MDD: a 1e-7 drawdown leaves ~1e-9 (Hypothesis
        # found r = [0.3867, -1.19e-7]).
        rel = RTOL + 4 * r.size * np.finfo(float).eps / mdd
        assert_close("calmar_ratio", sc.calmar_ratio(r, periods), ep.calmar_ratio(r, **ann), r, rel=rel)


@settings(deadline=None, max_examples=150)
@given(r=returns_st, rf=per_period_st, req=per_period_st)
def test_metrics_match_empyrical(r, rf, req):
    check_against_empyrical(r, rf, req)


@settings(deadline=None, max_examples=40)
@given(r=returns_st)
def test_metrics_match_empyrical_weekly(r):
    check_against_empyrical(r, sc.per_period_rate(0.03, sc.WEEKS_PER_YEAR), 0.0, periods=sc.WEEKS_PER_YEAR)


@pytest.mark.parametrize("seed", SEEDS)
def test_metrics_match_empyrical_seeded(seed):
    r = seeded_returns(seed)
    check_against_empyrical(r, 0.0, 0.0)
    check_against_empyrical(r, sc.per_period_rate(0.04), sc.per_period_rate(0.02))
    # a losing series and a short one
    check_against_empyrical(r - 0.003, 0.0, 0.0)
    check_against_empyrical(r[:5], 1e-4, 0.0)


# ----------------------------------------------------------------------------- quantstats
def check_against_quantstats(r: np.ndarray, annual_rf: float) -> None:
    s = as_series(r)
    assert_close("cumulative_return", sc.cumulative_return(r), qs.comp(s), r)
    assert_close("annual_volatility", sc.annual_volatility(r), qs.volatility(s, periods=252), r)
    assert_close("annual_return", sc.annual_return(r), qs.cagr(s, periods=252), r)
    assert_close("max_drawdown", sc.max_drawdown(r), -qs.max_drawdown(s), r)

    # quantstats' rf is annual and de-annualised with the same formula as per_period_rate
    rf = sc.per_period_rate(annual_rf)
    excess = r - rf
    if np.ptp(excess) != 0.0 and well_conditioned(excess):
        expected = qs.sharpe(s, rf=annual_rf, periods=252, annualize=True)
        assert_close("sharpe_ratio", sc.sharpe_ratio(r, rf), expected, r)

    if sc.downside_risk(r) > 0.0:
        assert_close("sortino_ratio", sc.sortino_ratio(r), qs.sortino(s, periods=252), r)
    else:
        # no downside: quantstats also says nan for Sortino (finenvs: documented nan)
        assert math.isnan(sc.sortino_ratio(r)) and np.isnan(qs.sortino(s, periods=252))

    mdd = sc.max_drawdown(r)
    if mdd > 0.0:
        # quantstats divides CAGR by |MDD| the same way (tolerance: see check_against_empyrical)
        rel = RTOL + 4 * r.size * np.finfo(float).eps / mdd
        assert_close("calmar_ratio", sc.calmar_ratio(r), qs.calmar(s, periods=252), r, rel=rel)
    else:
        # no drawdown: quantstats divides by |0| (inf or nan); finenvs documents nan
        assert math.isnan(sc.calmar_ratio(r))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wr = qs.win_rate(s)
    if np.any(r != 0.0):
        assert_close("hit_rate", sc.hit_rate(r), wr, r)
    else:
        # quantstats returns 0.0 when no period is non-zero; finenvs documents nan
        assert wr == 0.0 and math.isnan(sc.hit_rate(r))


@settings(deadline=None, max_examples=60)
@given(r=returns_st, annual_rf=st.one_of(st.just(0.0), st.floats(1e-4, 0.1, allow_nan=False)))
def test_metrics_match_quantstats(r, annual_rf):
    check_against_quantstats(r, annual_rf)


@pytest.mark.parametrize("seed", SEEDS)
def test_metrics_match_quantstats_seeded(seed):
    r = seeded_returns(seed)
    check_against_quantstats(r, 0.0)
    check_against_quantstats(r, 0.045)


def test_per_period_rate_matches_quantstats_deannualisation():
    for annual in (0.0, 0.01, 0.05, 0.2):
        assert sc.per_period_rate(annual) == pytest.approx(
            (1 + annual) ** (1 / 252) - 1, rel=1e-12, abs=1e-15
        )
        assert sc.per_period_rate(annual, 52) == pytest.approx(
            (1 + annual) ** (1 / 52) - 1, rel=1e-12, abs=1e-15
        )
    # compounding the per-period rate for a year gives back the annual rate
    assert (1 + sc.per_period_rate(0.05)) ** 252 == pytest.approx(1.05, rel=1e-12)


# ----------------------------------------------------------------------------- turnover
@settings(deadline=None, max_examples=60)
@given(p=st.lists(st.floats(-2, 2, allow_nan=False, allow_subnormal=False), min_size=1, max_size=300))
def test_turnover_matches_pandas(p):
    """Independent formula: pandas diff with a flat (0) position before the first period."""
    expected = pd.Series([0.0, *p]).diff().abs().iloc[1:].mean()
    assert close(sc.turnover(p), expected)


# ----------------------------------------------------------------------------- NaN policy
ALL_ON_RETURNS = {
    "cumulative_return": sc.cumulative_return,
    "annual_return": sc.annual_return,
    "annual_volatility": sc.annual_volatility,
    "sharpe_ratio": sc.sharpe_ratio,
    "sortino_ratio": sc.sortino_ratio,
    "downside_risk": sc.downside_risk,
    "max_drawdown": sc.max_drawdown,
    "calmar_ratio": sc.calmar_ratio,
    "hit_rate": sc.hit_rate,
    "turnover": sc.turnover,
    "max_drawdown_of_path": sc.max_drawdown_of_path,
}


def test_policy_constants():
    assert sc.NAN_POLICY == (sc.UNDEFINED_IS_NAN, sc.REJECT_MISSING)
    assert sc.TRADING_DAYS_PER_YEAR == 252 and sc.WEEKS_PER_YEAR == 52


@pytest.mark.parametrize("empty", [[], np.array([]), ()])
def test_empty_input_is_nan_everywhere(empty):
    for name, fn in ALL_ON_RETURNS.items():
        assert math.isnan(fn(empty)), name
    out = sc.summarize(empty, positions=[])
    assert out.pop("n_periods") == 0.0
    assert out and all(math.isnan(v) for v in out.values()), out
    assert all(math.isnan(v) for k, v in sc.herculean_metrics([]).items() if k != "n_periods")
    # a wealth path with only its starting value has no returns
    std = sc.standard_metrics([1.0])
    assert all(math.isnan(v) for k, v in std.items() if k != "n_periods")


@pytest.mark.parametrize("r", [[0.01], [-0.02], [0.0]])
def test_single_period(r):
    assert math.isnan(sc.annual_volatility(r))
    assert math.isnan(sc.sharpe_ratio(r))
    assert math.isnan(sc.sharpe_ratio(r, risk_free=0.001))
    assert math.isnan(sc.sortino_ratio(r))  # even with a downside ([-0.02])
    # defined for one period, and equal to the plain formulas
    assert sc.cumulative_return(r) == pytest.approx(r[0], abs=1e-15)
    assert sc.annual_return(r) == pytest.approx((1 + r[0]) ** 252 - 1, rel=1e-12)
    assert sc.max_drawdown(r) == pytest.approx(max(0.0, -r[0]), abs=1e-15)
    assert sc.downside_risk(r) == pytest.approx(max(0.0, -r[0]) * math.sqrt(252), rel=1e-12)
    s = sc.summarize(r)
    assert math.isnan(s["annual_volatility"]) and math.isnan(s["sharpe"]) and math.isnan(s["sortino"])


def test_zero_dispersion_sharpe_is_nan_not_zero():
    # exactly representable constants: std is exactly 0
    for r, rf in (([0.0] * 5, 0.0), ([0.5, 0.5, 0.5], 0.0), ([0.25] * 7, 0.0), ([0.0, 0.0], 0.001)):
        out = sc.sharpe_ratio(r, risk_free=rf)
        assert math.isnan(out), (r, rf, out)
        assert sc.annual_volatility(r) == 0.0  # volatility itself is defined (0), not nan
    assert math.isnan(sc.summarize([0.0] * 4)["sharpe"])


def test_sharpe_nan_for_constant_series_with_rounding_residue():
    # a constant that is not exactly representable: the float mean differs from the values in the
    # last bit and np.std gives ~1e-17 (a naive `std == 0` test returned ~9.3e16 for [0.1] * 3)
    cases = [([0.1] * 3, 0.0), ([0.01] * 10, 0.0), ([0.07] * 100, 0.0), ([1 / 3] * 10, 0.0)]
    got = {f"{r[0]!r}x{len(r)}": sc.sharpe_ratio(r, risk_free=rf) for r, rf in cases}
    assert all(math.isnan(v) for v in got.values()), got


def test_herculean_sharpe_nan_for_constant_growth():
    eq = np.concatenate(([1.0], np.cumprod(np.full(11, 1.183))))
    r = sc.returns_from_wealth(eq)
    assert np.ptp(r) == 0.0  # the returns really are identical floats (0.18300000000000005)
    assert math.isnan(sc.herculean_metrics(eq)["sharpe"])
    # constant growth whose returns differ only by float round-off (~2e-16) is constant too
    assert math.isnan(sc.herculean_metrics([1.0, 1.1, 1.21, 1.331])["sharpe"])


def test_sharpe_defined_for_small_but_real_dispersion():
    r = np.full(50, 0.001)
    r[7] += 1e-9  # std ~1.4e-10, far above round-off of 1e-3
    assert math.isfinite(sc.sharpe_ratio(r)) and sc.sharpe_ratio(r) > 1e3


def test_no_downside_sortino_is_nan():
    for r in ([0.01, 0.02, 0.0], [0.0, 0.0, 0.0], [0.3, 0.1]):
        assert sc.downside_risk(r) == 0.0
        assert math.isnan(sc.sortino_ratio(r)), r
        assert math.isnan(sc.summarize(r)["sortino"])
    # relative to a required return: every period meets it
    assert math.isnan(sc.sortino_ratio([0.01, 0.02], required_return=0.01))
    assert sc.sortino_ratio([0.01, 0.02], required_return=0.016) < 0  # both periods fall short on average


def test_no_drawdown_calmar_is_nan():
    for r in ([0.01, 0.02], [0.0, 0.0, 0.0], [0.0, 0.05, 0.0]):
        assert sc.max_drawdown(r) == 0.0
        assert math.isnan(sc.calmar_ratio(r)), r
        assert math.isnan(sc.summarize(r)["calmar"])


def test_no_nonzero_period_hit_rate_is_nan():
    assert math.isnan(sc.hit_rate([0.0, 0.0, 0.0]))
    assert math.isnan(sc.hit_rate([0.0]))
    assert math.isnan(sc.summarize([0.0, 0.0])["hit_rate"])
    assert sc.hit_rate([0.0, -0.01]) == 0.0  # defined and truly 0: one losing period


BAD_VALUES = [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")]
RETURN_FUNCS = [
    f for name, f in ALL_ON_RETURNS.items() if name not in ("turnover", "max_drawdown_of_path")
] + [
    sc.summarize,
    sc.wealth_path,
]


@pytest.mark.parametrize("bad,text", BAD_VALUES)
@pytest.mark.parametrize("index", [0, 2])
def test_non_finite_input_raises_naming_the_index(bad, text, index):
    r = [0.01, -0.02, 0.03, 0.0]
    r[index] = bad
    for fn in RETURN_FUNCS:
        with pytest.raises(ValueError, match=rf"returns\[{index}\] = {text} is not finite"):
            fn(r)
    with pytest.raises(ValueError, match=rf"positions\[{index}\] = {text}"):
        sc.turnover(r)
    with pytest.raises(ValueError, match=rf"positions\[{index}\] = {text}"):
        sc.summarize([0.01, 0.02], positions=r)
    w = [1.0, 1.1, 1.05, 1.2]
    w[index] = bad
    for fn in (sc.max_drawdown_of_path, sc.returns_from_wealth, sc.standard_metrics):
        with pytest.raises(ValueError, match=rf"wealth\[{index}\] = {text}"):
            fn(w)
    with pytest.raises(ValueError, match=rf"equity\[{index}\] = {text}"):
        sc.herculean_metrics(w)


def test_non_finite_error_names_the_first_bad_index():
    with pytest.raises(ValueError, match=r"returns\[1\]"):
        sc.sharpe_ratio([0.0, math.nan, math.inf])


@pytest.mark.parametrize("two_d", [[[0.01, 0.02], [0.03, -0.01]], np.zeros((3, 1)), np.zeros((1, 3))])
def test_two_dimensional_input_raises(two_d):
    for fn in [*ALL_ON_RETURNS.values(), sc.summarize, sc.wealth_path, sc.returns_from_wealth]:
        with pytest.raises(ValueError, match="one-dimensional"):
            fn(two_d)
    for fn in (sc.standard_metrics, sc.herculean_metrics):
        with pytest.raises(ValueError, match="one-dimensional"):
            fn(np.ones((2, 2)))


def test_scalar_input_raises():
    with pytest.raises(ValueError, match="one-dimensional"):
        sc.cumulative_return(0.01)


# ----------------------------------------------------------------------------- hand cases
def test_hand_computed_wealth_path():
    wealth = [1.0, 1.1, 0.99, 1.089]
    r = sc.returns_from_wealth(wealth)
    np.testing.assert_allclose(r, [0.1, -0.1, 0.1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(sc.wealth_path(r), wealth, rtol=0, atol=1e-15)
    assert sc.cumulative_return(r) == pytest.approx(0.089, abs=1e-15)
    assert sc.max_drawdown(r) == pytest.approx(0.1, abs=1e-15)  # 1.1 -> 0.99
    assert sc.max_drawdown_of_path(wealth) == pytest.approx(0.1, abs=1e-15)
    assert sc.hit_rate(r) == pytest.approx(2 / 3, abs=1e-15)
    assert sc.annual_return(r) == pytest.approx(1.089 ** (252 / 3) - 1, rel=1e-12)
    mean, sd = 0.1 / 3, statistics.stdev([0.1, -0.1, 0.1])
    assert sc.annual_volatility(r) == pytest.approx(sd * math.sqrt(252), rel=1e-12)
    assert sc.sharpe_ratio(r) == pytest.approx(mean / sd * math.sqrt(252), rel=1e-12)
    dr = math.sqrt(0.01 / 3) * math.sqrt(252)
    assert sc.downside_risk(r) == pytest.approx(dr, rel=1e-12)
    assert sc.sortino_ratio(r) == pytest.approx(mean * 252 / dr, rel=1e-12)
    assert sc.calmar_ratio(r) == pytest.approx((1.089 ** (252 / 3) - 1) / 0.1, rel=1e-12)


def test_drawdown_includes_the_starting_wealth():
    # the first period loses: the drawdown is measured from the starting 1.0
    assert sc.max_drawdown([-0.2, 0.1]) == pytest.approx(0.2, abs=1e-15)
    # wealth 1, 1.5, 0.75, 0.9, 0.45: the deepest trough below the 1.5 peak
    assert sc.max_drawdown([0.5, -0.5, 0.2, -0.5]) == pytest.approx(1 - 0.45 / 1.5, abs=1e-15)


def test_hand_computed_turnover():
    assert sc.turnover([1, 1, -1, 0]) == pytest.approx((1 + 0 + 2 + 1) / 4, abs=1e-15)
    assert sc.turnover([0, 0, 0]) == 0.0
    assert sc.turnover([0.5]) == 0.5  # entering from flat counts
    assert sc.summarize([0.01, 0.0, -0.01, 0.0], positions=[1, 1, -1, 0])["turnover"] == 1.0
    assert "turnover" not in sc.summarize([0.01, 0.02])


def test_annual_return_is_minus_one_when_wealth_hits_zero():
    assert sc.annual_return([-1.0]) == -1.0
    assert sc.annual_return([0.1, -1.0]) == -1.0
    assert sc.annual_return([0.1, -1.0, 0.5]) == -1.0  # stays ruined
    assert sc.max_drawdown([0.1, -1.0]) == pytest.approx(1.0, abs=1e-15)
    assert sc.calmar_ratio([0.1, -1.0]) == pytest.approx(-1.0, abs=1e-15)
    assert sc.cumulative_return([0.1, -1.0]) == -1.0


def test_annual_return_periods():
    r = [0.01] * 52
    assert sc.annual_return(r, periods=52) == pytest.approx(1.01**52 - 1, rel=1e-12)
    assert sc.annual_return(r) == pytest.approx(1.01**252 - 1, rel=1e-12)


# ----------------------------------------------------------------------------- presets
def buy_and_hold_equity(prices: np.ndarray, fee: float) -> np.ndarray:
    """Equity after each day's trades: buy at the first close paying ``fee``, sell at the last."""
    shares = (1.0 - fee) / prices[0]
    eq = shares * prices
    eq[-1] *= 1.0 - fee
    return eq


@pytest.mark.parametrize("fee", [0.0, 0.001, 0.01])
def test_herculean_buy_and_hold(fee):
    prices = np.array([100.0, 101.0, 101.0, 99.0, 103.0, 103.0, 98.0, 100.0, 104.0, 104.0, 102.0])
    eq = buy_and_hold_equity(prices, fee)
    assert eq[0] == pytest.approx(1.0 - fee)  # the entry fee is in the first value
    h = sc.herculean_metrics(eq)

    # CR = last / first - 1: the entry fee is not in it, the exit fee is
    assert h["cumulative_return"] == pytest.approx(
        prices[-1] / prices[0] * (1 - fee) - 1, rel=1e-12, abs=1e-15
    )

    # SR over the non-zero daily returns only, ddof=1, sqrt(252)
    daily = [eq[i] / eq[i - 1] - 1 for i in range(1, len(eq))]
    active = [x for x in daily if x != 0.0]
    assert len(active) < len(daily)  # the flat days really are dropped
    assert h["n_periods"] == len(active)
    expected_sr = statistics.mean(active) / statistics.stdev(active) * math.sqrt(252)
    assert h["sharpe"] == pytest.approx(expected_sr, rel=1e-9)
    assert h["sharpe"] == pytest.approx(ep.sharpe_ratio(np.array(active)), rel=1e-9)
    assert h["sharpe"] != pytest.approx(sc.sharpe_ratio(np.array(daily)), rel=1e-6)  # flats matter

    # MDD of the equity series itself (peak 103*s, trough 98*s; exit fee deepens the last)
    peak, mdd = -math.inf, 0.0
    for v in eq:
        peak = max(peak, v)
        mdd = max(mdd, 1 - v / peak)
    assert h["max_drawdown"] == pytest.approx(mdd, rel=1e-12)
    if fee == 0.0:
        assert h["max_drawdown"] == pytest.approx(1 - 98 / 103, rel=1e-12)


def test_herculean_vs_standard_differ_by_entry_fee():
    """The standard preset starts the wealth path at 1.0 before the trade, so CR includes the entry fee."""
    fee = 0.01
    prices = np.array([100.0, 102.0, 101.0, 105.0])
    eq = buy_and_hold_equity(prices, fee)
    std = sc.standard_metrics(np.concatenate(([1.0], eq)))
    assert std["cumulative_return"] == pytest.approx(1.05 * (1 - fee) ** 2 - 1, rel=1e-12)
    assert sc.herculean_metrics(eq)["cumulative_return"] == pytest.approx(1.05 * (1 - fee) - 1, rel=1e-12)


def _same(a: dict[str, float], b: dict[str, float], *, rel: float = 1e-12, abs_: float = 1e-15) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert (math.isnan(a[k]) and math.isnan(b[k])) or close(a[k], b[k], rel=rel, abs_=abs_), (
            k,
            a[k],
            b[k],
        )


@settings(deadline=None, max_examples=50)
@given(r=st.lists(st.integers(-500_000, 500_000).map(lambda k: k / 1e6), min_size=1, max_size=200))
def test_standard_metrics_equal_summarize_of_the_path_returns(r):
    """Returns on a 1e-6 grid, so the wealth round trip (error ~1e-16) cannot flip a sign or a zero."""
    r = np.asarray(r)
    wealth = sc.wealth_path(r)  # starts at 1
    assert wealth[0] == 1.0
    r_back = sc.returns_from_wealth(wealth)
    np.testing.assert_allclose(r_back, r, rtol=0, atol=1e-12)
    std = sc.standard_metrics(wealth)
    # the preset is exactly summarize() of the path's period-over-period returns ...
    _same(std, sc.summarize(r_back), rel=0.0, abs_=0.0)
    # ... which are the original returns up to the round trip
    orig = sc.summarize(r)
    if r.size >= 2 and not (np.ptp(r) > 0 and well_conditioned(r)):
        del std["sharpe"], orig["sharpe"]  # zero / ill-conditioned dispersion: see test_sharpe_nan_*
    calmar, calmar_orig = std.pop("calmar"), orig.pop("calmar")
    _same(std, orig, rel=1e-9, abs_=1e-12)
    mdd = orig["max_drawdown"]
    if mdd > 0:  # Calmar = AR / MDD: MDD is only known to ~n*eps absolutely (see check_against_empyrical)
        assert close(calmar, calmar_orig, rel=RTOL + 4 * r.size * np.finfo(float).eps / mdd)
    else:
        assert math.isnan(calmar) and math.isnan(calmar_orig)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_standard_metrics_seeded(seed):
    r = seeded_returns(seed)
    wealth = sc.wealth_path(r)
    pos = np.sign(r)
    rf = sc.per_period_rate(0.03)
    std = sc.standard_metrics(wealth, pos, risk_free=rf)
    _same(std, sc.summarize(sc.returns_from_wealth(wealth), pos, risk_free=rf))
    assert std["cumulative_return"] == pytest.approx(wealth[-1] - 1, rel=1e-12)
    assert std["max_drawdown"] == pytest.approx(sc.max_drawdown_of_path(wealth), rel=1e-12)
    assert std["turnover"] == sc.turnover(pos)
    assert std["n_periods"] == len(r)
    weekly = sc.standard_metrics(wealth, periods=52)
    assert weekly["annual_volatility"] == pytest.approx(sc.annual_volatility(r, 52), rel=1e-9)


def test_returns_from_wealth_ruin_rules():
    np.testing.assert_allclose(sc.returns_from_wealth([1.0, 0.5, 0.0]), [-0.5, -1.0])
    out = sc.standard_metrics([1.0, 0.5, 0.0])
    assert out["annual_return"] == -1.0 and out["max_drawdown"] == 1.0 and out["cumulative_return"] == -1.0
    with pytest.raises(ValueError, match=r"wealth\[1\] = 0.0 <= 0 before the end"):
        sc.returns_from_wealth([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"wealth\[1\] = -0.5 <= 0"):
        sc.returns_from_wealth([1.0, -0.5, 0.5, 1.0])
    with pytest.raises(ValueError, match=r"wealth\[0\]"):
        sc.returns_from_wealth([0.0, 1.0])
    with pytest.raises(ValueError, match=r"wealth\[1\]"):
        sc.standard_metrics([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"wealth\[2\]"):
        sc.herculean_metrics([1.0, 1.0, 0.0, 1.0])
    assert sc.returns_from_wealth([1.0]).size == 0
    assert sc.returns_from_wealth([]).size == 0


def test_presets_tuple():
    assert sc.PRESETS == ("standard", "herculean")
