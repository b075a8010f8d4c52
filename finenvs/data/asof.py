"""The date lock: an as-of view over market data, and the look-ahead counter.

Every agent-facing read goes through an :class:`AsOfView`. A view has a clock
(``as_of``, a trading date); a read returns only rows dated on or before it. A
read that asks for anything later (an ``end`` or ``start`` past ``as_of``) still
returns exactly what was visible and is recorded as a look-ahead attempt in the
shared :class:`LookAheadCounter`, which envs report in ``info`` and the
scorecard counts.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.data.schema import PriceSeries
from finenvs.errors import DataError, WindowError

MAX_LOGGED_ATTEMPTS = 100


def to_day(value: Any, *, name: str = "date") -> np.datetime64:
    """Parse a date-like value to ``numpy.datetime64[D]``.

    Accepts ``YYYY-MM-DD`` strings, ``datetime.date``/``datetime``, numpy and pandas
    timestamps.

    Raises:
        WindowError: The value is not a date (message names the argument).
    """
    if isinstance(value, np.datetime64):
        day = value.astype("datetime64[D]")
    elif isinstance(value, (_dt.date, _dt.datetime)):
        day = np.datetime64(value.isoformat()[:10], "D")
    elif isinstance(value, str):
        try:
            day = np.datetime64(value.strip()[:10], "D")
            _dt.date.fromisoformat(value.strip()[:10])
        except ValueError as exc:
            raise WindowError(f"{name}={value!r} is not a date; use YYYY-MM-DD") from exc
    elif hasattr(value, "to_datetime64"):  # pandas Timestamp
        day = value.to_datetime64().astype("datetime64[D]")
    else:
        raise WindowError(f"{name}={value!r} is not a date; use YYYY-MM-DD")
    if np.isnat(day):
        raise WindowError(f"{name}={value!r} is not a date; use YYYY-MM-DD")
    return day


@dataclass(frozen=True)
class LookAheadAttempt:
    """One read that asked for data after the clock."""

    what: str
    as_of: str
    requested: str


@dataclass
class LookAheadCounter:
    """Counts reads that asked past the as-of date (shared by the views of one episode)."""

    attempts: int = 0
    log: list[LookAheadAttempt] = field(default_factory=list)

    def record(self, what: str, as_of: np.datetime64, requested: np.datetime64) -> None:
        self.attempts += 1
        if len(self.log) < MAX_LOGGED_ATTEMPTS:
            self.log.append(LookAheadAttempt(what, str(as_of), str(requested)))

    def reset(self) -> None:
        self.attempts = 0
        self.log.clear()


class AsOfView:
    """Date-locked reads of prices and rates.

    Args:
        lookup: ``symbol -> PriceSeries`` with the full history (the view clips it).
        as_of: The clock; rows dated after it are invisible.
        counter: Shared look-ahead counter (a new one if omitted).
        rate_lookup: ``series -> (dates, values)`` for :meth:`rate` (optional).
    """

    def __init__(
        self,
        lookup: Callable[[str], PriceSeries],
        as_of: Any,
        *,
        counter: LookAheadCounter | None = None,
        rate_lookup: Callable[[str], tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> None:
        self._lookup = lookup
        self.as_of = to_day(as_of, name="as_of")
        self.counter = counter if counter is not None else LookAheadCounter()
        self._rate_lookup = rate_lookup

    def at(self, as_of: Any) -> AsOfView:
        """A view of the same data at another clock, sharing the counter."""
        return AsOfView(self._lookup, as_of, counter=self.counter, rate_lookup=self._rate_lookup)

    def _visible_stop(self, dates: np.ndarray) -> int:
        return int(np.searchsorted(dates, self.as_of, side="right"))

    def prices(
        self,
        symbol: str,
        start: Any = None,
        end: Any = None,
        lookback: int | None = None,
    ) -> PriceSeries:
        """Bars of ``symbol`` dated within ``[start, end]`` and on or before ``as_of``.

        Args:
            symbol: Ticker.
            start: First date (inclusive); default: the first visible row.
            end: Last date (inclusive); default ``as_of``. Later than ``as_of`` is a
                look-ahead attempt: counted, and clipped to ``as_of``.
            lookback: Instead of ``start``, the last ``lookback`` visible rows up to ``end``.

        Returns:
            A (possibly empty) :class:`PriceSeries`; nothing dated after ``as_of``.
        """
        series = self._lookup(symbol)
        stop = self._visible_stop(series.dates)
        if end is not None:
            end_day = to_day(end, name="end")
            if end_day > self.as_of:
                self.counter.record(f"prices({symbol})", self.as_of, end_day)
            stop = min(stop, int(np.searchsorted(series.dates, end_day, side="right")))
        if start is not None and lookback is not None:
            raise DataError("pass either start or lookback, not both")
        if lookback is not None:
            if int(lookback) < 0:
                raise DataError(f"lookback={lookback} must be >= 0")
            begin = max(0, stop - int(lookback))
        elif start is not None:
            start_day = to_day(start, name="start")
            if start_day > self.as_of:
                self.counter.record(f"prices({symbol})", self.as_of, start_day)
            begin = min(stop, int(np.searchsorted(series.dates, start_day, side="left")))
        else:
            begin = 0
        return series.slice(begin, stop)

    def latest(self, symbol: str) -> dict[str, Any]:
        """The last visible bar of ``symbol`` as a JSON-able dict.

        Raises:
            DataError: No bar of ``symbol`` is dated on or before ``as_of``.
        """
        visible = self.prices(symbol, lookback=1)
        if len(visible) == 0:
            raise DataError(f"no {symbol} bar on or before {self.as_of}")
        return visible.to_records()[0]

    def calendar(self, symbol: str) -> np.ndarray:
        """Trading dates of ``symbol`` up to ``as_of`` (read-only)."""
        series = self._lookup(symbol)
        return series.dates[: self._visible_stop(series.dates)]

    def rate(self, series: str = "DTB3", date: Any = None) -> tuple[str, float]:
        """Latest observation of a rate series on or before ``date`` (default ``as_of``).

        Returns:
            ``(observation date, value in % p.a.)``; the date shows how stale it is.

        Raises:
            DataError: No rate source, or no observation visible.
        """
        if self._rate_lookup is None:
            raise DataError("this view has no rate data")
        dates, values = self._rate_lookup(series)
        when = self.as_of
        if date is not None:
            asked = to_day(date, name="date")
            if asked > self.as_of:
                self.counter.record(f"rate({series})", self.as_of, asked)
            when = min(asked, self.as_of)
        i = int(np.searchsorted(dates, when, side="right")) - 1
        if i < 0:
            raise DataError(f"no {series} observation on or before {when}")
        return str(dates[i]), float(values[i])
