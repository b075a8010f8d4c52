"""Bootstrap confidence intervals for per-window metrics (pure numpy).

A benchmark number from one window is one draw. Played over many windows (every
quarter of a long history), a policy's per-window metrics form a distribution;
these functions summarise it and put a percentile-bootstrap interval on a
statistic of it (by default the mean):

* :func:`bootstrap_ci`: the interval of ``stat`` over one policy's windows;
* :func:`paired_difference`: two policies played on the same windows, the
  statistic of their per-window differences, its interval and how often the
  first beat the second;
* :func:`distribution`: mean, median, sd, quartiles and share of positive values.

NaN policy: a NaN value (a metric undefined on its window, e.g. the Sharpe ratio
of a policy that never traded) is dropped and counted in ``dropped``, never
coerced to 0. Fewer than 2 values left: the interval is ``(nan, nan)``.

``groups`` (optional, one label per value) turns the bootstrap into a cluster
bootstrap: whole groups are resampled with replacement. Windows of several symbols
in the same quarter move together; resampling quarters rather than single
episodes keeps that correlation in the interval instead of pretending each
episode is an independent draw.

Everything is deterministic given ``seed`` (``np.random.default_rng(seed)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_N_BOOT = 2000
DEFAULT_LEVEL = 0.95
#: Bootstrap samples are drawn this many values at a time (bounds the memory of a large sample).
_CHUNK_VALUES = 1_000_000

Stat = Callable[..., Any]


class Interval(tuple):
    """``(lo, hi)`` of a bootstrap interval; also says how many values it used (``n``) and dropped as NaN."""

    n: int
    dropped: int

    def __new__(cls, lo: float, hi: float, n: int = 0, dropped: int = 0) -> Interval:
        self = super().__new__(cls, (float(lo), float(hi)))
        self.n = int(n)
        self.dropped = int(dropped)
        return self

    @property
    def lo(self) -> float:
        return self[0]

    @property
    def hi(self) -> float:
        return self[1]

    @property
    def width(self) -> float:
        return self[1] - self[0]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Interval, (self[0], self[1], self.n, self.dropped))


def _check(n_boot: int, level: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot={n_boot!r} must be an integer >= 1")
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):
        raise ValueError(f"level={level!r} must be in (0, 1)")


def _finite_values(values: Any, groups: Any = None) -> tuple[np.ndarray, np.ndarray | None, int]:
    """The values as float64 with NaNs dropped, their groups, and how many were dropped."""
    x = np.asarray(values, dtype=float).reshape(-1)
    g = None
    if groups is not None:
        g = np.asarray(groups).reshape(-1)
        if g.shape != x.shape:
            raise ValueError(f"groups has {g.size} labels for {x.size} values")
    if np.isinf(x).any():
        raise ValueError("values contain +/-inf; a per-window metric is finite or NaN (undefined)")
    keep = ~np.isnan(x)
    return x[keep], None if g is None else g[keep], int(x.size - keep.sum())


def _apply(stat: Stat, samples: np.ndarray) -> np.ndarray:
    """``stat`` of every row of ``samples`` (vectorised when ``stat`` takes ``axis``)."""
    try:
        out = np.asarray(stat(samples, axis=1), dtype=float)
        if out.shape == (samples.shape[0],):
            return out
    except TypeError:
        pass
    return np.array([float(stat(row)) for row in samples])


def _replicates(x: np.ndarray, groups: np.ndarray | None, stat: Stat, n_boot: int,
                rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` bootstrap replicates of ``stat(x)`` (values, or whole groups, drawn with replacement)."""
    if groups is None:
        n = x.size
        rows = max(1, _CHUNK_VALUES // n)
        parts = []
        for begin in range(0, n_boot, rows):
            idx = rng.integers(0, n, size=(min(rows, n_boot - begin), n))
            parts.append(_apply(stat, x[idx]))
        return np.concatenate(parts)
    labels, inverse = np.unique(groups, return_inverse=True)
    members = [np.flatnonzero(inverse == k) for k in range(labels.size)]
    sizes = np.array([m.size for m in members])
    if (sizes == sizes[0]).all():  # balanced clusters: one array op per chunk
        table = np.stack(members)
        rows = max(1, _CHUNK_VALUES // x.size)
        parts = []
        for begin in range(0, n_boot, rows):
            pick = rng.integers(0, labels.size, size=(min(rows, n_boot - begin), labels.size))
            parts.append(_apply(stat, x[table[pick].reshape(pick.shape[0], -1)]))
        return np.concatenate(parts)
    out = np.empty(n_boot)
    for b in range(n_boot):
        pick = rng.integers(0, labels.size, size=labels.size)
        out[b] = float(stat(x[np.concatenate([members[k] for k in pick])]))
    return out


def _percentiles(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return math.nan, math.nan
    alpha = (1.0 - float(level)) / 2.0
    lo, hi = np.quantile(reps, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


# Hand-written on purpose: scipy.stats.bootstrap resamples single observations only; the cluster bootstrap
# (whole groups resampled) that keeps windows of one quarter together has no scipy/statsmodels equal.
def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    stat: Stat = np.mean,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
) -> Interval:
    """Percentile-bootstrap interval of ``stat(values)``.

    Args:
        values: Per-window metrics; NaNs are dropped and counted.
        stat: Statistic of a 1-D array; called as ``stat(samples, axis=1)`` when it accepts ``axis``
            (``np.mean``, ``np.median``), else once per replicate.
        n_boot: Bootstrap replicates.
        level: Coverage of the interval (0.95: the 2.5th and 97.5th percentiles of the replicates).
        seed: Seed of ``np.random.default_rng``; the same seed gives the same interval.
        groups: Optional cluster label per value: whole clusters are resampled (see module doc).

    Returns:
        ``Interval(lo, hi)`` (a 2-tuple with ``n`` and ``dropped``); ``(nan, nan)`` with fewer than 2 values.
    """
    _check(n_boot, level)
    x, g, dropped = _finite_values(values, groups)
    if x.size < 2 or (g is not None and np.unique(g).size < 2):
        return Interval(math.nan, math.nan, x.size, dropped)
    reps = _replicates(x, g, stat, int(n_boot), np.random.default_rng(seed))
    return Interval(*_percentiles(reps, level), x.size, dropped)


@dataclass(frozen=True)
class PairedDifference:
    """Two policies on the same windows: ``stat(a - b)``, its bootstrap interval and ``a``'s win rate.

    Attributes:
        estimate: ``stat`` of the per-window differences ``a - b`` (the mean difference by default).
        lo, hi: Its percentile-bootstrap interval.
        win_rate: Share of the windows where ``a > b`` (ties count as not winning).
        tie_rate: Share of the windows where ``a == b``.
        n: Windows with both values defined.
        dropped: Windows dropped because either value is NaN.
    """

    estimate: float
    lo: float
    hi: float
    win_rate: float
    tie_rate: float
    n: int
    dropped: int

    def record(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "ci": [self.lo, self.hi], "win_rate": self.win_rate,
                "tie_rate": self.tie_rate, "n": self.n, "dropped": self.dropped}


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    stat: Stat = np.mean,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
) -> PairedDifference:
    """Per-window metrics of two policies on the same windows (``a[i]`` and ``b[i]`` are one window).

    The windows are resampled as pairs, so what both policies share (the market of the window) cancels.
    A window where either value is NaN is dropped and counted.

    Raises:
        ValueError: ``a`` and ``b`` differ in length.
    """
    x = np.asarray(a, dtype=float).reshape(-1)
    y = np.asarray(b, dtype=float).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"paired values differ in length: {x.size} and {y.size}")
    diff = x - y  # NaN where either is NaN
    both = ~np.isnan(diff)
    n = int(both.sum())
    interval = bootstrap_ci(diff, stat, n_boot, level, seed, groups=groups)
    estimate = float(stat(diff[both])) if n else math.nan
    win = float((x[both] > y[both]).mean()) if n else math.nan
    tie = float((x[both] == y[both]).mean()) if n else math.nan
    return PairedDifference(estimate, interval.lo, interval.hi, win, tie, n, int(diff.size - n))


def distribution(values: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Mean, median, sd (ddof=1), quartiles and share of positive values of the non-NaN ``values``.

    Returns:
        ``{"n", "dropped", "mean", "median", "sd", "q1", "q3", "min", "max", "share_positive"}``; NaN where
        undefined (no values; ``sd`` with fewer than 2).
    """
    x, _, dropped = _finite_values(values)
    nan = math.nan
    if x.size == 0:
        return {"n": 0, "dropped": dropped, "mean": nan, "median": nan, "sd": nan, "q1": nan, "q3": nan,
                "min": nan, "max": nan, "share_positive": nan}
    q1, median, q3 = (float(v) for v in np.quantile(x, [0.25, 0.5, 0.75]))
    return {"n": int(x.size), "dropped": dropped, "mean": float(x.mean()), "median": median,
            "sd": float(x.std(ddof=1)) if x.size > 1 else nan, "q1": q1, "q3": q3, "min": float(x.min()),
            "max": float(x.max()), "share_positive": float((x > 0).mean())}


__all__ = ["DEFAULT_LEVEL", "DEFAULT_N_BOOT", "Interval", "PairedDifference", "bootstrap_ci", "distribution",
           "paired_difference"]
