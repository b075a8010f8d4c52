"""Exchange calendars: the sessions a window has, whichever bars the data holds.

An episode's length, its decision count ("decision k of n"), the window bounds
shown to an agent and every time-remaining feature are read off the exchange's
calendar, never off the bars that exist after a decision: a series that stops (a
delisting) or misses a day (``^GSPC`` lacks 2026-01-20 in ``yahoo_2015_2026``)
then looks exactly like one that goes on, up to the day it stops.

Sessions come from `exchange_calendars <https://github.com/gerrymanoim/exchange_calendars>`_,
which computes them from each exchange's rules (no download). It is imported on first
use (``import finenvs`` stays lean) and the sessions are cached per calendar and span of
decades, so an env builds them once per process.

:data:`DEFAULT_CALENDAR` (``"XNYS"``, the New York Stock Exchange) fits the shipped US
data; any name of ``exchange_calendars.get_calendar_names()`` is accepted (``"XLON"``,
``"XTKS"``, ``"24/7"`` for a market that never closes, ``"24/5"`` for every weekday).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from finenvs.errors import WindowError

#: The calendar of the shipped data (every shipped bar is an NYSE session).
DEFAULT_CALENDAR = "XNYS"
#: Sessions are computed in spans of whole decades (cached per calendar and span).
_SPAN_YEARS = 10


def check_calendar(name: Any) -> str:
    """``name`` if it names a calendar ``exchange_calendars`` knows.

    Raises:
        WindowError: Not a string, or not a calendar name (the message says where the names are listed).
    """
    if not isinstance(name, str) or not name or len(name) > 40:
        raise WindowError(f"calendar={str(name)[:40]!r} must be an exchange calendar name such as "
                          f"{DEFAULT_CALENDAR!r} (see exchange_calendars.get_calendar_names())")
    if name not in _calendar_names():
        raise WindowError(f"unknown calendar {name!r}; use a name of exchange_calendars.get_calendar_names(), "
                          f"e.g. {DEFAULT_CALENDAR!r}, 'XLON', '24/7'")
    return name


@functools.lru_cache(maxsize=1)
def _calendar_names() -> frozenset[str]:
    with warnings.catch_warnings():  # the library's own deprecation notices under newer pandas are not ours
        warnings.simplefilter("ignore")
        import exchange_calendars

        return frozenset(exchange_calendars.get_calendar_names(include_aliases=True))


@functools.lru_cache(maxsize=64)
def _span_sessions(name: str, first_year: int, last_year: int) -> np.ndarray:
    """Every session of calendar ``name`` from January 1 of ``first_year`` to December 31 of ``last_year``."""
    try:
        with warnings.catch_warnings():  # the library's own deprecation notices under newer pandas are not ours
            warnings.simplefilter("ignore")
            import exchange_calendars

            cal = exchange_calendars.get_calendar(name, start=f"{first_year:04d}-01-01",
                                                  end=f"{last_year:04d}-12-31")
            days = np.asarray(cal.sessions.values).astype("datetime64[D]")
    except Exception as exc:  # the library's bounds (or pandas' timestamp range) refuse the span
        raise WindowError(f"calendar {name!r} has no sessions for {first_year}..{last_year} "
                          f"({type(exc).__name__}: {str(exc)[:160]})") from None
    days.setflags(write=False)
    return days


def sessions(name: str, first: Any, last: Any) -> np.ndarray:
    """The sessions of calendar ``name`` from ``first`` to ``last`` (inclusive), as read-only ``datetime64[D]``.

    Args:
        name: An exchange calendar name (see :func:`check_calendar`).
        first, last: Dates (anything ``numpy.datetime64`` reads).

    Raises:
        WindowError: An unknown calendar, or dates outside the range the calendar covers.
    """
    lo, hi = np.datetime64(first, "D"), np.datetime64(last, "D")
    if hi < lo:
        return np.empty(0, dtype="datetime64[D]")
    y0, y1 = int(str(lo)[:4]), int(str(hi)[:4])
    span = _span_sessions(check_calendar(name), y0 - y0 % _SPAN_YEARS, y1 - y1 % _SPAN_YEARS + _SPAN_YEARS - 1)
    return span[np.searchsorted(span, lo, side="left"):np.searchsorted(span, hi, side="right")]


def window_sessions(name: str, first_day: Any, last: Any) -> np.ndarray:
    """The sessions of a window whose first decision is on ``first_day``: that day, then every session of
    calendar ``name`` after it up to ``last`` (read-only ``datetime64[D]``).

    The first decision's day leads even when the calendar has no session on it (a bar the calendar does not
    know), so the first decision is always number 1.
    """
    day = np.datetime64(first_day, "D")
    later = sessions(name, day + 1, last)
    out = np.concatenate(([day], later)).astype("datetime64[D]")
    out.setflags(write=False)
    return out


def session_positions(window: np.ndarray, dates: np.ndarray) -> np.ndarray:
    """Index in ``window`` (ascending sessions) of the latest session on or before each of ``dates``.

    A bar on a day the calendar has no session counts as the session before it; a date before the first
    session counts as 0. Reads nothing but each date itself and the calendar.
    """
    pos = np.searchsorted(window, np.asarray(dates).astype("datetime64[D]"), side="right") - 1
    return np.maximum(pos, 0).astype(np.int64)


__all__ = ["DEFAULT_CALENDAR", "check_calendar", "session_positions", "sessions", "window_sessions"]
