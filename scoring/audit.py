"""Scoring of XBRL audit answers: every answer lands in exactly one class.

Two gradings (:data:`GRADINGS`): finenvs' (the default, below) and HERCULEAN's
(``grading="herculean"``, FinAuditing's grader rules, at the end).

An answer is ``{"reported_value": ..., "calculated_value": ...}``. Classes, checked
in this order:

1. ``structural`` — not a JSON object (a dict, a JSON string, a fenced JSON
   block or exactly one JSON object embedded in the reply), a field missing, or
   a field that is not a number;
2. ``extraction`` — the reported value differs from the filing's;
3. ``calculation`` — the reported value is right, the calculated value differs
   from the ground truth;
4. ``pass`` — both right.

So over any set of answers ACC + SER + EER + CER = 1 (the shares of pass,
structural, extraction and calculation).

Numbers: a JSON number, or a string such as ``"-14,721,000"``, ``"$1,234.5"``,
``"(3,200)"`` (negative), ``"−5"`` (Unicode minus) or ``"383.3 billion"``
(``thousand``/``million``/``billion``/``trillion`` and ``k``/``m``/``mn``/``bn``/``b``/``t``).
Booleans, NaN and infinities are not numbers. ``extracted_value`` is accepted
for ``reported_value`` (the HERCULEAN spelling); keys are case-insensitive.

Equality: ``|answer - truth| <= tolerance``, where the tolerance is half a unit
of the concept fact's declared decimals (``decimals=-6``: 500,000; ``INF``:
1e-9 relative) — see :func:`finenvs.xbrl.model.half_unit`.

HERCULEAN's grading (``grading="herculean"``) applies FinAuditing's grader rules
to the same JSON object (read as above):

1. ``structural`` — not a JSON object, or its keys are not exactly
   ``extracted_value`` and ``calculated_value`` (:data:`HERCULEAN_KEYS`, as
   spelled: ``reported_value`` or an extra key such as ``reasoning`` is a
   structural error);
2. ``extraction`` — ``extracted_value`` is not the filing's value, or not a number;
3. ``calculation`` — ``calculated_value`` is not exactly the ground truth, or
   not a number;
4. ``pass`` — both exact.

"Exact" is equality of the numbers (read as above, so ``"-1,284"`` equals
``-1284``) up to floating-point noise, :data:`EXACT_RELATIVE` of the truth (at
least that much absolute): no half-unit allowance. FinAuditing's grader is an
LLM judge told these rules (structure, then the extracted value "by numeric
meaning", then the calculated value "exactly equal, zero tolerance"); this is
its deterministic reading.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from finenvs.text import safe_json

#: The four classes, in the order they are checked (pass last).
CLASSES = ("structural", "extraction", "calculation", "pass")
#: Rate names of the classes.
RATE_NAMES = {"pass": "ACC", "structural": "SER", "extraction": "EER", "calculation": "CER"}
FIELDS = ("reported_value", "calculated_value")
#: The gradings: finenvs' (the default) and HERCULEAN's (FinAuditing's grader rules).
GRADINGS = ("finenvs", "herculean")
#: The keys HERCULEAN's grading requires, exactly (the reported value is its ``extracted_value``).
HERCULEAN_KEYS = ("extracted_value", "calculated_value")
#: The answer keys each grading asks an agent for.
ANSWER_KEYS = {"finenvs": FIELDS, "herculean": HERCULEAN_KEYS}
#: HERCULEAN's exact comparison allows only floating-point noise: this fraction of the truth (at least absolute).
EXACT_RELATIVE = 1e-12
#: Most unexpected or missing keys named in a structural error.
LISTED_KEYS = 5
ALIASES = {"extracted_value": "reported_value", "reported": "reported_value", "calculated": "calculated_value"}
_SCALES = {"thousand": 1e3, "thousands": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "m": 1e6, "mn": 1e6,
           "mm": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "trillions": 1e12,
           "t": 1e12}
_NUMBER = re.compile(r"^([+-]?)(\d+(?:,\d{3})*(?:\.\d*)?|\d*\.\d+|\d+)(?:[eE]([+-]?\d+))?\s*([a-zA-Z]*)$")


class AnswerFormatError(ValueError):
    """An answer that is not the JSON object the task asks for (a structural error)."""


def parse_number(value: Any) -> float:
    """Read a number as agents write them (see the module docstring).

    Raises:
        AnswerFormatError: Not a finite number, with the reason.
    """
    if isinstance(value, bool) or value is None:
        raise AnswerFormatError(f"{value!r} is not a number")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            raise AnswerFormatError("the number is out of range") from None
        if not math.isfinite(number):
            raise AnswerFormatError(f"{value!r} is not a finite number")
        return number
    if not isinstance(value, str):
        raise AnswerFormatError(f"a {type(value).__name__} is not a number")
    text = value.strip().replace("\u2212", "-").replace("\u2013", "-").replace("\u00a0", " ")
    negative = False
    if text.startswith("(") and text.endswith(")"):
        negative, text = True, text[1:-1].strip()
    text = text.replace("$", "").replace("USD", "").replace("_", "").strip()
    if text.startswith("-") and text[1:].lstrip().startswith("("):
        raise AnswerFormatError(f"{value!r}: two negative signs")
    text = re.sub(r"(?<=\d) (?=\d{3}\b)", "", text)  # "1 234 567"
    match = _NUMBER.match(text.strip())
    if match is None:
        raise AnswerFormatError(f"{value[:40]!r} is not a number")
    sign, digits, exponent, suffix = match.groups()
    scale = 1.0
    if suffix:
        if suffix.lower() not in _SCALES:
            raise AnswerFormatError(f"{value[:40]!r}: unknown unit {suffix!r}")
        scale = _SCALES[suffix.lower()]
    try:
        number = float(digits.replace(",", "")) * (10.0 ** int(exponent) if exponent else 1.0) * scale
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise AnswerFormatError(f"{value[:40]!r} is not a finite number")
    if sign == "-":
        number = -number
    return -number if negative else number


@dataclass(frozen=True)
class AuditAnswer:
    """A parsed answer."""

    reported_value: float
    calculated_value: float


def _object(action: Any) -> dict[str, Any]:
    if isinstance(action, dict):
        problem = safe_json.check_value(action, allow_non_finite=True)
        if problem is not None:
            raise AnswerFormatError(f"the answer breaks a limit: {problem}")
        return action
    if isinstance(action, bytes):
        try:
            action = action.decode("utf-8")
        except UnicodeDecodeError:
            raise AnswerFormatError("the answer is not UTF-8 text") from None
    if not isinstance(action, str):
        raise AnswerFormatError(f"the answer is a {type(action).__name__}, not a JSON object")
    text = action.strip()
    if not text:
        raise AnswerFormatError("empty answer")
    fenced = [block for block in safe_json.fenced_blocks(text) if block.startswith("{")]
    why = ""
    for candidate in fenced[-1:] or [text]:
        obj, problem = safe_json.try_loads(candidate, allow_non_finite=True)
        if problem is not None:
            why = f" ({problem})"
            continue
        if isinstance(obj, dict):
            return obj
        raise AnswerFormatError(f"the answer is JSON {type(obj).__name__}, not an object")
    try:
        embedded = safe_json.objects(text, allow_non_finite=True)
    except safe_json.JSONLimitError as exc:
        raise AnswerFormatError(str(exc)) from None
    if len(embedded) == 1:
        return embedded[0]
    if len(embedded) > 1:
        raise AnswerFormatError(f"the reply holds {len(embedded)} JSON objects; give exactly one")
    raise AnswerFormatError(f"the answer is not parseable JSON{why}")


def parse_answer(action: Any) -> AuditAnswer:
    """Read an answer (a dict, JSON text, fenced JSON or one embedded JSON object).

    Raises:
        AnswerFormatError: A structural error, with the reason.
    """
    obj = _object(action)
    fields: dict[str, Any] = {}
    for key, value in obj.items():
        name = str(key).strip().lower()
        name = ALIASES.get(name, name)
        if name in FIELDS:
            if name in fields:
                raise AnswerFormatError(f"{name} is given twice")
            fields[name] = value
    missing = [f for f in FIELDS if f not in fields]
    if missing:
        raise AnswerFormatError(f"missing field(s) {missing}; the answer needs {list(FIELDS)}")
    out = {}
    for name in FIELDS:
        try:
            out[name] = parse_number(fields[name])
        except AnswerFormatError as exc:
            raise AnswerFormatError(f"{name}: {exc}") from None
    return AuditAnswer(out["reported_value"], out["calculated_value"])


@dataclass(frozen=True)
class AuditTruth:
    """The ground truth of one instance and the tolerances its decimals allow."""

    reported_value: float
    calculated_value: float
    reported_tolerance: float
    calculated_tolerance: float

    def record(self) -> dict[str, float]:
        return {"reported_value": self.reported_value, "calculated_value": self.calculated_value,
                "reported_tolerance": self.reported_tolerance, "calculated_tolerance": self.calculated_tolerance}


@dataclass(frozen=True)
class AuditOutcome:
    """One answer's class and the reason."""

    label: str
    reason: str
    answer: AuditAnswer | None

    @property
    def passed(self) -> bool:
        return self.label == "pass"

    def record(self) -> dict[str, Any]:
        return {"label": self.label, "reason": self.reason,
                "answer": None if self.answer is None else {"reported_value": self.answer.reported_value,
                                                            "calculated_value": self.answer.calculated_value}}


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,}"


