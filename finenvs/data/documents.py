"""News and filing sections, and when each becomes visible to an agent.

The date lock for text is a rule about *time of day*, because a decision is
taken at a market close and text is published around the clock:

* **Decision time** of trading day ``d`` is the US market close, 16:00
  America/New_York, expressed in UTC (:func:`decision_time_utc`): 20:00 UTC
  under daylight saving time, 21:00 UTC otherwise.
* A **news item** is visible at the decision of day ``d`` when it was published
  at or before that instant (``published_at <= decision_time_utc(d)``).
* A **filing** carries only a filing date. EDGAR stamps a submission accepted
  after 17:30 ET with the next business day's date, so a filing dated ``f`` may
  have become public as late as 17:30 ET on ``f``. finenvs stamps it there
  (:func:`filing_available_utc`) and applies the same rule:
  ``filed_at <= decision time``, which makes a filing usable from the first
  decision *after* its filing date, never on the day itself. Periods of report
  play no part: filings are indexed by filed date, never by period end.

US daylight saving time (since 2007): from the second Sunday of March to the
first Sunday of November. The rule is computed here rather than read from a
time-zone database, so results never depend on the machine's tz data; the
tests check it against ``zoneinfo``.

Stores hold read-only numpy arrays and know nothing of clocks; the clock lives
in :class:`finenvs.data.asof.AsOfView`, which is the only agent-facing reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MARKET_CLOSE_MINUTES_ET = 16 * 60
EDGAR_CUTOFF_MINUTES_ET = 17 * 60 + 30


def _nth_sunday(year: int, month: int, n: int) -> np.datetime64:
    first = np.datetime64(f"{year:04d}-{month:02d}-01", "D")
    # numpy: 1970-01-01 was a Thursday; weekday 0 = Monday
    weekday = int((first.astype(np.int64) + 3) % 7)
    return first + np.timedelta64((6 - weekday) % 7 + 7 * (n - 1), "D")


def eastern_utc_offset_hours(day: np.datetime64) -> int:
    """Hours that US Eastern time is behind UTC on ``day`` (4 under DST, else 5).

    The switch happens at 02:00 local time on a Sunday, so every weekday is
    wholly on one side of it.
    """
    day = day.astype("datetime64[D]")
    year = int(str(day)[:4])
    start = _nth_sunday(year, 3, 2)
    end = _nth_sunday(year, 11, 1)
    return 4 if start <= day < end else 5


def _eastern_to_utc(day: Any, minutes: int) -> np.datetime64:
    day = np.datetime64(day, "D")
    local = day.astype("datetime64[s]") + np.timedelta64(minutes * 60, "s")
    return local + np.timedelta64(eastern_utc_offset_hours(day) * 3600, "s")


def decision_time_utc(day: Any) -> np.datetime64:
    """The market close of ``day`` (16:00 New York) as a UTC ``datetime64[s]``."""
    return _eastern_to_utc(day, MARKET_CLOSE_MINUTES_ET)


def filing_available_utc(filed: Any) -> np.datetime64:
    """When a filing dated ``filed`` is certainly public: 17:30 New York that day, in UTC."""
    return _eastern_to_utc(filed, EDGAR_CUTOFF_MINUTES_ET)


def iso_utc(instant: np.datetime64) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``."""
    return str(instant.astype("datetime64[s]")) + "Z"


