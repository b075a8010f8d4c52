"""The text protocol of FinTrading-v0: instructions, vocabulary and the safe default."""

from __future__ import annotations

from finenvs.tasks.trading.core import BUY, HOLD, SELL
from finenvs.text.protocol import TextProtocol

TRADING_INSTRUCTIONS = """\
You manage a one-stock portfolio, one decision per trading day, taken at the close.
Choose the position to hold until the next close:
- BUY: long the whole equity (share count fixed while held),
- SELL: short the whole equity (flat if shorting is disabled),
- HOLD: flat (no position; closes any open one).
Entering or exiting a position costs the fee on the traded notional. You are scored on the
equity curve: cumulative return, Sharpe ratio and maximum drawdown. You see data up to the
current close only; asking for later data returns nothing new and is counted as a look-ahead attempt."""

TRADING_PROTOCOL = TextProtocol(
    task="FinTrading-v0",
    instructions=TRADING_INSTRUCTIONS,
    actions={"SELL": SELL, "HOLD": HOLD, "BUY": BUY},
    synonyms={"LONG": "BUY", "SHORT": "SELL", "FLAT": "HOLD"},
    default="HOLD",
    default_reason="HOLD is flat: an unreadable reply takes no market risk",
)

__all__ = ["TRADING_INSTRUCTIONS", "TRADING_PROTOCOL"]
