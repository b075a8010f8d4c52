"""The Finance Agent Benchmark's 50 public questions (vals-ai, MIT) as FinQA-v0's closed-book ``fab_public`` split.

The questions ask about company filings, earnings releases and guidance that
finenvs does not ship (Netflix ARPU, TJX guidance, Palantir revenue, ...): they
are **closed-book**, answerable only from what the agent knows, and every item
says so (``closed_book``). Each has an expert answer and a rubric: a list of
items, ``correctness`` ("the answer states X") or ``contradiction`` ("the answer
must not contradict X"). This module scores the rubric in code where it can,
and says plainly where it cannot.

**Deterministic vs qualitative items.** An item is *deterministic* when its
criteria text states at least one figure: an amount (``$14B``, ``2,865,507``,
``0.824``), a percentage or basis points (``22.6%``, ``140bps``, ``140 basis
points``) or a date (``December 18, 2023``, ``5/31/2024``, ``March 2025``). A
bare year (``2024``, ``FY2024``, ``Q1 2025``) is a period label, not a figure:
it names which figure is meant (see "same quantity"). Every other item (names,
definitions, judgements such as "take rate was virtually flat") is *qualitative*:
listed as not scored, or scored by an optional ``judge(question, answer,
item_text) -> bool | float`` whose verdicts are reported separately and never
enter the deterministic score.

**Reading figures** (one regex scan, linear in the text). Amounts carry their
scale: ``thousand(s)``, ``million(s)``, ``billion(s)``, ``trillion(s)`` written
out, or ``k/K``, ``M/mm/mn/MM``, ``B/bn``, ``T`` attached to the number
(``$14B``, ``$2,168M``). ``$`` is optional: ``$3.25 billion`` and ``3.25
billion`` are the same amount. Percentages are kept in percentage points and
basis points converted to them (``410bps`` = ``4.10%``). ``(149.7)`` and
``-0.8`` are negative. A number glued to letters (``Q1``, ``FY24``, ``10-K``)
is part of a name, not a figure. A ``-`` between two numbers (``2019-2022``,
``0.3312-0.4140``) is a range, not a minus sign.

**Matching a figure** (``matches``). Same kind (amount, percent, date) and
``|answer - expected| <= max(half a unit of the expected figure's last written
digit, 0.5% of |expected|)`` (``REL_TOL``), on magnitudes: the sign is not
compared, because answers carry it in words as often as in signs ("a 1.2%
miss", "declined 0.8%"). When exactly one side has a scale word, the numbers as
written are compared too (``$3.25 billion`` matches a bare ``3.25``; a table
"in thousands" matches ``$12,057,993``). Dates match on month and day, and on
the year when both state one. Percent never matches a bare fraction (``22.6%``
is not ``0.226``): kept strict on purpose.

**Correctness items** pass when every figure the criteria states appears in the
answer (one matching answer figure each), wherever it is: matching is
label-free, so a figure of another line can satisfy it. A figure the question itself states
(``as of Dec 31, 2024``, ``the 2 year CAGR``) is context, not part of the item.

**Contradiction items** ("must not contradict X"; in this data X is the whole
expert answer) fail when the answer states a figure for *the same quantity* as
one of X's figures and matches none of them. Conservative by construction:

- a figure of the answer that matches *any* figure of X of its kind, or any
  figure of the question (the answer restating it), never contradicts;
- *same quantity* = same kind, the same period labels (a shared year /
  quarter / fiscal-year token, or none on both sides) and a shared label word
  (a word of 3+ letters that is not a stop or unit word) — or, when neither
  side has a label word, a shared period label (``2019: 10.82`` vs
  ``2019: 11.50``). Label words are read from the figure's clause (a line,
  ``|``/``;``-separated piece or sentence): its words before the first figure plus
  those since the previous figure, at most ``CONTEXT_WORDS`` of each.

A figure it cannot place (no shared label) is never a contradiction. So the
check catches "2019: 11.50" against "2019: 10.82", not a reworded total. An
answer that states *none* of X's figures fails the item too ("no evidence of
agreement"): otherwise an empty or evasive answer would collect every
contradiction item (FAB's rubrics pair almost every question's correctness
items with one contradiction item, so that would be up to half the score).

**Hostile answers.** Any reply is scored and nothing raises: text past
``MAX_ANSWER_CHARS`` (FinQA-v0's answer cap) is not read (recorded), reading
stops past the spraying limit below, and matching is by sorted
lists and bisection (``O((A + F) log A)`` for A answer and F rubric figures)
plus at most ``A x`` (X's figures of one kind, bounded by the data) label
comparisons for a contradiction item. Echoed text is cut to ``ECHO_CHARS``.

**Number spraying.** An answer stating more than ``max(SPRAY_MIN,
SPRAY_FACTOR x the rubric's distinct figures)`` figures (100 to a few hundred;
the expert answers state at most 40) scores 0 with the reason: matching
figures by presence would otherwise reward listing thousands of numbers.

**Score.** The share of deterministic items passed, in [0, 1]. A reply with no
readable answer (empty, conflicting final answers) scores 0 with the reason. A
question with no deterministic item scores 0 with ``scored: False``: the reward
then measures nothing and says so.

Look-ahead and counterfactual checks do not apply: these questions read no
shipped data (closed-book), so there is no as-of view to lock.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from finenvs.scoring.qa import AnswerError, final_answer
from finenvs.tasks.qa.items import QAItem

#: Where the questions are shipped (relative to the data folder).
DATA_FILE = "questions/fab_public.json"
SPLIT = "fab_public"
SECTION = "knowledge"
#: FinQA-v0's answer cap (``finenvs.tasks.qa.env.MAX_ANSWER_CHARS``; a test keeps them equal).
MAX_ANSWER_CHARS = 16_384
#: Figures read from one answer at most (the rest is not read, and the record says so).
MAX_FIGURES = 4_096
#: Number spraying: an answer stating more figures than max(SPRAY_MIN, SPRAY_FACTOR x the rubric's figures)
#: scores 0 (listing thousands of numbers would otherwise hit figures by chance).
SPRAY_MIN = 100
SPRAY_FACTOR = 5
#: Relative tolerance of a figure match (or half a unit of the last written digit, whichever is larger).
REL_TOL = 0.005
#: Label words kept per side of a figure (clause lead, and text since the previous figure).
CONTEXT_WORDS = 8
#: Longest text echoed back in a record.
ECHO_CHARS = 160
OPERATORS = ("correctness", "contradiction")
CLOSED_BOOK_REASON = ("closed-book: the question is about company filings, releases or guidance that finenvs does "
                      "not ship; no tool can look it up")
ANSWER_FORMAT = ("Answer format: text, as JSON {\"answer\": \"...\"} (one string; it may span lines). State "
                 "every figure with its unit and period (e.g. \"FY 2024: $1.2 billion\", \"12.5%\", \"80bps\", "
                 "\"March 7, 2025\"). Closed-book: finenvs ships no data for this question and the tools cannot "
                 "look it up; answer from what you know. Scored on the figures of its rubric; qualitative rubric "
                 "items are not scored by code.")

Judge = Callable[[str, str, str], "bool | float"]

# ----------------------------------------------------------------------------- reading figures
_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
           "nov": 11, "dec": 12}
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?|JAN(?:UARY)?|FEB(?:RUARY)?|MAR(?:CH)?|APR(?:IL)?|MAY|JUNE?"
          r"|JULY?|AUG(?:UST)?|SEP(?:T(?:EMBER)?)?|OCT(?:OBER)?|NOV(?:EMBER)?|DEC(?:EMBER)?)")
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE_LETTERS = {"k": 1e3, "K": 1e3, "M": 1e6, "mm": 1e6, "mn": 1e6, "MM": 1e6, "B": 1e9, "bn": 1e9, "T": 1e12}
_FIGURE = re.compile(
    r"(?P<iso>\b(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})\b)"
    r"|(?P<us>\b(?P<um>\d{1,2})/(?P<ud>\d{1,2})/(?P<uy>\d{4})\b)"
    rf"|(?P<md>\b(?P<mm>{_MONTH})\.?[ \t]{{1,3}}(?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?[ \t]{{1,3}}(?P<md_y>\d{{4}})\b)?)"
    rf"|(?P<dm>\b(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th)?[ \t]{{1,3}}(?P<dm_m>{_MONTH})\.?,?[ \t]{{1,3}}(?P<dm_y>\d{{4}})\b)"
    rf"|(?P<my>\b(?P<my_m>{_MONTH})\.?,?[ \t]{{1,3}}(?P<my_y>\d{{4}})\b)"
    r"|(?P<amount>(?P<sign>[-\u2212])?(?P<cur>\$|US\$|USD[ \t]?)?(?P<open>\()?(?P<cur2>\$)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?P<close>\))?"
    r"(?:(?P<sl>mm|mn|MM|bn|[kKMBT])(?![A-Za-z])|[ \t]?(?P<sw>(?i:thousand|million|billion|trillion))s?\b)?"
    r"(?:[ \t]?(?P<pct>%|(?i:percent|per[ \t]cent|percentage[ \t]points?|pct|pp)\b)"
    r"|[ \t]?(?P<bps>(?i:bps|bp|basis[ \t]points?)\b))?)"
)
_WORD = re.compile(r"[A-Za-z]+\d*|'\d{2}\b|\b(?:19|20)\d{2}\b")
_CLAUSE = re.compile(r"\n|\||;|(?<=[a-z0-9)%][.!?])[ \t]+(?=[A-Z])")
_PERIOD = re.compile(r"(?:q[1-4]|h[12]|fy\d{2,4}|'\d{2}|(?:19|20)\d{2})")
_STOP = frozenset("""the and for from with that this was were are has have had its our their which what when who how
per was into over under than then also each all any not but out off onto upon about after before between during
approximately roughly around about total value amount million millions billion billions thousand thousands trillion
percent basis points point bps usd dollars dollar shares share number figure year years fiscal quarter quarters
expected estimate including included includes include plus minus less more most some such only both""".split())


@dataclass(frozen=True)
class Figure:
    """One figure read from text.

    Attributes:
        kind: ``"amount"``, ``"percent"`` (percentage points; bps converted) or ``"date"``.
        value: The figure with its scale (amount), in percentage points (percent), or an ordinal (date: unused).
        written: The number as written, without scale or unit.
        scaled: A scale word or letter was attached (``$14B``, ``71 million``).
        tol: Half a unit of the last written digit, in ``value`` units.
        text: The figure as written.
        date: ``(year or None, month, day or None)`` for a date.
        periods: Period labels of its clause (years, ``q1``, ``fy24``).
        words: Label words near it (see the module docstring).
    """

    kind: str
    value: float
    written: float
    scaled: bool
    tol: float
    text: str
    date: tuple[int | None, int, int | None] | None = None
    periods: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()

    def record(self) -> str:
        return self.text[:ECHO_CHARS]


def _month(name: str) -> int:
    return _MONTHS[name[:3].lower()]


def _date_of(m: re.Match[str]) -> tuple[int | None, int, int | None] | None:
    y: int | None  # the year and day a date may leave out
    d: int | None
    if m.group("iso"):
        y, mo, d = int(m.group("iy")), int(m.group("im")), int(m.group("id"))
    elif m.group("us"):
        y, mo, d = int(m.group("uy")), int(m.group("um")), int(m.group("ud"))
    elif m.group("md"):
        y = int(m.group("md_y")) if m.group("md_y") else None
        mo, d = _month(m.group("mm")), int(m.group("md_d"))
    elif m.group("dm"):
        y, mo, d = int(m.group("dm_y")), _month(m.group("dm_m")), int(m.group("dm_d"))
    else:
        y, mo, d = int(m.group("my_y")), _month(m.group("my_m")), None
    if not 1 <= mo <= 12 or (d is not None and not 1 <= d <= 31):
        return None
    return y, mo, d


def _words(text: str) -> tuple[list[str], list[str]]:
    """Period labels and label words of a piece of text (lower case, in order)."""
    periods, words = [], []
    for w in _WORD.findall(text):
        low = w.lower()
        if _PERIOD.fullmatch(low):
            periods.append(low.removeprefix("fy")[-2:] if low.startswith(("fy", "'")) else
                           (low[-2:] if low[:2] in ("19", "20") and len(low) == 4 else low))
        elif len(low) >= 3 and low.isalpha() and low not in _STOP:
            words.append(low)
    return periods, words


def _number(m: re.Match[str], text: str) -> Figure | None:
    start = m.start("amount")
    raw = m.group("num")
    end = m.end("amount")
    before = text[start - 1] if start > 0 else " "
    lead = m.group("sign") or m.group("cur") or m.group("open") or m.group("cur2")
    if not lead and (before.isalpha() or before in "'_"):
        return None  # Q1, FY2024, H1: a name
    if end < len(text) and text[end] == "-" and end + 1 < len(text) and text[end + 1].isalpha():
        return None  # 10-K, 3-point: a name
    if end < len(text) and (text[end].isalpha() or text[end] == "_") and not (m.group("sl") or m.group("sw")
                                                                             or m.group("pct") or m.group("bps")):
        return None  # 3rd, 20x? (x stays a ratio), 10K-ish glued names
    pct, bps = m.group("pct"), m.group("bps")
    scale_key = m.group("sl") or (m.group("sw") or "").lower()
    scale = _SCALE_LETTERS.get(scale_key) or _SCALE_WORDS.get(scale_key) or 1.0
    currency = bool(m.group("cur") or m.group("cur2"))
    if not (pct or bps or currency or scale_key) and "," not in raw and "." not in raw and len(raw) == 4 \
            and 1900 <= int(raw) <= 2099:
        return None  # a year: a period label
    try:
        written = float(raw.replace(",", ""))
    except ValueError:  # pragma: no cover - the pattern only matches numbers
        return None
    if not math.isfinite(written):
        return None
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    half = 0.5 * 10.0 ** (-decimals)
    if bps:
        return Figure("percent", written / 100.0, written, False, half / 100.0, m.group("amount"))
    if pct:
        return Figure("percent", written, written, False, half, m.group("amount"))
    value = written * scale
    if not math.isfinite(value):
        return None
    return Figure("amount", value, written, scale != 1.0, half * scale, m.group("amount"))


def _with_after(fig: Figure, after: str) -> Figure:
    """``fig`` with the label words that follow it (up to the next figure or the clause's end)."""
    words = _words(after[:ECHO_CHARS * 2])[1][:CONTEXT_WORDS]
    return Figure(fig.kind, fig.value, fig.written, fig.scaled, fig.tol, fig.text, fig.date, fig.periods,
                  fig.words | frozenset(words)) if words else fig


def read_figures(text: str, limit: int = MAX_FIGURES) -> tuple[list[Figure], bool]:
    """The figures of ``text`` with their labels, in order, and whether ``limit`` cut the reading short."""
    out: list[Figure] = []
    for clause in _CLAUSE.split(text):
        lead_end = None
        prev = 0
        lead_periods: list[str] = []
        lead_words: list[str] = []
        pending: int | None = None
        for m in _FIGURE.finditer(clause):
            if m.group("amount") is not None:
                fig = _number(m, clause)
            else:
                d = _date_of(m)
                fig = None if d is None else Figure("date", 0.0, 0.0, False, 0.0, m.group(0), d)
            if fig is None:
                continue
            if lead_end is None:
                lead_end = m.start()
                p, w = _words(clause[:lead_end])
                lead_periods, lead_words = p[-CONTEXT_WORDS:], w[-CONTEXT_WORDS:]
            p, w = _words(clause[prev:m.start()])
            periods = frozenset(lead_periods + p[-CONTEXT_WORDS:])
            if fig.date is not None and fig.date[0] is not None:
                periods |= {str(fig.date[0])[-2:]}
            out.append(Figure(fig.kind, fig.value, fig.written, fig.scaled, fig.tol, fig.text, fig.date,
                              periods, frozenset(lead_words + w[-CONTEXT_WORDS:])))
            if pending is not None:  # the previous figure's label words after it, up to this one
                out[-2] = _with_after(out[-2], clause[pending:m.start()])
            pending = prev = m.end()
            if len(out) >= limit:
                return out, True
        if pending is not None and out:
            out[-1] = _with_after(out[-1], clause[pending:])
    return out, False


def tolerance(expected: Figure) -> float:
    """How far a figure may be from ``expected`` and still match it (see the module docstring)."""
    return max(expected.tol, REL_TOL * abs(expected.value))


def _written_tol(expected: Figure) -> float:
    """:func:`tolerance` of an amount as written (without its scale)."""
    unit = abs(expected.value / expected.written) if expected.written else 1.0
    return max(expected.tol / unit, REL_TOL * abs(expected.written))


def matches(expected: Figure, given: Figure) -> bool:
    """Whether ``given`` states ``expected`` (same kind, within :func:`tolerance`; magnitudes)."""
    if expected.kind != given.kind:
        return False
    if expected.kind == "date":
        (ey, em, ed), (gy, gm, gd) = expected.date, given.date  # type: ignore[misc]
        return em == gm and (ed is None or ed == gd) and (ey is None or gy is None or ey == gy)
    if abs(abs(given.value) - abs(expected.value)) <= tolerance(expected):
        return True
    if expected.kind == "amount" and expected.scaled != given.scaled:
        return abs(abs(given.written) - abs(expected.written)) <= _written_tol(expected)
    return False


class FigureIndex:
    """An answer's figures, sorted per kind for bisection (``contains`` is ``O(log n)``)."""

    def __init__(self, figures: Sequence[Figure]) -> None:
        self.figures = list(figures)
        self._values: dict[str, list[float]] = {"amount": [], "percent": []}
        self._scaled_written: list[float] = []
        self._plain_written: list[float] = []
        self._dates: set[tuple[int | None, int, int | None]] = set()
        for f in self.figures:
            if f.kind == "date":
                self._dates.add(f.date)  # type: ignore[arg-type]
                continue
            self._values[f.kind].append(abs(f.value))
            if f.kind == "amount":
                (self._scaled_written if f.scaled else self._plain_written).append(abs(f.written))
        for v in (*self._values.values(), self._scaled_written, self._plain_written):
            v.sort()

    @staticmethod
    def _near(values: list[float], x: float, tol: float) -> bool:
        i = bisect.bisect_left(values, x - tol)
        return i < len(values) and values[i] <= x + tol

    def contains(self, expected: Figure) -> bool:
        """Whether some figure of the answer matches ``expected`` (:func:`matches`)."""
        if expected.kind == "date":
            ey, em, ed = expected.date  # type: ignore[misc]
            return any(gm == em and (ed is None or gd == ed) and (ey is None or gy is None or gy == ey)
                       for gy, gm, gd in self._dates)  # distinct dates: bounded by the answer's figures
        if self._near(self._values[expected.kind], abs(expected.value), tolerance(expected)):
            return True
        if expected.kind == "amount":
            other = self._plain_written if expected.scaled else self._scaled_written
            return self._near(other, abs(expected.written), _written_tol(expected))
        return False


def same_quantity(a: Figure, b: Figure) -> bool:
    """Whether two figures name the same quantity (same kind, periods and a label word; docstring)."""
    if a.kind != b.kind:
        return False
    shared_periods = bool(a.periods & b.periods)
    if (a.periods or b.periods) and not shared_periods:
        return False
    if a.words & b.words:
        return True
    return not a.words and not b.words and shared_periods


# ----------------------------------------------------------------------------- rubric items
@dataclass(frozen=True)
class RubricItem:
    """One rubric item: its operator, criteria and the figures the criteria states."""

    index: int
    operator: str
    criteria: str
    figures: tuple[Figure, ...]

    @property
    def deterministic(self) -> bool:
        return bool(self.figures)

    @property
    def name(self) -> str:
        return f"{self.operator}[{self.index}]"


def parse_rubric(rubric: Any, where: str = "rubric", question: str = "") -> tuple[RubricItem, ...]:
    """Rubric items from a list of ``{"operator", "criteria"}`` (or its JSON text).

    A figure the ``question`` itself states (``as of Dec 31, 2024``, ``the 2 year CAGR``) is context, not
    something the answer must state: it is left out of the item's figures (an item with only such figures is
    qualitative).

    Raises:
        ValueError: Not a list of items with a known operator and a text criteria (names ``where`` and the item).
    """
    if isinstance(rubric, str):
        try:
            rubric = json.loads(rubric)
        except ValueError as exc:
            raise ValueError(f"{where}: the rubric is not JSON ({exc})") from None
    if not isinstance(rubric, list):
        raise ValueError(f"{where}: the rubric is a {type(rubric).__name__}, not a list of items")
    asked = FigureIndex(read_figures(question[:MAX_ANSWER_CHARS])[0])
    items = []
    for i, raw in enumerate(rubric):
        if not isinstance(raw, dict) or raw.get("operator") not in OPERATORS or not isinstance(raw.get("criteria"), str):
            raise ValueError(f"{where}: item {i} needs operator in {OPERATORS} and a text criteria, got {raw!r:.120}")
        figures, _ = read_figures(raw["criteria"])
        items.append(RubricItem(i, raw["operator"], raw["criteria"],
                                tuple(f for f in figures if not asked.contains(f))))
    return tuple(items)


@dataclass(frozen=True)
class ItemVerdict:
    """How one rubric item scored (or why it was not)."""

    item: RubricItem
    passed: bool | None
    reason: str
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        return {"name": self.item.name, "operator": self.item.operator,
                "expected": " ".join(self.item.criteria[:ECHO_CHARS].split()), "correct": bool(self.passed),
                "read": list(self.found), "missing": list(self.missing), "reason": self.reason or None}


def check_correctness(item: RubricItem, answer: FigureIndex) -> ItemVerdict:
    """A correctness item: every figure it states appears in the answer."""
    found: list[str] = []
    missing: list[str] = []
    for f in item.figures:
        (found if answer.contains(f) else missing).append(f.record())
    if missing:
        return ItemVerdict(item, False, f"not in the answer: {', '.join(missing)}", tuple(found), tuple(missing))
    return ItemVerdict(item, True, "", tuple(found))


def check_contradiction(item: RubricItem, answer: FigureIndex, question: FigureIndex) -> ItemVerdict:
    """A contradiction item: no answer figure of the same quantity as one of X's figures differs from them all."""
    stated = FigureIndex(item.figures)
    by_kind: dict[str, list[Figure]] = {}
    for f in item.figures:
        by_kind.setdefault(f.kind, []).append(f)
    for a in answer.figures:
        if stated.contains(a) or question.contains(a):
            continue  # equals a figure X states (of any label), or restates the question
        rivals = [x for x in by_kind.get(a.kind, ()) if same_quantity(a, x)]
        if rivals:
            labels = sorted((a.words & rivals[0].words) | (a.periods & rivals[0].periods))
            return ItemVerdict(item, False, f"the answer states {a.record()} where the rubric states "
                               f"{rivals[0].record()} ({', '.join(labels)[:ECHO_CHARS]})", (a.record(),),
                               tuple(x.record() for x in rivals[:4]))
    agreed = tuple(x.record() for x in item.figures if answer.contains(x))
    if not agreed:
        return ItemVerdict(item, False, "the answer states none of the figures it must not contradict (no evidence "
                           "of agreement)", (), tuple(x.record() for x in item.figures[:4]))
    return ItemVerdict(item, True, "", agreed[:8])


# ----------------------------------------------------------------------------- scoring an answer
@dataclass(frozen=True)
class FabOutcome:
    """A reply's rubric score: deterministic items scored, qualitative ones listed (or judged, apart)."""

    score: float
    verdicts: tuple[ItemVerdict, ...]
    not_scored: tuple[RubricItem, ...]
    reason: str | None = None
    via: str = "none"
    truncated: bool = False
    judged: tuple[dict[str, Any], ...] = ()

    @property
    def passed(self) -> int:
        return sum(bool(v.passed) for v in self.verdicts)

    def record(self) -> dict[str, Any]:
        judge_scores = [j["score"] for j in self.judged if j["score"] is not None]
        return {"score": self.score, "reason": self.reason, "via": self.via, "scored": bool(self.verdicts),
                "parts": [v.record() for v in self.verdicts],
                "deterministic": {"passed": self.passed, "total": len(self.verdicts)},
                "not_scored": [{"name": q.name, "operator": q.operator, "criteria": " ".join(q.criteria[:ECHO_CHARS].split()),
                                "why": "qualitative: states no figure"} for q in self.not_scored],
                "judge": {"items": list(self.judged), "scored": len(judge_scores),
                          "score": sum(judge_scores) / len(judge_scores) if judge_scores else None},
                "answer_truncated": self.truncated}


def answer_text(reply: Any) -> tuple[str | None, str, str | None]:
    """The text to score: the reply's final answer (JSON ``{"answer": ...}``, an ``Answer:`` line, a dict), else
    the whole text. Returns ``(text or None, via, problem)``; never raises."""
    try:
        answer, via = final_answer(reply)
    except AnswerError as exc:
        if isinstance(reply, str) and str(exc).startswith("no final answer") and reply.strip():
            return reply, "text", None
        return None, "none", str(exc)[:ECHO_CHARS]
    except (ValueError, RecursionError, OverflowError, TypeError) as exc:
        return None, "none", f"unreadable answer ({type(exc).__name__})"
    if answer is None or (isinstance(answer, (dict, list)) and not answer):
        return None, via, "the answer is null or empty"
    if isinstance(answer, str):
        return (answer, via, None) if answer.strip() else (None, via, "empty answer")
    try:
        return json.dumps(answer, default=str, allow_nan=True), via, None
    except (ValueError, RecursionError, TypeError, OverflowError) as exc:
        return None, "none", f"unreadable answer ({type(exc).__name__})"


def score_reply(reply: Any, rubric: Sequence[RubricItem], question: str = "", *,
                judge: Judge | None = None) -> FabOutcome:
    """Score a reply against a parsed rubric; never raises for any reply (a judge that raises is recorded).

    Args:
        reply: The agent's reply (text or dict), as FinQA-v0 receives it.
        rubric: :func:`parse_rubric`'s items.
        question: The question text (an answer restating its figures contradicts nothing).
        judge: Optional ``judge(question, answer, item_text) -> bool | float`` for the qualitative items; its
            verdicts are recorded under ``judge`` and never enter ``score``.
    """
    deterministic = [i for i in rubric if i.deterministic]
    qualitative = tuple(i for i in rubric if not i.deterministic)
    text, via, problem = answer_text(reply)
    if text is None:
        verdicts = tuple(ItemVerdict(i, False, problem or "no answer") for i in deterministic)
        return FabOutcome(0.0, verdicts, qualitative, problem or "no answer", via)
    truncated = len(text) > MAX_ANSWER_CHARS
    text = text[:MAX_ANSWER_CHARS]
    limit = spray_limit(rubric)
    figures, cut = read_figures(text, limit + 1)
    if cut:
        verdicts = tuple(ItemVerdict(i, False, "number spraying") for i in deterministic)
        return FabOutcome(0.0, verdicts, qualitative, f"the answer states more than {limit} figures (at most "
                          f"{SPRAY_FACTOR} per rubric figure, or {SPRAY_MIN}): number spraying scores 0", "text",
                          True)
    answer = FigureIndex(figures)
    asked = FigureIndex(read_figures(question[:MAX_ANSWER_CHARS])[0])
    verdicts = tuple(check_correctness(i, answer) if i.operator == "correctness" else
                     check_contradiction(i, answer, asked) for i in deterministic)
    score = sum(bool(v.passed) for v in verdicts) / len(verdicts) if verdicts else 0.0
    reason = None if verdicts else "no deterministic rubric item: the score is 0 and measures nothing"
    judged = tuple(_judge(judge, question, text, i) for i in qualitative) if judge is not None else ()
    return FabOutcome(float(score), verdicts, qualitative, reason, via, truncated or cut, judged)


def spray_limit(rubric: Sequence[RubricItem]) -> int:
    """Most figures an answer may state before it counts as number spraying (see :data:`SPRAY_FACTOR`)."""
    return max(SPRAY_MIN, SPRAY_FACTOR * len({f.text for r in rubric for f in r.figures}))


def _judge(judge: Judge, question: str, answer: str, item: RubricItem) -> dict[str, Any]:
    out: dict[str, Any] = {"name": item.name, "score": None, "error": None}
    try:
        got = judge(question, answer, item.criteria)
    except Exception as exc:  # a judge is user code: its failure is recorded, never raised
        out["error"] = f"{type(exc).__name__}: {str(exc)[:ECHO_CHARS]}"
        return out
    if isinstance(got, bool):
        out["score"] = float(got)
    elif isinstance(got, (int, float)) and math.isfinite(got) and 0.0 <= got <= 1.0:
        out["score"] = float(got)
    else:
        out["error"] = f"the judge returned {got!r:.40}, not a bool or a number in [0, 1]"
    return out


# ----------------------------------------------------------------------------- the questions as QAItems
def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "other"


@dataclass(frozen=True)
class FabItem(QAItem):
    """A FAB public question as a FinQA-v0 item: free-text answer scored by its rubric (closed-book).

    ``parts`` is empty: :meth:`score` reads the rubric instead. ``expert_answer`` is the
    reference; it is never shown to the agent.
    """

    rubric: tuple[RubricItem, ...] = ()
    expert_answer: str = ""
    question_type: str = ""
    expert_minutes: float | None = None
    source: str = ""
    closed_book: str | None = CLOSED_BOOK_REASON

    def prompt(self) -> str:
        return f"{' '.join(self.question.split())}\n{ANSWER_FORMAT}"

    @property
    def truth(self) -> dict[str, Any]:
        return {"expert_answer": self.expert_answer}

    def score(self, reply: Any, judge: Judge | None = None) -> dict[str, Any]:
        return score_reply(reply, self.rubric, self.question, judge=judge).record()

    def record(self) -> dict[str, Any]:
        return {**super().record(), "question_type": self.question_type, "closed_book": self.closed_book,
                "rubric": [{"operator": r.operator, "criteria": r.criteria} for r in self.rubric]}


def item_from_record(raw: dict[str, Any], where: str) -> FabItem:
    """One :class:`FabItem` from a record of the data file.

    Raises:
        ValueError: A missing or malformed field (names ``where`` and the field).
    """
    for key, kind in (("id", str), ("index", int), ("question", str), ("answer", str), ("question_type", str),
                      ("rubric", list), ("source", str)):
        if not isinstance(raw.get(key), kind):
            raise ValueError(f"{where}: field {key!r} must be a {kind.__name__}, got {raw.get(key)!r:.60}")
    minutes = raw.get("expert_minutes")
    return FabItem(id=raw["id"], section=SECTION, topic="fab_" + _slug(raw["question_type"]), seed=raw["index"],
                   question=raw["question"], parts=(),
                   inputs={"closed_book": True, "question_type": raw["question_type"]},
                   as_of=None, solution=("the expert answer (FAB public set)",),
                   rubric=parse_rubric(raw["rubric"], f"{where} rubric", raw["question"]), expert_answer=raw["answer"],
                   question_type=raw["question_type"],
                   expert_minutes=float(minutes) if isinstance(minutes, (int, float)) else None,
                   source=raw["source"])


def load_items(path: Path | None = None) -> list[FabItem]:
    """The questions of the data file (default: the shipped ``questions/fab_public.json``).

    Raises:
        finenvs.errors.DataFileError: The file is missing or not strict JSON.
        ValueError: A malformed record (names the file and item).
    """
    from finenvs.data.manifest import shipped_data_dir
    from finenvs.errors import DataFileError

    path = Path(path) if path is not None else shipped_data_dir() / DATA_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path}: cannot read the FAB public questions ({type(exc).__name__}: {exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise DataFileError(f"{path}: no 'items' list")
    return [item_from_record(raw if isinstance(raw, dict) else {}, f"{path} item {i}") for i, raw in
            enumerate(doc["items"])]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


@lru_cache(maxsize=1)
def shipped_items() -> tuple[FabItem, ...]:
    """The shipped questions (read once per process)."""
    return tuple(load_items())


def count_items(items: Sequence[FabItem]) -> dict[str, int]:
    """Rubric items per class over ``items``: total, deterministic, qualitative, and questions with any
    deterministic item."""
    rubric = [r for it in items for r in it.rubric]
    return {"questions": len(items), "items": len(rubric), "deterministic": sum(r.deterministic for r in rubric),
            "qualitative": sum(not r.deterministic for r in rubric),
            "deterministic_correctness": sum(r.deterministic and r.operator == "correctness" for r in rubric),
            "deterministic_contradiction": sum(r.deterministic and r.operator == "contradiction" for r in rubric),
            "questions_scored": sum(any(r.deterministic for r in it.rubric) for it in items)}


__all__ = ["ANSWER_FORMAT", "CLOSED_BOOK_REASON", "DATA_FILE", "MAX_ANSWER_CHARS", "MAX_FIGURES", "REL_TOL", "SPLIT",
           "SPRAY_FACTOR", "SPRAY_MIN",
           "FabItem", "FabOutcome", "Figure", "FigureIndex", "ItemVerdict", "RubricItem", "answer_text",
           "check_contradiction", "check_correctness", "count_items", "item_from_record", "load_items", "matches",
           "parse_rubric", "read_figures", "same_quantity", "score_reply", "shipped_items", "spray_limit", "tolerance"]
