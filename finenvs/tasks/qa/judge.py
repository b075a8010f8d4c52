"""The checklist a judge model verifies for one FinQA-v0 answer (the family's ``TaskSpec.judge``).

* A FAB public question (``split="fab_public"``): its **qualitative** rubric items — the ones no figure lets
  code check — as claims about the answer: a ``correctness`` item is a positive claim (``expect: True``: a
  good answer satisfies it), a ``contradiction`` item a negative one (``expect: False``: a good answer does
  not contradict it). The judge's agreement over them (``judge.json``'s ``agree``) is the answer's
  qualitative rubric score, reported apart from the deterministic reward, never mixed into it.
* Any other question: one positive claim per part with the truth computed in code, and one negative claim
  with the value of the topic's documented common mistake (:mod:`finenvs.tasks.qa.debate`) — the same calibration
  FinReport-v0's checklist gives a judge.

Everything here is the item's own data: nothing is read past the question's date.
"""

from __future__ import annotations

from typing import Any

from finenvs.tasks.qa.debate import format_claim, mistake, part_label
from finenvs.tasks.qa.fab_public import FabItem, answer_text

#: Claims listed at most (the judge's request stays small).
MAX_ITEMS = 15


def _item(item_id: str, claim: str, expect: bool) -> dict[str, Any]:
    return {"id": item_id, "claim": claim, "expect": expect}


def checklist(env: Any, answer: Any) -> dict[str, Any]:
    """``{"text", "items": [{"id", "claim", "expect"}]}`` for the env's current question (see the module doc)."""
    env = getattr(env, "unwrapped", env)
    item = env.item
    text, _, problem = answer_text(answer)
    out: dict[str, Any] = {"text": text or "", "items": []}
    if problem:
        out["note"] = f"the answer is judged as empty: {problem}"
    if isinstance(item, FabItem):
        for r in item.rubric:
            if r.deterministic:
                continue
            criteria = " ".join(r.criteria.split())[:400]
            if r.operator == "contradiction":
                out["items"].append(_item(f"{r.operator}_{r.index}", f"The answer contradicts this: {criteria}", False))
            else:
                out["items"].append(_item(f"{r.operator}_{r.index}", f"The answer states this: {criteria}", True))
        out["items"] = out["items"][:MAX_ITEMS]
        return out
    parts = {p.name: p for p in item.parts}
    for name, truth in item.truth.items():
        shown = format_claim(truth, parts[name]) if parts[name].kind in ("number", "percent") else str(truth)
        out["items"].append(_item(f"truth_{name}", f"The answer gives {part_label(parts[name])} as {shown}.", True))
    try:
        view = env.as_of_view() if item.section == "knowledge" and item.as_of is not None else None
        wrong = mistake(item, view)
    except Exception:  # a question without a documented mistake: positive claims only
        wrong = None
    if wrong is not None:
        for name, value in list(wrong.values.items())[:2]:
            out["items"].append(_item(f"mistake_{name}", f"The answer gives {part_label(parts[name])} as "
                                      f"{format_claim(value, parts[name])} ({wrong.description}).", False))
    out["items"] = out["items"][:MAX_ITEMS]
    return out


__all__ = ["MAX_ITEMS", "checklist"]
