"""Scoring of FinQA-v0 answers: one final answer, read strictly, scored per part.

**Where the answer is.** A reply is a dict, or text holding either a JSON object
with an ``"answer"`` key (a ```json block or an object inside the text; the
preferred form) or a line ``Answer: ...`` (``Final answer:`` too). Several
answers that disagree are a conflict and score 0; a reply with none scores 0.
The first number in free text is never taken.

**Parts.** A question has one or more :class:`Part` s (e.g. ``max_profit``,
``max_loss``, ``breakeven``), each scored on its own; the item's score is the
weight-averaged part score in [0, 1]. A one-part answer is the value itself
(``{"answer": 0.2}``); a multi-part answer is an object keyed by part name
(``{"answer": {"max_profit": 5, ...}}``) or an ``Answer:`` line of
``name: value`` pairs separated by ``;`` or ``, `` (``Answer: max profit $5;
max loss $5; breakeven $105``). Part names match case- and separator-insensitively,
and each part may list aliases.

**Values.** A part's value must hold exactly one quantity: ``1,234``, ``(3.2)``
(negative), ``$1.2B``, ``5.5 million``, ``12.5%``, ``1.5x``, ``−5``; words around
it are ignored, but two different numbers (``"5 or 6"``) are a conflict. Scale
words: thousand/k, million/m/mm/mn, billion/b/bn, trillion/t.

**Kinds.**

- ``number``: ``|given - truth| <= max(abs_tol, rel_tol * |truth|)`` (default
  ``rel_tol`` 1%). A ``%`` on a number part is a wrong unit. When the given value
  is off by a power of ten that a unit slip explains (10^2, 10^3, 10^6, 10^9), the
  reason says so.
- ``percent``: the truth is a fraction (0.2 for 20%). ``"20%"`` and ``0.2`` both
  read as 0.2; a bare ``20`` is read as the fraction 20 (2000%) and scored 0 with
  the reason "wrong unit".
- ``choice``: one of the part's choices (``"A"``, ``"Option A"``, ``"a."``).
- ``bool``: yes/no, true/false.
- ``date``: ``YYYY-MM-DD`` (also ``Jan 5, 2026`` / ``5 January 2026``).
- ``sequence``: an ordering of choices: ``["C", "A", "B"]``, ``"C, A, B"`` or
  ``"C > A > B"``; right only when the whole order is right.

Every part result records what was read and, when it scores 0, why.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from finenvs.text import safe_json

KINDS = ("number", "percent", "choice", "bool", "date", "sequence")
DEFAULT_REL_TOL = 0.01
#: Powers of ten that a unit slip explains (percent vs fraction, thousands, millions, billions).
UNIT_SLIPS = (2, 3, 6, 9)

_SCALES = {"thousand": 1e3, "thousands": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "m": 1e6, "mn": 1e6,
           "mm": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "trillions": 1e12,
           "t": 1e12, "tn": 1e12}
# possessive whitespace runs (four optional pieces each behind ``\s*`` split a run of spaces in O(n^3) ways),
# and no match starts on a space (else every position of a run of spaces rescans the rest of it)
_QUANTITY = re.compile(
    r"(?!\s)(?P<open>\()?\s*+(?P<sign>[-+])?\s*+(?:US)?\$?\s*+(?P<sign2>[-+])?\s*+"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?:\s*+(?P<scale>(?i:trillions?|billions?|millions?|thousands?|bn|mm|mn|tn)|[kmbtKMBT])(?![A-Za-z]))?"
    r"\s*+(?P<pct>%|percent\b|pct\b)?\s*+(?P<close>\))?"
)
# possessive runs, and the answer's trailing emphasis stripped in code: a lazy ``.*?`` before ``[ \t*_]*$``
# rescans the line's tail from every position (quadratic in a line of spaces)
_ANSWER_LINE = re.compile(r"^[ \t>*_#-]*+(?:final[ \t]++)?answer[ \t*_]*+[:=][ \t*_]*+(?P<text>.*)$",
                          re.IGNORECASE | re.MULTILINE)
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y", "%b %d %Y", "%B %d %Y")


class AnswerError(ValueError):
    """An answer (or one part of it) that cannot be read; the message is the recorded reason."""


def key_of(name: str) -> str:
    """The matching key of a part name: lower case, runs of non-alphanumerics as one ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")


