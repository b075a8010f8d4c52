"""FAB++'s Alpha score: the role score per unit of (log) cost, discounted for look-ahead.

FAB++ (its Appendix A) defines::

    alpha = R * D / (C * P)

with R the role score (the 0-100 section aggregate), D the debate multiplier in
[0.8, 1.2] (1.0 without a debate round), C = ln(1 + cost) and P = 1 + the
look-ahead penalty.

What the paper leaves open, fixed here and reported with every result:

* **Cost** is the run's dollar cost from the token prices given (``finenvs llm``
  or ``finenvs bench`` ``--price-in/--price-out``, dollars per million prompt and
  completion tokens, or ``--prices FILE``). At zero cost — an offline agent, a baseline, a
  model served for free — C = ln(1) = 0 and the formula divides by zero: alpha
  is then *undefined* (None, with the reason), never infinite and never a made-up
  number. With ``cost_floor`` (dollars, > 0) the cost is taken as at least the
  floor, C = ln(1 + max(cost, floor)), and the floor is recorded. An unknown cost
  (no prices given, or an endpoint that reported no token counts) is undefined
  too: never counted as 0.
* **Look-ahead penalty** is the look-ahead attempts per decision (every date-
  locked read that asked past the decision's date, counted by the as-of view):
  P = 1 + attempts / decisions, so P = 1 for an agent that never asked for the
  future and 2 for one that asked once per decision on average.
* **R** is clipped to [0, 100] and **D** to [0.8, 1.2]: the ranges FAB++'s
  Appendix A states for them. FAB++'s code does not clip them; the clipping is
  finenvs' choice (R from finenvs' aggregate and D from its debate round are in
  those ranges already, so it only bounds a value passed in by hand).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: FAB++'s range of the debate multiplier.
DEBATE_RANGE = (0.8, 1.2)


@dataclass(frozen=True)
class AlphaScore:
    """The Alpha score and its parts.

    Attributes:
        alpha: R * D / (C * P), or None when undefined (``note`` says why).
        role_score: R (0-100).
        debate_multiplier: D.
        cost_usd: The cost used in C (after the floor), None when unknown.
        cost_term: C = ln(1 + cost) (None when the cost is unknown).
        lookahead_penalty: attempts per decision.
        lookahead_term: P = 1 + penalty.
        note: Why alpha is undefined, or how the cost was floored ("" otherwise).
    """

    alpha: float | None
    role_score: float | None
    debate_multiplier: float
    cost_usd: float | None
    cost_term: float | None
    lookahead_penalty: float
    lookahead_term: float
    note: str = ""

    def record(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "R": self.role_score, "D": self.debate_multiplier, "cost_usd": self.cost_usd,
                "C": self.cost_term, "lookahead_penalty": self.lookahead_penalty, "P": self.lookahead_term,
                "note": self.note}


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _optional_number(name: str, value: Any) -> float | None:
    return None if value is None else _number(name, value)


def alpha_score(
    role_score: float | None,
    *,
    cost_usd: float | None,
    lookahead_attempts: int = 0,
    decisions: int = 0,
    debate_multiplier: float = 1.0,
    cost_floor: float | None = None,
) -> AlphaScore:
    """The Alpha score of one agent (see the module docstring for the conventions).

    Args:
        role_score: R, the agent's 0-100 role score (None: it has none, alpha is undefined).
        cost_usd: The run's dollar cost (None: unknown).
        lookahead_attempts: Look-ahead attempts over the run.
        decisions: Decisions over the run (0: the penalty is 0).
        debate_multiplier: D (1.0 without a debate round); clipped to [0.8, 1.2].
        cost_floor: Optional dollar floor of the cost (> 0), making alpha finite at zero cost.

    Raises:
        ValueError: A negative cost, attempt count or decision count, a non-finite number, or a floor <= 0.
    """
    r = _optional_number("role_score", role_score)
    cost = _optional_number("cost_usd", cost_usd)
    d = _number("debate_multiplier", debate_multiplier)
    floor = _optional_number("cost_floor", cost_floor)
    attempts = _number("lookahead_attempts", lookahead_attempts)
    n = _number("decisions", decisions)
    if cost is not None and cost < 0:
        raise ValueError(f"cost_usd must be >= 0, got {cost_usd!r}")
    if attempts < 0 or n < 0:
        raise ValueError(f"lookahead_attempts and decisions must be >= 0, got {lookahead_attempts!r}, {decisions!r}")
    if floor is not None and floor <= 0:
        raise ValueError(f"cost_floor must be > 0 dollars, got {cost_floor!r}")
    d = min(DEBATE_RANGE[1], max(DEBATE_RANGE[0], d))
    if r is not None:
        r = min(100.0, max(0.0, r))
    penalty = attempts / n if n > 0 else 0.0
    p = 1.0 + penalty
    note = ""
    if cost is not None and floor is not None and cost < floor:
        note = f"cost ${cost:g} floored to ${floor:g}"
        cost = floor
    c = None if cost is None else math.log1p(cost)
    if r is None:
        alpha, note = None, "undefined: no role score"
    elif c is None:
        alpha, note = None, "undefined: the cost is unknown (no token prices given, or token counts not reported)"
    elif c == 0.0:
        alpha, note = None, "undefined: zero cost (C = ln(1 + 0) = 0 divides); pass a cost floor to compare"
    else:
        alpha = r * d / (c * p)
    return AlphaScore(alpha, r, d, cost, c, penalty, p, note)


__all__ = ["DEBATE_RANGE", "AlphaScore", "alpha_score"]
