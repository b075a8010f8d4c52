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

Importing this package registers every family's tools: the tool modules imported
below call :func:`~finenvs.tools.registry.register_tools`, and :class:`ToolBox`
only looks families up in :data:`TOOLSETS` (the registry never imports a tool module).
"""

from finenvs.tools.market import MARKET_TOOLS  # noqa: E402,I001  (registers the market tools)
from finenvs.tools.pairs import PAIR_TOOLS  # noqa: E402,I001  (registers the pairs tools)
from finenvs.tools.report import REPORT_TOOLS  # noqa: E402,I001  (registers the report tools)
from finenvs.tools.audit import AUDIT_TOOLS  # noqa: E402,I001  (registers the audit tools)
from finenvs.tools.qa import QA_TOOLS  # noqa: E402,I001  (registers the FinQA tools)
from finenvs.tools.options import DELTAHEDGE_TOOLS  # noqa: E402,I001  (registers the options tools)
from finenvs.tools.risk import RISK_TOOLS  # noqa: E402,I001  (registers the risk tools, also into "options")
from finenvs.tools.registry import (
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

#: The toolset of a closed-book text env (``tools="none"``): no tool but the commit tool every ToolBox adds.
CLOSED_BOOK_TOOLSET = "none"
register_tools(CLOSED_BOOK_TOOLSET, ())
OPTIONS_TOOLS = TOOLSETS["options"]  # the options tools with the risk tools

__all__ = [
    "CLOSED_BOOK_TOOLSET",
    "COMMIT_TOOL",
    "DEFAULT_MAX_CHARS",
    "MARKET_TOOLS",
    "PAIR_TOOLS",
    "REPORT_TOOLS",
    "AUDIT_TOOLS",
    "QA_TOOLS",
    "OPTIONS_TOOLS",
    "DELTAHEDGE_TOOLS",
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
