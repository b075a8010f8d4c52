"""The rubric checklist a judge model verifies for one FinReport-v0 report (HERCULEAN's method).

:func:`checklist` is the family's ``TaskSpec.judge``: called at the report's
date, before the env steps the report, it turns the facts the env computed for
that week (:meth:`~finenvs.tasks.report.env.FinReportEnv.facts`, the 16 weekly
metrics, the news and filings public by the close) into 8-15 one-sentence
claims about the report. Each claim can be checked against the report text
alone, and each says what a faithful report makes of it:

* positive items (``expect: True``): the week's numbers as the tools display
  them (close, weekly return, RSI, 50-day SMA gap, peer basket return), the
  ticker and date, and the reasoning rubric (rating follows from the thesis, a
  quantified risk, ordered scenario targets);
* negative items (``expect: False``): errors a report can make that the facts
  make checkable (a date after the report date, a wrong 52-week range, the
  week's direction or the relative performance reversed, a headline or filing
  date not among those public).

A judge's verdicts are reported beside the deterministic quality score
(:mod:`finenvs.tasks.report.quality`), never replacing it. Everything read is
visible at the report close: the facts and metrics come from rows dated on or
before it, news and filings through the env's as-of view.
"""

from __future__ import annotations

import math
from typing import Any

from finenvs.tasks.report.core import metric_display
from finenvs.tasks.report.protocol import decode_report

#: News window of the headline item (days back from the report close; the template writer's window).
NEWS_DAYS = 7
#: Headlines listed at most (the newest); a longer week narrows the item's window to them.
NEWS_LISTED = 12
HEADLINE_CHARS = 100
#: Filing dates listed at most (the newest; the shipped data has a handful per symbol).
FILINGS_LISTED = 12


def _item(item_id: str, claim: str, expect: bool) -> dict[str, Any]:
    return {"id": item_id, "claim": claim, "expect": expect}


def _shown(name: str, metrics: dict[str, float]) -> str | None:
    text = metric_display(name, metrics.get(name))
    return None if text == "n/a" else text


def _news_item(view: Any, symbol: str, date: str) -> dict[str, Any]:
    news = view.news(symbol, lookback_days=NEWS_DAYS)  # newest first, public by the report close
    if not news:
        return _item("news", f"The report cites a specific {symbol} news headline from the {NEWS_DAYS} days "
                     f"to {date} (none was published in them).", False)
    listed, window = news, f"the {NEWS_DAYS} days to {date}"
    if len(news) > NEWS_LISTED:
        k = NEWS_LISTED
        while k > 1 and news[k - 1]["published_at"] == news[k]["published_at"]:
            k -= 1  # never split headlines published at the same instant
        when = str(news[k]["published_at"]).replace("T", " ").replace("Z", " UTC")
        listed, window = news[:k], f"the period after {when} up to {date}"
    titles = "; ".join('"' + " ".join(str(n.get("title", "")).split())[:HEADLINE_CHARS] + '"' for n in listed)
    return _item("news", f"The report cites a headline about {symbol} published in {window} that is not "
                 f"one of these: {titles}.", False)


def checklist(env: Any, report: Any) -> dict[str, Any]:
    """The rubric checklist of one report at the env's current report date.

    Args:
        env: A FinReport-v0 env (wrapped or not) at the report's date, before it steps the report.
        report: The report as the env will read it (a str; bytes are decoded as UTF-8; a text the env
            cannot read is judged as the empty report it scores).

    Returns:
        ``{"text": the report as read, "items": [{"id", "claim", "expect"}]}`` with 8-15 items (see the
        module docstring), and ``"note"`` when the env reads the report as empty. Pure and deterministic:
        the same week gives the same items for any report.
    """
    env = getattr(env, "unwrapped", env)
    text, problem = decode_report(report)
    facts = env.facts()
    metrics = env.weekly_metrics()
    symbol, date = facts.symbol, str(facts.report_date)
    peers = ", ".join(facts.peers)
    items = [
        _item("ticker_date", f"The report names {symbol} and gives the report date {date}.", True),
        _item("close", f"The report states {symbol}'s close for the week as {facts.close:.2f}.", True),
    ]
    weekly = _shown("weekly_return", metrics)
    if weekly is not None:
        items.append(_item("weekly_return", f"The report states the weekly return as {weekly}.", True))
        change = metrics["weekly_return"]
        if change != 0:
            said, did = ("rose", "fell") if change < 0 else ("fell", "rose")
            items.append(_item("week_direction", f"The report says {symbol} {said} over the week (it {did}: "
                               f"{weekly}).", False))
    for name, claim in (("rsi_14", "The report gives the 14-day RSI as {}."),
                        ("sma50_gap", "The report gives the gap to the 50-day SMA as {}.")):
        shown = _shown(name, metrics)
        if shown is not None:
            items.append(_item(name, claim.format(shown), True))
    high, low = facts.levels["high_52w"], facts.levels["low_52w"]
    items.append(_item("range_52w", f"The report gives a 52-week high price other than {high:.2f} or a "
                       f"52-week low price other than {low:.2f}.", False))
    items.append(_news_item(env.as_of_view(), symbol, date))
    if facts.filings:
        filed = ", ".join(f"{f['form']} filed {f['filed']}" for f in facts.filings[:FILINGS_LISTED])
        items.append(_item("filings", f"The report cites a 10-K or 10-Q filing date other than those of the "
                           f"{symbol} filings public by {date} ({filed}).", False))
    else:
        items.append(_item("filings", f"The report cites a {symbol} 10-K or 10-Q filing (none is public by "
                           f"{date}).", False))
    peer_return = _shown("peer_weekly_return", metrics)
    if peer_return is not None:
        items.append(_item("peer_weekly_return", f"The report gives the weekly return of the peer basket "
                           f"({peers}) as {peer_return}.", True))
    excess = metrics.get("excess_weekly_return", math.nan)
    if math.isfinite(excess) and excess != 0:
        said, did = ("underperformed", "beat") if excess > 0 else ("outperformed", "trailed")
        items.append(_item("relative_peers", f"The report says {symbol} {said} its peer basket this week "
                           f"(it {did} it: excess return {_shown('excess_weekly_return', metrics)}).", False))
    items += [
        _item("rating_thesis", "The report's rating follows from the direction of the thesis it states (net "
              "bullish signals for a buy rating, net bearish for a sell, mixed or neutral for HOLD).", True),
        _item("quantified_risk", "The risk section names at least one specific risk together with a number "
              "that measures it.", True),
        _item("scenarios", "The outlook gives bull, base and bear price targets ordered bull >= base >= "
              "bear.", True),
        _item("future_date", f"The report writes a date after {date} (the report date), or a price or event "
              "it presents as observed after that date.", False),
    ]
    out: dict[str, Any] = {"text": text, "items": items}
    if problem is not None:
        out["note"] = f"the env reads this report as empty: {problem}"
    return out


__all__ = ["checklist"]
