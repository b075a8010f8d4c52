"""Date-locked tools for agents: one registry serves the text wrapper, the LLM runner and the MCP server.

Typical use::

    import gymnasium as gym
    from finenvs.tools import ToolBox

    env = gym.make("FinTrading-v0", symbol="TSLA", split="eval")
    env.reset(seed=0)
    tools = ToolBox(env)
    tools.specs()                                   # chat-completions ``tools`` list
    tools.call("get_prices", {"lookback": 5}).data  # bars up to the current close only

See :mod:`finenvs.tools.registry` for the call contract and
:mod:`finenvs.tools.market` for the market tools.

A family's tools live in its folder (``finenvs/tasks/<family>/``) or here when
several families share them (market, option pricing, risk, XBRL facts); the task
spec names the family's tools and :func:`finenvs.tasks.register_task` registers
them as its toolset in :data:`TOOLSETS`. The registry never imports a tool module.
"""

from finenvs.tools.market import MARKET_TOOLS
from finenvs.tools.registry import (
    CLOSED_BOOK_TOOLSET,
    COMMIT_TOOL,
    DEFAULT_MAX_CHARS,
    TOOLSETS,
    Tool,
    ToolBox,
    ToolContext,
    ToolResult,
    ToolUsage,
    cap_output,
    register_tools,
    validate_arguments,
)
from finenvs.tools.risk import RISK_TOOLS  # registers the "risk" toolset

__all__ = [
    "CLOSED_BOOK_TOOLSET",
    "COMMIT_TOOL",
    "DEFAULT_MAX_CHARS",
    "MARKET_TOOLS",
    "RISK_TOOLS",
    "TOOLSETS",
    "Tool",
    "ToolBox",
    "ToolContext",
    "ToolResult",
    "ToolUsage",
    "cap_output",
    "register_tools",
    "validate_arguments",
]
