"""The text protocol of FinHedging-v0: two stages, one vocabulary, stage-checked.

The vocabulary has the four trading words and one word per ordered pair of the
universe, ``LONG/SHORT`` (``AAPL/MSFT``: LONG_SHORT is long AAPL, short MSFT;
``AAPL-MSFT`` is accepted too). Words carry their stage: ``("pair", k)`` or
``("trade", a)``. The env's :meth:`~finenvs.tasks.hedging.env.FinHedgingEnv.text_action`
turns a parsed word into the integer action of the current stage; a word of the
wrong stage is a format error with a documented default:

* selection step: a trading word (a ``LONG_SHORT`` before any pair is chosen)
  or an unreadable reply selects pair 0 (the first two symbols of the
  universe); the book stays flat, so the default costs nothing until the agent
  trades it;
* trading steps: a pair word (the pair is already fixed) or an unreadable reply
  is HOLD, which keeps the current exposure unchanged and trades nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finenvs.tasks.hedging.core import ACTION_NAMES, pair_list
from finenvs.text.protocol import TextProtocol

HEDGING_INSTRUCTIONS = """\
You run a dollar-neutral pairs book on a universe of stocks, one decision per trading day at the close.
First decision: choose one ordered pair LONG/SHORT of two different symbols (for example {example}); it is
fixed for the rest of the episode. Every later decision is one of:
- LONG_SHORT: long the pair's first symbol, short the second (half of equity on each leg),
- SHORT_LONG: long the second, short the first,
- HOLD: keep whatever position is open (or stay flat),
- CLOSE: exit to flat.
Share counts stay fixed while a position is held. Each entry and exit costs the fee on both legs'
notional. Scored on the equity curve: cumulative return, Sharpe ratio, maximum drawdown. Data ends at
this close; asking for later data counts as a look-ahead attempt."""


@dataclass(frozen=True)
class HedgingProtocol(TextProtocol):
    """A universe's protocol; its commit tool names the action in words (the four trading words, a pair as
    LONG/SHORT) instead of an enum of every ordered pair (n(n-1) words, re-sent with every request). Commits are
    read against the whole vocabulary as before, and :meth:`commit_schema` keeps the enum; so does the schema a
    grammar-constraining server forces (:meth:`commit_constrained`), where the enum costs no prompt tokens and
    makes every commit a word of the vocabulary."""

    def commit_advertised(self) -> dict[str, Any]:
        schema = self.commit_schema()
        schema["properties"]["action"] = {"type": "string", "description": self.hint}
        return schema

    def commit_constrained(self) -> dict[str, Any]:
        return self.commit_schema()


def hedging_protocol(symbols: tuple[str, ...] | list[str]) -> TextProtocol:
    """The protocol of a universe (see module doc)."""
    symbols = tuple(symbols)
    actions: dict[str, tuple[str, int]] = {name: ("trade", a) for a, name in enumerate(ACTION_NAMES)}
    synonyms: dict[str, str] = {"FLAT": "CLOSE", "EXIT": "CLOSE", "KEEP": "HOLD"}
    for k, (i, j) in enumerate(pair_list(len(symbols))):
        word = f"{symbols[i]}/{symbols[j]}".upper()
        actions[word] = ("pair", k)
        synonyms[f"{symbols[i]}-{symbols[j]}".upper()] = word
    example = f"{symbols[0]}/{symbols[1]}"
    return HedgingProtocol(
        task="FinHedging-v0",
        instructions=HEDGING_INSTRUCTIONS.format(example=example),
        actions=actions,
        synonyms=synonyms,
        default="HOLD",
        default_reason="HOLD trades nothing; on the first decision an unreadable reply selects "
        f"{example} and stays flat",
        hint=f"LONG/SHORT pair on the first decision, e.g. {example}; then LONG_SHORT|SHORT_LONG|HOLD|CLOSE",
        episode_labels=("Universe", "Costs"),
    )


__all__ = ["HEDGING_INSTRUCTIONS", "HedgingProtocol", "hedging_protocol"]
