"""Adjusted closes of several symbols aligned on their common trading days (FinHedging-v0's universe and the
multi-agent pairs market's legs), with the calendar check that tells a holiday from missing data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from finenvs.data.schema import PriceSeries, date_span
from finenvs.errors import DataError, WindowError

#: Inside the rows an episode reads, a symbol may lack at most this many consecutive days that
#: another symbol of the universe trades (a holiday on its own calendar); more is missing data.
MAX_CALENDAR_GAP = 1


@dataclass(frozen=True, eq=False)
class Universe:
    """Adjusted closes of n symbols aligned on their common trading days.

    Attributes:
        symbols: Tickers, in action-index order.
        dates: Common trading dates (``datetime64[D]``).
        close: ``(n, T)`` closes, read-only.
        log_close: ``log(close)``.
        returns: ``(n, T)`` daily log returns (column 0 is 0).
        date_strings: ISO dates.
        close_values: Per symbol, the closes as a tuple of floats (fast reads in the step loop).
    """

    symbols: tuple[str, ...]
    dates: np.ndarray
    close: np.ndarray
    log_close: np.ndarray
    returns: np.ndarray
    date_strings: tuple[str, ...]
    close_values: tuple[tuple[float, ...], ...]

    @classmethod
    def align(cls, series: list[PriceSeries]) -> Universe:
        """Align ``series`` on the dates every one of them has.

        Raises:
            DataError: Fewer than 2 series, or a symbol listed twice.
        """
        symbols = [s.symbol for s in series]
        if len(series) < 2:
            raise DataError(f"a pairs universe needs at least 2 symbols; got {symbols}")
        dupes = sorted({s for s in symbols if symbols.count(s) > 1})
        if dupes:
            raise DataError(f"symbol(s) {dupes} appear more than once in the universe {symbols}")
        common = series[0].dates
        for s in series[1:]:
            common = np.intersect1d(common, s.dates, assume_unique=True)
        if common.size < 2:
            raise DataError(f"symbols {symbols} share {common.size} trading day(s); a pairs universe needs at least 2")
        close = np.empty((len(series), common.size))
        for k, s in enumerate(series):
            close[k] = s.close[np.searchsorted(s.dates, common)]
        log_close = np.log(close)
        returns = np.zeros_like(log_close)
        returns[:, 1:] = np.diff(log_close, axis=1)
        for arr in (close, log_close, returns):
            arr.setflags(write=False)
        return cls(
            symbols=tuple(symbols),
            dates=common,
            close=close,
            log_close=log_close,
            returns=returns,
            date_strings=tuple(np.datetime_as_string(common, unit="D").tolist()),
            close_values=tuple(tuple(row.tolist()) for row in close),
        )

    def __len__(self) -> int:
        return int(self.dates.shape[0])

    @property
    def n(self) -> int:
        return len(self.symbols)


def check_calendars(series: list[PriceSeries], first: np.datetime64, last: np.datetime64) -> None:
    """Check every symbol has data over ``first..last`` (the rows an episode reads).

    Calendars may differ by single days (each symbol's own holidays): those
    days are dropped for every symbol when the universe is aligned. A symbol
    whose data starts after ``first`` or ends before ``last``, or that lacks
    more than :data:`MAX_CALENDAR_GAP` consecutive days other symbols trade,
    is missing data; so is a run of more than one day missing from the aligned
    calendar (single days missing from different symbols that add up).

    Raises:
        WindowError: Naming the symbol (or the common calendar) and the days it lacks.
    """
    union = np.unique(np.concatenate([s.dates[(s.dates >= first) & (s.dates <= last)] for s in series]))
    for s in series:
        if s.dates.size == 0 or s.dates[0] > first or s.dates[-1] < last:
            raise WindowError(
                f"{s.symbol} has no data for part of {first}..{last} (its data covers {date_span(s.dates)}); "
                "every symbol of the universe must cover the window and its history"
            )
        _check_run(~np.isin(union, s.dates), union, s.symbol, "")
    common = union
    for s in series:
        common = common[np.isin(common, s.dates)]
    _check_run(~np.isin(union, common), union, "the universe's common calendar",
               "single days missing from different symbols add up")


def _check_run(missing: np.ndarray, union: np.ndarray, who: str, why: str) -> None:
    """Raise if ``missing`` has a run longer than :data:`MAX_CALENDAR_GAP` (days of ``union``)."""
    run = 0
    for k, miss in enumerate(missing):
        run = run + 1 if miss else 0
        if run > MAX_CALENDAR_GAP:
            gap_end = k
            while gap_end + 1 < missing.size and missing[gap_end + 1]:
                gap_end += 1
            note = f" ({why})" if why else ""
            raise WindowError(
                f"{who} is missing {gap_end - k + run} consecutive trading day(s) "
                f"{union[k - run + 1]}..{union[gap_end]} that other symbols of the universe trade{note}; "
                f"calendars may differ by at most {MAX_CALENDAR_GAP} day(s) in a row"
            )


__all__ = ["MAX_CALENDAR_GAP", "Universe", "check_calendars"]
