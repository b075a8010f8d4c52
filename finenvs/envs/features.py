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


def compute_features(series: PriceSeries) -> np.ndarray:
    """Feature matrix of shape (len(series), N_FEATURES), float32, read-only.

    Rows ``< WARMUP`` are NaN (not enough history).
    """
    n = len(series)
    o, h, lo, c = series.open, series.high, series.low, series.close
    out = np.full((n, N_FEATURES), np.nan, dtype=np.float64)
    if n >= 2:
        out[1:, 0] = np.log(c[1:] / c[:-1])
        out[1:, 1] = np.log(o[1:] / c[:-1])
    out[:, 2] = np.log(h / lo)
    span = h - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        loc = np.where(span > 0, 2.0 * (c - lo) / np.where(span > 0, span, 1.0) - 1.0, 0.0)
    out[:, 3] = loc
    if n >= ROLLING:
        lv = np.log1p(series.volume)
        win = sliding_window_view(lv, ROLLING)
        mean = win.mean(axis=1)
        sd = win.std(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, (lv[WARMUP:] - mean) / np.where(sd > 0, sd, 1.0), 0.0)
        out[WARMUP:, 4] = z
        out[WARMUP:, 5] = np.log(c[WARMUP:] / sliding_window_view(c, ROLLING).mean(axis=1))
    out[:WARMUP] = np.nan
    np.clip(out, -FEATURE_BOUND, FEATURE_BOUND, out=out)
    feats = out.astype(np.float32)
    feats.setflags(write=False)
    return feats