@dataclass(frozen=True)
class Part:
    """One scored part of a question's answer.

    Attributes:
        name: Key of the part in a JSON answer (``max_profit``).
        value: The truth: a float (``number``, ``percent`` as a fraction), a choice
            label, a bool, an ISO date or a tuple of choice labels (``sequence``).
        kind: One of :data:`KINDS`.
        label: How the prompt names the part and its unit ("maximum profit, $ per share").
        rel_tol: Relative tolerance of numeric kinds.
        abs_tol: Absolute tolerance of numeric kinds (in the truth's unit; a fraction for percent).
        weight: Weight in the item's score.
        aliases: Other accepted names.
        choices: Valid labels of ``choice``/``sequence`` parts.
    """

    name: str
    value: Any
    kind: str = "number"
    label: str = ""
    rel_tol: float = DEFAULT_REL_TOL
    abs_tol: float = 0.0
    weight: float = 1.0
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"part {self.name!r}: unknown kind {self.kind!r}; valid kinds: {KINDS}")
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise ValueError(f"part {self.name!r}: weight must be positive, got {self.weight!r}")
        if not (math.isfinite(self.rel_tol) and math.isfinite(self.abs_tol)) or self.rel_tol < 0 or self.abs_tol < 0:
            raise ValueError(f"part {self.name!r}: tolerances must be finite and non-negative")
        if self.kind in ("choice", "sequence") and not self.choices:
            raise ValueError(f"part {self.name!r}: a {self.kind} part needs its choices")

    @property
    def keys(self) -> tuple[str, ...]:
        return (key_of(self.name), *(key_of(a) for a in self.aliases))

    def tolerance(self) -> float:
        """The absolute tolerance around a numeric truth."""
        return max(self.abs_tol, self.rel_tol * abs(float(self.value)))

    def describe(self) -> str:
        """The truth as a person writes it."""
        return format_value(self.value, self.kind)

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "value": list(self.value) if self.kind == "sequence" else self.value,
                "label": self.label, "rel_tol": self.rel_tol, "abs_tol": self.abs_tol, "weight": self.weight}


def format_value(value: Any, kind: str) -> str:
    if kind == "percent":
        return f"{100 * float(value):.4g}%"
    if kind == "number":
        return f"{float(value):,.6g}" if abs(float(value)) < 1e6 else f"{float(value):,.0f}"
    if kind == "sequence":
        return ", ".join(value)
    if kind == "bool":
        return "yes" if value else "no"
    return str(value)


@dataclass(frozen=True)
class PartResult:
    """How one part scored: ``given`` is the raw text/value read, ``read`` its parsed value."""

    name: str
    expected: str
    given: Any
    read: Any
    correct: bool
    reason: str | None = None

    def record(self) -> dict[str, Any]:
        given = self.given if isinstance(self.given, (int, float, str, bool, type(None))) else json.dumps(
            self.given, default=str)
        return {"name": self.name, "expected": self.expected, "given": given, "read": self.read,
                "correct": self.correct, "reason": self.reason}


@dataclass(frozen=True)
class QAOutcome:
    """The score of one answer.

    Attributes:
        score: Weighted share of correct parts, in [0, 1].
        parts: One result per part.
        reason: Why nothing could be scored (no answer, a conflict), else None.
        via: Where the answer was found: ``"dict"``, ``"json"``, ``"line"`` or ``"none"``.
    """

    score: float
    parts: tuple[PartResult, ...]
    reason: str | None = None
    via: str = "none"

    @property
    def answered(self) -> bool:
        return self.reason is None

    def record(self) -> dict[str, Any]:
        return {"score": self.score, "reason": self.reason, "via": self.via,
                "parts": [p.record() for p in self.parts]}


# --------------------------------------------------------------------------- finding the final answer
def _json_objects(text: str) -> list[Any]:
    """Top-level JSON objects in ``text`` (inside fenced blocks or not: one linear scan finds both)."""
    try:
        return safe_json.objects(text, allow_non_finite=True)
    except safe_json.JSONLimitError as exc:
        raise AnswerError(str(exc)) from None


