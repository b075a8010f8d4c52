"""Reporting presets: how an equity curve becomes CR / SR / MDD.

``standard`` (finenvs' own convention)
    The wealth path starts at the initial capital (1.0) *before* any trade and
    has one value per close after that, fees included where they are paid.
    Returns are its period-over-period changes, flat periods included, and every
    metric of :mod:`finenvs.scoring.metrics` is computed from them.

``herculean`` (the HERCULEAN paper's convention, for side-by-side comparison)
    The equity series has one value per trading day of the window, measured
    after that day's trades: the entry fee is already in its first value and the
    exit fee in its last. CR = last / first - 1 of that series (so the entry fee
    is *not* in CR); SR is the Sharpe ratio (ddof=1, sqrt(252), rf=0) over the
    days whose return is non-zero; MDD is the max drawdown of that series.

Both take plain arrays, so the presets apply to any env that records them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from finenvs.scoring.metrics import (
    TRADING_DAYS_PER_YEAR,
    _returns,
    max_drawdown_of_path,
    sharpe_ratio,
    summarize,
)

PRESETS = ("standard", "herculean")
#: The column name of each preset's Sharpe ratio: every table that shows one says which it is. The standard
#: (headline) one counts every day; HERCULEAN's drops the days whose return is zero, which scales the Sharpe of
#: a strategy rarely in the market by about 1 / sqrt(time in market), either sign (FinTrading-v0 MSFT momentum,
#: eval split, in the market 6.7% of days: -3.22 standard, -10.48 HERCULEAN).
SHARPE_LABELS = {"standard": "SR (all days)", "herculean": "SR (H, non-zero days)"}
#: Each preset's Sharpe convention in words (recorded beside the metrics in run and scorecard JSON).
SHARPE_CONVENTIONS = {
    "standard": "daily simple returns of the wealth path, every day counted; mean / std (ddof=1) x sqrt(252), rf=0",
    "herculean": "HERCULEAN's: daily returns of the equity series with zero-return days dropped; mean / std (ddof=1) "
                 "x sqrt(252), rf=0",
}


def returns_from_wealth(wealth: Any) -> np.ndarray:
    """Simple returns of a wealth path; the path must stay > 0 except possibly at its end (ruin)."""
    w = _returns(wealth, "wealth")
    if w.size and (w[:-1] <= 0).any():
        i = int(np.flatnonzero(w[:-1] <= 0)[0])
        raise ValueError(f"wealth[{i}] = {w[i]} <= 0 before the end of the path")
    return w[1:] / w[:-1] - 1.0


def standard_metrics(
    wealth: Any,
    positions: Any = None,
    *,
    periods: int = TRADING_DAYS_PER_YEAR,
    risk_free: float = 0.0,
) -> dict[str, float]:
    """Metrics of a wealth path that starts at the initial capital (see module doc)."""
    r = returns_from_wealth(wealth)
    return summarize(r, positions, periods=periods, risk_free=risk_free)


def herculean_metrics(equity: Any, *, periods: int = TRADING_DAYS_PER_YEAR) -> dict[str, float]:
    """CR / SR / MDD the way the HERCULEAN paper reports them (see module doc)."""
    eq = _returns(equity, "equity")
    if eq.size == 0:
        nan = math.nan
        return {"cumulative_return": nan, "sharpe": nan, "max_drawdown": nan, "n_periods": 0.0}
    r = returns_from_wealth(eq)
    active = r[r != 0.0]
    return {
        "cumulative_return": float(eq[-1] / eq[0] - 1.0),
        "sharpe": sharpe_ratio(active, 0.0, periods),
        "max_drawdown": max_drawdown_of_path(eq),
        "n_periods": float(active.size),
    }