def _readonly(values: Any, dtype: Any = object) -> np.ndarray:
    arr = np.array(values, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


NEWS_COLUMNS = ("id", "symbol", "published_at", "title", "summary", "source", "url", "provider", "provider_sentiment")


@dataclass(frozen=True, eq=False)
class NewsStore:
    """News items, one row per (item, symbol), sorted by symbol then publication time.

    Attributes:
        published: ``datetime64[s]`` UTC publication times.
        Other columns: object arrays of str (``provider_sentiment`` may hold None).
    """

    id: np.ndarray
    symbol: np.ndarray
    published: np.ndarray
    title: np.ndarray
    summary: np.ndarray
    source: np.ndarray
    url: np.ndarray
    provider: np.ndarray
    provider_sentiment: np.ndarray

    def __post_init__(self) -> None:
        bounds: dict[str, tuple[int, int]] = {}
        for i, sym in enumerate(self.symbol.tolist()):
            lo, _ = bounds.get(sym, (i, i))
            bounds[sym] = (lo, i + 1)
        object.__setattr__(self, "_bounds", bounds)

    @classmethod
    def from_columns(cls, table: dict[str, Any]) -> NewsStore:
        """Build from columns named as :data:`NEWS_COLUMNS` (any order of rows)."""
        published = np.asarray(table["published_at"]).astype("datetime64[s]")
        symbol = np.asarray(table["symbol"], dtype=object)
        order = np.lexsort((np.asarray(table["id"], dtype=object).astype(str), published, symbol.astype(str)))
        cols = {name: np.asarray(table[name], dtype=object)[order] for name in NEWS_COLUMNS if name != "published_at"}
        return cls(published=_readonly(published[order], "datetime64[s]"), **{k: _readonly(v) for k, v in cols.items()})

    @classmethod
    def empty(cls) -> NewsStore:
        return cls.from_columns({name: [] for name in NEWS_COLUMNS})

    def __len__(self) -> int:
        return int(self.id.shape[0])

    def symbol_rows(self, symbol: str) -> tuple[int, int]:
        """Row range ``[lo, hi)`` of one symbol (empty when it has no news)."""
        return self._bounds.get(symbol, (0, 0))  # type: ignore[attr-defined]

    def symbols(self) -> list[str]:
        return sorted(self._bounds)  # type: ignore[attr-defined]

    def rows_published_by(self, symbol: str, cutoff: np.datetime64) -> tuple[int, int]:
        """Row range ``[lo, stop)`` of the items of ``symbol`` published at or before ``cutoff``."""
        lo, hi = self.symbol_rows(symbol)
        return lo, lo + int(np.searchsorted(self.published[lo:hi], cutoff, side="right"))

    def symbols_published_by(self, cutoff: np.datetime64) -> list[str]:
        """Symbols with at least one item published at or before ``cutoff`` (sorted)."""
        bounds = self._bounds  # type: ignore[attr-defined]
        return [sym for sym in sorted(bounds) if self.published[bounds[sym][0]] <= cutoff]

    def rows_with_id(self, news_id: str) -> np.ndarray:
        return np.flatnonzero(self.id == news_id)

    def record(self, i: int, *, full: bool) -> dict[str, Any]:
        """Row ``i`` as JSON-able data (headline fields, or everything with ``full``)."""
        out: dict[str, Any] = {
            "id": str(self.id[i]),
            "symbol": str(self.symbol[i]),
            "published_at": iso_utc(self.published[i]),
            "title": str(self.title[i]),
            "source": str(self.source[i]),
        }
        if full:
            out["summary"] = str(self.summary[i])
            out["url"] = str(self.url[i])
            out["provider"] = str(self.provider[i])
            sentiment = self.provider_sentiment[i]
            out["provider_sentiment"] = None if sentiment is None or sentiment != sentiment else str(sentiment)
        return out


FILING_COLUMNS = ("filing_id", "symbol", "form", "filed", "section", "title", "text", "chars", "document")


@dataclass(frozen=True, eq=False)
class FilingStore:
    """Text sections of filings, one row per (filing, section), sorted by filed date.

    Each row carries its own filing date, and the as-of view serves each section only from that
    date's EDGAR cut-off (:func:`filing_available_utc`): a section filed later than the others of its
    filing stays invisible until then. The user layer refuses such a filing (its sections must share
    one date); a store built from columns may hold one, and it is served section by section.
    """

    filing_id: np.ndarray
    symbol: np.ndarray
    form: np.ndarray
    filed: np.ndarray  # datetime64[D]
    section: np.ndarray
    title: np.ndarray
    text: np.ndarray
    document: np.ndarray

    def __post_init__(self) -> None:
        available = np.array([filing_available_utc(d) for d in self.filed], dtype="datetime64[s]")
        available.setflags(write=False)
        object.__setattr__(self, "available", available)

    @classmethod
    def from_columns(cls, table: dict[str, Any]) -> FilingStore:
        filed = np.asarray(table["filed"]).astype("datetime64[D]")
        order = np.lexsort(
            (
                np.asarray(table["section"], dtype=object).astype(str),
                np.asarray(table["filing_id"], dtype=object).astype(str),
                filed,
            )
        )
        cols = {
            name: _readonly(np.asarray(table[name], dtype=object)[order])
            for name in FILING_COLUMNS
            if name not in ("filed", "chars")
        }
        return cls(filed=_readonly(filed[order], "datetime64[D]"), **cols)

    @classmethod
    def empty(cls) -> FilingStore:
        return cls.from_columns({name: [] for name in FILING_COLUMNS})

    def __len__(self) -> int:
        return int(self.filing_id.shape[0])

    def available_at(self) -> np.ndarray:
        """UTC instant each row becomes visible (see :func:`filing_available_utc`)."""
        return self.available  # type: ignore[attr-defined]

    def rows_available_by(self, cutoff: np.datetime64) -> int:
        """Rows ``[0, stop)`` are the sections public at or before ``cutoff`` (rows are sorted by filed date)."""
        return int(np.searchsorted(self.available_at(), cutoff, side="right"))


__all__ = [
    "EDGAR_CUTOFF_MINUTES_ET",
    "FILING_COLUMNS",
    "MARKET_CLOSE_MINUTES_ET",
    "NEWS_COLUMNS",
    "FilingStore",
    "NewsStore",
    "decision_time_utc",
    "eastern_utc_offset_hours",
    "filing_available_utc",
    "iso_utc",
]
