"""A FinQA-v0 question: its text, its parts (scored by :mod:`finenvs.scoring.qa`) and how its answer was computed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finenvs.scoring.qa import Part, answer_format, score_answer

SECTIONS = ("knowledge", "analysis")


@dataclass(frozen=True)
class QAItem:
    """One question.

    Attributes:
        id: Stable identifier: ``<section>/<topic>/<seed>``.
        section: ``"knowledge"`` or ``"analysis"``.
        topic: Generator name (``npv_crossover``, ``close_price``, ...).
        seed: Generation seed (for analysis topics seed 0 is the published question).
        question: The question text (without the answer format).
        parts: The scored parts with their truths (computed in code).
        inputs: The quantities the question states, restated as data for scripted agents;
            never the answer.
        as_of: The date the question is asked at (knowledge items; analysis items: None).
        solution: The computation that produced the truth, step by step.
        published: For a reproduced published question: its id, the published answer and
            the correction (``None`` otherwise).
        closed_book: Why the question cannot be answered from the shipped data (``None``: it can).
    """

    id: str
    section: str
    topic: str
    seed: int
    question: str
    parts: tuple[Part, ...]
    inputs: dict[str, Any] = field(default_factory=dict)
    as_of: str | None = None
    solution: tuple[str, ...] = ()
    published: dict[str, Any] | None = None
    closed_book: str | None = None

    def prompt(self) -> str:
        """The question and its answer format, as the agent reads it."""
        return f"{self.question}\n{answer_format(self.parts)}"

    @property
    def truth(self) -> dict[str, Any]:
        """Part name -> truth."""
        return {p.name: (list(p.value) if p.kind == "sequence" else p.value) for p in self.parts}

    def score(self, reply: Any) -> dict[str, Any]:
        """The reply's score record (:func:`finenvs.scoring.qa.score_answer` on the parts; never raises)."""
        return score_answer(reply, self.parts).record()

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "section": self.section, "topic": self.topic, "seed": self.seed,
                "question": self.question, "parts": [p.record() for p in self.parts], "inputs": self.inputs,
                "as_of": self.as_of, "solution": list(self.solution), "published": self.published}


__all__ = ["SECTIONS", "QAItem"]