def check_grading(grading: str) -> str:
    """``grading`` if it is one of :data:`GRADINGS`.

    Raises:
        ValueError: Another value, naming the valid ones.
    """
    if not isinstance(grading, str) or grading not in GRADINGS:
        raise ValueError(f"grading={str(grading)[:40]!r}; valid gradings: {list(GRADINGS)}")
    return grading


def _key_list(keys: Iterable[Any]) -> str:
    keys = list(keys)
    named = ", ".join(repr(str(k)[:40]) for k in keys[:LISTED_KEYS])
    return f"[{named}{', ...' if len(keys) > LISTED_KEYS else ''}]"


def herculean_object(action: Any) -> dict[str, Any]:
    """The answer object if its keys are exactly :data:`HERCULEAN_KEYS` (HERCULEAN's structure check).

    Raises:
        AnswerFormatError: Not a JSON object, a key missing or an extra key (the first few named).
    """
    obj = _object(action)
    missing = [k for k in HERCULEAN_KEYS if k not in obj]
    extra = [k for k in obj if k not in HERCULEAN_KEYS]
    if missing or extra:
        parts = ([f"missing key(s) {_key_list(missing)}"] if missing else []) + (
            [f"unexpected key(s) {_key_list(extra)}"] if extra else [])
        raise AnswerFormatError(f"{'; '.join(parts)}: HERCULEAN's grading needs exactly the keys "
                                f"{list(HERCULEAN_KEYS)}")
    return obj


