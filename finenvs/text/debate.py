"""The pieces of FAB++'s adversarial debate every family shares (the wrapper is
:class:`finenvs.wrappers.debate.Debate`; each family's task spec names the builder of its counter-arguments)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: (first answer correct, final answer correct) -> (FAB++'s multiplier, outcome).
OUTCOMES: dict[tuple[bool, bool], tuple[float, str]] = {
    (True, True): (1.2, "correct answer held"),
    (False, True): (1.0, "wrong answer corrected"),
    (True, False): (0.8, "correct answer abandoned"),
    (False, False): (0.8, "wrong answer kept"),
}


@dataclass(frozen=True)
class DebateRound:
    """One task's debate: the counter-argument, the mistake it argues for, the best score, what is correct.

    Attributes:
        counter_argument: The text the agent faces after its first answer (states a wrong alternative, never
            the truth).
        mistake: The wrong alternative in a few words (for the record).
        max_score: The env's best reward (FinQA 1.0, FinOptions 100).
        correct: ``(reward, info) -> bool``: whether an answer scored ``reward`` is correct.
    """

    counter_argument: str
    mistake: str
    max_score: float
    correct: Callable[[float, dict[str, Any]], bool]


def debate_outcome(first_correct: bool, final_correct: bool) -> tuple[float, str]:
    """FAB++'s multiplier and its reason for one debated task."""
    return OUTCOMES[(bool(first_correct), bool(final_correct))]


__all__ = ["OUTCOMES", "DebateRound", "debate_outcome"]
