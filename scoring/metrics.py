"""Performance metrics: pure numpy, one written definition each.

Inputs are *simple* periodic returns ``r_t = W_t / W_{t-1} - 1`` (never prices:
finenvs does not guess). ``periods`` is the number of periods per year
(``TRADING_DAYS_PER_YEAR`` = 252 for daily, ``WEEKS_PER_YEAR`` = 52 for weekly).
``risk_free`` is a per-period rate (see :func:`per_period_rate`).

Definitions
    cumulative_return  CR = prod(1 + r) - 1
    annual_return      (1 + CR) ** (periods / n) - 1; -1 when wealth reaches 0
    annual_volatility  std(r, ddof=1) * sqrt(periods)
    sharpe_ratio       mean(r - rf) / std(r - rf, ddof=1) * sqrt(periods)
    downside_risk      sqrt(mean(min(r - req, 0) ** 2)) * sqrt(periods)
    sortino_ratio      mean(r - req) * periods / downside_risk
    max_drawdown       max_t (1 - W_t / max_{s<=t} W_s) over the wealth path
                       W = [1, prod(1 + r_1), ...] that *includes* the starting
                       wealth; reported as a positive fraction (0.25 = -25 %)
    calmar_ratio       annual_return / max_drawdown
    hit_rate           share of r > 0 among the periods with r != 0
    turnover           mean_t |p_t - p_{t-1}| of the held position p (fraction of
                       equity), starting flat (p_0 = 0)

Undefined values (the ``UNDEFINED_IS_NAN`` policy): a statistic that is not
defined for the input is ``nan`` — never a silent 0.

    =====================  ===============================================
    empty input            every metric is nan
    n < 2                  volatility, Sharpe, Sortino are nan
    zero dispersion        Sharpe is nan (std of excess returns <= 1e-12 x max |excess|,
                           i.e. a constant series up to float round-off)
    no downside            Sortino is nan (downside risk == 0)
    no drawdown            Calmar is nan (max drawdown == 0)
    no non-zero period     hit rate is nan
    =====================  ===============================================

Bad input (the ``REJECT_MISSING`` policy): a NaN or infinite return raises
``ValueError`` naming its index; finenvs never drops or zero-fills a return.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

TRADING_DAYS_PER_YEAR = 252
WEEKS_PER_YEAR = 52
#: A standard deviation at or below this fraction of the largest |excess return| is
#: float round-off of a constant series (e.g. [0.1, 0.1, 0.1] has std ~1e-17), not dispersion.
ZERO_DISPERSION = 1e-12

UNDEFINED_IS_NAN = "undefined-is-nan"
REJECT_MISSING = "reject-missing"
NAN_POLICY = (UNDEFINED_IS_NAN, REJECT_MISSING)


def _returns(returns: Any, name: str = "returns") -> np.ndarray:
    arr = np.asarray(returns, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] = {arr[i]} is not finite ({REJECT_MISSING} policy: fix or drop it upstream)")
    return arr


def per_period_rate(annual_rate: float, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """Per-period rate equivalent to an annual compounded rate: (1 + a) ** (1 / periods) - 1."""
    return float((1.0 + annual_rate) ** (1.0 / periods) - 1.0)


def cumulative_return(returns: Any) -> float:
    """CR = prod(1 + r) - 1; nan for empty input."""
    r = _returns(returns)
    if r.size == 0:
        return math.nan
    return float(np.prod(1.0 + r) - 1.0)


def annual_return(returns: Any, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """Compound annual growth rate; -1 when the wealth path ends at or below 0."""
    r = _returns(returns)
    if r.size == 0:
        return math.nan
    ending = float(np.prod(1.0 + r))
    if ending <= 0.0:
        return -1.0
    return float(ending ** (periods / r.size) - 1.0)


def annual_volatility(returns: Any, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """std(r, ddof=1) * sqrt(periods); nan when n < 2."""
    r = _returns(returns)
    if r.size < 2:
        return math.nan
    return float(np.std(r, ddof=1) * math.sqrt(periods))


def sharpe_ratio(returns: Any, risk_free: float = 0.0, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """Annualised Sharpe ratio with ddof=1; nan when n < 2 or the excess returns do not vary."""
    r = _returns(returns)
    if r.size < 2:
        return math.nan
    excess = r - risk_free
    sd = float(np.std(excess, ddof=1))
    if not sd > ZERO_DISPERSION * float(np.max(np.abs(excess))):
        return math.nan
    return float(np.mean(excess) / sd * math.sqrt(periods))


def downside_risk(returns: Any, required_return: float = 0.0, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """sqrt(mean(min(r - req, 0)^2)) * sqrt(periods); nan for empty input."""
    r = _returns(returns)
    if r.size == 0:
        return math.nan
    below = np.minimum(r - required_return, 0.0)
    return float(math.sqrt(float(np.mean(below * below))) * math.sqrt(periods))


def sortino_ratio(returns: Any, required_return: float = 0.0, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """mean(r - req) * periods / downside_risk; nan when n < 2 or there is no downside."""
    r = _returns(returns)
    if r.size < 2:
        return math.nan
    dr = downside_risk(r, required_return, periods)
    if dr == 0.0:
        return math.nan
    return float(np.mean(r - required_return) * periods / dr)


def wealth_path(returns: Any, start: float = 1.0) -> np.ndarray:
    """[start, start * (1 + r_1), ...] — the wealth path including its starting value."""
    r = _returns(returns)
    return np.concatenate(([start], start * np.cumprod(1.0 + r)))


def max_drawdown_of_path(wealth: Any) -> float:
    """Largest peak-to-trough fall of a wealth path, as a positive fraction; nan if empty."""
    w = _returns(wealth, "wealth")
    if w.size == 0:
        return math.nan
    peak = np.maximum.accumulate(w)
    with np.errstate(divide="ignore", invalid="ignore"):
        dd = np.where(peak > 0, 1.0 - w / peak, 0.0)
    return float(np.max(dd))


def max_drawdown(returns: Any) -> float:
    """Max drawdown of the wealth path that starts at 1 (positive fraction); nan if empty."""
    r = _returns(returns)
    if r.size == 0:
        return math.nan
    return max_drawdown_of_path(wealth_path(r))


def calmar_ratio(returns: Any, periods: int = TRADING_DAYS_PER_YEAR) -> float:
    """annual_return / max_drawdown; nan when there is no drawdown."""
    r = _returns(returns)
    mdd = max_drawdown(r)
    if not mdd > 0.0:
        return math.nan
    return float(annual_return(r, periods) / mdd)


def hit_rate(returns: Any) -> float:
    """Share of winning periods among the periods with a non-zero return."""
    r = _returns(returns)
    active = r[r != 0.0]
    if active.size == 0:
        return math.nan
    return float(np.mean(active > 0.0))


def turnover(positions: Any) -> float:
    """Mean absolute change of the held position per period, starting flat; nan if empty."""
    p = _returns(positions, "positions")
    if p.size == 0:
        return math.nan
    return float(np.mean(np.abs(np.diff(np.concatenate(([0.0], p))))))


def summarize(
    returns: Any,
    positions: Any = None,
    *,
    periods: int = TRADING_DAYS_PER_YEAR,
    risk_free: float = 0.0,
) -> dict[str, float]:
    """Every metric of this module for one return series (``positions`` optional)."""
    r = _returns(returns)
    out = {
        "cumulative_return": cumulative_return(r),
        "annual_return": annual_return(r, periods),
        "annual_volatility": annual_volatility(r, periods),
        "sharpe": sharpe_ratio(r, risk_free, periods),
        "sortino": sortino_ratio(r, 0.0, periods),
        "max_drawdown": max_drawdown(r),
        "calmar": calmar_ratio(r, periods),
        "hit_rate": hit_rate(r),
        "n_periods": float(r.size),
    }
    if positions is not None:
        out["turnover"] = turnover(positions)
    return out
