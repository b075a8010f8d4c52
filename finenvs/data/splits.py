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
#: ``end=LATEST``: the window runs to the newest bar the data holds (a live run rolled forward with
#: ``finenvs data add``; the end moves as data arrives, the episode's arguments do not).
LATEST = "latest"
#: The split an env uses when none is named: the shipped data's ``train`` window, or,
#: for a user's own data (``data=``), the whole series (see :func:`resolve_split`).
DEFAULT_SPLIT = "default"


def resolve_split(split: str | None, *, user_data: bool) -> str | None:
    """The split a window is cut by: :data:`DEFAULT_SPLIT` becomes ``"train"``, or None
    (the whole series) for a user's own data, whose dates need not meet the shipped
    calendar. Any other value (a named split, None) is returned as given.
    """
    if split == DEFAULT_SPLIT:
        return None if user_data else "train"
    return split


def split_bounds(split: str | None, start: Any = None, end: Any = None) -> tuple[np.datetime64 | None, np.datetime64 | None]:
    """Dates of a window: explicit ``start``/``end`` override the named split's; ``end="latest"`` (:data:`LATEST`)
    leaves the end open (None: the newest bar held).

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
    if isinstance(end, str) and end == LATEST:
        hi = None
    elif end is not None:
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


def decision_window(
    dates: np.ndarray,
    lo: np.datetime64 | None,
    hi: np.datetime64 | None,
    *,
    history: int,
    label: str,
    explicit_start: bool,
    min_decisions: int,
    episode_length: int | None,
    history_note: str,
    calendar: str = "",
) -> tuple[int, int]:
    """Rows ``(first, last)`` of an episode window whose first decision has ``history`` earlier rows.

    A named split whose first days lack the history starts at the first row that
    has it; an explicit start without it is an error naming the earliest valid
    start.

    Args:
        dates: The trading calendar the env steps on.
        lo, hi: Window bounds (see :func:`split_bounds`).
        history: Row index the first decision needs (rows of history before it).
        label: Symbol(s) named in errors.
        explicit_start: The start was given explicitly (not from a named split).
        min_decisions: Fewest decisions an episode needs.
        episode_length: Decisions per episode, if fixed (must fit the window).
        history_note: Why ``history`` rows are needed, for the error message.
        calendar: Word before "day(s)" in messages (e.g. ``"common "``).

    Raises:
        WindowError: Naming the window, the data and the limit broken.
    """
    first, last = window_indices(dates, lo, hi)
    if first < history:
        if explicit_start or history >= last:
            earliest = dates[history] if history < len(dates) else "none (series too short)"
            raise WindowError(
                f"{label}: window starting {dates[first]} has {first} {calendar}day(s) of history; "
                f"the first decision needs {history} ({history_note}). Earliest valid start: {earliest}"
            )
        first = history
    if last - first < min_decisions:
        raise WindowError(
            f"{label}: window {dates[first]}..{dates[last]} has {last - first + 1} {calendar}trading day(s) with "
            f"full history; an episode needs at least {min_decisions + 1}"
        )
    if episode_length is not None and episode_length > last - first:
        raise WindowError(
            f"{label}: episode_length={episode_length} decisions does not fit the window "
            f"{dates[first]}..{dates[last]} ({last - first} decisions)"
        )
    return first, last
