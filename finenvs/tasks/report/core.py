"""Pure core of FinReport-v0: ratings, report weeks, the peer map and the 16 weekly metrics.

Nothing here imports gymnasium or duckdb, and every function is pure: a metric
at report day ``t`` is a function of the arrays' rows ``<= t`` only (callers
pass the visible history; :func:`weekly_metrics` reads nothing past its last
row), so the date lock is property-testable with hand-made series.

Ratings and positions (HERCULEAN's evaluator)
    A rating issued at the close of a report day is held as the position of
    every trading day until the next report's close: STRONG_BUY and BUY long,
    HOLD flat, SELL and STRONG_SELL short (:data:`DEFAULT_POSITION_MAP`).
    :data:`SCALED_POSITION_MAP` holds the plain ratings at half size (+-0.5)
    instead; any ``{rating: exposure in [-1, 1]}`` map is accepted.

Report weeks
    The first report is due at the window's first close (as HERCULEAN's first
    decision is: its Buy&Hold then holds every day of the window, and the live
    rows equal the paper's); after it, one per calendar (ISO, Monday-first)
    week on that week's last trading day, except the window's last trading
    day: a rating issued there would have no day to be held. The first week
    has one report, on the window's first day. The eval split
    2026-01-02..2026-03-31 has 13: every Friday (or the week's last trading
    day) from 2026-01-02 to 2026-03-27, the last held to 2026-03-31; the live
    split 2026-04-01..2026-05-01 has 4: Wednesday 2026-04-01, then 04-10, 04-17
    and 04-24.

The 16 weekly metrics (fractions, not percent; ``nan`` when the history is too short)

    ====================  ================  ==============================================================
    block                 name              definition at report day t (rows <= t only)
    ====================  ================  ==============================================================
    single_stock          weekly_return     close_t / close of the last trading day before t's week - 1
    single_stock          volatility_20d    std (ddof 1) of the last 20 daily log returns x sqrt(252)
    single_stock          max_daily_move    the week's daily simple return with the largest |value| (signed)
    single_stock          volume_change     mean volume of the week / mean volume of the 20 days before it - 1
    single_stock          dist_52w_high     close_t / max close of the last 252 rows - 1 (<= 0)
    single_stock          dist_52w_low      close_t / min close of the last 252 rows - 1 (>= 0)
    momentum              return_4w         close_t / close_{t-20} - 1 (20 trading days)
    momentum              return_12w        close_t / close_{t-60} - 1 (60 trading days)
    momentum              rsi_14            Wilder's RSI(14) of the closes (0..100)
    momentum              macd_histogram    MACD(12, 26) - signal(9), in price units; > 0 is the bullish state
    momentum              sma50_gap         close_t / SMA(50) - 1
    sector_relative       peer_weekly_return  the equal-weighted peer basket's return over t's week
    sector_relative       excess_weekly_return  weekly_return - peer_weekly_return
    sector_relative       beta_60d          cov(r, b) / var(b) of the last 60 daily simple returns (ddof 1)
    sector_relative       correlation_60d   Pearson correlation of the same returns
    sector_relative       relative_strength_12w  (1 + return_12w) / (1 + basket's 60-day return) - 1
    ====================  ================  ==============================================================

The basket's daily return is the mean of its peers' daily simple returns
(rebalanced daily to equal weights); a peer's close on a day it did not trade
is its last earlier close.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from finenvs.tasks.report.metrics import METRIC_BLOCKS, METRIC_NAMES, PERCENT_METRICS, metric_display
from finenvs.tools.indicators import macd, rsi, sma

RATINGS = ("STRONG_SELL", "SELL", "HOLD", "BUY", "STRONG_BUY")
STRONG_SELL, SELL, HOLD, BUY, STRONG_BUY = range(5)
#: HERCULEAN's mapping: both buy ratings long, HOLD flat, both sell ratings short.
DEFAULT_POSITION_MAP: dict[str, float] = {"STRONG_SELL": -1.0, "SELL": -1.0, "HOLD": 0.0, "BUY": 1.0, "STRONG_BUY": 1.0}
#: Strong ratings at full size, plain ratings at half size.
SCALED_POSITION_MAP: dict[str, float] = {"STRONG_SELL": -1.0, "SELL": -0.5, "HOLD": 0.0, "BUY": 0.5, "STRONG_BUY": 1.0}
POSITION_MAPS = {"herculean": DEFAULT_POSITION_MAP, "scaled": SCALED_POSITION_MAP}

#: Equal-weighted peer baskets of the shipped core symbols. The core dataset has no semiconductor,
#: automotive or e-commerce peers after 2024, so NVDA, TSLA and AMZN are compared with the other
#: mega-cap technology names; the two ETFs are each other's basket.
PEER_MAP: dict[str, tuple[str, ...]] = {
    "AAPL": ("MSFT", "GOOGL", "AMZN", "META"),
    "MSFT": ("AAPL", "GOOGL", "AMZN", "ADBE"),
    "GOOGL": ("META", "MSFT", "AMZN", "AAPL"),
    "META": ("GOOGL", "AMZN", "MSFT", "AAPL"),
    "AMZN": ("MSFT", "GOOGL", "META", "AAPL"),
    "NVDA": ("MSFT", "GOOGL", "META", "AMZN"),
    "ADBE": ("MSFT", "GOOGL", "AAPL", "AMZN"),
    "TSLA": ("NVDA", "AMZN", "AAPL", "META"),
    "SPY": ("QQQ",),
    "QQQ": ("SPY",),
}

#: Observation scale: obs = clip(value * scale + shift, -bound, bound); nan -> 0.
OBS_SCALE: dict[str, tuple[float, float]] = {
    **{name: (10.0, 0.0) for name in PERCENT_METRICS},
    "volatility_20d": (5.0, 0.0),
    "volume_change": (2.0, 0.0),
    "rsi_14": (0.1, -5.0),
    "macd_histogram": (1.0, 0.0),
    "beta_60d": (1.0, 0.0),
    "correlation_60d": (1.0, 0.0),
}
TRADING_DAYS_PER_YEAR = 252
VOL_DAYS, VOLUME_DAYS, YEAR_DAYS, BETA_DAYS = 20, 20, 252, 60
#: The window of the 50-day SMA (``sma50_gap`` and its level).
SMA_DAYS = 50
MOMENTUM_DAYS = {"return_4w": 20, "return_12w": 60}
#: Rows of history before a report day that every metric needs (the 60-day beta and 12-week return
#: need 61 closes, SMA(50) 50, the 26/9 MACD 34); a year for the 52-week range is used when present.
MIN_HISTORY = 61


def position_map_of(position_map: Mapping[str, float] | str | None) -> dict[str, float]:
    """Validate a rating -> exposure map (a dict, ``"herculean"``, ``"scaled"`` or None = herculean).

    Raises:
        ValueError: Unknown name, a missing or unknown rating, or an exposure outside [-1, 1].
    """
    if position_map is None:
        return dict(DEFAULT_POSITION_MAP)
    if isinstance(position_map, str):
        if position_map not in POSITION_MAPS:
            raise ValueError(f"unknown position_map {position_map!r}; valid names: {sorted(POSITION_MAPS)} or a dict")
        return dict(POSITION_MAPS[position_map])
    if not isinstance(position_map, Mapping):
        raise ValueError(f"position_map must be a name or a {{rating: exposure}} dict, got {type(position_map).__name__}")
    keys = {str(k).upper() for k in position_map}
    if keys != set(RATINGS):
        raise ValueError(f"position_map must give every rating {list(RATINGS)} exactly; got {sorted(keys)}")
    out = {}
    for k, v in position_map.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not -1.0 <= v <= 1.0:
            raise ValueError(f"position_map[{k!r}] = {v!r} must be a number in [-1, 1]")
        out[str(k).upper()] = float(v)
    return {r: out[r] for r in RATINGS}


def week_number(dates: Any) -> Any:
    """Monday-first week number of dates (datetime64 or arrays of them): equal within one ISO week.

    1970-01-01 was a Thursday, so ``(days since the epoch + 3) // 7`` changes every Monday.
    """
    return (np.asarray(dates).astype("datetime64[D]").astype(np.int64) + 3) // 7


def report_days(dates: np.ndarray, first: int, last: int) -> np.ndarray:
    """Row indices of the report days of window rows ``first..last`` (see module doc).

    Args:
        dates: Trading dates (datetime64[D], ascending).
        first, last: Inclusive rows of the window.

    Returns:
        Ascending row indices: the window's first row, then each later ISO week's last trading day in the
        window, the window's last row excluded (empty when the window has a single row).
    """
    if last <= first:
        return np.zeros(0, dtype=np.int64)
    week = week_number(dates[first : last + 1])
    ends = np.flatnonzero(np.append(week[1:] != week[:-1], True)) + first
    later = ends[(ends < last) & (week[ends - first] != week[0])]
    return np.concatenate(([first], later)).astype(np.int64)


def week_start_row(dates: np.ndarray, t: int) -> int:
    """First row of the ISO week that row ``t`` belongs to (reads rows <= t only)."""
    return int(np.searchsorted(week_number(dates[: t + 1]), week_number(dates[t]), side="left"))


def align_closes(dates: np.ndarray, peer_dates: np.ndarray, peer_close: np.ndarray) -> np.ndarray:
    """A peer's close on each of ``dates``: its last close on or before the date (nan before its first)."""
    idx = np.searchsorted(peer_dates, dates, side="right") - 1
    out = np.where(idx >= 0, peer_close[np.clip(idx, 0, None)], np.nan)
    return out.astype(np.float64)