def answer_problem(action: Any, grading: str = "finenvs") -> str | None:
    """Why ``action`` is a structural error under ``grading``, or None (it is read and compared)."""
    try:
        if check_grading(grading) == "herculean":
            herculean_object(action)
        else:
            parse_answer(action)
    except AnswerFormatError as exc:
        return str(exc)
    return None


def _exact(answer: float, truth: float) -> bool:
    return abs(answer - truth) <= EXACT_RELATIVE * max(1.0, abs(truth))


def _classify_herculean(action: Any, truth: AuditTruth) -> AuditOutcome:
    try:
        obj = herculean_object(action)
    except AnswerFormatError as exc:
        return AuditOutcome("structural", str(exc), None)
    values: dict[str, float | str] = {}
    for key in HERCULEAN_KEYS:
        try:
            values[key] = parse_number(obj[key])
        except AnswerFormatError as exc:
            values[key] = str(exc)  # why it is not a number
    numbers = [v for v in values.values() if isinstance(v, float)]
    answer = AuditAnswer(*numbers) if len(numbers) == 2 else None
    for key, label, expected in (("extracted_value", "extraction", truth.reported_value),
                                 ("calculated_value", "calculation", truth.calculated_value)):
        value = values[key]
        if isinstance(value, str):
            return AuditOutcome(label, f"{key}: {value} (HERCULEAN's grading: a value that is not a number is "
                                "wrong, not a structural error)", answer)
        if not _exact(value, expected):
            return AuditOutcome(label, f"{key} {_fmt(value)} != {_fmt(expected)} (HERCULEAN's grading: exact)",
                                answer)
    return AuditOutcome("pass", "extracted and calculated values match exactly", answer)


