"""``finenvs data fetch``: daily bars and news from Yahoo Finance, filings and their XBRL from SEC EDGAR, into the
user layer.

Fetched rows enter the layer through :class:`finenvs.data.user_layer.UserLayer` exactly as a file
given to ``finenvs data add`` does: the same schema checks, overlap rules, manifest, digest and
as-of rules (a bar is seen from its session's close, a news item from its publication time, an XBRL
bundle from :func:`known_from`: the later of its filing date and its acceptance day). The
source is reached only through its adapter (:mod:`finenvs.data.sources.yahoo`,
:mod:`finenvs.data.sources.edgar`), which replays recorded responses when ``$FINENVS_FETCH_REPLAY`` is set.
XBRL bundles (:func:`fetch_xbrl`) are checked before they enter by a function the caller passes (the data
layer parses no XBRL; the CLI passes :func:`finenvs.xbrl.corpus.bundle_rows`).

* **Resume.** For each symbol only the sessions after the last bar held (shipped or user) are
  asked for; ``--start`` is needed only for a symbol with no bars yet. News items already held
  (same ``(id, symbol)``) are not re-added.
* **Complete bars only.** ``end`` (default: today in New York) is capped at the last session whose
  bar is final: before :data:`BAR_FINAL_AT` New York time, today's bar is still moving and is not
  fetched (a later fetch would then conflict with the held bar).
* **Rate limit.** At least ``sleep`` seconds pass between the starts of two calls to a source (default
  :data:`DEFAULT_SLEEP`; for EDGAR never less than its limit of 10 requests a second allows).
* **What could not be got** is one :class:`Outcome` per symbol with status ``"failed"`` and the
  reason: the source's error, no bars for sessions that exist, or the validation error that
  ``data add`` would give (file, row, column); for XBRL one line per filing in ``problems`` (the filing and
  the file or field), the symbol ``"failed"`` only when it got none of them.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
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
    #: What could not be got although the request as a whole did something (XBRL: one line per filing).
    problems: tuple[str, ...] = ()
    #: XBRL: the facts of the bundles added.
    facts: int = 0

    def line(self) -> str:
        unit = {"prices": "bars", "news": "news items", "xbrl": "XBRL bundles"}.get(self.kind, "filing sections")
        if self.status == "failed":
            return f"could not get {self.kind} of {self.symbol}: {self.message}"
        if self.status == "up to date":
            return f"{self.kind} {self.symbol}: up to date ({self.message})"
        span = f" ({self.date_min}..{self.date_max})" if self.added else ""
        facts = f" with {self.facts} facts" if self.kind == "xbrl" else ""
        could_not = f"; could not get {len(self.problems)}" if self.problems else ""
        return f"{self.kind} {self.symbol}: added {self.added} {unit}{facts}{span}; {self.skipped} already held{could_not}"

    def failures(self) -> list[str]:
        """One line per thing it could not get (none for a request that got everything it asked for)."""
        if self.status == "failed" and not self.problems:
            return [self.line()]
        return [f"could not get {self.kind} of {self.symbol}: {p}" for p in self.problems]


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
    """Keeps at least ``seconds`` between the starts of two calls (sleeping only what is left of it).

    Args:
        seconds: The least time between two calls.
        clock: Monotonic seconds (default :func:`time.monotonic`; tests pass their own).
    """

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None) -> None:
        self.seconds = max(0.0, float(seconds))
        self.clock = clock if clock is not None else time.monotonic
        self.calls = 0
        self._last: float | None = None

    def wait(self) -> None:
        if self._last is not None and self.seconds:
            left = self.seconds - (self.clock() - self._last)
            if left > 0:
                time.sleep(left)
        self._last = self.clock()
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


# ---------------------------------------------------------------------------- XBRL (SEC EDGAR)
#: Forms whose XBRL is fetched when none are named: those whose bundles carry the calculation network FinAudit-v0
#: audits (an 8-K's XBRL is its cover page only).
DEFAULT_XBRL_FORMS = ("10-K", "10-Q")
_ACCESSION_RE = re.compile(r"\d{10}-\d{2}-\d{6}")
_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_STAMP_RE = re.compile(r"(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")


def known_from(filing_date: str, *acceptance: str | None) -> str:
    """The first day a filing's facts may be seen: the latest of its filing date and its acceptance day(s).

    An acceptance time is taken as written: EDGAR's SGML header gives Eastern time, and the submissions JSON,
    which labels its time UTC, writes for some filers the Eastern digits; the day as written is never earlier
    than either reading. A filing accepted after 17:30 has the next business day as its filing date, which wins.
    """
    return max([filing_date[:10], *(a[:10] for a in acceptance if a)])


def xbrl_bundle_name(symbol: str, form: str, report_date: str, accession: str) -> str:
    """``<symbol>_<form>_<period end>_<accession>`` in lower case, as the shipped corpus names a bundle."""
    form_part = re.sub(r"[^a-z0-9]", "", form.lower()) or "form"
    ticker = re.sub(r"[^a-z0-9.-]", "", symbol.lower()) or "x"
    return f"{ticker}_{form_part}_{report_date or 'undated'}_{accession}"


def _record_problem(record: Any, where: str) -> str | None:
    """Why a listed filing cannot become a bundle (naming the field), or None."""
    if not isinstance(record, dict):
        return f"{where}: a listed filing is not a record"
    accession = str(record.get("accession_number", ""))
    if not _ACCESSION_RE.fullmatch(accession):
        return f"{where}: field 'accessionNumber': {shown(accession)} is not ##########-##-######"
    for field, key, pattern in (("filingDate", "filing_date", _DAY_RE), ("reportDate", "report_date", _DAY_RE),
                                ("acceptanceDateTime", "acceptance_datetime", _STAMP_RE)):
        value = str(record.get(key) or "")
        ok = bool(pattern.fullmatch(value))
        if ok:
            try:
                np.datetime64(value[:10], "D")
            except ValueError:
                ok = False
        if not ok:
            return f"{where} {accession}: field {field!r}: {shown(value)} is not a " + (
                "timestamp YYYY-MM-DDTHH:MM:SS" if key == "acceptance_datetime" else "date YYYY-MM-DD")
    if not str(record.get("form") or "").strip():
        return f"{where} {accession}: field 'form' is empty"
    return None


def _bundle_roles(names: Sequence[str]) -> dict[str, str]:
    """The role (instance, schema, cal, def, lab, pre) of each XBRL document name, as the corpus reads a bundle."""
    roles = {}
    for name in names:
        low = name.lower()
        kind = next((k for k in ("cal", "def", "lab", "pre") if low.endswith(f"_{k}.xml")), None)
        roles[name] = kind or ("schema" if low.endswith(".xsd") else "instance" if low.endswith(".xml") else "")
    return {n: r for n, r in roles.items() if r}


def fetch_xbrl(symbols: Sequence[str], *, check: Callable[[Path], Mapping[str, int]], user_agent: str | None = None,
               forms: Sequence[str] = DEFAULT_XBRL_FORMS, start: str | None = None, end: str | None = None,
               layer: Any = None, source: Any = None, sleep: float = DEFAULT_SLEEP,
               progress: Callable[[str], None] | None = None, now: dt.datetime | None = None,
               pacer: Pacer | None = None) -> list[Outcome]:
    """Fetch SEC EDGAR filings of ``symbols`` with their XBRL, one bundle each, into the user layer's ``xbrl/``.

    A bundle is the filing's instance, schema and four linkbases, byte for byte as EDGAR serves them, and a
    ``filing.json`` (company, CIK, ticker, form, period end, filing date, acceptance time, accession number and
    ``filed``: the first day its facts may be seen, :func:`known_from`), the form of the shipped corpus, so
    ``FinAudit-v0`` (``corpus=layer.xbrl_dir``) and the XBRL tools read it, and a bundle filed after an episode's
    date is as invisible as one that does not exist.

    Resume: a filing already held (by accession number) is not asked for again; the window starts at ``start``,
    else at the earliest held filing of the symbol, so a filing that could not be got is asked for again on the
    next fetch (and named again) until it enters. Rate: two calls to EDGAR are at least ``sleep`` seconds apart,
    and never closer than EDGAR's limit allows (:data:`finenvs.data.sources.edgar.MAX_REQUESTS_PER_SECOND`).

    Args:
        symbols: Tickers as EDGAR knows them.
        check: ``check(folder) -> {file name: rows}``: validates a staged bundle as the corpus will read it and
            counts each file's rows, raising a DataError naming the file (the data layer parses no XBRL:
            ``finenvs data fetch`` passes :func:`finenvs.xbrl.corpus.bundle_rows`).
        user_agent: Who you are, as EDGAR requires (default ``$EDGAR_IDENTITY``).
        forms: The forms to fetch (default :data:`DEFAULT_XBRL_FORMS`).
        start, end: Filing dates (ISO, inclusive); ``end`` defaults to today in New York.
        layer: The user layer (default: the process-wide one).
        source: An object with ``list_xbrl_filings`` and ``fetch_xbrl_files`` (default: the EDGAR adapter).
        sleep, progress, now, pacer: As :func:`fetch_filings` (``progress`` also gets one line per filing).

    Raises:
        SourceError: No declared User-Agent: EDGAR requires one (refused before any call).
    """
    from finenvs.data.sources import edgar
    from finenvs.data.user_layer import UserLayer

    agent = edgar.user_agent(user_agent)
    layer = layer if layer is not None else UserLayer()
    source = source if source is not None else edgar
    today = (dt.date.fromisoformat(last_final_day(now)) + dt.timedelta(days=1)).isoformat()
    last = min(end, today) if end else today
    floor = 1.0 / edgar.MAX_REQUESTS_PER_SECOND
    pacer = pacer if pacer is not None else Pacer(max(sleep, floor))
    pacer.seconds = max(pacer.seconds, floor)
    out = []
    for i, symbol in enumerate(symbols, 1):
        def filing_progress(line: str, _i: int = i) -> None:
            if progress is not None:
                progress(f"[{_i}/{len(symbols)}]   {line}")

        outcome = _fetch_xbrl_of(symbol, agent, tuple(forms), start, last, layer, source, check, pacer,
                                 filing_progress)
        out.append(outcome)
        if progress is not None:
            progress(f"[{i}/{len(symbols)}] {outcome.line()}")
    return out


def _fetch_xbrl_of(symbol: str, agent: str, forms: tuple[str, ...], start: str | None, end: str, layer: Any,
                   source: Any, check: Callable[[Path], Mapping[str, int]], pacer: Pacer,
                   progress: Callable[[str], None]) -> Outcome:
    bad = _bad_symbol(symbol)
    if bad:
        return Outcome("xbrl", str(symbol)[:40], "failed", message=bad)
    try:
        mine = {name: entries for name, entries in layer.xbrl_bundles().items() if entries[0].symbol == symbol}
    except DataError as exc:  # a manifest edited by hand
        return Outcome("xbrl", symbol, "failed", message=_short(exc))
    held = {name.rpartition("_")[2] for name in mine}
    first = start or min((entries[0].date_min for entries in mine.values()), default=None)
    if first is None:
        return Outcome("xbrl", symbol, "failed",
                       message=f"no XBRL of {symbol} held: give --start for the first filing date")
    if first > end:
        return Outcome("xbrl", symbol, "up to date", message=f"nothing filed from {first} up to {end}")
    pacer.wait()
    try:
        records = list(source.list_xbrl_filings(symbol, first, end, forms, agent))
    except Exception as exc:  # noqa: BLE001 - the source's library raises anything
        return Outcome("xbrl", symbol, "failed", message=f"{first}..{end}: {_short(exc)}")
    where = f"edgar filings of {symbol}"
    added, skipped, facts, days, problems = 0, 0, 0, [], []
    for record in records:
        problem = _record_problem(record, where)
        if problem is not None:
            problems.append(problem[:_MESSAGE_LIMIT])
            continue
        accession = record["accession_number"]
        if accession in held:
            skipped += 1
            continue
        got = _fetch_one_bundle(symbol, record, agent, layer, source, check, pacer)
        if isinstance(got, str):
            problems.append(got)
            progress(f"could not get {got}")
            continue
        held.add(accession)
        if got.added:
            added, facts = added + 1, facts + got.rows
            days.append(got.date_min)
            progress(f"{accession} ({record['form']} filed {record['filing_date'][:10]}): {got.rows} facts, "
                     f"seen from {got.date_min}")
        else:
            skipped += 1
    if added:
        return Outcome("xbrl", symbol, "added", added, skipped, min(days), max(days), problems=tuple(problems),
                       facts=facts)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Outcome("xbrl", symbol, "failed", skipped=skipped, message=problems[0] + more,
                       problems=tuple(problems))
    return Outcome("xbrl", symbol, "up to date", skipped=skipped,
                   message=f"{len(records)} filing(s) of {'/'.join(forms)} listed for {first}..{end}, none new")


def _fetch_one_bundle(symbol: str, record: dict[str, Any], agent: str, layer: Any, source: Any,
                      check: Callable[[Path], Mapping[str, int]], pacer: Pacer) -> Any:
    """The :class:`~finenvs.data.user_layer.AddResult` of one filing's bundle, or why it could not be got."""
    import json

    accession, form = record["accession_number"], str(record["form"])
    label = f"{accession} ({form} filed {record['filing_date'][:10]})"
    if not record.get("is_xbrl", True):
        return f"{label}: EDGAR lists no XBRL for it"
    pacer.wait()
    try:
        got = source.fetch_xbrl_files(record, agent)
        files, accepted = dict(got["files"]), got.get("accepted")
    except Exception as exc:  # noqa: BLE001 - the source's library raises anything
        return f"{label}: {_short(exc)}"
    if accepted is not None and not _STAMP_RE.fullmatch(str(accepted)):
        return f"{label}: field 'ACCEPTANCE-DATETIME' of its SGML header: {shown(accepted)} is not a timestamp"
    roles = _bundle_roles(list(files))
    files = {name: files[name] for name in roles}
    bundle = xbrl_bundle_name(symbol, form, record["report_date"], accession)
    filed = known_from(record["filing_date"], record["acceptance_datetime"], accepted)
    index = {"bundle": bundle, "company": record.get("company", ""), "cik": record.get("cik", ""), "ticker": symbol,
             "form": form, "period_end": record["report_date"], "filed": filed,
             "filing_date": record["filing_date"][:10], "accepted": accepted or record["acceptance_datetime"],
             "accession_no": accession, "files": {roles[n]: n for n in sorted(files)},
             "source": "SEC EDGAR XBRL bundle (public domain), fetched with edgartools by finenvs data fetch --xbrl"}
    files["filing.json"] = (json.dumps(index, indent=2) + "\n").encode("utf-8")
    try:
        return layer.add_xbrl(bundle, files, symbol=symbol, filed=filed, check=check,
                              source=f"edgar XBRL of {symbol} {accession}")
    except DataError as exc:
        return f"{label}: {_short(exc)}"


