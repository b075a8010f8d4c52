"""Synthetic markets (finenvs.data.simulate): schema, determinism, model statistics, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from finenvs.data import (
    BarParams,
    GBMParams,
    HestonParams,
    MertonParams,
    PriceSeries,
    SyntheticSpec,
    check_ohlcv,
    simulate,
)
from finenvs.errors import DataError

MODELS = ["gbm", "heston", "merton"]
FIELDS = ("open", "high", "low", "close", "volume")


def log_returns(s: PriceSeries, start_price: float = 100.0) -> np.ndarray:
    """Close-to-close log returns, the first one from the start price."""
    return np.diff(np.log(np.concatenate(([start_price], s.close))))


def kurtosis(x: np.ndarray) -> float:
    """Plain (non-excess) kurtosis: 3 for a normal distribution."""
    d = x - x.mean()
    return float(np.mean(d**4) / np.mean(d**2) ** 2)


# ----------------------------------------------------------------------------- schema
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n_days", [1, 2, 300])
def test_output_is_valid_ohlcv(model, n_days):
    s = simulate({"model": model}, n_days, np.random.default_rng(11))
    assert isinstance(s, PriceSeries)
    check_ohlcv(s, source="synthetic")  # raises DataError on any broken invariant
    assert len(s) == n_days
    for f in FIELDS:
        arr = getattr(s, f)
        assert arr.shape == (n_days,) and arr.dtype == np.float64, f
        assert np.isfinite(arr).all(), f
    assert (s.open > 0).all() and (s.close > 0).all() and (s.low > 0).all()
    assert (s.high >= np.maximum(s.open, s.close)).all()
    assert (s.low <= np.minimum(s.open, s.close)).all()
    assert (s.volume >= 0).all()
    # dates: business days from the default start, strictly increasing
    assert s.dates.dtype == np.dtype("datetime64[D]")
    assert s.dates[0] == np.datetime64(BarParams().start_date)
    assert np.is_busday(s.dates).all()
    assert (np.diff(s.dates).astype(np.int64) > 0).all()
    expected = np.busday_offset(np.datetime64("2000-01-03"), np.arange(n_days), roll="forward")
    np.testing.assert_array_equal(s.dates, expected)
    assert s.symbol == f"SYN-{model.upper()}"


@pytest.mark.parametrize("model", MODELS)
def test_arrays_are_read_only(model):
    s = simulate({"model": model}, 20, np.random.default_rng(0))
    for f in ("dates", *FIELDS):
        arr = getattr(s, f)
        assert not arr.flags.writeable, f
        with pytest.raises(ValueError):
            arr[0] = arr[1]


@pytest.mark.parametrize(
    "start,first",
    [
        ("2000-01-03", "2000-01-03"),  # a Monday
        ("2021-06-09", "2021-06-09"),  # a Wednesday
        ("2021-01-02", "2021-01-04"),  # a Saturday rolls forward to Monday
        ("2021-01-03", "2021-01-04"),  # a Sunday too
    ],
)
def test_dates_start_at_start_date_and_skip_weekends(start, first):
    s = simulate({"model": "gbm", "bars": {"start_date": start}}, 12, np.random.default_rng(0))
    assert str(s.dates[0]) == first
    weekday = (s.dates.view("int64") + 3) % 7  # 0 = Monday: 1970-01-01 (day 0) was a Thursday
    assert (weekday < 5).all() and np.is_busday(s.dates).all()
    gaps = np.diff(s.dates).astype(np.int64)
    assert set(gaps.tolist()) <= {1, 3}  # next day, or Friday -> Monday
    assert len(np.unique(s.dates)) == 12


def test_symbol_and_start_price_and_spec_object():
    spec = SyntheticSpec.from_dict({"model": "GBM", "params": {"sigma": 0.1}, "bars": {"start_price": 50.0}})
    assert spec.model == "gbm" and spec.params == GBMParams(sigma=0.1) and spec.bars.start_price == 50.0
    s = simulate(spec, 5, np.random.default_rng(3), symbol="XYZ")
    assert s.symbol == "XYZ"
    # the first open comes from the start price by one small overnight step
    assert abs(math.log(s.open[0] / 50.0)) < 0.05
    # the spec object and its dict form give the same market
    s2 = simulate(
        {"model": "gbm", "params": {"sigma": 0.1}, "bars": {"start_price": 50.0}}, 5, np.random.default_rng(3)
    )
    np.testing.assert_array_equal(s.close, s2.close)
    # defaults
    assert SyntheticSpec.from_dict(None) == SyntheticSpec.from_dict({}) == SyntheticSpec(params=GBMParams())
    assert SyntheticSpec.from_dict({"model": "heston"}).params == HestonParams()
    assert SyntheticSpec.from_dict({"model": "merton"}).params == MertonParams()


# ----------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("model", MODELS)
def test_same_seed_same_market(model):
    a = simulate({"model": model}, 200, np.random.default_rng(42))
    b = simulate({"model": model}, 200, np.random.default_rng(42))
    for f in ("dates", *FIELDS):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


@pytest.mark.parametrize("model", MODELS)
def test_different_seed_different_market(model):
    a = simulate({"model": model}, 200, np.random.default_rng(42))
    b = simulate({"model": model}, 200, np.random.default_rng(43))
    np.testing.assert_array_equal(a.dates, b.dates)
    for f in FIELDS:
        assert not np.array_equal(getattr(a, f), getattr(b, f)), f
    assert (a.close != b.close).mean() > 0.99


def test_only_the_given_generator_is_used():
    state = np.random.get_state()[1].copy()  # noqa: NPY002 (checking the legacy global is untouched)
    simulate({"model": "heston"}, 30, np.random.default_rng(0))
    simulate({"model": "merton"}, 30, np.random.default_rng(0))
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002
    # the generator passed in is advanced: a second draw from it gives another market
    rng = np.random.default_rng(5)
    a = simulate(None, 50, rng)
    b = simulate(None, 50, rng)
    assert not np.array_equal(a.close, b.close)


# ----------------------------------------------------------------------------- GBM statistics
GBM_DAYS = 20 * 252


def test_gbm_volatility_and_drift():
    mu, sigma = 0.08, 0.3
    s = simulate(
        {"model": "gbm", "params": {"mu": mu, "sigma": sigma}}, GBM_DAYS, np.random.default_rng(2024)
    )
    r = log_returns(s)
    n = r.size
    vol = float(np.std(r, ddof=1) * math.sqrt(252))
    # sample sd has relative s.e. ~ 1/sqrt(2n) = 1 %: 5 % is 5 s.e.
    assert vol == pytest.approx(sigma, rel=0.05)
    # mean daily log return (mu - sigma^2/2)/252, within 4 standard errors
    expected = (mu - 0.5 * sigma**2) / 252
    se = sigma / math.sqrt(252) / math.sqrt(n)
    assert abs(r.mean() - expected) < 4 * se, (r.mean(), expected, se)
    # Gaussian daily returns: kurtosis ~ 3 (s.e. ~ sqrt(24/n) = 0.07)
    assert abs(kurtosis(r) - 3.0) < 0.35


def test_gbm_volatility_scales_with_sigma():
    """Same seed, half the sigma: the log-return dispersion halves (the noise is the same)."""
    a = simulate({"model": "gbm", "params": {"mu": 0.0, "sigma": 0.4}}, 2000, np.random.default_rng(1))
    b = simulate({"model": "gbm", "params": {"mu": 0.0, "sigma": 0.2}}, 2000, np.random.default_rng(1))
    ra, rb = log_returns(a), log_returns(b)
    # r = -sigma^2/2 dt + sigma sqrt(dt) z with the same z: demeaned returns scale exactly with sigma
    np.testing.assert_allclose(ra - ra.mean(), 2.0 * (rb - rb.mean()), rtol=1e-6, atol=1e-12)


def test_gbm_overnight_share_of_variance():
    share = 0.2
    s = simulate({"model": "gbm", "params": {"sigma": 0.25}}, GBM_DAYS, np.random.default_rng(7))
    prev_close = np.concatenate(([100.0], s.close[:-1]))
    overnight = np.log(s.open / prev_close)
    intraday = np.log(s.close / s.open)
    day_var = 0.25**2 / 252
    assert np.var(overnight) == pytest.approx(share * day_var, rel=0.08)
    assert np.var(intraday) == pytest.approx((1 - share) * day_var, rel=0.08)
    # overnight and intraday moves are independent increments
    assert abs(np.corrcoef(overnight, intraday)[0, 1]) < 4 / math.sqrt(GBM_DAYS)


def test_volume_reacts_to_big_moves():
    s = simulate({"model": "gbm"}, GBM_DAYS, np.random.default_rng(9))
    r = np.abs(log_returns(s))
    big = r > np.quantile(r, 0.9)
    small = r < np.quantile(r, 0.1)
    assert np.median(s.volume[big]) > np.median(s.volume[small])
    assert np.median(s.volume) == pytest.approx(1.0e6, rel=0.3)
    assert np.array_equal(s.volume, np.round(s.volume))


# ----------------------------------------------------------------------------- Merton statistics
MERTON_DAYS = 40 * 252


def test_merton_fat_tails():
    spec = {
        "model": "merton",
        "params": {"sigma": 0.2, "jump_intensity": 5.0, "jump_mean": -0.05, "jump_std": 0.08},
    }
    r = log_returns(simulate(spec, MERTON_DAYS, np.random.default_rng(3)))
    k = kurtosis(r)
    assert k > 8.0, k  # jumps: far above the normal 3 (about 35-55 for these parameters)
    # the same seed without jumps is Gaussian
    spec["params"]["jump_intensity"] = 0.0
    r0 = log_returns(simulate(spec, MERTON_DAYS, np.random.default_rng(3)))
    assert abs(kurtosis(r0) - 3.0) < 0.35


def test_merton_number_of_jumps_matches_intensity():
    """Jumps of about -20 % against 0.6 % daily diffusion: every day below -10 % is a jump day."""
    lam = 5.0
    spec = {
        "model": "merton",
        "params": {"sigma": 0.1, "jump_intensity": lam, "jump_mean": -0.2, "jump_std": 0.02},
    }
    r = log_returns(simulate(spec, MERTON_DAYS, np.random.default_rng(4)))
    n_down = int((r < -0.1).sum())
    expected = MERTON_DAYS * (1 - math.exp(-lam / 252))  # days with at least one jump (~198)
    assert abs(n_down - expected) < 4 * math.sqrt(expected), (n_down, expected)
    assert int((r > 0.1).sum()) == 0  # the jumps are downward
    # outside jump days the returns are the GBM diffusion
    calm = r[r > -0.1]
    assert float(np.std(calm, ddof=1) * math.sqrt(252)) == pytest.approx(0.1, rel=0.05)


def test_merton_drift_is_jump_compensated():
    """E[S_t+1/S_t] = exp(mu/252): mean daily gross return ~ mu/252 even with big negative jumps."""
    mu = 0.07
    spec = {
        "model": "merton",
        "params": {"mu": mu, "sigma": 0.1, "jump_intensity": 5.0, "jump_mean": -0.2, "jump_std": 0.02},
    }
    r = log_returns(simulate(spec, MERTON_DAYS, np.random.default_rng(5)))
    g = np.exp(r) - 1.0
    se = float(np.std(g, ddof=1) / math.sqrt(g.size))
    # an uncompensated drift would be off by lam * k / 252 ~ 3.6e-3 a day (~12 s.e.)
    assert abs(g.mean() - mu / 252) < 4 * se, (g.mean(), mu / 252, se)


# ----------------------------------------------------------------------------- Heston statistics
HESTON_DAYS = 8000


@pytest.mark.parametrize("theta", [0.04, 0.09])
def test_heston_realised_variance_averages_theta(theta):
    spec = {"model": "heston", "params": {"v0": theta, "theta": theta, "kappa": 5.0, "xi": 0.3, "rho": -0.7}}
    r = log_returns(simulate(spec, HESTON_DAYS, np.random.default_rng(17)))
    realised = float(np.mean(r**2) * 252)
    assert realised == pytest.approx(theta, rel=0.15), realised


def test_heston_variance_mean_reverts_from_v0():
    """Starting far below theta, the early realised variance is low and the late one near theta."""
    spec = {"model": "heston", "params": {"v0": 0.005, "theta": 0.09, "kappa": 4.0, "xi": 0.2, "rho": 0.0}}
    r = log_returns(simulate(spec, 2000, np.random.default_rng(8)))
    first = float(np.mean(r[:10] ** 2) * 252)
    late = float(np.mean(r[1000:] ** 2) * 252)
    assert first < 0.04 and late == pytest.approx(0.09, rel=0.25), (first, late)


def _leverage_corr(r: np.ndarray, k: int = 10) -> float:
    """corr(r_t, RV of the next k days - RV of the previous k days)."""
    c = np.concatenate(([0.0], np.cumsum(r**2)))
    idx = np.arange(k, r.size - k)
    future = c[idx + k + 1] - c[idx + 1]
    past = c[idx] - c[idx - k]
    return float(np.corrcoef(r[idx], future - past)[0, 1])


@pytest.mark.parametrize("rho,sign", [(-0.8, -1), (0.0, 0), (0.8, 1)])
def test_heston_leverage_effect(rho, sign):
    spec = {"model": "heston", "params": {"rho": rho, "kappa": 5.0, "xi": 0.4, "theta": 0.06, "v0": 0.06}}
    r = log_returns(simulate(spec, HESTON_DAYS, np.random.default_rng(0)))
    c = _leverage_corr(r)
    # measured ~ -0.11 / -0.01 / +0.09 for seeds 0..3 at 10k days
    if sign < 0:
        assert c < -0.05, c
    elif sign > 0:
        assert c > 0.05, c
    else:
        assert abs(c) < 0.04, c


# ----------------------------------------------------------------------------- bad input
def test_unknown_model():
    with pytest.raises(DataError, match=r"unknown synthetic model 'garch'.*'gbm', 'heston', 'merton'"):
        simulate({"model": "garch"}, 10, np.random.default_rng(0))
    with pytest.raises(DataError, match="garch"):
        SyntheticSpec.from_dict({"model": "garch"})


@pytest.mark.parametrize(
    "spec,name",
    [
        ({"model": "gbm", "params": {"sigmaa": 0.2}}, "sigmaa"),
        ({"model": "heston", "params": {"sigma": 0.2}}, "sigma"),  # heston has no sigma
        ({"model": "merton", "params": {"lambda": 1.0}}, "lambda"),
        ({"model": "gbm", "bars": {"intraday": 4}}, "intraday"),
    ],
)
def test_unknown_parameter_name(spec, name):
    with pytest.raises(DataError, match=rf"bad synthetic parameters for '{spec['model']}'.*'{name}'"):
        simulate(spec, 10, np.random.default_rng(0))


def test_unknown_spec_key():
    with pytest.raises(
        DataError, match=r"unknown synthetic spec key\(s\) \['seed'\]; valid keys: model, params, bars"
    ):
        simulate({"model": "gbm", "seed": 3}, 10, np.random.default_rng(0))
    with pytest.raises(DataError, match=r"\['n_days', 'seed'\]"):
        SyntheticSpec.from_dict({"seed": 3, "n_days": 5})


@pytest.mark.parametrize("n_days", [0, -1, -100])
@pytest.mark.parametrize("model", MODELS)
def test_n_days_must_be_positive(model, n_days):
    with pytest.raises(DataError, match=rf"n_days={n_days} must be >= 1"):
        simulate({"model": model}, n_days, np.random.default_rng(0))


def test_data_error_is_a_value_error():
    with pytest.raises(ValueError):
        simulate({"model": "nope"}, 10, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"bars": {"intraday_steps": 0}}, r"bars.intraday_steps=0 must be an integer >= 1"),
        ({"bars": {"intraday_steps": 2.5}}, r"bars.intraday_steps=2.5 must be an integer >= 1"),
        ({"model": "heston", "params": {"rho": 1.5}}, r"params.rho=1.5 must be in \[-1, 1\]"),
        ({"model": "heston", "params": {"xi": -0.1}}, r"params.xi=-0.1 must be >= 0"),
        ({"bars": {"start_price": -5}}, r"bars.start_price=-5 must be > 0"),
        ({"model": "merton", "params": {"jump_intensity": -1}}, r"params.jump_intensity=-1 must be >= 0"),
        ({"bars": {"overnight_share": 1.5}}, r"bars.overnight_share=1.5 must be in \[0, 1\)"),
        ({"bars": {"start_date": "2000-13-01"}}, r"bars.start_date='2000-13-01' is not a YYYY-MM-DD date"),
        ({"params": {"sigma": -0.2}}, r"params.sigma=-0.2 must be >= 0"),
        ({"params": {"mu": float("nan")}}, r"params.mu=nan must be a finite number"),
        ({"bars": {"volume_ar": 1.0}}, r"bars.volume_ar=1.0 must be in \[0, 1\)"),
    ],
)
def test_out_of_range_parameters_name_the_parameter(spec, match):
    with pytest.raises(DataError, match=match):
        simulate(spec, 10, np.random.default_rng(0))
