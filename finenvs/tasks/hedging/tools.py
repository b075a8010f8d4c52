"""Pairs tools for FinHedging-v0: spread statistics of the universe's pairs, read through the as-of view.

``get_pair_stats`` computes, from the closes visible at the current close only
(each symbol's own series, aligned on common days), for the log price ratio
``s = log P_long - log P_short`` over the last ``lookback`` common days:

* ``correlation``: correlation of the two legs' daily log returns;
* ``zscore``: ``(s_t - mean(s)) / sd(s)`` (sample sd) over the last 5, 20 and ``lookback`` days;
* ``df_tstat``: Dickey-Fuller t-statistic of ``s`` (regression ``ds = a + b s_{-1}``;
  more negative = stronger mean reversion; about -2.9 is the 5% critical value);
* ``half_life_days``: ``-ln 2 / ln(1 + b)`` when ``-1 < b < 0``, else null (no mean reversion);
* ``spread_vol``: annualised standard deviation of ``ds``.

Without ``pair`` it ranks every unordered pair of the universe by ``df_tstat``
(most mean-reverting first) and lists the first ``limit`` (default :data:`RANKING_LIMIT`) as compact rows
under ``columns`` (``z_<n>``: the ``n``-day z-score), with the ``total`` ranked. The same statistics are in the env's observation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from finenvs.data.mean_reversion import df_tstat
from finenvs.errors import FinEnvsError
from finenvs.tools.market import MARKET_TOOLS
from finenvs.tools.registry import Tool, ToolContext

Z_LOOKBACKS = (5, 20)


def _aligned_logs(ctx: ToolContext, symbols: list[str], lookback: int) -> tuple[np.ndarray, list[str]]:
    view = ctx.view()
    series = [view.prices(sym, lookback=lookback + 10) for sym in symbols]
    common = series[0].dates
    for s in series[1:]:
        common = np.intersect1d(common, s.dates, assume_unique=True)
    common = common[-(lookback + 1) :]
    if common.size < 3:
        raise FinEnvsError(f"{'/'.join(symbols)}: only {common.size} common day(s) visible; need at least 3")
    logs = np.vstack([np.log(s.close[np.searchsorted(s.dates, common)]) for s in series])
    return logs, np.datetime_as_string(common, unit="D").tolist()


def _z(spread: np.ndarray, n: int) -> float | None:
    window = spread[-n:]
    if window.size < 2:
        return None
    sd = float(window.std(ddof=1))
    return round(float((window[-1] - window.mean()) / sd), 4) if sd > 0 else 0.0


def _stats(logs_a: np.ndarray, logs_b: np.ndarray, lookback: int) -> dict[str, Any]:
    spread = logs_a - logs_b
    ra, rb = np.diff(logs_a), np.diff(logs_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = float(np.corrcoef(ra, rb)[0, 1]) if ra.size > 1 else float("nan")
    lag, diff = spread[:-1], np.diff(spread)
    x = lag - lag.mean()
    sxx = float(x @ x)
    b = float(x @ (diff - diff.mean())) / sxx if sxx > 0 else 0.0
    half_life = -math.log(2.0) / math.log1p(b) if -1.0 < b < 0.0 else None
    return {
        "correlation": round(corr, 4) if math.isfinite(corr) else None,
        "zscore": {str(n): _z(spread[1:], n) for n in (*Z_LOOKBACKS, lookback) if n <= spread.size - 1},
        "df_tstat": round(df_tstat(spread), 4),
        "half_life_days": None if half_life is None else round(half_life, 2),
        "spread_vol": round(float(diff.std(ddof=1)) * math.sqrt(252.0), 4) if diff.size > 1 else None,
        "log_ratio": round(float(spread[-1]), 6),
    }


def _split_pair(pair: str, universe: list[str]) -> list[str]:
    """``"A/B"`` (or ``"A-B"`` when that split is unambiguous) as two universe symbols, matched case-insensitively."""
    by_upper = {s.upper(): s for s in universe}
    text = pair.strip()
    if "/" in text:
        candidates = [text.split("/")]
    else:  # hyphens may sit inside symbols (SYN-A): keep the splits whose both sides are symbols
        cuts = [k for k, ch in enumerate(text) if ch == "-"]
        candidates = [[text[:k], text[k + 1 :]] for k in cuts]
        known = [c for c in candidates if all(part.strip().upper() in by_upper for part in c)]
        candidates = known or candidates[:1] or [[text]]
    legs = [part.strip().upper() for part in candidates[0]]
    example = f"{universe[0]}/{universe[1]}"
    if len(legs) != 2 or not all(legs):
        raise FinEnvsError(f"pair {pair!r} must be two symbols as LONG/SHORT, e.g. {example}")
    if legs[0] == legs[1]:
        raise FinEnvsError(f"pair {pair!r} names one symbol twice; a pair needs two different symbols")
    unknown = [s for s in legs if s not in by_upper]
    if unknown:
        raise FinEnvsError(f"unknown symbol(s) {unknown}; the universe is {universe}")
    return [by_upper[s] for s in legs]


#: Pairs a ranking lists unless ``limit`` says otherwise (the most mean-reverting first).
RANKING_LIMIT = 10


def get_pair_stats(ctx: ToolContext, pair: str | None = None, lookback: int = 60,
                   limit: int = RANKING_LIMIT) -> dict[str, Any]:
    env = ctx.env
    universe = list(env.universe)
    if pair is not None:
        legs = _split_pair(pair, universe)
        logs, dates = _aligned_logs(ctx, legs, lookback)
        return {"pair": f"{legs[0]}/{legs[1]}", "as_of": dates[-1], "days": len(dates) - 1,
                **_stats(logs[0], logs[1], lookback)}
    logs, dates = _aligned_logs(ctx, universe, lookback)
    rows = []
    for i in range(len(universe)):
        for j in range(i + 1, len(universe)):
            rows.append({"pair": f"{universe[i]}/{universe[j]}", **_stats(logs[i], logs[j], lookback)})
    rows.sort(key=lambda r: r["df_tstat"])
    windows = list(rows[0]["zscore"]) if rows else []
    columns = ["pair", "correlation", *(f"z_{n}" for n in windows), "df_tstat", "half_life_days", "spread_vol",
               "log_ratio"]
    out: dict[str, Any] = {
        "as_of": dates[-1], "days": len(dates) - 1, "ranked_by": "df_tstat (most mean-reverting first)",
        "total": len(rows), "columns": columns,
        "rows": [[r["pair"], r["correlation"], *(r["zscore"][n] for n in windows), r["df_tstat"], r["half_life_days"],
                  r["spread_vol"], r["log_ratio"]] for r in rows[: int(limit)]],
    }
    if len(rows) > limit:
        out["note"] = f"the {int(limit)} most mean-reverting of {len(rows)} pairs; limit={len(rows)} lists every pair"
    return out


PAIR_TOOLS: tuple[Tool, ...] = (
    Tool(
        "get_pair_stats",
        "Spread statistics of a pair's log price ratio over the last `lookback` common trading days to this close: "
        "return correlation, z-scores (5, 20 and `lookback` days), Dickey-Fuller t-statistic, half-life and "
        "volatility. Without "
        "`pair`, the first `limit` pairs ranked by the Dickey-Fuller statistic (most mean-reverting first).",
        {
            "type": "object",
            "properties": {
                "pair": {"type": "string", "description": "LONG/SHORT symbols, e.g. AAPL/MSFT.", "minLength": 3,
                         "maxLength": 41},
                "lookback": {"type": "integer", "minimum": 10, "maximum": 2000, "default": 60},
                "limit": {"type": "integer", "minimum": 1, "default": RANKING_LIMIT},
            },
            "additionalProperties": False,
        },
        get_pair_stats,
        summary="spread z-scores, correlation, mean reversion of a pair (or all pairs ranked)",
    ),
)

#: FinHedging-v0's toolset: the market tools and the pair tools.
HEDGING_TOOLS: tuple[Tool, ...] = MARKET_TOOLS + PAIR_TOOLS

__all__ = ["PAIR_TOOLS", "get_pair_stats"]
