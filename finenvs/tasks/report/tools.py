"""Report tools: the 16 weekly metrics, the peer basket and the report template (FinReport-v0).

They join the market tools (prices, indicators, news, filings, rates) in the
``report`` tool set. Every read is at the env's current report close: a
``date`` after it is a look-ahead attempt, counted, and answered as of the close.
Symbols and peers are those readable at the close (a bar on or before it): one
listed later answers like a symbol without a peer basket and is never named.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from finenvs.data.asof import to_day
from finenvs.errors import shown
from finenvs.tasks.report.core import YEAR_DAYS, price_levels
from finenvs.tasks.report.metrics import METRIC_BLOCKS, metric_display
from finenvs.tools.market import _DATE, _SYMBOL, MARKET_TOOLS, PRICE_DECIMALS
from finenvs.tools.registry import Tool, ToolContext


def _report_env(ctx: ToolContext) -> Any:
    env = ctx.env
    if not hasattr(env, "metrics_at"):
        raise ValueError("weekly metrics are a FinReport-v0 tool")
    return env


def _basket(env: Any, view: Any, symbol: str) -> list[str]:
    """The readable peers of ``symbol``; the same error for a symbol without a basket and for one not yet listed."""
    readable = set(view.symbols())
    if symbol not in env.peer_map or symbol not in readable:
        with_basket = sorted(s for s in env.peer_map if s in readable)
        raise ValueError(f"{shown(symbol, 40)} has no peer basket; symbols with one: {with_basket}")
    return [p for p in env.peer_map[symbol] if p in readable]


def get_weekly_metrics(ctx: ToolContext, symbol: str | None = None, date: str | None = None,
                       full: bool = False) -> dict[str, Any]:
    env = _report_env(ctx)
    view = ctx.view()
    symbol = symbol or ctx.symbol
    peers = _basket(env, view, symbol)
    day = view.as_of
    if date is not None:
        asked = to_day(date, name="date")
        if asked > view.as_of:
            view.counter.record(f"weekly_metrics({symbol})", view.as_of, asked)
        day = min(asked, view.as_of)
    calendar = view.calendar(symbol)
    row = int(np.searchsorted(calendar, day, side="right")) - 1
    if row < 0:
        raise ValueError(f"no {symbol} trading day on or before {day}")
    metrics = env.metrics_at(symbol, row)
    bars = view.prices(symbol, end=str(calendar[row]), lookback=YEAR_DAYS)
    def shown_metric(name: str) -> Any:
        display = metric_display(name, metrics[name])
        if not full:
            return display
        return [None if not math.isfinite(metrics[name]) else round(metrics[name], 6), display]

    blocks = {block: {name: shown_metric(name) for name in names} for block, names in METRIC_BLOCKS.items()}
    return {
        "symbol": symbol,
        "as_of": str(view.as_of),
        "date": str(calendar[row]),
        "close": round(float(bars.close[-1]), PRICE_DECIMALS),
        "peers": peers,
        "levels": {name: round(v, PRICE_DECIMALS) if math.isfinite(v) else None
                   for name, v in price_levels(bars.dates, bars.high, bars.low, bars.close).items()},
        "metrics": blocks,
    }


def get_peers(ctx: ToolContext, symbol: str | None = None) -> dict[str, Any]:
    env = _report_env(ctx)
    symbol = symbol or ctx.symbol
    return {"symbol": symbol, "peers": _basket(env, ctx.view(), symbol),
            "basket": "equal-weighted, rebalanced daily (mean of the peers' daily returns)"}


def get_report_template(ctx: ToolContext) -> dict[str, Any]:
    env = _report_env(ctx)
    return {"sections": list(env.report_sections()), "template": env.report_template(),
            "ratings": list(env.position_map), "position_map": dict(env.position_map)}


REPORT_TOOLS: tuple[Tool, ...] = (
    Tool(
        "get_weekly_metrics",
        "The 16 weekly statistics at the report close (or an earlier `date`) in three blocks: single_stock "
        "(weekly return, 20-day volatility, largest daily move, volume change, distance to the 52-week high/low), "
        "momentum (4/12-week returns, RSI(14), MACD histogram, gap to the 50-day SMA) and sector_relative "
        "(peer basket's weekly return, excess return, 60-day beta and correlation, 12-week relative strength); "
        "levels: the week's high and low, the 52-week high and low close, the 50-day SMA. Each metric as a report "
        "writes it; `full`: [unrounded value, display].",
        {"type": "object", "properties": {"symbol": _SYMBOL, "date": _DATE, "full": {"type": "boolean"}},
         "additionalProperties": False},
        get_weekly_metrics,
        summary="the 16 weekly metrics at the report close",
    ),
    Tool(
        "get_peers",
        "The symbol's peer basket (shipped peer map) used by the sector-relative metrics.",
        {"type": "object", "properties": {"symbol": _SYMBOL}, "additionalProperties": False},
        get_peers,
        summary="the peer basket",
    ),
    Tool(
        "get_report_template",
        "The eight-section report template with this week's symbol and date, and the rating-to-position map.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        get_report_template,
        summary="the report template and rating map",
    ),
)

#: FinReport-v0's toolset: the market tools and the report tools.
REPORT_TOOLSET: tuple[Tool, ...] = (*MARKET_TOOLS, *REPORT_TOOLS)

__all__ = ["REPORT_TOOLS", "get_peers", "get_report_template", "get_weekly_metrics"]
