"""The task spec of FinTrading-v0."""

from __future__ import annotations

from finenvs.tasks.common import (
    HERCULEAN_MARKET_COLUMNS,
    MARKET_COLUMNS,
    market_episode_metrics,
    market_run_metrics,
    market_run_output,
    symbol_plan,
)
from finenvs.tasks.market_section import MarketSection
from finenvs.tasks.spec import BenchSection, RLSpec, TaskSpec
from finenvs.tasks.trading.agent import ScriptedTradingAgent
from finenvs.tasks.trading.baselines import TRADING_POLICIES
from finenvs.tasks.trading.env import FinTradingEnv
from finenvs.tasks.trading.vector import FinTradingVectorEnv
from finenvs.tools.market import MARKET_TOOLS

ENV_ID = "FinTrading-v0"
#: The four stocks of HERCULEAN's Table 2 and 3 (its Trading workflow): the default plan of an agent run.
HERCULEAN_SYMBOLS = ("MSFT", "TSLA", "AAPL", "NVDA")

#: HERCULEAN paper, Table 2, buy-and-hold baseline ("BL") of the Trading workflow on the
#: 2026-01-02..2026-03-31 window (CR %, SR, MDD %). Results licensed Apache-2.0.
HERCULEAN_PUBLISHED_BUY_AND_HOLD: dict[str, dict[str, float]] = {
    "MSFT": {"CR": -21.59, "SR": -2.92, "MDD": 26.04},
    "TSLA": {"CR": -15.18, "SR": -1.72, "MDD": 21.34},
    "AAPL": {"CR": -6.31, "SR": -0.96, "MDD": 11.24},
    "NVDA": {"CR": -7.69, "SR": -0.72, "MDD": 15.54},
}
#: The same baseline in the paper's Table 3, the live window 2026-04-01..2026-05-01.
HERCULEAN_PUBLISHED_LIVE_BUY_AND_HOLD: dict[str, dict[str, float]] = {
    "MSFT": {"CR": 12.15, "SR": 4.29, "MDD": 5.81},
    "TSLA": {"CR": 2.46, "SR": 0.87, "MDD": 9.97},
    "AAPL": {"CR": 9.53, "SR": 4.41, "MDD": 2.52},
    "NVDA": {"CR": 12.86, "SR": 4.43, "MDD": 8.43},
}



def published_rows(figures: dict[str, dict[str, float]]) -> dict[str, dict[str, dict[str, float]]]:
    """Published Buy&Hold figures (CR %, SR, MDD %) as a bench row in the HERCULEAN columns' keys and fractions."""
    return {"Buy&Hold (published)": {s: {"h_cumulative_return": v["CR"] / 100, "h_sharpe": v["SR"],
                                         "h_max_drawdown": v["MDD"] / 100} for s, v in figures.items()}}


SPEC = TaskSpec(
    family="trading",
    env_id=ENV_ID,
    text_env_id="FinTrading-text-v0",
    description="One asset, daily SELL/HOLD/BUY target position; 5 bp fees; CR/SR/MDD (standard and herculean).",
    env=FinTradingEnv,
    vector_env=FinTradingVectorEnv,
    kwargs={"symbol": None, "split": "default", "window": 30, "fee_bps": 5.0, "allow_short": True, "fill": "close",
            "reward": "log_return", "source": "real", "dataset": "core"},
    plan=symbol_plan(ENV_ID, HERCULEAN_SYMBOLS),
    episode_metrics=market_episode_metrics,
    run_metrics=market_run_metrics,
    columns=MARKET_COLUMNS,
    scripted_agent=ScriptedTradingAgent,
    baselines=TRADING_POLICIES,
    tools=MARKET_TOOLS,
    run_printer=market_run_output,
    run_options=("symbol", "start", "end", "fee_bps", "fill", "chart"),
    bench=BenchSection(
        title="Trading", suites=("herculean",), section=MarketSection(), market=True, herculean="Trading",
        herculean_columns=HERCULEAN_MARKET_COLUMNS, herculean_baseline="buy_and_hold",
        herculean_labels=HERCULEAN_SYMBOLS, published_block="trading", herculean_decisions=True,
        published=published_rows(HERCULEAN_PUBLISHED_BUY_AND_HOLD),
        published_live=published_rows(HERCULEAN_PUBLISHED_LIVE_BUY_AND_HOLD),
    ),
    rl=RLSpec(train_kwargs={"episode_length": 63}, eval_episodes="universe"),
)
