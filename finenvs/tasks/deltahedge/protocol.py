"""The text protocol of FinDeltaHedge-v0: a reply states the hedge ratio (see :class:`HedgeProtocol`).

:func:`hedge_protocol` builds an env's protocol: its instructions, the ``commit_action``
answer schema, and how a reply (JSON, a ``Hedge: 0.53`` line, a bare number or a tool
call) becomes the env's action, or an invalid action with the reason (never an exception).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.tasks.deltahedge.core import MAX_HEDGE, hedge_action
from finenvs.text import safe_json
from finenvs.text.protocol import AnswerProtocol, ParsedAction, TextProtocol, reply_problem

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
#: ``Hedge: 0.53`` lines (also ``Hedge ratio``, ``Action``, ``Answer``, ``Decision``, ``Final ...``); the value is
#: the token after the colon. Written without overlapping repeats so it runs in linear time on any reply.
_HEDGE_LINE = re.compile(r"^[ \t>*_#`-]*(?:final[ \t]+)?(?:hedge(?:[ \t]+ratio)?|action|answer|decision)"
                         r"[ \t*_`]*[:=][ \t*_`\"']*(\S+)", re.IGNORECASE | re.MULTILINE)
_TOKEN_STRIP = ".,;:!*_`'\")"
#: Longest number token read (a longer one is refused, not converted).
MAX_NUMBER_CHARS = 40


@dataclass(frozen=True)
class HedgeProtocol(TextProtocol):
    """The text protocol of FinDeltaHedge-v0: a reply states the hedge ratio, a number in [-1.5, 1.5].

    Read, first match wins: a JSON object (alone or in a ```json block) with
    ``"hedge"`` (or ``"action"``); lines ``Hedge: 0.53`` (or ``Hedge ratio``,
    ``Action``, ``Answer``, ``Decision``, ``Final ...``; several that disagree
    are ambiguous); a reply that is one number; a ``commit_action`` call
    ``{"hedge": 0.53}``. The value becomes the env's action
    (:meth:`action_of`: the normalised action ``hedge / 1.5`` as a float32 array
    of shape (1,), see :func:`hedge_action`, or the nearest bin for
    ``action_type="discrete"``). A value outside [-1.5, 1.5], NaN, infinite,
    huge, not a number, or no value at all is invalid with the reason; the env's
    :meth:`FinDeltaHedgeEnv.text_action` then keeps the hedge held (no trade,
    no cost). Never raises.

    Attributes:
        bins: The hedge ratio of each discrete action (None for the box space).
    """

    bins: tuple[float, ...] | None = None

    def action_of(self, hedge: float) -> Any:
        """The env action that sets ``hedge`` shares per option (see :func:`hedge_action`)."""
        if self.bins is None:
            return hedge_action(hedge)
        return int(np.argmin(np.abs(np.asarray(self.bins) - hedge)))

    def decode(self, value: Any) -> Any:
        """The env action a trajectory recorded (a list of one float, or a bin index)."""
        if self.bins is not None or value is None:
            return value
        return np.array(value if isinstance(value, (list, tuple)) else [value], dtype=np.float32)

    def commit_schema(self) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"hedge": {"type": "number", "minimum": -MAX_HEDGE, "maximum": MAX_HEDGE,
                                         "description": "Shares of the underlying to hold per option sold."},
                               "reasoning": {"type": "string", "description": "Optional: why (not scored)."}},
                "required": ["hedge"], "additionalProperties": False}

    def read_value(self, value: Any, via: str, reasoning: str = "") -> ParsedAction:
        """The hedge ratio ``value`` (a number or its text) as a parsed action, or invalid with the reason."""
        if isinstance(value, str):
            token = value.strip()
            if len(token) > MAX_NUMBER_CHARS:
                return self.invalid(f"the hedge {token[:MAX_NUMBER_CHARS]!r}... is not a number of at most "
                                    f"{MAX_NUMBER_CHARS} characters")
            try:
                hedge = float(token)
            except ValueError:
                return self.invalid(f"the hedge {token!r} is not a number")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                hedge = float(value)
            except OverflowError:
                return self.invalid("the hedge is a huge integer, outside [-1.5, 1.5]")
        else:
            return self.invalid(f"the hedge must be a number in [-{MAX_HEDGE}, {MAX_HEDGE}]; got "
                                f"{type(value).__name__} {str(value)[:MAX_NUMBER_CHARS]!r}")
        if not math.isfinite(hedge):
            return self.invalid(f"the hedge {hedge} is not a finite number")
        if abs(hedge) > MAX_HEDGE:
            return self.invalid(f"the hedge {hedge:.6g} is outside [-{MAX_HEDGE}, {MAX_HEDGE}]")
        return ParsedAction(self.action_of(hedge), f"HEDGE {hedge:+.4f}", None, via, reasoning)

    def parse_commit(self, arguments: Any) -> ParsedAction:
        arguments, problem = AnswerProtocol.commit_arguments(arguments)
        if problem is not None:
            return self.invalid(problem)
        keys = {k.lower(): k for k in arguments if isinstance(k, str)}
        key = keys.get("hedge", keys.get("action"))
        if key is None:
            return self.invalid(f"commit_action needs a number 'hedge' in [-{MAX_HEDGE}, {MAX_HEDGE}]")
        reasoning = arguments.get("reasoning", "")
        return self.read_value(arguments[key], "tool", reasoning[: self.max_chars] if isinstance(reasoning, str) else "")

    def parse_text(self, text: Any) -> ParsedAction:
        problem = reply_problem(text, self.max_chars)
        if problem is not None:
            return self.invalid(problem)
        stripped = text.strip()
        whole = _FENCE.fullmatch(stripped)
        candidate = whole.group(1) if whole else stripped
        not_json = None
        if candidate.startswith("{"):
            obj, not_json = safe_json.try_loads(candidate, allow_non_finite=True)
            if isinstance(obj, dict):
                keys = {k.lower(): k for k in obj if isinstance(k, str)}
                key = keys.get("hedge", keys.get("action"))
                if key is None:
                    return self.invalid("JSON reply without a 'hedge' field")
                reasoning = obj.get("reasoning", "")
                return self.read_value(obj[key], "json", reasoning if isinstance(reasoning, str) else "")
        tokens = [t.rstrip(_TOKEN_STRIP) for t in _HEDGE_LINE.findall(text)]
        if tokens:
            parsed = [self.read_value(t, "marker") for t in tokens]
            if len({p.name for p in parsed}) > 1:
                shown = sorted({t[:12] for t in tokens})[:5]
                return self.invalid(f"ambiguous: hedge lines {shown} disagree")
            return parsed[0]
        bare = stripped.strip(" *_`'\"!;,()").rstrip(".")
        if re.fullmatch(r"[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?", bare):
            return self.read_value(bare, "word")
        why = f" (the reply starts like JSON but is not: {not_json})" if not_json else ""
        return self.invalid(f"no hedge ratio found{why}; end the reply with a line 'Hedge: <{self.hint}>'")


def hedge_protocol(option: str, cost_bps: float, bins: tuple[float, ...] | None = None) -> HedgeProtocol:
    """The protocol of an env: the option hedged, its costs, and its action bins (see :class:`HedgeProtocol`)."""
    return HedgeProtocol(
        task="FinDeltaHedge-v0",
        instructions=(
            f"You are short one European {option} and hedge it with shares of its underlying until expiry. "
            "At each step set the hedge ratio: the shares you hold per option over the next step, a number in "
            f"[-{MAX_HEDGE}, {MAX_HEDGE}] (a short call is hedged with shares > 0, a short put with shares < 0). "
            "The aim is a book (premium, hedge gains, interest and costs, minus the option's value) that ends as "
            "close to 0 as possible: each step's reward is minus the squared step P&L in percent of the initial "
            f"spot. Trading costs {cost_bps:g} bps of the notional traded. Black-Scholes delta hedging is the "
            "classical answer."),
        actions={"KEEP": None},
        default="KEEP",
        default_reason="KEEP holds the current hedge: no trade, no cost",
        hint=f"hedge ratio in [-{MAX_HEDGE}, {MAX_HEDGE}]",
        answer_note=(
            'Commit with the commit_action tool ({"hedge": <number>}), or end your reply with one line '
            f"'Hedge: <number>' (shares per option, in [-{MAX_HEDGE}, {MAX_HEDGE}]), or reply "
            '{"hedge": <number>}. A reply without a readable hedge ratio in range counts as a format error and '
            "keeps the hedge you hold (no trade, no cost)."),
        commit_note="Commit this step's hedge ratio; the option then moves to the next step.",
        episode_labels=("Option", "Pricing vol", "Steps"),
        bins=bins,
    )


__all__ = ["MAX_NUMBER_CHARS", "HedgeProtocol", "hedge_protocol"]
