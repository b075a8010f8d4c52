"""FinQA-v0 tools: a calculator, and the market and XBRL tools under the question's date lock.

``calculate`` evaluates one arithmetic expression (numbers, ``+ - * / // % **``,
parentheses and ``sqrt exp log ln log10 abs min max round``; ``e``, ``pi``);
anything else — names, attribute access, calls of other functions — is refused.
Every number is a float, so exponents and results stay bounded and a call cannot
run away. A comma between digit groups (``1,234.5``) is a thousands separator,
except inside a function's parentheses, where commas separate arguments
(``max(1,234)`` is 234; write ``max(1234, 5)``).

The market tools (``get_prices``, ``list_filings``, ``get_rate``) and the XBRL
tools (``resolve_filing``, ``search_concepts``, ``get_facts``) are FinTrading's
and FinAudit's own, reading through the question's
:class:`~finenvs.tasks.qa.knowledge.QAView`: prices up to the as-of close, filings
public by then, XBRL filings released before the as-of date. A QA episode
trades nothing, so ``symbol`` is required.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from finenvs.tools.market import MARKET_TOOLS
from finenvs.tools.registry import Tool, ToolContext
from finenvs.tools.xbrl import get_facts, resolve_filing, search_concepts

MAX_EXPRESSION = 500
MAX_EXPONENT = 1_000
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "ln": math.log, "log10": math.log10, "abs": abs,
    "min": min, "max": max, "round": lambda x, n=0.0: _round(x, n)}
_CONSTANTS = {"e": math.e, "pi": math.pi}


def _round(x: float, n: float) -> float:
    if not float(n).is_integer() or abs(n) > 30:
        raise ValueError(f"round takes a whole number of digits between -30 and 30, not {n:g}")
    return round(x, int(n))


def evaluate(expression: str) -> float:
    """The value of an arithmetic expression (see the module docstring).

    Raises:
        ValueError: Not an arithmetic expression, a refused construct, or a math error.
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("empty expression")
    if len(expression) > MAX_EXPRESSION:
        raise ValueError(f"the expression has {len(expression)} characters; the limit is {MAX_EXPRESSION}")
    text = _strip_thousands(expression.replace("^", "**"))
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)  # floats only: an integer power tower would run for minutes
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent {right} is larger than {MAX_EXPONENT}")
            if right == 0 and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                raise ValueError("modulo by zero" if isinstance(node.op, ast.Mod) else "division by zero")
            value = _BINARY[type(node.op)](left, right)
            if isinstance(value, complex):  # a negative base to a fractional power
                raise ValueError(f"{left} ** {right} has no finite real value")
            return value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](ev(node.operand))
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
                and not node.keywords):
            return float(_FUNCTIONS[node.func.id](*(ev(a) for a in node.args)))
        raise ValueError(f"{type(node).__name__} is not allowed; use numbers, + - * / ** and "
                         f"{', '.join(sorted(_FUNCTIONS))}")

    try:
        value = ev(tree)
        finite = not isinstance(value, complex) and math.isfinite(float(value))
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"cannot evaluate {expression[:80]!r}: {exc}") from None
    if not finite:
        raise ValueError(f"{expression[:80]!r} has no finite real value")
    return float(value)


_GROUPED = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,.])")


def _strip_thousands(text: str) -> str:
    """``1,234.5`` -> ``1234.5`` outside function calls; inside a call's parentheses commas separate arguments."""
    pieces: list[str] = []
    depth_call: list[bool] = []  # per open parenthesis: whether it is a function call's
    last = 0
    for i, ch in enumerate(text):
        if ch in "()":
            segment = text[last:i]
            pieces.append(segment if (depth_call and depth_call[-1]) else
                          _GROUPED.sub(lambda m: m.group(0).replace(",", ""), segment))
            pieces.append(ch)
            last = i + 1
            if ch == "(":
                before = text[:i].rstrip()
                depth_call.append(bool(before) and (before[-1].isalnum() or before[-1] == "_"))
            elif depth_call:
                depth_call.pop()
    segment = text[last:]
    pieces.append(segment if (depth_call and depth_call[-1]) else
                  _GROUPED.sub(lambda m: m.group(0).replace(",", ""), segment))
    return "".join(pieces)


def calculate(ctx: ToolContext, expression: str) -> dict[str, Any]:
    return {"expression": expression, "value": evaluate(expression)}


def _with_symbol_required(tool: Tool) -> Tool:
    params = dict(tool.parameters)
    props = dict(params.get("properties", {}))
    if "symbol" in props:
        props["symbol"] = {**props["symbol"], "description": "Ticker (required: a question trades nothing)."}
        params = {**params, "properties": props, "required": sorted({*params.get("required", []), "symbol"})}
    return replace(tool, parameters=params)


_MARKET = {t.name: t for t in MARKET_TOOLS}
_XBRL = {"type": "string", "description": "Bundle name from resolve_filing (required)."}

QA_TOOLS: tuple[Tool, ...] = (
    Tool("calculate",
         "Evaluate one arithmetic expression exactly as written, e.g. '(180000/150000) - 1' or "
         "'100*exp(-0.05*1)'. Numbers, + - * / ** (or ^), parentheses, sqrt, exp, log/ln, log10, abs, min, max, "
         "round, e, pi.",
         {"type": "object", "properties": {"expression": {"type": "string", "minLength": 1,
                                                         "maxLength": MAX_EXPRESSION}},
          "required": ["expression"], "additionalProperties": False},
         calculate, summary="evaluate an arithmetic expression"),
    _with_symbol_required(_MARKET["get_prices"]),
    _with_symbol_required(_MARKET["list_filings"]),
    _MARKET["get_rate"],
    Tool("resolve_filing",
         "XBRL filings released before the question's date (public after the close of their release day): bundle, company, ticker, form, period end, "
         "release date.",
         {"type": "object", "properties": {"ticker": {"type": "string", "maxLength": 20},
                                           "form": {"type": "string", "maxLength": 10}},
          "additionalProperties": False},
         resolve_filing, summary="XBRL filings released by the question's date"),
    Tool("search_concepts", "Concepts of an XBRL filing whose name or label contains every query word.",
         {"type": "object", "properties": {"query": {"type": "string", "maxLength": 200}, "bundle": _XBRL,
                                           "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 40}},
          "required": ["bundle"], "additionalProperties": False},
         search_concepts, summary="find concept names in an XBRL filing"),
    Tool("get_facts",
         "Facts of one concept in an XBRL filing (non-dimensional contexts), as rows under columns. "
         "period: YYYY-MM-DD or 'YYYY-MM-DD to YYYY-MM-DD' (optional).",
         {"type": "object", "properties": {"concept": {"type": "string", "minLength": 3, "maxLength": 300},
                                           "period": {"type": "string", "maxLength": 40}, "bundle": _XBRL},
          "required": ["concept", "bundle"], "additionalProperties": False},
         get_facts, summary="facts of one concept in an XBRL filing"),
)


__all__ = ["QA_TOOLS", "calculate", "evaluate"]