def _canonical(x: Any) -> Any:
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, dict):
        return {str(k): _canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    return str(x)


def _same(a: Any, b: Any) -> bool:
    """Equal answers (5 and 5.0 are the same number)."""
    return _canonical(a) == _canonical(b)


def final_answer(action: Any) -> tuple[Any, str]:
    """The reply's one final answer and where it was found (``dict``, ``json`` or ``line``).

    Raises:
        AnswerError: No final answer, or several that disagree.
    """
    if isinstance(action, dict):
        problem = safe_json.check_value(action, allow_non_finite=True)
        if problem is not None:
            raise AnswerError(f"the answer breaks a limit: {problem}")
        return (action["answer"] if "answer" in action else action), "dict"
    if isinstance(action, bytes):
        try:
            action = action.decode("utf-8")
        except UnicodeDecodeError:
            raise AnswerError("the reply is not UTF-8 text") from None
    if not isinstance(action, str):
        raise AnswerError(f"the reply is a {type(action).__name__}, not text")
    text = action.strip()
    if not text:
        raise AnswerError("empty answer")
    answers = [obj["answer"] for obj in _json_objects(text) if isinstance(obj, dict) and "answer" in obj]
    if answers:
        if any(not _same(a, answers[0]) for a in answers[1:]):
            raise AnswerError(f"{len(answers)} conflicting final answers in the reply; give one")
        return answers[0], "json"
    lines = [m.group("text").rstrip(" \t*_").strip() for m in _ANSWER_LINE.finditer(text)]
    lines = [line for line in lines if line]
    if lines:
        if any(_normal_text(line) != _normal_text(lines[0]) for line in lines[1:]):
            raise AnswerError(f"{len(lines)} conflicting 'Answer:' lines in the reply; give one")
        return lines[-1], "line"
    raise AnswerError('no final answer: reply with JSON {"answer": ...} or a line "Answer: ..."')


def _normal_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().rstrip(".")).lower()


# --------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Quantity:
    """A number read from text; ``percent`` when it carried a % sign (value already divided by 100)."""

    value: float
    percent: bool = False
    text: str = ""


def _quantity(m: re.Match[str]) -> Quantity:
    digits = m.group("num").replace(",", "")
    number = float(digits) * (10.0 ** int(m.group("exp")) if m.group("exp") else 1.0)
    scale = m.group("scale")
    if scale:
        number *= _SCALES[scale.lower()]
    if (m.group("sign") or m.group("sign2")) == "-":
        number = -number
    if m.group("open") and m.group("close"):
        number = -number
    percent = bool(m.group("pct"))
    if percent:
        number /= 100.0
    if not math.isfinite(number):
        raise AnswerError(f"{m.group(0).strip()!r} is not a finite number")
    return Quantity(number, percent, m.group(0).strip())


def parse_quantity(value: Any) -> Quantity:
    """Exactly one quantity from a JSON number or a string (see the module docstring).

    Raises:
        AnswerError: No number, several different numbers, or a non-finite one.
    """
    if isinstance(value, bool) or value is None:
        raise AnswerError(f"{value!r} is not a number")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            raise AnswerError("the number is out of range") from None
        if not math.isfinite(number):
            raise AnswerError(f"{value!r} is not a finite number")
        return Quantity(number, False, repr(value))
    if not isinstance(value, str):
        raise AnswerError(f"a {type(value).__name__} is not a number")
    text = (value.replace("\u2212", "-").replace("\u2013", "-").replace("\u00a0", " ").replace("\u2009", ""))
    text = re.sub(r"(?<=\d) (?=\d{3}\b)", "", text)  # "1 234 567"
    try:
        found = [_quantity(m) for m in _QUANTITY.finditer(text)]
    except OverflowError:
        raise AnswerError("the number is out of range") from None
    if not found:
        raise AnswerError(f"{value[:60]!r} holds no number")
    distinct = {(q.value, q.percent) for q in found}
    if len(distinct) > 1:
        raise AnswerError(f"{value[:60]!r} holds {len(found)} different numbers; give one")
    return found[0]


def _close(given: float, part: Part) -> bool:
    return abs(given - float(part.value)) <= part.tolerance() + 1e-12 * max(1.0, abs(float(part.value)))


def _slip(given: float, part: Part) -> int | None:
    """The power of ten k (signed) such that given * 10**k matches the truth, if a unit slip explains it."""
    for k in UNIT_SLIPS:
        for signed in (k, -k):
            if _close(given * 10.0 ** signed, part):
                return signed
    return None


def _score_number(raw: Any, part: Part) -> tuple[Any, bool, str | None]:
    q = parse_quantity(raw)
    if part.kind == "number" and q.percent:
        return q.value, False, f"{q.text!r} is a percentage; this part is a number ({part.label or part.name})"
    if _close(q.value, part):
        return q.value, True, None
    # a unit slip is a scaling of the truth; where the tolerance is not small beside the truth (a truth near 0)
    # every scaled value lands inside it and a slip says nothing
    slip = _slip(q.value, part) if part.tolerance() < 0.1 * abs(float(part.value)) and q.value != 0 else None
    if slip is not None:
        if part.kind == "percent" and not q.percent and slip == -2:
            return q.value, False, (f"wrong unit: {q.text} read as a fraction ({100 * q.value:g}%); "
                                    f"write {q.value:g}% or {q.value / 100:g}")
        return q.value, False, f"wrong unit: {q.text} x 10^{slip} would match {part.describe()}; state the unit"
    return q.value, False, f"{q.text} is not within {part.tolerance():.4g} of {part.describe()}"


