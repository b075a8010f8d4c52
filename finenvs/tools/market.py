"""Market tools: prices, indicators, news, filings and rates, all read through the as-of view.

Every function here takes a :class:`~finenvs.tools.registry.ToolContext` and
reads only through ``ctx.view()``, the env's date-locked view at its current
decision time. Prices are split- and dividend-adjusted and rounded to 4
decimals in the output; indicators are computed from the full visible history
(see :mod:`finenvs.tools.indicators`), never from anything later.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from finenvs.data.asof import AsOfView
from finenvs.tools import indicators as ind
from finenvs.tools.registry import Tool, ToolContext, json_size

PRICE_DECIMALS = 4
#: Newest news item older than this (calendar days before the clock): the note says the days after are not covered.
STALE_NEWS_DAYS = 3
#: Newest filing older than this: past the usual interval between a company's 10-Q/10-K filings.
STALE_FILING_DAYS = 100
#: At most this many symbol names in a coverage object.
MAX_SYMBOLS_LISTED = 20
RATE_SERIES = {"DTB3": "3-month Treasury bill, secondary market, discount basis", "DGS10": "10-year Treasury yield"}
_DATE = {"type": "string", "description": "YYYY-MM-DD", "minLength": 10, "maxLength": 32}
#: ``symbol`` and dates as the tools advertise them (the checked schemas bound them; the tool descriptions say that
#: dates are YYYY-MM-DD and that the symbol defaults to the episode's).
_ANY_SYMBOL = {"type": "string"}
_YMD = {"type": "string"}
_SYMBOL = {
    "type": "string",
    "description": "Default: this episode's symbol.",
    "minLength": 1,
    "maxLength": 20,
}


def _round(x: float, digits: int = PRICE_DECIMALS) -> float | None:
    return None if not math.isfinite(x) else round(float(x), digits)


# ---------------------------------------------------------------------------- state
def get_state(ctx: ToolContext) -> dict[str, Any]:
    view = ctx.view()
    state = dict(ctx.env.text_state())
    return {
        "as_of": str(view.as_of),
        "decision_time_utc": str(view.decision_time) + "Z",
        **{k.lower().replace(" ", "_"): v for k, v in state.items()},
        "readable_symbols": view.symbols(),
    }


# ---------------------------------------------------------------------------- prices
#: Columns of ``get_prices`` rows (all of them by default; ``columns`` picks some, in this order).
PRICE_COLUMNS = ("date", "open", "high", "low", "close", "volume")


def _price_column(bars: Any, column: str) -> list[Any]:
    """One ``get_prices`` column as the rows carry it (only the chosen columns are built)."""
    if column == "date":
        return np.datetime_as_string(bars.dates, unit="D").tolist()
    if column == "volume":
        return [int(v) for v in bars.volume.tolist()]
    isfinite = math.isfinite
    return [round(x, PRICE_DECIMALS) if isfinite(x) else None for x in getattr(bars, column).tolist()]  # _round


def get_prices(
    ctx: ToolContext,
    symbol: str | None = None,
    lookback: int | None = None,
    start: str | None = None,
    end: str | None = None,
    columns: list[str] | None = None,
) -> dict[str, Any]:
    view = ctx.view()
    symbol = symbol or ctx.symbol
    if lookback is None and start is None:
        lookback = 20
    bars = view.prices(symbol, start=start, end=end, lookback=lookback)
    chosen = [c for c in PRICE_COLUMNS if columns is None or c in columns]
    rows = [list(row) for row in zip(*(_price_column(bars, c) for c in chosen), strict=True)]
    return {
        "symbol": symbol,
        "as_of": str(view.as_of),
        "columns": chosen,
        "rows": rows,
        "count": len(rows),
    }


def _indicator_schema() -> dict[str, Any]:
    props = {}
    for name, spec in ind.INDICATORS.items():
        props[name] = {
            "type": "object",
            "properties": {
                p: {
                    "type": "integer" if kind is int else "number",
                    "default": default,
                    "minimum": lo,
                    "maximum": hi,
                }
                for p, (kind, default, lo, hi) in spec.items()
            },
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "description": "Optional parameters per indicator, e.g. {\"sma\": {\"window\": 50}}; defaults: "
        + "; ".join(f"{n} " + ", ".join(f"{p}={d}" for p, (_, d, _, _) in s.items()) for n, s in ind.INDICATORS.items()),
        "properties": props,
        "additionalProperties": False,
    }


def _indicator_advertised(schema: dict[str, Any]) -> dict[str, Any]:
    """``get_indicators``' schema as the model reads it: ``params`` in one line of words (each indicator's parameters
    with their defaults and ranges) instead of a sub-schema per indicator; calls are checked against the full one."""
    windows = {n: spec["window"][1] for n, spec in ind.INDICATORS.items() if "window" in spec}
    usual = max(set(windows.values()), key=list(windows.values()).count)
    others = [f"{n} " + ", ".join(f"{p} {d}" for p, (_, d, _, _) in spec.items() if p != "window")
              for n, spec in ind.INDICATORS.items() if set(spec) - {"window"}]
    line = "; ".join([f"window {usual} (" + ", ".join(f"{n} {w}" for n, w in windows.items() if w != usual) + ")",
                      *others])
    params = {"type": "object", "description": f"e.g. {{\"sma\":{{\"window\":50}}}}; defaults: {line}"}
    return {"type": "object", "properties": {
        "names": {"type": "array", "items": {"enum": list(ind.INDICATORS)}}, "symbol": _ANY_SYMBOL, "params": params,
        "history": {"type": "integer", "default": 1}}, "required": ["names"]}


def get_indicators(
    ctx: ToolContext,
    names: list[str],
    symbol: str | None = None,
    params: dict[str, dict[str, float]] | None = None,
    history: int = 1,
) -> dict[str, Any]:
    view = ctx.view()
    symbol = symbol or ctx.symbol
    bars = view.prices(symbol, end=None)
    n_bars = len(bars.dates)
    n = min(int(history), n_bars)
    dates = np.datetime_as_string(bars.dates[n_bars - n :], unit="D").tolist()  # the returned values' dates only
    params = params or {}
    out: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        spec = ind.INDICATORS[name]
        chosen = {p: (params.get(name, {}).get(p, default)) for p, (_, default, _, _) in spec.items()}
        series = ind.compute(name, bars.high, bars.low, bars.close, **chosen)
        block: dict[str, Any] = {"params": chosen}
        for key, values in series.items():  # columns: one list per output, aligned with ``dates``
            block[key] = [_round(v, 6) for v in values[n_bars - n :].tolist()]
        out[name] = block
    return {"symbol": symbol, "as_of": str(view.as_of), "bars_used": n_bars, "dates": dates, "indicators": out}


# ---------------------------------------------------------------------------- coverage
def _days_between(earlier: str, later: str) -> int:
    return int((np.datetime64(later[:10], "D") - np.datetime64(earlier[:10], "D")).astype(int))


def _listed(coverage: dict[str, Any], key: str) -> int:
    """Cap the symbol list ``coverage[key]`` at :data:`MAX_SYMBOLS_LISTED`; returns how many there are."""
    names = coverage[key]
    if len(names) > MAX_SYMBOLS_LISTED:
        coverage[key] = names[:MAX_SYMBOLS_LISTED]
        coverage[f"{key}_total"] = len(names)
    return len(names)


def news_coverage(view: AsOfView, symbol: str) -> dict[str, Any]:
    """The ``coverage`` object of the news tools: what the news data holds for ``symbol`` up to the clock.

    Computed only from items public by the close of ``view.as_of`` (see :meth:`AsOfView.news_coverage`),
    with a plain-words ``note`` telling an agent whether an empty answer can mean "not covered".
    """
    cov = view.news_coverage(symbol)
    as_of = cov.pop("as_of")  # the answer's own as_of and symbol say them once
    del cov["symbol"]
    if cov["count"]:
        latest = cov["latest_published_at"][:10]
        gap = cov["days_since_latest"] = _days_between(latest, as_of)
        note = f"the newest item held is {gap} day(s) old"
        if gap > STALE_NEWS_DAYS:
            note += ": later days not covered; an empty answer is not proof that nothing happened"
    else:
        held = _listed(cov, "symbols_with_news")
        note = f"no news item for {symbol} held up to this close; an empty answer is not proof that nothing happened"
        if held:
            note += f" (news held of {held} symbol(s): symbols_with_news)"
    cov["note"] = note
    return cov


def filing_coverage(view: AsOfView, symbol: str) -> dict[str, Any]:
    """The ``coverage`` object of the filing tools (see :func:`news_coverage`)."""
    cov = view.filing_coverage(symbol)
    as_of = cov.pop("as_of")  # the answer's own as_of and symbol say them once
    del cov["symbol"]
    if cov["count"]:
        gap = cov["days_since_latest"] = _days_between(cov["latest_filed"], as_of)
        note = f"the newest filing held is {gap} day(s) old"  # the fields above say the rest
        if gap > STALE_FILING_DAYS:
            note += (f": a 10-Q or 10-K normally follows within {STALE_FILING_DAYS} days, so the filing data "
                     "likely does not cover the later ones; no filing listed is not proof that none was made")
    else:
        held = _listed(cov, "symbols_with_filings")
        note = f"no filing of {symbol} held up to this close; an empty list is not proof that none was made"
        if held:
            note += f" (filings held of {held} symbol(s): symbols_with_filings)"
    cov["note"] = note
    return cov


# ---------------------------------------------------------------------------- news
def list_news(
    ctx: ToolContext,
    symbol: str | None = None,
    lookback_days: int = 7,
    start: str | None = None,
    end: str | None = None,
    limit: int = 20,
) -> dict[str, Any]:
    view = ctx.view()
    symbol = symbol or ctx.symbol
    items = view.news(symbol, lookback_days=None if start is not None else lookback_days, start=start, end=end)
    out: dict[str, Any] = {
        "symbol": symbol,
        "as_of": str(view.as_of),
        "count": len(items),
        "coverage": news_coverage(view, symbol),
        "items": items[: int(limit)],
    }
    if len(items) > limit:  # an empty answer: coverage's note says what it can mean
        out["note"] = f"showing the newest {limit} of {len(items)}; raise limit or narrow the window"
    return out


def get_news(ctx: ToolContext, id: str) -> dict[str, Any]:  # noqa: A002  (the tool's argument name)
    view = ctx.view()
    item = view.news_item(id)
    return {**item, "as_of": str(view.as_of), "coverage": news_coverage(view, item["symbol"])}


# ---------------------------------------------------------------------------- filings
def list_filings(ctx: ToolContext, symbol: str | None = None, form: str | None = None) -> dict[str, Any]:
    view = ctx.view()
    symbol = symbol or ctx.symbol
    filings = view.filings(symbol, form)
    out: dict[str, Any] = {"symbol": symbol, "as_of": str(view.as_of), "count": len(filings),
                           "coverage": filing_coverage(view, symbol), "filings": filings}
    if not filings and form and out["coverage"]["count"]:  # else coverage's note says what an empty list can mean
        out["note"] = f"no {form} filing of {symbol} is visible as of {view.as_of}; coverage counts every form"
    return out


def get_filing_section(
    ctx: ToolContext, id: str, section: str, offset: int = 0, max_chars: int = 4000  # noqa: A002
) -> dict[str, Any]:
    view = ctx.view()
    doc = view.filing_section(id, section)
    text = doc.pop("text")
    doc["as_of"] = str(view.as_of)
    doc["coverage"] = filing_coverage(view, doc["symbol"])
    offset = int(offset)

    def page(n: int) -> dict[str, Any]:
        chunk = text[offset : offset + n]
        end = offset + len(chunk)
        return {**doc, "offset": offset, "chars_total": len(text), "text": chunk,
                "next_offset": end if end < len(text) else None}

    lo, hi = 0, int(max_chars)
    if json_size(page(hi)) <= ctx.max_chars:
        return page(hi)

    def marked(n: int) -> dict[str, Any]:
        out = page(n)
        out["truncated"] = {
            "fields": {"text": {"kept": len(out["text"]), "of": len(text[offset : offset + int(max_chars)])}},
            "note": f"page shortened to fit the {ctx.max_chars}-character output cap; continue at next_offset",
        }
        return out

    while lo < hi:  # the longest page that fits the output cap, so next_offset stays exact
        mid = (lo + hi + 1) // 2
        if json_size(marked(mid)) <= ctx.max_chars:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0 and offset < len(text):
        raise ValueError(f"no text fits the output cap of {ctx.max_chars} characters; raise the cap")
    return marked(lo)


# ---------------------------------------------------------------------------- rates
def get_rate(ctx: ToolContext, series: str = "DTB3") -> dict[str, Any]:
    view = ctx.view()
    date, value = view.rate(series)
    return {
        "series": series,
        "description": RATE_SERIES.get(series, series),
        "as_of": str(view.as_of),
        "observation_date": date,
        "percent_per_annum": value,
    }


_INDICATOR_ARGS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "names": {
            "type": "array",
            "items": {"type": "string", "enum": list(ind.INDICATORS)},
            "minItems": 1,
            "maxItems": len(ind.INDICATORS),
        },
        "symbol": _SYMBOL,
        "params": _indicator_schema(),
        "history": {"type": "integer", "minimum": 1, "maximum": 250, "default": 1},
    },
    "required": ["names"],
    "additionalProperties": False,
}

MARKET_TOOLS: tuple[Tool, ...] = (
    Tool(
        "get_state",
        "Portfolio, clock, costs and the symbols you can read.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        get_state,
        summary="portfolio, date and readable symbols",
    ),
    Tool(
        "get_prices",
        "Daily adjusted OHLCV bars of `symbol` (default: the episode's) up to this close, oldest first: the last "
        "`lookback` (default 20) or start..end (YYYY-MM-DD).",
        {
            "type": "object",
            "properties": {
                "symbol": _SYMBOL,
                "lookback": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Last N bars."},
                "start": _DATE,
                "end": _DATE,
                "columns": {"type": "array", "items": {"type": "string", "enum": list(PRICE_COLUMNS)}, "minItems": 1,
                            "maxItems": len(PRICE_COLUMNS)},
            },
            "additionalProperties": False,
        },
        get_prices,
        keep="tail",
        summary="daily OHLCV bars up to this close",
        advertised={"type": "object", "properties": {
            "symbol": _ANY_SYMBOL, "lookback": {"type": "integer"}, "start": _YMD, "end": _YMD,
            "columns": {"type": "array", "items": {"enum": list(PRICE_COLUMNS)}}}},
    ),
    Tool(
        "get_indicators",
        "Indicators of `symbol` (default: the episode's) at this close, the last `history` values (rsi: Wilder's; realized_vol: annualised).",
        _INDICATOR_ARGS,
        get_indicators,
        keep="tail",
        summary="sma, ema, rsi, macd, bollinger, atr, realized_vol",
        advertised=_indicator_advertised(_INDICATOR_ARGS),
    ),
    Tool(
        "list_news",
        "Headlines on `symbol` (default: the episode's) published by this close (16:00 New York), newest first, "
        "over lookback_days or start..end (YYYY-MM-DD).",
        {
            "type": "object",
            "properties": {
                "symbol": _SYMBOL,
                "lookback_days": {"type": "integer", "minimum": 0, "maximum": 3650, "default": 7},
                "start": _DATE,
                "end": _DATE,
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
            },
            "additionalProperties": False,
        },
        list_news,
        summary="headlines published by this close",
        advertised={"type": "object", "properties": {
            "symbol": _ANY_SYMBOL, "lookback_days": {"type": "integer", "default": 7}, "start": _YMD, "end": _YMD,
            "limit": {"type": "integer", "default": 20}}},
    ),
    Tool(
        "get_news",
        "One news item in full (summary, URL, provider sentiment if given).",
        {
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 200}},
            "required": ["id"],
            "additionalProperties": False,
        },
        get_news,
        summary="one news item in full",
    ),
    Tool(
        "list_filings",
        "10-K/10-Q filings of `symbol` (default: the episode's) usable by this close (from the day after "
        "filing), with their sections.",
        {
            "type": "object",
            "properties": {"symbol": _SYMBOL, "form": {"type": "string", "enum": ["10-K", "10-Q"]}},
            "additionalProperties": False,
        },
        list_filings,
        summary="10-K/10-Q filings public by this close",
        advertised={"type": "object", "properties": {"symbol": _ANY_SYMBOL, "form": {"enum": ["10-K", "10-Q"]}}},
    ),
    Tool(
        "get_filing_section",
        "One filing section's text from `offset`, at most `max_chars`; `next_offset` continues.",
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "maxLength": 200},
                "section": {"type": "string", "minLength": 1, "maxLength": 100},
                "offset": {"type": "integer", "minimum": 0, "default": 0},
                "max_chars": {"type": "integer", "minimum": 100, "maximum": 6000, "default": 4000},
            },
            "required": ["id", "section"],
            "additionalProperties": False,
        },
        get_filing_section,
        summary="text of one filing section, paged",
        advertised={"type": "object", "properties": {
            "id": {"type": "string"}, "section": {"type": "string"}, "offset": {"type": "integer", "default": 0},
            "max_chars": {"type": "integer", "default": 4000}}, "required": ["id", "section"]},
    ),
    Tool(
        "get_rate",
        "Latest Treasury rate (percent a year) published by this close, with its date.",
        {
            "type": "object",
            "properties": {"series": {"type": "string", "enum": list(RATE_SERIES), "default": "DTB3"}},
            "additionalProperties": False,
        },
        get_rate,
        summary="latest Treasury rate (DTB3, DGS10)",
        advertised={"type": "object", "properties": {"series": {"enum": list(RATE_SERIES), "default": "DTB3"}}},
    ),
)


__all__ = ["MARKET_TOOLS", "filing_coverage", "get_filing_section", "get_indicators", "get_news", "get_prices",
           "get_rate", "get_state", "list_filings", "list_news", "news_coverage"]
