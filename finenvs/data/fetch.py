"""``finenvs data fetch``: daily bars and news from Yahoo Finance, filings from SEC EDGAR, into the user layer.

Fetched rows enter the layer through :class:`finenvs.data.user_layer.UserLayer` exactly as a file
given to ``finenvs data add`` does: the same schema checks, overlap rules, manifest, digest and
as-of rules (a bar is seen from its session's close, a news item from its publication time). The
source is reached only through its adapter (:mod:`finenvs.data.sources.yahoo`,
:mod:`finenvs.data.sources.edgar`), which replays recorded responses when ``$FINENVS_FETCH_REPLAY`` is set.

* **Resume.** For each symbol only the sessions after the last bar held (shipped or user) are
  asked for; ``--start`` is needed only for a symbol with no bars yet. News items already held
  (same ``(id, symbol)``) are not re-added.
* **Complete bars only.** ``end`` (default: today in New York) is capped at the last session whose
  bar is final: before :data:`BAR_FINAL_AT` New York time, today's bar is still moving and is not
  fetched (a later fetch would then conflict with the held bar).
* **Rate limit.** ``sleep`` seconds pass between two calls to the source (default
  :data:`DEFAULT_SLEEP`).
* **What could not be got** is one :class:`Outcome` per symbol with status ``"failed"`` and the
  reason: the source's error, no bars for sessions that exist, or the validation error that
  ``data add`` would give (file, row, column).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.data.calendar import DEFAULT_CALENDAR, sessions
from finenvs.data.user_files import merge_series
from finenvs.errors import DataError, WindowError, shown
from finenvs.text.plural import counted

#: Seconds between two calls to a source (Yahoo throttles bursts).
DEFAULT_SLEEP = 1.0
#: New York time from which the day's daily bar is final (the close is 16:00; Yahoo settles it after).
BAR_FINAL_AT = dt.time(18, 0)
_MESSAGE_LIMIT = 500


@dataclass(frozen=True)
class Outcome:
    """What one fetch of one symbol did."""

    kind: str  # "prices" | "news" | "filings"
    symbol: str
    status: str  # "added" | "up to date" | "failed"
    added: int = 0
    skipped: int = 0
    date_min: str | None = None
    date_max: str | None = None
    message: str = ""

    def line(self) -> str:
        unit = {"prices": "bars", "news": "news items"}.get(self.kind, "filing sections")
        if self.status == "failed":
            return f"could not get {self.kind} of {self.symbol}: {self.message}"
        if self.status == "up to date":
            return f"{self.kind} {self.symbol}: up to date ({self.message})"
        span = f" ({self.date_min}..{self.date_max})" if self.added else ""
        return f"{self.kind} {self.symbol}: added {self.added} {unit}{span}; {self.skipped} already held"


def _short(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split()) if not isinstance(exc, DataError) else " ".join(
        str(exc).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "..."


def last_final_day(now: dt.datetime | None = None) -> str:
    """The last day whose daily bar is final at ``now`` (default: the current time), as an ISO day in New York."""
    from zoneinfo import ZoneInfo

    local = (now or dt.datetime.now(dt.timezone.utc)).astimezone(ZoneInfo("America/New_York"))
    day = local.date() if local.time() >= BAR_FINAL_AT else local.date() - dt.timedelta(days=1)
    return day.isoformat()


class Pacer:
    """Sleeps ``seconds`` before every call but the first."""

    def __init__(self, seconds: float) -> None:
        self.seconds = max(0.0, float(seconds))
        self.calls = 0

    def wait(self) -> None:
        if self.calls and self.seconds:
            time.sleep(self.seconds)
        self.calls += 1


def _default_source() -> Any:
    from finenvs.data.sources import yahoo

    return yahoo


def _setup(layer: Any, catalog: Any, source: Any) -> tuple[Any, Any, Any]:
    from finenvs.data.catalog import default_catalog
    from finenvs.data.user_layer import UserLayer

    return (layer if layer is not None else UserLayer(), catalog if catalog is not None else default_catalog(),
            source if source is not None else _default_source())


def fetch_prices(symbols: Sequence[str], *, start: str | None = None, end: str | None = None, dataset: str = "core",
                 layer: Any = None, catalog: Any = None, source: Any = None, sleep: float = DEFAULT_SLEEP,
                 progress: Callable[[str], None] | None = None, now: dt.datetime | None = None,
                 pacer: Pacer | None = None) -> list[Outcome]:
    """Fetch daily bars of ``symbols`` into the user layer (see the module doc); one :class:`Outcome` each.

    Args:
        symbols: Tickers as the source names them (``^GSPC``, ``BRK-B``).
        start: First day (ISO) for a symbol with no bars held; later than the day after the last held bar, it wins.
        end: Last day (ISO, inclusive); default and cap: :func:`last_final_day`.
        dataset: The price dataset the bars join (one the catalog ships).
        layer, catalog: The user layer and catalog (default: the process-wide ones).
        source: An object with ``fetch_bars(symbol, start, end) -> DataFrame`` (default: Yahoo's adapter).
        sleep: Seconds between two calls to the source.
        progress: Called with one line per symbol as it finishes.
        now: The current time (for the cap on ``end``; default: the clock).
        pacer: Shared with a following :func:`fetch_news` so the pause holds across both (default: a new one).
    """
    layer, catalog, source = _setup(layer, catalog, source)
    final = last_final_day(now)
    last = min(end, final) if end else final
    pacer, out = pacer if pacer is not None else Pacer(sleep), []
    for i, symbol in enumerate(symbols, 1):
        outcome = _fetch_one_symbol(symbol, start, last, dataset, layer, catalog, source, pacer)
        out.append(outcome)
        if progress is not None:
            progress(f"[{i}/{len(symbols)}] {outcome.line()}")
    return out


def _bad_symbol(symbol: Any) -> str | None:
    """Why ``symbol`` cannot name a layer file (checked before any call: it also names a replay file), or None."""
    from finenvs.data.user_layer import SYMBOL_PATTERN

    if isinstance(symbol, str) and SYMBOL_PATTERN.fullmatch(symbol):
        return None
    return f"symbol {shown(symbol)}: use letters, digits and ^ . _ = - (at most 32 characters)"


def _fetch_one_symbol(symbol: str, start: str | None, end: str, dataset: str, layer: Any, catalog: Any, source: Any,
                      pacer: Pacer) -> Outcome:
    bad = _bad_symbol(symbol)
    if bad:
        return Outcome("prices", str(symbol)[:40], "failed", message=bad)
    try:
        held = merge_series(catalog.shipped_series(symbol, dataset), layer.series(symbol, dataset))
    except DataError as exc:  # an unknown dataset, a layer file edited by hand
        return Outcome("prices", symbol, "failed", message=_short(exc))
    first = start
    if held is not None and len(held):
        after = str(held.dates[-1] + np.timedelta64(1, "D"))
        first = after if first is None or first < after else first
    if first is None:
        return Outcome("prices", symbol, "failed",
                       message=f"no bars of {symbol} held in dataset {dataset!r}: give --start for its first day")
    if first > end:
        return Outcome("prices", symbol, "up to date", message=f"last bar {held.dates[-1] if held else '-'}, "
                                                               f"nothing final after it up to {end}")
    try:
        open_days = len(sessions(DEFAULT_CALENDAR, first, end))
    except WindowError:
        open_days = -1  # outside the calendar's range: ask the source anyway
    if open_days == 0:
        return Outcome("prices", symbol, "up to date", message=f"no session from {first} to {end}")
    pacer.wait()
    try:
        frame = source.fetch_bars(symbol, first, end)
    except Exception as exc:  # noqa: BLE001 - the source's library raises anything (HTTP, JSON, its own types)
        return Outcome("prices", symbol, "failed", message=f"{first}..{end}: {_short(exc)}")
    if frame is None or len(frame) == 0:
        return Outcome("prices", symbol, "failed", message=f"the source returned no bars for {first}..{end}")
    frame = frame.reset_index()
    frame = frame.rename(columns={frame.columns[0]: "date"})
    try:
        result = layer.add_prices(frame, symbol, dataset, catalog=catalog,
                                  source=f"yahoo bars of {symbol} {first}..{end}")
    except DataError as exc:
        return Outcome("prices", symbol, "failed", message=_short(exc))
    return Outcome("prices", symbol, "added", result.added, result.skipped, result.date_min, result.date_max)


# ---------------------------------------------------------------------------- news
def news_rows(items: Sequence[Any], symbol: str) -> list[dict[str, str]]:
    """Yahoo news items (either shape ``yfinance`` has returned) as rows of the user layer's news file.

    A missing field becomes ``""``, which the layer's checks then name (row and column).
    """
    rows = []
    for item in items:
        item = item if isinstance(item, dict) else {}
        content = item.get("content") if isinstance(item.get("content"), dict) else None
        if content is not None:  # yfinance >= 0.2.50
            provider = content.get("provider") if isinstance(content.get("provider"), dict) else {}
            link = next((u.get("url") for u in (content.get("canonicalUrl"), content.get("clickThroughUrl"))
                         if isinstance(u, dict) and u.get("url")), "")
            row = {"id": item.get("id") or content.get("id"), "title": content.get("title"),
                   "summary": content.get("summary") or content.get("description"),
                   "published_at": content.get("pubDate") or content.get("displayTime"),
                   "source": provider.get("displayName"), "url": link}
        else:  # the older flat shape
            stamp = item.get("providerPublishTime")
            when = (dt.datetime.fromtimestamp(stamp, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else stamp)
            row = {"id": item.get("uuid") or item.get("id"), "title": item.get("title"), "summary": item.get("summary"),
                   "published_at": when, "source": item.get("publisher"), "url": item.get("link")}
        out = {k: "" if v is None else str(v) for k, v in row.items()}
        out.update(symbol=symbol, provider="yahoo", provider_sentiment="")
        rows.append(out)
    return rows


def fetch_news(symbols: Sequence[str], *, start: str | None = None, end: str | None = None, layer: Any = None,
               catalog: Any = None, source: Any = None, sleep: float = DEFAULT_SLEEP,
               progress: Callable[[str], None] | None = None, pacer: Pacer | None = None) -> list[Outcome]:
    """Fetch the news Yahoo lists for ``symbols`` into the user layer; one :class:`Outcome` each.

    Items published (UTC day) before ``start`` or after ``end`` are left out; items already held
    are not re-added (an item Yahoo edited since keeps its first version).
    """
    import pandas as pd

    layer, catalog, source = _setup(layer, catalog, source)
    pacer = pacer if pacer is not None else Pacer(sleep)
    out = []
    for i, symbol in enumerate(symbols, 1):
        bad = _bad_symbol(symbol)
        if bad:
            out.append(Outcome("news", str(symbol)[:40], "failed", message=bad))
            if progress is not None:
                progress(f"[{i}/{len(symbols)}] {out[-1].line()}")
            continue
        pacer.wait()
        try:
            rows = news_rows(source.fetch_news(symbol), symbol)
        except Exception as exc:  # noqa: BLE001 - the source's library raises anything
            outcome = Outcome("news", symbol, "failed", message=_short(exc))
        else:
            outcome = _add_news(rows, symbol, start, end, layer, catalog, pd)
        out.append(outcome)
        if progress is not None:
            progress(f"[{i}/{len(symbols)}] {outcome.line()}")
    return out


def _add_news(rows: list[dict[str, str]], symbol: str, start: str | None, end: str | None, layer: Any, catalog: Any,
              pd: Any) -> Outcome:
    held_table = layer.documents("news") or {"id": [], "symbol": []}
    held = set(zip(held_table["id"], held_table["symbol"], strict=True))
    fresh = [r for r in rows if (r["id"], r["symbol"]) not in held]
    if start or end:
        fresh = [r for r in fresh if (not start or r["published_at"][:10] >= start)
                 and (not end or r["published_at"][:10] <= end)]
    if not fresh:
        return Outcome("news", symbol, "up to date", skipped=len(rows) - len(fresh),
                       message=f"{len(rows)} item(s) listed, none new")
    try:
        result = layer.add_news(pd.DataFrame(fresh), catalog=catalog, source=f"yahoo news of {symbol}")
    except DataError as exc:
        return Outcome("news", symbol, "failed", message=_short(exc))
    return Outcome("news", symbol, "added", result.added, len(rows) - result.added, result.date_min, result.date_max)


# ---------------------------------------------------------------------------- filings
#: Forms fetched when none are named.
DEFAULT_FORMS = ("10-K", "10-Q", "8-K")


def filing_rows(records: Sequence[Any], symbol: str) -> list[dict[str, str]]:
    """EDGAR filing records (:func:`finenvs.data.sources.edgar.fetch_filings`) as rows of the layer's filings file."""
    rows = []
    for record in records:
        record = record if isinstance(record, dict) else {}
        sections = record.get("sections")
        for name, text in (sections.items() if isinstance(sections, dict) else ()):
            rows.append({"filing_id": str(record.get("accession_number") or ""), "symbol": symbol,
                         "form": str(record.get("form") or ""), "filed": str(record.get("filing_date") or "")[:10],
                         "section": str(name), "title": str(name), "text": "" if text is None else str(text),
                         "document": str(record.get("url") or "")})
    return rows


def fetch_filings(symbols: Sequence[str], *, user_agent: str | None = None, forms: Sequence[str] = DEFAULT_FORMS,
                  start: str | None = None, end: str | None = None, layer: Any = None, catalog: Any = None,
                  source: Any = None, sleep: float = DEFAULT_SLEEP, progress: Callable[[str], None] | None = None,
                  now: dt.datetime | None = None, pacer: Pacer | None = None) -> list[Outcome]:
    """Fetch SEC EDGAR filings of ``symbols`` (their sections) into the user layer; one :class:`Outcome` each.

    Each symbol resumes from the latest filing date held for it (sections already held are not re-added);
    ``start`` is needed for a symbol with none. A filing is read under the as-of rule of
    ``data add --filings`` (seen after its filing date's close). A section already held is never re-added.

    Raises:
        SourceError: No declared User-Agent (``user_agent`` or ``$EDGAR_IDENTITY``): EDGAR requires one.
    """
    import pandas as pd

    from finenvs.data.sources import edgar

    agent = edgar.user_agent(user_agent)  # refused before any call
    layer, catalog, _ = _setup(layer, catalog, None)
    source = source if source is not None else edgar
    final = dt.date.fromisoformat(last_final_day(now)) + dt.timedelta(days=1)  # today, in New York
    last = min(end, final.isoformat()) if end else final.isoformat()
    pacer = pacer if pacer is not None else Pacer(sleep)
    held_table = layer.documents("filings") or {"filing_id": [], "section": [], "symbol": [], "filed": []}
    out = []
    for i, symbol in enumerate(symbols, 1):
        outcome = _fetch_filings_of(symbol, agent, tuple(forms), start, last, held_table, layer, catalog, source,
                                    pacer, pd)
        out.append(outcome)
        held_table = layer.documents("filings") or held_table
        if progress is not None:
            progress(f"[{i}/{len(symbols)}] {outcome.line()}")
    return out


def _fetch_filings_of(symbol: str, agent: str, forms: tuple[str, ...], start: str | None, end: str,
                      held_table: dict[str, list[str]], layer: Any, catalog: Any, source: Any, pacer: Pacer,
                      pd: Any) -> Outcome:
    bad = _bad_symbol(symbol)
    if bad:
        return Outcome("filings", str(symbol)[:40], "failed", message=bad)
    mine = [f for f, s in zip(held_table["filed"], held_table["symbol"], strict=True) if s == symbol]
    first = max(mine) if mine else start
    if first is None:
        return Outcome("filings", symbol, "failed",
                       message=f"no filings of {symbol} held: give --start for the first filing date")
    first = max(first, start) if start else first
    if first > end:
        return Outcome("filings", symbol, "up to date", message=f"nothing filed after {first} up to {end}")
    pacer.wait()
    try:
        rows = filing_rows(source.fetch_filings(symbol, first, end, forms, agent), symbol)
    except Exception as exc:  # noqa: BLE001 - the source's library raises anything
        return Outcome("filings", symbol, "failed", message=f"{first}..{end}: {_short(exc)}")
    held = set(zip(held_table["filing_id"], held_table["section"], strict=True))
    fresh = [r for r in rows if (r["filing_id"], r["section"]) not in held]
    if not fresh:
        return Outcome("filings", symbol, "up to date", skipped=len(rows),
                       message=f"{len(rows)} section(s) listed for {first}..{end}, none new")
    try:
        result = layer.add_filings(pd.DataFrame(fresh), catalog=catalog, source=f"edgar filings of {symbol}")
    except DataError as exc:
        return Outcome("filings", symbol, "failed", message=_short(exc))
    return Outcome("filings", symbol, "added", result.added, len(rows) - result.added, result.date_min,
                   result.date_max)


def cli_data_fetch(prices: Sequence[str] = (), news: Sequence[str] = (), start: str | None = None,
                   end: str | None = None, dataset: str = "core", sleep: float | None = None,
                   filings: Sequence[str] = (), forms: Sequence[str] = DEFAULT_FORMS,
                   user_agent: str | None = None) -> int:
    """``finenvs data fetch``: one progress line per symbol, one line per symbol it could not get (stderr).

    Returns:
        0 when at least one symbol was fetched or is up to date; 1 when every one failed.
    """
    import sys

    from finenvs.data.catalog import default_catalog
    from finenvs.data.user_layer import UserLayer

    layer, catalog = UserLayer(), default_catalog()
    pacer = Pacer(DEFAULT_SLEEP if sleep is None else sleep)
    total = len(prices) + len(news) + len(filings)
    if filings:
        from finenvs.data.sources import edgar

        edgar.user_agent(user_agent)  # EDGAR requires it: refuse before fetching anything

    def show(line: str) -> None:
        print(line, flush=True)

    outcomes = fetch_prices(prices, start=start, end=end, dataset=dataset, layer=layer, catalog=catalog,
                            progress=show, pacer=pacer) if prices else []
    if news:
        outcomes += fetch_news(news, start=start, end=end, layer=layer, catalog=catalog, progress=show, pacer=pacer)
    if filings:
        outcomes += fetch_filings(filings, user_agent=user_agent, forms=forms, start=start, end=end, layer=layer,
                                  catalog=catalog, progress=show, pacer=pacer)
    failed = [o for o in outcomes if o.status == "failed"]
    bars = sum(o.added for o in outcomes if o.kind == "prices")
    items = sum(o.added for o in outcomes if o.kind == "news")
    sections = sum(o.added for o in outcomes if o.kind == "filings")
    print(f"fetched {counted(bars, 'bar')}, {counted(items, 'news item')} and {counted(sections, 'filing section')}; "
          f"{total - len(failed)} of {counted(total, 'request')} done, {len(failed)} failed")
    for o in failed:
        print(o.line(), file=sys.stderr)
    print(f"user layer {layer.root}: digest {layer.digest}; data digest {catalog.data_digest}")
    return 1 if len(failed) == total else 0


__all__ = ["BAR_FINAL_AT", "DEFAULT_SLEEP", "DEFAULT_FORMS", "Outcome", "Pacer", "cli_data_fetch", "fetch_filings", "filing_rows", "fetch_news", "fetch_prices", "last_final_day", "news_rows"]