def _label(value: Any) -> str:
    text = str(value).strip().rstrip(".):").strip()
    text = re.sub(r"^(option|choice|project|bond|company|firm|filing)\s+", "", text, flags=re.IGNORECASE)
    return text.strip("() ").upper()


def _score_choice(raw: Any, part: Part) -> tuple[Any, bool, str | None]:
    if not isinstance(raw, str) or not raw.strip():
        raise AnswerError(f"{raw!r} is not one of {list(part.choices)}")
    label = _label(raw)
    valid = {c.upper() for c in part.choices}
    if label not in valid:
        raise AnswerError(f"{raw[:40]!r} is not one of {list(part.choices)}")
    return label, label == str(part.value).upper(), None if label == str(part.value).upper() else (
        f"{label} is not the answer")


_TRUE = {"yes", "true", "y", "1"}
_FALSE = {"no", "false", "n", "0"}


def _score_bool(raw: Any, part: Part) -> tuple[Any, bool, str | None]:
    if isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and raw.strip().rstrip(".!").lower().split(",")[0].strip() in _TRUE | _FALSE:
        value = raw.strip().rstrip(".!").lower().split(",")[0].strip() in _TRUE
    else:
        raise AnswerError(f"{str(raw)[:40]!r} is not yes or no")
    return value, value == bool(part.value), None if value == bool(part.value) else "wrong yes/no"


def parse_date(raw: Any) -> str:
    if not isinstance(raw, str):
        raise AnswerError(f"{raw!r} is not a date")
    text = raw.strip().rstrip(".")
    for fmt in _DATE_FORMATS:
        try:
            return _dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    raise AnswerError(f"{text[:40]!r} is not a date (write YYYY-MM-DD)")


def _score_date(raw: Any, part: Part) -> tuple[Any, bool, str | None]:
    day = parse_date(raw)
    return day, day == part.value, None if day == part.value else f"{day} is not {part.value}"


def _score_sequence(raw: Any, part: Part) -> tuple[Any, bool, str | None]:
    if isinstance(raw, str):
        items = [s for s in re.split(r"[\s,;>]+|->|\u2192", raw.strip()) if s]
        if len(items) == 1 and len(items[0]) == len(part.choices):  # "CAB"
            items = list(items[0])
    elif isinstance(raw, (list, tuple)):
        items = [str(x) for x in raw]
    else:
        raise AnswerError(f"{str(raw)[:40]!r} is not an ordering of {list(part.choices)}")
    order = [_label(x) for x in items]
    if sorted(order) != sorted(c.upper() for c in part.choices):
        raise AnswerError(f"{str(raw)[:60]!r} is not an ordering of {list(part.choices)} (each exactly once)")
    right = [c.upper() for c in part.value]
    return order, order == right, None if order == right else f"{', '.join(order)} is not {', '.join(right)}"


_SCORERS = {"number": _score_number, "percent": _score_number, "choice": _score_choice, "bool": _score_bool,
            "date": _score_date, "sequence": _score_sequence}


