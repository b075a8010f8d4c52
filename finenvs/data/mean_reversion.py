"""Mean-reversion statistics of a series (pure numpy): the Dickey-Fuller t-statistic.

Used by the FinHedging-v0 core (its pair statistics in the observation) and by the
pairs tool (``get_pair_stats``), so both report the same number for the same spread.
"""

from __future__ import annotations

import math

import numpy as np


def df_tstat(spread: np.ndarray) -> float:
    """Dickey-Fuller t-statistic of ``spread`` (regression ``d s_k = a + b s_{k-1}``, t of ``b``).

    More negative = stronger mean reversion. 0 when the regression is degenerate.
    """
    lag = spread[:-1]
    diff = np.diff(spread)
    m = lag.size
    if m < 3:
        return 0.0
    x = lag - lag.mean()
    sxx = float(x @ x)
    if sxx <= 0.0:
        return 0.0
    b = float(x @ (diff - diff.mean())) / sxx
    resid = diff - diff.mean() - b * x
    s2 = float(resid @ resid) / (m - 2)
    if s2 <= 0.0:
        return 0.0
    return b / math.sqrt(s2 / sxx)


__all__ = ["df_tstat"]