def basket_returns(peer_closes: np.ndarray) -> np.ndarray:
    """Daily returns of an equal-weighted, daily-rebalanced basket; ``peer_closes`` is (days, peers).

    Row ``k`` is the return from day ``k-1`` to ``k`` (row 0 is nan). A peer with
    no close on both days is left out of that day's mean.
    """
    closes = np.asarray(peer_closes, dtype=np.float64)
    if closes.ndim == 1:
        closes = closes[:, None]
    out = np.full(closes.shape[0], np.nan)
    if closes.shape[0] < 2 or closes.shape[1] == 0:
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        r = closes[1:] / closes[:-1] - 1.0
    ok = np.isfinite(r)
    counts = ok.sum(axis=1)
    sums = np.where(ok, r, 0.0).sum(axis=1)
    out[1:] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return out


def _ratio(a: float, b: float) -> float:
    return a / b - 1.0 if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


def weekly_metrics(
    dates: np.ndarray,
    close: np.ndarray,
    volume: np.ndarray,
    peer_closes: np.ndarray | None = None,
) -> dict[str, float]:
    """The 16 weekly metrics at the last row of the given history (see module doc).

    Args:
        dates: Trading dates up to and including the report day (datetime64[D]).
        close: Adjusted closes on those dates.
        volume: Volumes on those dates.
        peer_closes: ``(days, peers)`` closes of the peer basket aligned to ``dates``
            (see :func:`align_closes`); None gives nan sector-relative metrics.

    Returns:
        ``{metric: value}`` in :data:`METRIC_NAMES` order; nan where the history is too short.
    """
    close = np.asarray(close, dtype=np.float64)
    volume = np.asarray(volume, dtype=np.float64)
    n = close.size
    if n == 0:
        return dict.fromkeys(METRIC_NAMES, math.nan)
    t = n - 1
    c = float(close[t])
    ws = week_start_row(dates, t)
    prev = ws - 1  # the last trading day before the week
    m: dict[str, float] = {}
    m["weekly_return"] = _ratio(c, float(close[prev])) if prev >= 0 else math.nan
    if n > VOL_DAYS:
        logr = np.diff(np.log(close[t - VOL_DAYS :]))
        m["volatility_20d"] = float(logr.std(ddof=1) * math.sqrt(TRADING_DAYS_PER_YEAR))
    else:
        m["volatility_20d"] = math.nan
    if prev >= 0:
        daily = close[ws : t + 1] / close[prev:t] - 1.0
        m["max_daily_move"] = float(daily[int(np.argmax(np.abs(daily)))])
    else:
        m["max_daily_move"] = math.nan
    if ws >= VOLUME_DAYS:
        before = float(volume[ws - VOLUME_DAYS : ws].mean())
        m["volume_change"] = _ratio(float(volume[ws : t + 1].mean()), before)
    else:
        m["volume_change"] = math.nan
    year = close[max(0, n - YEAR_DAYS) :]
    m["dist_52w_high"] = _ratio(c, float(year.max()))
    m["dist_52w_low"] = _ratio(c, float(year.min()))
    for name, days in MOMENTUM_DAYS.items():
        m[name] = _ratio(c, float(close[t - days])) if n > days else math.nan
    m["rsi_14"] = float(rsi(close, 14)[t])
    m["macd_histogram"] = float(macd(close)["histogram"][t])
    m["sma50_gap"] = _ratio(c, float(sma(close, SMA_DAYS)[t]))
    m.update(_sector_relative(close, ws, m, peer_closes))
    return {name: float(m[name]) for name in METRIC_NAMES}