def score_part(raw: Any, part: Part) -> PartResult:
    """Score one part's raw value; never raises (an unreadable value scores 0 with the reason)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return PartResult(part.name, part.describe(), raw, None, False, "missing")
    try:
        read, correct, reason = _SCORERS[part.kind](raw, part)
    except AnswerError as exc:
        return PartResult(part.name, part.describe(), raw, None, False, str(exc))
    except (ValueError, OverflowError) as exc:  # e.g. an exponent with thousands of digits
        return PartResult(part.name, part.describe(), raw, None, False, f"unreadable value ({exc})"[:200])
    return PartResult(part.name, part.describe(), raw, read, bool(correct), reason)


# --------------------------------------------------------------------------- splitting into parts
# the name is words joined by spaces (possessive runs): a name that could end in spaces split a run of spaces
# with the ``\s+`` after it in quadratically many ways ("a" + 60,000 spaces + "b")
_NAMED_VALUE = re.compile(
    r"^\s*+([A-Za-z][A-Za-z_-]*+(?:[ ]++[A-Za-z_-]++)*?)\s++(?:is\s++|of\s++)?([-+(\u2212$\d.].*)$")
_PAIR_SPLIT = re.compile(r";|\n|,(?=\s*[A-Za-z])")


def _text_pairs(text: str) -> dict[str, str]:
    """``name: value`` pairs of an answer line."""
    out: dict[str, str] = {}
    for chunk in _PAIR_SPLIT.split(text):
        if ":" in chunk or "=" in chunk:
            name, _, value = re.split(r"([:=])", chunk, maxsplit=1)
        else:  # "max profit $5", "breakeven is 105"
            m = _NAMED_VALUE.match(chunk)
            if m is None:
                continue
            name, value = m.group(1), m.group(2)
        key = key_of(name)
        if key:
            if key in out and _normal_text(out[key]) != _normal_text(value):
                raise AnswerError(f"part {name.strip()!r} is given twice with different values")
            out[key] = value.strip()
    return out


def _find(mapping: dict[str, Any], part: Part) -> Any:
    for key in part.keys:
        if key in mapping:
            return mapping[key]
    return None


def split_parts(answer: Any, parts: Sequence[Part]) -> list[Any]:
    """The raw value of each part in a final answer.

    Raises:
        AnswerError: A multi-part answer that is neither an object nor ``name: value`` text.
    """
    if len(parts) == 1:
        if isinstance(answer, dict):
            keyed = {key_of(k): v for k, v in answer.items()}
            found = _find(keyed, parts[0])
            if found is None and len(answer) == 1:
                found = next(iter(answer.values()))
            return [found]
        if isinstance(answer, str):
            pairs = _text_pairs(answer) if re.match(r"^\s*[A-Za-z][\w ]*[:=]", answer) else {}
            found = _find(pairs, parts[0]) if pairs else None
            return [found if found is not None else answer]
        return [answer]
    if isinstance(answer, dict):
        keyed = {key_of(k): v for k, v in answer.items()}
        return [_find(keyed, p) for p in parts]
    if isinstance(answer, str):
        pairs = _text_pairs(answer)
        if not pairs:
            raise AnswerError(f"the answer has {len(parts)} parts ({', '.join(p.name for p in parts)}); "
                              "give an object or 'name: value' pairs")
        return [_find(pairs, p) for p in parts]
    raise AnswerError(f"the answer has {len(parts)} parts; give an object keyed by "
                      f"{', '.join(p.name for p in parts)}")


def score_answer(action: Any, parts: Sequence[Part]) -> QAOutcome:
    """Score a reply against the parts of a question; never raises for any reply."""
    if not parts:
        raise ValueError("a question needs at least one part")
    try:
        answer, via = final_answer(action)
        raws = split_parts(answer, parts)
        results = tuple(score_part(raw, p) for raw, p in zip(raws, parts, strict=True))
    except (AnswerError, ValueError, RecursionError, OverflowError) as exc:  # unreadable: 0 with the reason
        reason = str(exc) if isinstance(exc, AnswerError) else f"unreadable answer ({type(exc).__name__})"
        results = tuple(PartResult(p.name, p.describe(), None, None, False, reason) for p in parts)
        return QAOutcome(0.0, results, reason, "none")
    total = sum(p.weight for p in parts)
    score = sum(p.weight for p, r in zip(parts, results, strict=True) if r.correct) / total
    return QAOutcome(float(score), results, None, via)


def answer_format(parts: Sequence[Part]) -> str:
    """The answer format line of a question's prompt."""
    def unit(p: Part) -> str:
        if p.kind == "percent":
            return "a percentage such as 12.5% (or the fraction 0.125)"
        if p.kind == "choice":
            return "one of " + "/".join(p.choices)
        if p.kind == "bool":
            return "yes or no"
        if p.kind == "date":
            return "a date YYYY-MM-DD"
        if p.kind == "sequence":
            return "the labels in order, e.g. [\"" + "\", \"".join(p.choices) + "\"]"
        return "a number"

    if len(parts) == 1:
        p = parts[0]
        what = f"{p.label}: " if p.label else ""
        return f'Answer format: {what}{unit(p)}. Reply with JSON {{"answer": ...}} or end with a line "Answer: ...".'
    fields = "; ".join(f'"{p.name}" ({p.label + ", " if p.label else ""}{unit(p)})' for p in parts)
    return (f'Answer format: JSON {{"answer": {{{", ".join(repr(p.name).replace(chr(39), chr(34)) + ": ..." for p in parts)}}}}} '
            f"with {fields}; or a line \"Answer: name: value; name: value\".")


__all__ = ["DEFAULT_REL_TOL", "KINDS", "AnswerError", "Part", "PartResult", "QAOutcome", "Quantity",
           "answer_format", "final_answer", "format_value", "key_of", "parse_date", "parse_quantity",
           "score_answer", "score_part", "split_parts"]
