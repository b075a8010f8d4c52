"""Causal per-day features of a price series (row t uses rows <= t only).

==  ==================  ===========================================================
#   name                definition at day t
==  ==================  ===========================================================
0   log_return          log(close_t / close_{t-1})
1   overnight_gap       log(open_t / close_{t-1})
2   log_range           log(high_t / low_t)
3   close_location      2 (close_t - low_t) / (high_t - low_t) - 1, in [-1, 1]; 0 when high == low
4   volume_z            z-score of log(1 + volume_t) within the trailing 20 days (t included); 0 when flat
5   trend_20            log(close_t / mean(close_{t-19..t}))
==  ==================  ===========================================================

Every value is clipped to ``[-FEATURE_BOUND, FEATURE_BOUND]`` so the observation
space has finite bounds. Rows before ``WARMUP`` are NaN and never observed.
Rolling statistics use ``sliding_window_view`` (each window reduced on its own),
so a row's value is bit-identical whatever comes after it.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from finenvs.data.schema import PriceSeries

FEATURE_NAMES = ("log_return", "overnight_gap", "log_range", "close_location", "volume_z", "trend_20")
N_FEATURES = len(FEATURE_NAMES)
ROLLING = 20
#: First row index with every feature defined.
WARMUP = ROLLING - 1
FEATURE_BOUND = 10.0
_STD_BLOCK = 65_536  # windows per std call: each row is reduced on its own, so blocks give the same bits


def compute_features(series: PriceSeries) -> np.ndarray:
    """Feature matrix of shape (len(series), N_FEATURES), float32, read-only.

    Rows ``< WARMUP`` are NaN (not enough history). Each column is computed in
    float64, clipped and only then stored as float32, one column at a time (a
    float64 matrix of a million bars would be a 48 MB temporary).
    """
    n = len(series)
    o, h, lo, c = series.open, series.high, series.low, series.close
    feats = np.empty((n, N_FEATURES), dtype=np.float32)

    def _store(j: int, col: np.ndarray) -> None:
        col[:WARMUP] = np.nan
        np.clip(col, -FEATURE_BOUND, FEATURE_BOUND, out=col)
        feats[:, j] = col

    for j, ratio in ((0, c), (1, o)):  # log return, overnight gap
        col = np.full(n, np.nan)
        if n >= 2:
            col[1:] = np.log(ratio[1:] / c[:-1])
        _store(j, col)
    _store(2, np.log(h / lo))
    span = h - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        loc = np.where(span > 0, 2.0 * (c - lo) / np.where(span > 0, span, 1.0) - 1.0, 0.0)
    _store(3, loc)
    z = np.full(n, np.nan)
    trend = np.full(n, np.nan)
    if n >= ROLLING:
        lv = np.log1p(series.volume)
        win = sliding_window_view(lv, ROLLING)
        mean = win.mean(axis=1)
        sd = np.empty_like(mean)
        for b in range(0, sd.shape[0], _STD_BLOCK):  # std materialises its window block: bound it
            sd[b : b + _STD_BLOCK] = win[b : b + _STD_BLOCK].std(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            z[WARMUP:] = np.where(sd > 0, (lv[WARMUP:] - mean) / np.where(sd > 0, sd, 1.0), 0.0)
        del lv, win, mean, sd
        trend[WARMUP:] = np.log(c[WARMUP:] / sliding_window_view(c, ROLLING).mean(axis=1))
    _store(4, z)
    _store(5, trend)
    feats.setflags(write=False)
    return feats
