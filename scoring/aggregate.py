"""The section aggregate: one 0-100 number from tasks grouped into weighted sections.

Rules (FAB++'s, made explicit):

1. Every task is normalised to 0-100 (:func:`normalise`; a task scored in [0, 1]
   is multiplied by 100).
2. A task that errored scores 0. It is counted, never dropped.
3. A section's score is the mean of its tasks.
4. Sections with no task are inactive; their weight is redistributed over the
   active sections in proportion to the active weights.
5. An optional per-section multiplier (a debate round's verdict), clipped to
   [0.8, 1.2], scales the section score; the result is clipped to [0, 100].
6. Overall = sum of effective weight x section score.

Default weights (FAB++): Knowledge Retrieval 0.30, Analytical Reasoning 0.35,
Options Trading 0.35. Example: sections 83.33 / 50.00 / 51.25 give
0.30 x 83.33 + 0.35 x 50.00 + 0.35 x 51.25 = 60.44.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Section keys and their display names.
SECTION_NAMES = {"knowledge": "Knowledge Retrieval", "analysis": "Analytical Reasoning", "options": "Options Trading"}
#: Weight presets.
WEIGHT_PRESETS: dict[str, dict[str, float]] = {
    "fabpp": {"knowledge": 0.30, "analysis": 0.35, "options": 0.35},
    "equal": {"knowledge": 1 / 3, "analysis": 1 / 3, "options": 1 / 3},
    "reasoning": {"knowledge": 0.20, "analysis": 0.50, "options": 0.30},
}
DEFAULT_PRESET = "fabpp"
MULTIPLIER_RANGE = (0.8, 1.2)


@dataclass(frozen=True)
class TaskScore:
    """One task's result.

    Attributes:
        section: Section key.
        task_id: Identifier (for the report).
        score: Score on 0-100 (None when the task errored).
        error: Why the task errored (then it scores 0).
    """

    section: str
    task_id: str
    score: float | None
    error: str | None = None

    @property
    def points(self) -> float:
        """The score counted in the section mean (0 for an errored task)."""
        return 0.0 if self.error is not None or self.score is None else float(self.score)


def normalise(value: float, lo: float = 0.0, hi: float = 1.0) -> float:
    """``value`` on [lo, hi] mapped linearly to [0, 100] and clipped."""
    if not (math.isfinite(value) and math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        raise ValueError(f"cannot normalise {value!r} on [{lo!r}, {hi!r}]")
    return float(min(100.0, max(0.0, 100.0 * (value - lo) / (hi - lo))))


def resolve_weights(weights: str | Mapping[str, float] | None) -> dict[str, float]:
    """A preset name or a mapping, checked: non-negative, finite, not all zero."""
    if weights is None:
        weights = DEFAULT_PRESET
    if isinstance(weights, str):
        if weights not in WEIGHT_PRESETS:
            raise ValueError(f"unknown weight preset {weights!r}; presets: {sorted(WEIGHT_PRESETS)}")
        return dict(WEIGHT_PRESETS[weights])
    out = {}
    for name, w in dict(weights).items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"weight of section {name!r} must be a finite non-negative number, got {w!r}")
        out[str(name)] = float(w)
    if not out or sum(out.values()) <= 0:
        raise ValueError("section weights must not all be zero")
    return out


@dataclass(frozen=True)
class SectionResult:
    name: str
    score: float | None
    tasks: int
    errored: int
    weight: float
    effective_weight: float
    multiplier: float

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "title": SECTION_NAMES.get(self.name, self.name), "score": self.score,
                "tasks": self.tasks, "errored": self.errored, "weight": self.weight,
                "effective_weight": self.effective_weight, "multiplier": self.multiplier}


@dataclass(frozen=True)
class Aggregate:
    overall: float | None
    sections: tuple[SectionResult, ...]

    def record(self) -> dict[str, Any]:
        return {"overall": self.overall, "sections": {s.name: s.record() for s in self.sections}}


def aggregate(
    tasks: Iterable[TaskScore],
    weights: str | Mapping[str, float] | None = None,
    multipliers: Mapping[str, float] | None = None,
) -> Aggregate:
    """The section aggregate of ``tasks`` (see the module docstring).

    Raises:
        ValueError: A task in a section without a weight, a score outside 0-100
            or not finite, bad weights, or a multiplier for an unknown section.
    """
    w = resolve_weights(weights)
    by: dict[str, list[TaskScore]] = {name: [] for name in w}
    for t in tasks:
        if t.section not in w:
            raise ValueError(f"task {t.task_id!r} is in section {t.section!r}, which has no weight; "
                             f"sections: {sorted(w)}")
        if t.error is None:
            if t.score is None or isinstance(t.score, bool) or not math.isfinite(float(t.score)) or not (
                    0.0 <= float(t.score) <= 100.0):
                raise ValueError(f"task {t.task_id!r}: score {t.score!r} is not on 0-100 "
                                 "(normalise it, or record the task as errored)")
        by[t.section].append(t)
    mult = {}
    for name, m in dict(multipliers or {}).items():
        if name not in w:
            raise ValueError(f"multiplier for unknown section {name!r}; sections: {sorted(w)}")
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m):
            raise ValueError(f"multiplier of {name!r} must be a finite number, got {m!r}")
        mult[name] = min(MULTIPLIER_RANGE[1], max(MULTIPLIER_RANGE[0], float(m)))
    active = {name: w[name] for name, items in by.items() if items}
    total = sum(active.values())
    sections = []
    overall = 0.0
    for name, items in by.items():
        m = mult.get(name, 1.0)
        if not items:
            sections.append(SectionResult(name, None, 0, 0, w[name], 0.0, m))
            continue
        score = min(100.0, max(0.0, m * sum(t.points for t in items) / len(items)))
        eff = active[name] / total if total > 0 else 0.0
        overall += eff * score
        sections.append(SectionResult(name, score, len(items), sum(t.error is not None for t in items),
                                      w[name], eff, m))
    overall = min(100.0, max(0.0, overall))  # float rounding of the weighted sum
    return Aggregate(overall if active and total > 0 else None, tuple(sections))


def aggregate_sections(scores: Mapping[str, float | None], weights: str | Mapping[str, float] | None = None,
                       multipliers: Mapping[str, float] | None = None) -> Aggregate:
    """The aggregate of section scores given directly (one pseudo-task per section; None = inactive)."""
    return aggregate([TaskScore(name, name, s) for name, s in scores.items() if s is not None], weights, multipliers)


__all__ = ["DEFAULT_PRESET", "MULTIPLIER_RANGE", "SECTION_NAMES", "WEIGHT_PRESETS", "Aggregate", "SectionResult",
           "TaskScore", "aggregate", "aggregate_sections", "normalise", "resolve_weights"]
