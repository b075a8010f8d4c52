"""The date lock: an as-of view over market data, and the look-ahead counter.

Every agent-facing read goes through an :class:`AsOfView`. A view has a clock
(``as_of``, a trading date, read as its market close); a read returns only what
was public at that close:

* prices: rows dated on or before ``as_of``;
* rates: observations dated *before* ``as_of`` — the Federal Reserve's H.15
  release publishes a day's rates on the next business day, so at the close of
  ``as_of`` that day's print is not yet public;
* news: items published at or before the close of ``as_of`` (16:00 New York);
* filings: filings whose filing date is before ``as_of`` (a filing dated ``f`` is
  stamped 17:30 New York on ``f``, EDGAR's cut-off; see :mod:`finenvs.data.documents`);
* option chains: snapshots taken at the close of a date on or before ``as_of``.

A read that asks for anything later (an ``end`` or ``start`` past ``as_of``, a
news item, filing or filing section not yet public, a symbol not yet listed)
still returns exactly what was visible and is recorded as a look-ahead attempt
in the shared :class:`LookAheadCounter`, which envs report in ``info`` and the
scorecard counts. A request for something not yet public gets the same answer,
byte for byte, as one for something that does not exist, so the answer itself
leaks nothing:

* a symbol is *readable* at ``as_of`` when it has a bar dated on or before it;
  :meth:`AsOfView.symbols` lists only readable symbols, and a price read of a
  symbol listed later raises the same :class:`~finenvs.errors.UnknownSymbolError`
  as an unknown symbol, naming only readable ones;
* each filing section carries its own filing date: a section filed later is
  absent from :meth:`AsOfView.filings` and answers like a missing section.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.data.documents import FilingStore, NewsStore, decision_time_utc, iso_utc
from finenvs.data.schema import PriceSeries
from finenvs.errors import DataError, UnknownSymbolError, WindowError, shown

MAX_LOGGED_ATTEMPTS = 100
#: At most this many symbol names in an unknown-symbol error (the rest are counted).
MAX_SYMBOLS_IN_ERROR = 50


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


class Listing(list):
    """A sorted list of symbols that also knows the date of each one's first bar.

    :meth:`finenvs.data.catalog.Catalog.symbols` returns one, so that an :class:`AsOfView` given it
    tells the symbols readable at its clock from one dictionary instead of one price lookup per
    symbol. ``first_bars`` is called only when needed (it may query the catalog once). It is a plain
    ``list`` otherwise, and pickles as one.
    """

    __slots__ = ("_first_bars",)

    def __init__(self, names: Iterable[str], first_bars: Callable[[], Mapping[str, str]]) -> None:
        super().__init__(names)
        self._first_bars = first_bars

    def first_bars(self) -> Mapping[str, str]:
        """``symbol -> YYYY-MM-DD`` of its first bar (a symbol without a bar is absent)."""
        return self._first_bars()

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


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
    """Date-locked reads of prices, rates, news and filing sections.

    Args:
        lookup: ``symbol -> PriceSeries`` with the full history (the view clips it).
        as_of: The clock; rows dated after it are invisible.
        counter: Shared look-ahead counter (a new one if omitted).
        rate_lookup: ``series -> (dates, values)`` for :meth:`rate` (optional).
        news: News store for :meth:`news` / :meth:`news_item` (optional: no news).
        filings: Filing sections for :meth:`filings` / :meth:`filing_section` (optional).
        symbols: The symbols ``lookup`` serves, for :meth:`symbols` and error messages (a
            :class:`Listing` spares a lookup per symbol when telling which are readable).
        chain_lookup: ``symbol -> [OptionChain, ...]`` (oldest first) for :meth:`option_chain` (optional).
    """

    def __init__(
        self,
        lookup: Callable[[str], PriceSeries],
        as_of: Any,
        *,
        counter: LookAheadCounter | None = None,
        rate_lookup: Callable[[str], tuple[np.ndarray, np.ndarray]] | None = None,
        news: NewsStore | None = None,
        filings: FilingStore | None = None,
        symbols: list[str] | tuple[str, ...] | None = None,
        chain_lookup: Callable[[str], list[Any]] | None = None,
    ) -> None:
        self._lookup = lookup
        self.as_of = to_day(as_of, name="as_of")
        self._as_of_date = self.as_of.item()  # datetime.date: compares ten times faster than a numpy scalar
        self._decision_time: np.datetime64 | None = None
        self.counter = counter if counter is not None else LookAheadCounter()
        self._rate_lookup = rate_lookup
        self._news = news
        self._filings = filings
        self._symbols = tuple(symbols) if symbols is not None else None
        self._listing = symbols if isinstance(symbols, Listing) else None
        self._readable: list[str] | None = None  # symbols(), computed once per view
        self._chain_lookup = chain_lookup

    def _replace(self, **changes: Any) -> AsOfView:
        kwargs: dict[str, Any] = {
            "counter": self.counter,
            "rate_lookup": self._rate_lookup,
            "news": self._news,
            "filings": self._filings,
            "symbols": self._listing if self._listing is not None else self._symbols,
            "chain_lookup": self._chain_lookup,
        }
        as_of = changes.pop("as_of", self.as_of)
        kwargs.update(changes)
        return AsOfView(self._lookup, as_of, **kwargs)

    def at(self, as_of: Any) -> AsOfView:
        """A view of the same data at another clock, sharing the counter."""
        return self._replace(as_of=as_of)

    def with_documents(self, news: NewsStore | None = None, filings: FilingStore | None = None) -> AsOfView:
        """The same view reading other news and/or filing stores (the ones given replace the current)."""
        return self._replace(
            news=news if news is not None else self._news,
            filings=filings if filings is not None else self._filings,
        )

    @property
    def decision_time(self) -> np.datetime64:
        """The instant of the clock: the market close of ``as_of`` in UTC (computed once per view)."""
        if self._decision_time is None:
            self._decision_time = decision_time_utc(self.as_of)
        return self._decision_time

    def symbols(self) -> list[str]:
        """Symbols whose prices this view can read: those with a bar dated on or before ``as_of``.

        A symbol whose first bar is later is left out, exactly as if the data did not hold it
        (empty when the view was given no symbol list). One dictionary read per symbol with a
        :class:`Listing`, else one price lookup per symbol; computed once per view.
        """
        if self._readable is None:
            names = self._symbols or ()
            if self._listing is not None:
                first, day = self._listing.first_bars(), str(self.as_of)  # ISO days compare as text
                self._readable = [s for s in names if first.get(s, "~") <= day]
            else:
                self._readable = [s for s in names if self._first_bar(s) is not None]
        return list(self._readable)

    def _first_bar(self, symbol: str) -> np.datetime64 | None:
        """The first bar's date of a symbol readable at ``as_of`` (None when it is not)."""
        try:
            dates = self._lookup(symbol).dates
        except KeyError:
            return None
        return dates[0] if dates.size and dates.item(0) <= self._as_of_date else None

    def unknown_symbol(self, symbol: Any) -> UnknownSymbolError:
        """The error for a symbol this view cannot read: the same whether the data does not hold it or
        lists it only after ``as_of``; it names readable symbols only."""
        text = f"unknown symbol {shown(symbol, 40)}: no bar of it is readable as of {self.as_of}"
        if self._symbols is not None:
            names = self.symbols()
            more = f" and {len(names) - MAX_SYMBOLS_IN_ERROR} more" if len(names) > MAX_SYMBOLS_IN_ERROR else ""
            text += f"; readable symbols: {names[:MAX_SYMBOLS_IN_ERROR]}{more}"
        return UnknownSymbolError(text)

    def _series(self, symbol: str, what: str) -> PriceSeries:
        """The full series of a symbol readable at ``as_of`` (the view clips it).

        Raises:
            UnknownSymbolError: :meth:`unknown_symbol`, for a symbol the data does not hold and for one
                whose first bar is after ``as_of`` (that one is also counted as a look-ahead attempt).
        """
        try:
            series = self._lookup(symbol)
        except KeyError:  # the lookup's own message may name every symbol, later ones too
            raise self.unknown_symbol(symbol) from None
        dates = series.dates
        if not dates.size or dates.item(0) > self._as_of_date:
            if dates.size:
                self.counter.record(f"{what}({symbol})", self.as_of, dates[0])
            raise self.unknown_symbol(symbol)
        return series

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

        Raises:
            UnknownSymbolError: ``symbol`` has no bar on or before ``as_of`` (see :meth:`unknown_symbol`).
        """
        series = self._series(symbol, "prices")
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
            UnknownSymbolError: No bar of ``symbol`` is dated on or before ``as_of``.
        """
        visible = self.prices(symbol, lookback=1)
        if len(visible) == 0:
            raise DataError(f"no {symbol} bar on or before {self.as_of}")
        return visible.to_records()[0]

    def calendar(self, symbol: str) -> np.ndarray:
        """Trading dates of ``symbol`` up to ``as_of`` (read-only).

        Raises:
            UnknownSymbolError: ``symbol`` has no bar on or before ``as_of`` (see :meth:`unknown_symbol`).
        """
        series = self._series(symbol, "calendar")
        return series.dates[: self._visible_stop(series.dates)]

    def rate(self, series: str = "DTB3", date: Any = None) -> tuple[str, float]:
        """Latest published observation of a rate series, as of ``date`` (default ``as_of``).

        A print dated ``d`` is published on the next business day (H.15), so at
        the close of ``as_of`` only prints dated before ``as_of`` are visible;
        with ``date`` earlier than ``as_of``, prints dated on or before ``date``.

        Returns:
            ``(observation date, value in % p.a.)``; the date shows how stale it is.

        Raises:
            DataError: No rate source, or no observation visible.
        """
        if self._rate_lookup is None:
            raise DataError("this view has no rate data")
        dates, values = self._rate_lookup(series)
        last = self.as_of - np.timedelta64(1, "D")  # newest print that can be public at the close
        if date is not None:
            asked = to_day(date, name="date")
            if asked > self.as_of:
                self.counter.record(f"rate({series})", self.as_of, asked)
            last = min(asked, last)
        i = int(np.searchsorted(dates, last, side="right")) - 1
        if i < 0:
            raise DataError(f"no {series} observation published by {self.as_of} (dated on or before {last})")
        return str(dates[i]), float(values[i])

    def option_chain(self, symbol: str, snapshot: Any = None) -> Any:
        """The newest real option chain of ``symbol`` taken on or before ``snapshot`` (default ``as_of``).

        A ``snapshot`` after ``as_of`` is a look-ahead attempt: counted, and the
        answer is the newest chain visible at ``as_of``.

        Raises:
            DataError: No chain of ``symbol`` is visible (names the visible snapshot dates, if any).
        """
        if self._chain_lookup is None:
            raise DataError("this view has no option chain data")
        last = self.as_of
        if snapshot is not None:
            asked = to_day(snapshot, name="snapshot")
            if asked > self.as_of:
                self.counter.record(f"option_chain({symbol})", self.as_of, asked)
            last = min(asked, last)
        visible = [c for c in self._chain_lookup(symbol) if c.snapshot <= last]
        if not visible:
            raise DataError(f"no {symbol} option chain snapshot on or before {last}; generate one with "
                            "finenvs.data.chains.synthetic_chain(view, symbol)")
        return visible[-1]

    def option_snapshots(self, symbol: str) -> list[str]:
        """Dates of the real chain snapshots of ``symbol`` visible at ``as_of``."""
        if self._chain_lookup is None:
            return []
        return [str(c.snapshot) for c in self._chain_lookup(symbol) if c.snapshot <= self.as_of]

    # ------------------------------------------------------------------ text
    def news(
        self,
        symbol: str,
        *,
        lookback_days: int | None = 7,
        start: Any = None,
        end: Any = None,
    ) -> list[dict[str, Any]]:
        """Headlines of ``symbol`` public by the close of ``as_of``, newest first.

        Args:
            symbol: Ticker.
            lookback_days: Calendar days back from the clock: items published in
                ``(close(as_of) - lookback_days, close(as_of)]``. Ignored with ``start``.
            start: Earliest day: items published after the previous day's close
                (``close(start - 1 day)``). Past ``as_of`` is a look-ahead attempt.
            end: Latest day (its close); later than ``as_of`` is a look-ahead
                attempt, counted and clipped to the clock.

        Returns:
            A possibly empty list (no news for a symbol or window is a valid answer).
        """
        if self._news is None:
            return []
        cutoff = self.decision_time
        if end is not None:
            end_day = to_day(end, name="end")
            if end_day > self.as_of:
                self.counter.record(f"news({symbol})", self.as_of, end_day)
            cutoff = min(cutoff, decision_time_utc(end_day))
        if start is not None:
            start_day = to_day(start, name="start")
            if start_day > self.as_of:
                self.counter.record(f"news({symbol})", self.as_of, start_day)
            since = decision_time_utc(start_day - np.timedelta64(1, "D"))
        elif lookback_days is not None:
            if int(lookback_days) < 0:
                raise DataError(f"lookback_days={lookback_days} must be >= 0")
            since = self.decision_time - np.timedelta64(int(lookback_days) * 86400, "s")
        else:
            since = None
        lo, hi = self._news.symbol_rows(symbol)
        published = self._news.published[lo:hi]
        stop = lo + int(np.searchsorted(published, cutoff, side="right"))
        begin = lo if since is None else lo + int(np.searchsorted(published, since, side="right"))
        return [self._news.record(i, full=False) for i in range(stop - 1, begin - 1, -1)]

    def news_item(self, news_id: str) -> dict[str, Any]:
        """One news item in full, if it was public by the close of ``as_of``.

        Raises:
            DataError: No such item is visible (same message whether it does not
                exist or is not yet published; the latter is a look-ahead attempt).
        """
        news = self._news
        rows = news.rows_with_id(str(news_id)) if news is not None else np.empty(0, dtype=int)
        if news is not None and rows.size:
            i = int(rows[0])
            if news.published[i] <= self.decision_time:
                return news.record(i, full=True)
            self.counter.record(f"news_item({news_id})", self.as_of, news.published[i].astype("datetime64[D]"))
        raise DataError(f"no news item with id {news_id!r} is visible as of {self.as_of}")

    def news_coverage(self, symbol: str) -> dict[str, Any]:
        """What the news store holds for ``symbol`` among the items public by the close of ``as_of``.

        Only visible items are consulted, so the answer is the same whatever the store holds later.

        Returns:
            ``symbol``, ``as_of``, ``count`` and the ``first_published_at`` / ``latest_published_at``
            times (None when ``count`` is 0); with no visible item, also ``symbols_with_news``: the
            symbols that do have an item public by the close (sorted).
        """
        cutoff = self.decision_time
        news = self._news
        lo, stop = news.rows_published_by(symbol, cutoff) if news is not None else (0, 0)
        out: dict[str, Any] = {
            "symbol": symbol,
            "as_of": str(self.as_of),
            "count": stop - lo,
            "first_published_at": None,
            "latest_published_at": None,
        }
        if news is not None and stop > lo:
            out["first_published_at"] = iso_utc(news.published[lo])
            out["latest_published_at"] = iso_utc(news.published[stop - 1])
        if stop == lo:
            out["symbols_with_news"] = news.symbols_published_by(cutoff) if news is not None else []
        return out

    def filing_coverage(self, symbol: str) -> dict[str, Any]:
        """What the filing store holds for ``symbol`` among the filings public by the close of ``as_of``.

        Returns:
            ``symbol``, ``as_of``, ``count`` (filings), ``first_filed`` / ``latest_filed`` (None when
            ``count`` is 0) and ``forms`` (filings per form); with no visible filing, also
            ``symbols_with_filings``: the filers with a filing public by the close (sorted).
        """
        store = self._filings
        if store is None:
            return {"symbol": symbol, "as_of": str(self.as_of), "count": 0, "first_filed": None,
                    "latest_filed": None, "forms": {}, "symbols_with_filings": []}
        stop = store.rows_available_by(self.decision_time)
        rows = np.flatnonzero(store.symbol[:stop] == symbol) if stop else np.empty(0, dtype=int)
        forms: dict[str, str] = {}
        for i in rows:
            forms.setdefault(str(store.filing_id[i]), str(store.form[i]))
        out: dict[str, Any] = {
            "symbol": symbol,
            "as_of": str(self.as_of),
            "count": len(forms),
            "first_filed": str(store.filed[rows[0]]) if rows.size else None,
            "latest_filed": str(store.filed[rows[-1]]) if rows.size else None,
            "forms": {form: list(forms.values()).count(form) for form in sorted(set(forms.values()))},
        }
        if not rows.size:
            out["symbols_with_filings"] = sorted({str(s) for s in store.symbol[:stop]}) if stop else []
        return out

    def _visible_filing_rows(self) -> np.ndarray:
        if self._filings is None:
            return np.empty(0, dtype=int)
        return np.flatnonzero(self._filings.available_at() <= self.decision_time)

    def filings(self, symbol: str | None = None, form: str | None = None) -> list[dict[str, Any]]:
        """Filings public by the close of ``as_of`` (newest first), with their public sections.

        Each section is public from its own filing date: a section filed later is not listed (and
        a filing none of whose sections is public yet is not listed at all). A filing's ``filed``
        and ``available_at`` are those of its earliest public section.

        Args:
            symbol: Only this filer (default: all).
            form: Only this form, e.g. ``"10-K"`` or ``"10-Q"`` (case-insensitive).
        """
        store = self._filings
        if store is None:
            return []
        out: dict[str, dict[str, Any]] = {}
        for i in self._visible_filing_rows()[::-1]:  # newest first: a filing's last row seen is its earliest
            if symbol is not None and store.symbol[i] != symbol:
                continue
            if form is not None and str(store.form[i]).upper() != str(form).upper():
                continue
            fid = str(store.filing_id[i])
            entry = out.setdefault(fid, {"id": fid, "symbol": str(store.symbol[i]), "form": str(store.form[i]),
                                         "filed": "", "available_at": "", "sections": []})
            entry["filed"], entry["available_at"] = str(store.filed[i]), iso_utc(store.available_at()[i])
            entry["sections"].append(
                {"section": str(store.section[i]), "title": str(store.title[i]), "chars": len(store.text[i])}
            )
        for entry in out.values():
            entry["sections"].sort(key=lambda s: s["section"])
        return sorted(out.values(), key=lambda e: (e["filed"], e["id"]), reverse=True)

    def filing_section(self, filing_id: str, section: str) -> dict[str, Any]:
        """The full text of one section of a filing, public by the close of ``as_of``.

        Each section is public from its own filing date. A filing none of whose sections is public
        answers like a filing that does not exist, and a section filed later like a section the
        filing does not have; each of those is also counted as a look-ahead attempt.

        Raises:
            DataError: The filing has no public section (same message whether it does not exist or is
                not yet public), or no public section of that name (the message lists its public ones).
        """
        store = self._filings
        if store is None:
            raise DataError(f"no filing with id {filing_id!r} is visible as of {self.as_of}")
        rows = np.flatnonzero(store.filing_id == filing_id)
        public = rows[store.available_at()[rows] <= self.decision_time] if rows.size else rows
        if public.size == 0:
            if rows.size:
                self.counter.record(f"filing({filing_id})", self.as_of, store.filed[rows].min())
            raise DataError(f"no filing with id {filing_id!r} is visible as of {self.as_of}")
        for i in rows:
            if store.section[i] == section and i not in public:
                self.counter.record(f"filing({filing_id}, {section})", self.as_of, store.filed[i])
        for i in public:
            if store.section[i] == section:
                return {
                    "id": str(filing_id),
                    "symbol": str(store.symbol[i]),
                    "form": str(store.form[i]),
                    "filed": str(store.filed[i]),
                    "section": str(section),
                    "title": str(store.title[i]),
                    "text": str(store.text[i]),
                    "document": str(store.document[i]),
                }
        have = sorted(str(store.section[i]) for i in public)
        raise DataError(f"filing {filing_id!r} has no section {section!r}; its sections: {have}")


__all__ = ["AsOfView", "Listing", "LookAheadAttempt", "LookAheadCounter", "to_day"]
