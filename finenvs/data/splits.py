"""Named date splits and window resolution: the bars an episode steps on, and its sessions on the exchange
calendar (:mod:`finenvs.data.calendar`) that its counts and time-remaining features come from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.data.asof import to_day
from finenvs.data.calendar import session_positions, window_sessions
from finenvs.data.schema import date_span
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


def window_indices(dates: np.ndarray, lo: np.datetime64 | None, hi: np.datetime64 | None,
                   label: str = "") -> tuple[int, int]:
    """Indices ``(first, last)`` (inclusive) of the trading days within ``[lo, hi]``.

    Raises:
        WindowError: No trading day falls in the window (names the data's coverage, of ``label``'s data when given,
            as :func:`~finenvs.data.schema.date_span` states it for ``finenvs data list``).
    """
    first = 0 if lo is None else int(np.searchsorted(dates, lo, side="left"))
    last = (len(dates) - 1) if hi is None else int(np.searchsorted(dates, hi, side="right")) - 1
    if len(dates) == 0 or first > last:
        whose = f"{label} data" if label else "data"
        raise WindowError(f"empty window {lo}..{hi}: no trading day in range ({whose} covers {date_span(dates)}; "
                          "finenvs data list shows each symbol's)")
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
    first, last = window_indices(dates, lo, hi, label)
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


@dataclass(frozen=True, eq=False)
class SessionWindow:
    """An episode window: the rows of bars it steps on and the exchange sessions it counts.

    ``sessions`` are the calendar's sessions from the first decision's day to the window's last session
    (for an open end, the newest bar: see :func:`session_window`), whichever bars exist; a decision's number
    is its day's index in them, ``n_decisions`` is their count less one (the last session's close ends the
    window) and the time remaining of a day is ``(n_decisions - index) / n_decisions``. None of these read a
    bar after the day they describe.

    Attributes:
        first: Row of the first decision.
        last: Row of the window's last bar: the last row dated on or before the window's last session.
        sessions: Read-only ``datetime64[D]`` sessions (``sessions[0]`` is the first decision's day).
        positions: Read-only session index of each row ``first..last`` (:func:`~finenvs.data.calendar.session_positions`).
        start_day, end_day: ISO dates of the first and the last session.
    """

    first: int
    last: int
    sessions: np.ndarray
    positions: np.ndarray
    start_day: str = ""
    end_day: str = ""

    def __post_init__(self) -> None:
        if not self.start_day:  # formatted once: resets read them
            object.__setattr__(self, "start_day", str(self.sessions[0]))
            object.__setattr__(self, "end_day", str(self.sessions[-1]))

    @property
    def n_decisions(self) -> int:
        return int(self.sessions.shape[0]) - 1

    @property
    def complete(self) -> bool:
        """The window's last session has its bar (row ``last``), whose close ends the window; False when the
        data stops before (the episode then ends when a decision finds no next bar)."""
        return int(self.positions[-1]) == self.n_decisions

    def time_remaining(self) -> np.ndarray:
        """Time remaining at each row ``first..last`` (float64): 1 at the first session, 0 at the last."""
        n = self.n_decisions
        return (n - self.positions) / n if n > 0 else np.zeros(self.positions.shape[0])

    def numbers(self) -> np.ndarray:
        """Decision number (1-based) of each row ``first..last``: its session index plus one."""
        return self.positions + 1

    def sub_window(self, dates: np.ndarray, n_decisions: int, rng: np.random.Generator) -> SessionWindow:
        """A random sub-window of ``n_decisions`` sessions: its first decision drawn uniformly from the rows
        whose session leaves ``n_decisions`` sessions of this window after it (one ``rng.integers`` draw)."""
        fits = np.flatnonzero(self.positions <= self.n_decisions - n_decisions)
        row = int(fits[int(rng.integers(0, fits.size))])
        k0 = int(self.positions[row])
        sessions = self.sessions[k0:k0 + n_decisions + 1]
        upto = int(np.searchsorted(self.positions, k0 + n_decisions, side="right"))
        first = self.first + row
        last = self.first + upto - 1
        return _window(first, last, sessions, dates)


def _window(first: int, last: int, sessions: np.ndarray, dates: np.ndarray) -> SessionWindow:
    sessions = np.array(sessions, dtype="datetime64[D]")
    sessions.setflags(write=False)
    positions = session_positions(sessions, dates[first:last + 1])
    positions.setflags(write=False)
    return SessionWindow(first, last, sessions, positions)


def bar_window(dates: np.ndarray, first: int, last: int) -> SessionWindow:
    """A window whose sessions are its own bars (synthetic paths: one session per simulated day)."""
    return _window(first, last, dates[first:last + 1], dates)


def session_window(
    dates: np.ndarray,
    lo: np.datetime64 | None,
    hi: np.datetime64 | None,
    *,
    calendar: str | None,
    history: int,
    label: str,
    explicit_start: bool,
    min_decisions: int,
    episode_length: int | None,
    history_note: str,
    calendar_word: str = "",
) -> SessionWindow:
    """The window ``[lo, hi]`` on the bars ``dates``, counted in sessions of exchange calendar ``calendar``.

    The first decision is the first bar on or after ``lo`` with ``history`` rows before it (as in
    :func:`decision_window`); the window ends at the calendar's last session on or before ``hi``, whether
    or not the data has that bar. ``hi=None`` (an open end: ``end="latest"``, or no end with ``split=None``)
    ends it at the newest bar the data holds: then, and only then, the data's extent sets the count.
    ``calendar=None`` counts the bars themselves (:func:`bar_window`), for data no exchange calendar covers:
    then the counts do show a series that stops or misses a day.

    Raises:
        WindowError: As :func:`decision_window`, with the counts in sessions; an unknown calendar, or dates
            outside its range.
    """
    first, last = decision_window(dates, lo, hi, history=history, label=label, explicit_start=explicit_start,
                                  min_decisions=0, episode_length=None, history_note=history_note,
                                  calendar=calendar_word)
    if calendar is None:
        window = bar_window(dates, first, last)
    else:
        sessions = window_sessions(calendar, dates[first], dates[last] if hi is None else hi)
        window = _window(first, last, sessions, dates)
    n = window.n_decisions
    if n < min_decisions:
        raise WindowError(
            f"{label}: window {window.start_day}..{window.end_day} has {n + 1} {calendar} session(s) from the "
            f"first day with full history; an episode needs at least {min_decisions + 1}"
        )
    if episode_length is not None and episode_length > n:
        raise WindowError(
            f"{label}: episode_length={episode_length} decisions does not fit the window "
            f"{window.start_day}..{window.end_day} ({n} decisions on the {calendar} calendar)"
        )
    return window
