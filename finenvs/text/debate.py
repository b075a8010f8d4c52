"""The pieces of FAB++'s adversarial debate every family shares (the wrapper is
:class:`finenvs.wrappers.debate.Debate`; each family's task spec names the builder of its counter-arguments).

**One rule decides a debated task's score** (:func:`debate_verdict`); every path calls it: the wrapper (so the text
interface, ``finenvs llm``, ``mcp``, ``harness``, A2A and ``finenvs score``'s replay, which all play through it),
``finenvs bench --debate`` for the baselines (:mod:`finenvs.evaluation.debate_runs`) and for the agents' debated
runs (:func:`finenvs.evaluation.agent_runs.debate_record`), and the section aggregate's overall with debate, which is
the aggregate of these per-task debated scores.

What is FAB++'s and what is finenvs' design:

* **FAB++'s** (its paper and its reference implementation, AgentBusters' adversarial debate manager): after its
  answer the agent is challenged with a counter-argument and replies; a multiplier judges the reply (the paper
  states [0.8, 1.2], the reference implementation uses [0.5, 1.2]),
  and the task's score is the score of the agent's answer **times** that multiplier (the reply is not re-scored
  for correctness). The reference decides the multiplier **from the reply's text**: 1.2 when it brings new
  evidence and defends its thesis, 1.0 when it repeats itself, 0.5 when it concedes ("you're right", "I agree"
  in a short reply), contradicts its thesis (bullish words turned bearish) or hallucinates.
* **finenvs'** (the default rule, ``"finenvs"``): the counter-argument argues a documented wrong alternative
  built in code, and the multiplier is decided from **correctness checked in code** of the first and the final
  answer (:data:`OUTCOMES`): 1.2 a correct answer held, 1.0 a wrong answer corrected, 0.8 a correct answer
  abandoned or a wrong one kept. No text judge reads the reply.
* The score both share: **debated score = min(max score, first answer's score x multiplier)**: the answer the
  task asked for is scored, the debate scales it; a correct answer given up scores 0.8 of its points (not 0), a
  wrong answer corrected keeps its first score (the debate is a test of conviction, not a second attempt).

``"reference"`` (:data:`REFERENCE_OUTCOMES`) is a named variant that reproduces the reference's multiplier
*values* from the same code-checked correctness: an answer that changes (abandoned or corrected: the reference
scores a concession or a contradiction) 0.5, a correct answer held 1.2, a wrong answer held 1.0 (the reference's
"repeats itself"). It cannot reproduce the reference's text heuristics (new evidence, hallucinated figures).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: (first answer correct, final answer correct) -> (multiplier, outcome): finenvs' rule (the default).
OUTCOMES: dict[tuple[bool, bool], tuple[float, str]] = {
    (True, True): (1.2, "correct answer held"),
    (False, True): (1.0, "wrong answer corrected"),
    (True, False): (0.8, "correct answer abandoned"),
    (False, False): (0.8, "wrong answer kept"),
}
#: The same outcomes with the multiplier values of FAB++'s reference implementation (see the module docstring).
REFERENCE_OUTCOMES: dict[tuple[bool, bool], tuple[float, str]] = {
    (True, True): (1.2, "correct answer held"),
    (False, True): (0.5, "wrong answer corrected"),
    (True, False): (0.5, "correct answer abandoned"),
    (False, False): (1.0, "wrong answer kept"),
}
#: Rule name -> its outcome table; ``"finenvs"`` is the default.
DEBATE_RULES: dict[str, dict[tuple[bool, bool], tuple[float, str]]] = {"finenvs": OUTCOMES,
                                                                       "reference": REFERENCE_OUTCOMES}
DEFAULT_DEBATE_RULE = "finenvs"


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


@dataclass(frozen=True)
class DebateVerdict:
    """What the debate decides for one task (:func:`debate_verdict`).

    Attributes:
        multiplier: The rule's multiplier.
        outcome: Its reason ("correct answer held", ...).
        debated_score: min(max score, first score x multiplier), on the env's scale.
        rule: The rule that decided it.
    """

    multiplier: float
    outcome: str
    debated_score: float
    rule: str

    def record(self) -> dict[str, Any]:
        return {"multiplier": self.multiplier, "outcome": self.outcome, "debated_score": self.debated_score,
                "debate_rule": self.rule}


def debate_outcome(first_correct: bool, final_correct: bool, rule: str = DEFAULT_DEBATE_RULE) -> tuple[float, str]:
    """The rule's multiplier and its reason for one debated task."""
    if rule not in DEBATE_RULES:
        raise ValueError(f"unknown debate rule {str(rule)[:40]!r}; rules: {sorted(DEBATE_RULES)}")
    return DEBATE_RULES[rule][(bool(first_correct), bool(final_correct))]


def debate_verdict(first_score: float, first_correct: bool, final_correct: bool, max_score: float,
                   rule: str = DEFAULT_DEBATE_RULE) -> DebateVerdict:
    """The score of one debated task, the one rule every path calls (see the module docstring).

    Args:
        first_score: The first answer's plain score (the env's scale).
        first_correct: Whether the first answer is correct (the family's ``DebateRound.correct``).
        final_correct: Whether the final answer (after the counter-argument) is correct.
        max_score: The env's best score (the debated score is capped there).
        rule: ``"finenvs"`` (default) or ``"reference"`` (:data:`DEBATE_RULES`).
    """
    multiplier, outcome = debate_outcome(first_correct, final_correct, rule)
    return DebateVerdict(multiplier, outcome, min(float(max_score), float(first_score) * multiplier), rule)


def unfinished_verdict(status: str, rule: str = DEFAULT_DEBATE_RULE) -> DebateVerdict:
    """A debated task that did not finish: a wrong answer kept, scoring 0 (never dropped)."""
    multiplier, outcome = debate_outcome(False, False, rule)
    return DebateVerdict(multiplier, f"{outcome} ({status})", 0.0, rule)


__all__ = ["DEBATE_RULES", "DEFAULT_DEBATE_RULE", "OUTCOMES", "REFERENCE_OUTCOMES", "DebateRound", "DebateVerdict",
           "debate_outcome", "debate_verdict", "unfinished_verdict"]