def price_levels(dates: np.ndarray, high: np.ndarray, low: np.ndarray, close: np.ndarray) -> dict[str, float]:
    """The price levels behind the metrics at the last row: the week's high and low (its rows, Monday-first weeks:
    :func:`week_number`), the 52-week high and low close (the last :data:`YEAR_DAYS` closes, or all when fewer) and
    the 50-day SMA (nan before :data:`SMA_DAYS` closes)."""
    dates = np.asarray(dates).astype("datetime64[D]")
    week = week_number(dates) == week_number(dates[-1])
    close = np.asarray(close, dtype=np.float64)
    year = close[-YEAR_DAYS:]
    return {"week_high": float(np.asarray(high)[week].max()), "week_low": float(np.asarray(low)[week].min()),
            "high_52w": float(year.max()), "low_52w": float(year.min()),
            "sma50": float(close[-SMA_DAYS:].mean()) if close.size >= SMA_DAYS else math.nan}


def _sector_relative(close: np.ndarray, ws: int, m: dict[str, float], peer_closes: np.ndarray | None) -> dict[str, float]:
    nan = math.nan
    out = dict.fromkeys(METRIC_BLOCKS["sector_relative"], nan)
    if peer_closes is None:
        return out
    peers = np.asarray(peer_closes, dtype=np.float64)
    if peers.ndim == 1:
        peers = peers[:, None]
    n = close.size
    if peers.shape[0] != n:
        raise ValueError(f"peer_closes has {peers.shape[0]} rows for {n} dates; align them with align_closes")
    t = n - 1
    b = basket_returns(peers)
    if ws >= 1 and np.isfinite(b[ws : t + 1]).all():
        out["peer_weekly_return"] = float(np.prod(1.0 + b[ws : t + 1]) - 1.0)
        out["excess_weekly_return"] = m["weekly_return"] - out["peer_weekly_return"]
    if n > BETA_DAYS:
        r = close[t - BETA_DAYS + 1 : t + 1] / close[t - BETA_DAYS : t] - 1.0
        rb = b[t - BETA_DAYS + 1 : t + 1]
        if np.isfinite(rb).all() and rb.std(ddof=1) > 0 and r.std(ddof=1) > 0:
            cov = float(np.cov(r, rb, ddof=1)[0, 1])
            out["beta_60d"] = cov / float(rb.var(ddof=1))
            out["correlation_60d"] = float(np.corrcoef(r, rb)[0, 1])
        basket_12w = float(np.prod(1.0 + rb)) - 1.0 if np.isfinite(rb).all() else nan
        if math.isfinite(basket_12w) and math.isfinite(m["return_12w"]):
            out["relative_strength_12w"] = (1.0 + m["return_12w"]) / (1.0 + basket_12w) - 1.0
    return out


