"""Offline scripted chat agents of FinTrading-v0 and FinHedging-v0.

They speak the chat protocol (:mod:`finenvs.text.chat`): tools first, then a
committed decision, derived from the messages alone, so the same conversation
always gets the same reply. They are the offline default of ``finenvs llm`` and
a baseline row of ``finenvs bench``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finenvs.text.chat import NO_USAGE, ChatReply, ScriptedChatAgent


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
            calls: list[tuple[str, dict[str, Any]]] = [("get_indicators", {
                "names": ["ema", "sma", "rsi", "realized_vol"],
                "params": {"ema": {"window": self.fast}, "sma": {"window": self.slow}},
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
            rows = (indicators.get(name) or {}).get("rows") or []
            value = rows[-1].get("value") if rows else None
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


@dataclass
class ScriptedPairsAgent(ScriptedChatAgent):
    """Offline FinHedging-v0 agent that speaks the chat protocol: tools first, then a committed decision.

    Stateless like :class:`ScriptedTradingAgent` (the same conversation always
    gets the same reply). Each decision takes three assistant turns:

    1. call ``get_state`` (the stage, the pair, the position);
    2. call ``get_pair_stats``: without a pair on the first decision (every pair
       ranked by its Dickey-Fuller statistic over ``lookback`` days), with the
       chosen pair afterwards;
    3. commit: on the first decision the top-ranked pair (most mean-reverting
       spread); afterwards the z-score rule on the ``z_days`` z-score: flat, enter
       SHORT_LONG when ``entry < z < stop`` and LONG_SHORT when ``-stop < z <
       -entry``; in a position, CLOSE once the spread has reverted past ``exit``
       or moved beyond ``stop`` against it, else HOLD. Keeping no state, it has
       no cool-down after a stop (the ``zscore_coint`` baseline has one).

    A tool error leads to HOLD (or, on the first decision, the first pair the
    ranking lists), with the reason in the commit's reasoning.
    """

    lookback: int = 60
    z_days: int = 20
    entry: float = 2.0
    exit: float = 0.5
    stop: float = 4.0
    name: str = "scripted-pairs"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, results, round_no = self._turn(messages, tools)
        if not {"get_state", "get_pair_stats", "commit_action"} <= names:
            return ChatReply("I cannot read the pairs' statistics without tools.\nAction: HOLD", usage=NO_USAGE)
        if "get_state" not in results:
            return self._calls(round_no, ("get_state", {}))
        state = results["get_state"] or {}
        pair = _pair_of(state)
        if "get_pair_stats" not in results:
            args: dict[str, Any] = {"lookback": self.lookback}
            if pair is not None:
                args["pair"] = pair
            return self._calls(round_no, ("get_pair_stats", args))
        action, reasoning = self.decide(state, results["get_pair_stats"] or {}, pair)
        return self._calls(round_no, ("commit_action", {"action": action, "reasoning": reasoning}))

    def decide(self, state: dict[str, Any], stats: dict[str, Any], pair: str | None) -> tuple[str, str]:
        """``(action, reasoning)`` from ``get_state`` and ``get_pair_stats``."""
        if pair is None:
            ranked = stats.get("pairs") or []
            if not ranked:
                return "HOLD", f"no pair statistics ({stats.get('error', 'empty ranking')}); default pair"
            best = ranked[0]
            return best["pair"], (f"most mean-reverting spread over {stats.get('days')} days: Dickey-Fuller t "
                                  f"{best['df_tstat']}, half-life {best['half_life_days']} days")
        z = (stats.get("zscore") or {}).get(str(self.z_days))
        if not isinstance(z, (int, float)):
            return "HOLD", f"no {self.z_days}-day z-score ({stats.get('error', 'missing')}); keeping the book"
        position = str(state.get("position", "FLAT")).split(",")[0].strip()
        if position == "LONG_SHORT":
            if z < -self.stop:
                return "CLOSE", f"z {z:+.2f} beyond the stop {-self.stop:+.1f}"
            return ("CLOSE", f"z {z:+.2f} reverted past {-self.exit:+.1f}") if z > -self.exit else ("HOLD", f"z {z:+.2f}")
        if position == "SHORT_LONG":
            if z > self.stop:
                return "CLOSE", f"z {z:+.2f} beyond the stop {self.stop:+.1f}"
            return ("CLOSE", f"z {z:+.2f} reverted past {self.exit:+.1f}") if z < self.exit else ("HOLD", f"z {z:+.2f}")
        if self.entry < z < self.stop:
            return "SHORT_LONG", f"spread rich: z {z:+.2f} > {self.entry}"
        if -self.stop < z < -self.entry:
            return "LONG_SHORT", f"spread cheap: z {z:+.2f} < {-self.entry}"
        return "HOLD", f"z {z:+.2f} inside the entry band; staying flat"


def _pair_of(state: dict[str, Any]) -> str | None:
    """The chosen pair from ``get_state``'s stage line (None on the selection step)."""
    stage = str(state.get("stage", ""))
    prefix = "trade the pair "
    if stage.startswith(prefix):
        return stage[len(prefix) :].split(" ")[0]
    return None


#: task family -> the offline scripted agent ``finenvs bench`` runs through its text interface
SCRIPTED_AGENTS: dict[str, type] = {"trading": ScriptedTradingAgent, "hedging": ScriptedPairsAgent}

__all__ = ["SCRIPTED_AGENTS", "ScriptedPairsAgent", "ScriptedTradingAgent"]
