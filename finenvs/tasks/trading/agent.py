"""FinTrading-v0's offline scripted chat agent.

It speaks the chat protocol (:mod:`finenvs.text.chat`): tools first, then a
committed decision, derived from the messages alone, so the same conversation
always gets the same reply. It is the offline default of ``finenvs llm`` and
a baseline row of ``finenvs bench``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finenvs.text.chat import NO_USAGE, ChatReply, ScriptedChatAgent
from finenvs.tools import indicators as ind


@dataclass
class ScriptedTradingAgent(ScriptedChatAgent):
    """Offline trading agent that speaks the chat protocol: tools first, then a committed decision.

    Each decision takes up to three assistant turns, all derived from the
    messages alone (it keeps no state between calls, so the same conversation
    always gets the same reply):

    1. call ``get_indicators`` (EMA(``fast``), SMA(``slow``), RSI, realised
       volatility) and ``list_news`` (last ``news_days`` days);
    2. if there is news, call ``get_news`` on the newest item to read the
       provider's sentiment label;
    3. commit: BUY when EMA(fast) > SMA(slow) (momentum), unless realised
       volatility exceeds ``max_vol``, RSI exceeds ``overbought`` or the newest
       news is labelled Negative, in which case HOLD; HOLD when momentum is
       down. It never shorts.

    A tool error or a missing indicator value leads to HOLD, with the reason in
    the commit's reasoning. Without tools it answers ``Action: HOLD`` in text.
    """

    fast: int = 5
    slow: int = 20
    max_vol: float = 1.0
    overbought: float = 80.0
    news_days: int = 3
    name: str = "scripted-momentum"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, results, round_no = self._turn(messages, tools)
        if not {"get_indicators", "commit_action"} <= names:
            return ChatReply("I cannot read market data without tools, so I stay flat.\nAction: HOLD", usage=NO_USAGE)
        if "get_indicators" not in results:
            windows = {"ema": self.fast, "sma": self.slow}  # a window the tool defaults to is not sent
            calls: list[tuple[str, dict[str, Any]]] = [("get_indicators", {
                "names": ["ema", "sma", "rsi", "realized_vol"],
                "params": {k: {"window": w} for k, w in windows.items() if w != ind.INDICATORS[k]["window"][1]},
            })]
            if "list_news" in names:
                calls.append(("list_news", {"lookback_days": self.news_days}))
            return self._calls(round_no, *calls)
        news = results.get("list_news") or {}
        items = news.get("items") or []
        if items and "get_news" in names and "get_news" not in results:
            return self._calls(round_no, ("get_news", {"id": items[0]["id"]}))
        action, reasoning = self.decide(results)
        return self._calls(round_no, ("commit_action", {"action": action, "reasoning": reasoning}))

    def decide(self, results: dict[str, Any]) -> tuple[str, str]:
        """``(action, reasoning)`` from the tool results of this decision."""
        indicators = (results.get("get_indicators") or {}).get("indicators")
        if not isinstance(indicators, dict):
            error = (results.get("get_indicators") or {}).get("error", "no indicator data")
            return "HOLD", f"indicators unavailable ({error}); staying flat"

        def last(name: str) -> float | None:
            values = (indicators.get(name) or {}).get("value") or []
            value = values[-1] if isinstance(values, list) and values else None
            return float(value) if isinstance(value, (int, float)) else None

        fast, slow, rsi, vol = last("ema"), last("sma"), last("rsi"), last("realized_vol")
        if fast is None or slow is None:
            return "HOLD", "not enough history for the moving averages; staying flat"
        trend = f"EMA{self.fast} {fast:.2f} vs SMA{self.slow} {slow:.2f}"
        if fast <= slow:
            return "HOLD", f"momentum down ({trend}); staying flat"
        if vol is not None and vol > self.max_vol:
            return "HOLD", f"momentum up ({trend}) but realised volatility {vol:.0%} > {self.max_vol:.0%}"
        if rsi is not None and rsi > self.overbought:
            return "HOLD", f"momentum up ({trend}) but RSI {rsi:.1f} is overbought"
        sentiment = (results.get("get_news") or {}).get("provider_sentiment")
        if sentiment == "Negative":
            return "HOLD", f"momentum up ({trend}) but the latest news is labelled Negative"
        return "BUY", f"momentum up ({trend}); RSI {rsi if rsi is None else round(rsi, 1)}, vol {vol if vol is None else round(vol, 3)}"


__all__ = ["ScriptedTradingAgent"]