def classify(action: Any, truth: AuditTruth, grading: str = "finenvs") -> AuditOutcome:
    """Put one answer in its class under ``grading`` (see the module docstring). Never raises on a bad answer.

    Raises:
        ValueError: ``grading`` is not one of :data:`GRADINGS`.
    """
    if check_grading(grading) == "herculean":
        return _classify_herculean(action, truth)
    try:
        answer = parse_answer(action)
    except AnswerFormatError as exc:
        return AuditOutcome("structural", str(exc), None)
    if abs(answer.reported_value - truth.reported_value) > truth.reported_tolerance:
        return AuditOutcome("extraction", f"reported_value {_fmt(answer.reported_value)} != the filing's "
                            f"{_fmt(truth.reported_value)} (tolerance {_fmt(truth.reported_tolerance)})", answer)
    if abs(answer.calculated_value - truth.calculated_value) > truth.calculated_tolerance:
        return AuditOutcome("calculation", f"calculated_value {_fmt(answer.calculated_value)} != "
                            f"{_fmt(truth.calculated_value)} (tolerance {_fmt(truth.calculated_tolerance)})", answer)
    return AuditOutcome("pass", "reported and calculated values match", answer)


def audit_rates(labels: Sequence[str], groups: Iterable[str] | None = None) -> dict[str, Any]:
    """ACC/SER/EER/CER over ``labels`` (and per group when ``groups`` is given, same order).

    Returns:
        ``{"n", "ACC", "SER", "EER", "CER", "by": {group: {...}}}``; rates are NaN when ``n == 0``.

    Raises:
        ValueError: An unknown label or a groups sequence of another length.
    """
    labels = list(labels)
    unknown = sorted({x for x in labels if x not in CLASSES})
    if unknown:
        raise ValueError(f"unknown audit class(es) {unknown}; classes: {list(CLASSES)}")

    def rates(subset: list[str]) -> dict[str, Any]:
        n = len(subset)
        out: dict[str, Any] = {"n": n}
        for label in ("pass", "structural", "extraction", "calculation"):
            out[RATE_NAMES[label]] = (sum(1 for x in subset if x == label) / n) if n else math.nan
        return out

    result = rates(labels)
    if groups is not None:
        groups = list(groups)
        if len(groups) != len(labels):
            raise ValueError(f"{len(groups)} groups for {len(labels)} labels")
        result["by"] = {g: rates([lab for lab, gg in zip(labels, groups, strict=True) if gg == g]) for g in dict.fromkeys(groups)}
    return result


__all__ = ["ANSWER_KEYS", "CLASSES", "EXACT_RELATIVE", "GRADINGS", "HERCULEAN_KEYS", "RATE_NAMES", "AnswerFormatError",
           "AuditAnswer", "AuditOutcome", "AuditTruth", "answer_problem", "audit_rates", "check_grading", "classify",
           "herculean_object", "parse_answer", "parse_number"]