def cli_data_fetch(prices: Sequence[str] = (), news: Sequence[str] = (), start: str | None = None,
                   end: str | None = None, dataset: str = "core", sleep: float | None = None,
                   filings: Sequence[str] = (), forms: Sequence[str] | None = None,
                   user_agent: str | None = None, xbrl: Sequence[str] = (),
                   check: Callable[[Path], Mapping[str, int]] | None = None) -> int:
    """``finenvs data fetch``: one progress line per symbol, one line per thing it could not get (stderr).

    ``forms`` (default :data:`DEFAULT_FORMS` for filings, :data:`DEFAULT_XBRL_FORMS` for XBRL) applies to both;
    ``check`` is the XBRL bundle check (:func:`fetch_xbrl`), needed with ``xbrl``.

    Returns:
        0 when at least one request was fetched or is up to date; 1 when every one failed.
    """
    import sys

    from finenvs.data.catalog import default_catalog
    from finenvs.data.user_layer import UserLayer

    layer, catalog = UserLayer(), default_catalog()
    pacer = Pacer(DEFAULT_SLEEP if sleep is None else sleep)
    total = len(prices) + len(news) + len(filings) + len(xbrl)
    if filings or xbrl:
        from finenvs.data.sources import edgar

        edgar.user_agent(user_agent)  # EDGAR requires it: refuse before fetching anything
    if xbrl and check is None:
        raise ValueError("data fetch --xbrl needs the XBRL bundle check (finenvs.xbrl.corpus.bundle_rows)")

    def show(line: str) -> None:
        print(line, flush=True)

    outcomes = fetch_prices(prices, start=start, end=end, dataset=dataset, layer=layer, catalog=catalog,
                            progress=show, pacer=pacer) if prices else []
    if news:
        outcomes += fetch_news(news, start=start, end=end, layer=layer, catalog=catalog, progress=show, pacer=pacer)
    if filings:
        outcomes += fetch_filings(filings, user_agent=user_agent, forms=forms or DEFAULT_FORMS, start=start,
                                  end=end, layer=layer, catalog=catalog, progress=show, pacer=pacer)
    if xbrl:
        assert check is not None
        outcomes += fetch_xbrl(xbrl, check=check, user_agent=user_agent, forms=forms or DEFAULT_XBRL_FORMS,
                               start=start, end=end, layer=layer, progress=show, pacer=pacer)
    failed = [o for o in outcomes if o.status == "failed"]
    bars = sum(o.added for o in outcomes if o.kind == "prices")
    items = sum(o.added for o in outcomes if o.kind == "news")
    sections = sum(o.added for o in outcomes if o.kind == "filings")
    bundles = sum(o.added for o in outcomes if o.kind == "xbrl")
    facts = sum(o.facts for o in outcomes if o.kind == "xbrl")
    partly = sum(1 for o in outcomes if o.status != "failed" and o.problems)
    print(f"fetched {counted(bars, 'bar')}, {counted(items, 'news item')}, {counted(sections, 'filing section')} and "
          f"{counted(bundles, 'XBRL bundle')} ({counted(facts, 'fact')}); {total - len(failed)} of "
          f"{counted(total, 'request')} done, {len(failed)} failed" + (f", {partly} in part" if partly else ""))
    for o in outcomes:
        for line in o.failures():
            print(line, file=sys.stderr)
    print(f"user layer {layer.root}: digest {layer.digest}; data digest {catalog.data_digest}")
    return 1 if len(failed) == total else 0


__all__ = ["BAR_FINAL_AT", "DEFAULT_FORMS", "DEFAULT_SLEEP", "DEFAULT_XBRL_FORMS", "Outcome", "Pacer", "cli_data_fetch",
           "fetch_filings", "fetch_news", "fetch_prices", "fetch_xbrl", "filing_rows", "known_from", "last_final_day",
           "news_rows", "xbrl_bundle_name"]
