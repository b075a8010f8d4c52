"""FinHedging-v0's offline scripted chat agent (tools first, then a committed decision; stateless)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finenvs.text.chat import NO_USAGE, ChatReply, ScriptedChatAgent, first_prompt, prompt_state


@dataclass
class ScriptedPairsAgent(ScriptedChatAgent):
    """Offline FinHedging-v0 agent that speaks the chat protocol: tools first, then a committed decision.

    Stateless like :class:`ScriptedTradingAgent` (the same conversation always
    gets the same reply). Each decision takes two assistant turns:

    1. read the stage, the pair and the position from the prompt's state lines (``get_state``'s own words; it
       calls ``get_state`` only for a prompt without them), and call ``get_pair_stats``: without a pair on the
       first decision (every pair
       ranked by its Dickey-Fuller statistic over ``lookback`` days), with the
       chosen pair afterwards;
    2. commit: on the first decision the top-ranked pair (most mean-reverting
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
        shown = prompt_state(first_prompt(messages))  # the prompt's state lines are get_state's own words
        if "get_state" in results:
            state = results["get_state"] or {}
        elif "Stage" in shown and ("Position" in shown or _pair_of({"stage": shown["Stage"]}) is None):
            state = {"stage": shown["Stage"], "position": shown.get("Position", "FLAT")}  # no position before a pair
        else:
            return self._calls(round_no, ("get_state", {}))
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
            ranked = stats.get("rows") or []
            if not ranked:
                return "HOLD", f"no pair statistics ({stats.get('error', 'empty ranking')}); default pair"
            best = dict(zip(stats.get("columns") or [], ranked[0], strict=False))
            if not isinstance(best.get("pair"), str):
                return "HOLD", "unreadable pair ranking; default pair"
            return best["pair"], (f"most mean-reverting spread over {stats.get('days')} days: Dickey-Fuller t "
                                  f"{best.get('df_tstat')}, half-life {best.get('half_life_days')} days")
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


__all__ = ["ScriptedPairsAgent"]
