"""The text protocol of FinTrading-v0: instructions, vocabulary and the safe default."""

from __future__ import annotations

from finenvs.tasks.trading.core import BUY, HOLD, SELL
from finenvs.text.protocol import TextProtocol

TRADING_INSTRUCTIONS = """\
One stock, one decision per trading day at the close, held until the next close: BUY long the whole equity
(shares fixed while held), SELL short it, HOLD flat. Scored on the equity curve: cumulative return, Sharpe ratio,
maximum drawdown."""

TRADING_PROTOCOL = TextProtocol(
    task="FinTrading-v0",
    instructions=TRADING_INSTRUCTIONS,
    actions={"SELL": SELL, "HOLD": HOLD, "BUY": BUY},
    synonyms={"LONG": "BUY", "SHORT": "SELL", "FLAT": "HOLD"},
    default="HOLD",
    default_reason="flat: no market risk",
    episode_labels=("Symbol", "Costs", "Shorting"),
)

__all__ = ["TRADING_INSTRUCTIONS", "TRADING_PROTOCOL"]
