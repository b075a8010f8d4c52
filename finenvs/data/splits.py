"""Named date splits and window resolution on a symbol's own trading calendar."""

from __future__ import annotations

from typing import Any

import numpy as np

from finenvs.data.asof import to_day
from finenvs.errors import WindowError

#: Named splits (inclusive). ``eval`` and ``live`` are HERCULEAN's backtest and live windows.
SPLITS: dict[str, tuple[str, str]] = {
    "train": ("2024-01-02", "2025-12-31"),
    "eval": ("2026-01-02", "2026-03-31"),
    "live": ("2026-04-01", "2026-05-01"),
}


def split_bounds(split: str | None, start: Any = None, end: Any = None) -> tuple[np.datetime64 | None, np.datetime64 | None]:
    """Dates of a window: explicit ``start``/``end`` override the named split's.

    Raises:
        WindowError: Unknown split name, unparsable date, or start after end.
    """
    lo: np.datetime64 | None = None
    hi: np.datetime64 | None = None
    if split is not None:
        if split not in SPLITS:
            raise WindowError(f"unknown split {split!r}; valid splits: {sorted(SPLITS)} (or pass start/end)")
        lo, hi = (np.datetime64(d, "D") for d in SPLITS[split])
    if start is not None:
        lo = to_day(start, name="start")
    if end is not None:
        hi = to_day(end, name="end")
    if lo is not None and hi is not None and lo > hi:
        raise WindowError(f"start {lo} is after end {hi}")
    return lo, hi


def window_indices(dates: np.ndarray, lo: np.datetime64 | None, hi: np.datetime64 | None) -> tuple[int, int]:
    """Indices ``(first, last)`` (inclusive) of the trading days within ``[lo, hi]``.

    Raises:
        WindowError: No trading day falls in the window (names the data's coverage).
    """
    first = 0 if lo is None else int(np.searchsorted(dates, lo, side="left"))
    last = (len(dates) - 1) if hi is None else int(np.searchsorted(dates, hi, side="right")) - 1
    if len(dates) == 0 or first > last:
        cover = f"{dates[0]}..{dates[-1]}" if len(dates) else "no rows"
        raise WindowError(f"empty window {lo}..{hi}: no trading day in range (data covers {cover})")
    return first, last