def metrics_vector(metrics: Mapping[str, float], bound: float) -> np.ndarray:
    """The metrics scaled for an observation (see :data:`OBS_SCALE`; nan -> 0), float32."""
    out = np.zeros(len(METRIC_NAMES), dtype=np.float32)
    for i, name in enumerate(METRIC_NAMES):
        v = metrics.get(name, math.nan)
        if v is not None and math.isfinite(v):
            scale, shift = OBS_SCALE[name]
            out[i] = min(bound, max(-bound, v * scale + shift))
    return out


def rating_of(value: Any) -> str | None:
    """Canonical rating of an int (0..4) or a word (``Strong Buy``, ``strong-buy``, ``BUY``); None if not one."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return RATINGS[int(value)] if 0 <= int(value) < len(RATINGS) else None
    if isinstance(value, str):
        word = "_".join(value.strip().upper().replace("-", " ").split())
        return word if word in RATINGS else None
    return None


__all__ = [
    "BUY",
    "DEFAULT_POSITION_MAP",
    "HOLD",
    "METRIC_BLOCKS",
    "METRIC_NAMES",
    "MIN_HISTORY",
    "PEER_MAP",
    "PERCENT_METRICS",
    "RATINGS",
    "SCALED_POSITION_MAP",
    "SELL",
    "STRONG_BUY",
    "STRONG_SELL",
    "align_closes",
    "basket_returns",
    "metric_display",
    "metrics_vector",
    "position_map_of",
    "rating_of",
    "report_days",
    "week_number",
    "week_start_row",
    "weekly_metrics",
]
