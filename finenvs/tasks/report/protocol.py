"""The FinReport-v0 report format: the eight-section schema, its template, and the parser.

A report is Markdown with exactly eight sections, in this order, each under a
heading (``#`` to ``####``, optionally numbered ``1.``, or a whole bold line)::

    1. Executive Summary
    2. Investment Rating and Thesis
    3. Weekly Price Performance and Technical Indicators
    4. News and Catalysts
    5. Earnings and Filings Update
    6. Sector and Relative Performance
    7. Risk Factors
    8. Recommendation, Outlook and Scenarios

and one rating, declared on a ``Rating: X`` line (X one of STRONG_SELL, SELL,
HOLD, BUY, STRONG_BUY; ``Strong Buy``/``strong-buy`` spellings and Markdown
emphasis are accepted) in section 2 and repeated in section 8. Headings match
case-insensitively with ``&`` read as ``and``; other headings are content of
the section they fall in (a title line before section 1 is allowed).

Parsing never raises. A report that is not text, is not UTF-8, or exceeds
:data:`MAX_REPORT_CHARS` parses to no sections and no rating, with the reason
in :attr:`ParsedReport.error`. The rating used for trading is the declared one
when every declaration agrees; with no declaration, or declarations that
disagree or are not ratings, it is HOLD (flat: no market risk) and the report
counts as an invalid action (:attr:`ParsedReport.rating_problem` says why).

Numbers (:func:`numbers_in`) are read in the formats reports use: ``1,234.5``,
``$1.2B``, ``3.4 million``, ``-3.2%``, ``−3.2%`` (Unicode minus), ``(3.2%)``
(accounting negative), ``+5 pp``, ``0.85x``. Period lengths (``52-week``,
``14-day``, ``RSI(14)``), years, ``10-K``/``10-Q`` and ``S&P 500`` are not
numbers a report claims. Dates (:func:`dates_in`) are read as ISO
(``2026-03-27``), ``2026/03/27``, ``03/27/2026`` (US), ``March 27, 2026``,
``Mar. 27, 2026`` and ``27 March 2026``.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from finenvs.tasks.report.core import RATINGS, rating_of

SECTIONS: tuple[str, ...] = (
    "Executive Summary",
    "Investment Rating and Thesis",
    "Weekly Price Performance and Technical Indicators",
    "News and Catalysts",
    "Earnings and Filings Update",
    "Sector and Relative Performance",
    "Risk Factors",
    "Recommendation, Outlook and Scenarios",
)
THESIS, SCENARIOS, RISKS = 1, 7, 6
#: Longest report accepted (characters); a longer one is not parsed.
MAX_REPORT_CHARS = 60_000
#: The rating every unreadable report trades as, and why.
DEFAULT_RATING = "HOLD"
DEFAULT_RATING_REASON = "HOLD is flat: a report without one clear rating takes no market risk"

REPORT_TEMPLATE = """\
# {symbol} weekly market insight — {date}

## 1. Executive Summary
<two or three sentences: the week in numbers (close, weekly return) and the call>

## 2. Investment Rating and Thesis
Rating: <STRONG_SELL | SELL | HOLD | BUY | STRONG_BUY>
<the signals behind the rating, each with its value from get_weekly_metrics>

## 3. Weekly Price Performance and Technical Indicators
<close, weekly return, 20-day volatility, largest daily move, volume change, 52-week range,
4/12-week returns, RSI(14), MACD histogram, distance to the 50-day SMA>

## 4. News and Catalysts
<headlines published by the report date (list_news / get_news); say so when there are none>

## 5. Earnings and Filings Update
<the latest 10-K/10-Q filed by the report date (list_filings), with its filing date>

## 6. Sector and Relative Performance
<peer basket (get_peers), its weekly return, excess return, 60-day beta and correlation, 12-week relative strength>

## 7. Risk Factors
<at least one specific risk, each with the metric that measures it>

## 8. Recommendation, Outlook and Scenarios
Rating: <the same rating as section 2>
- Bull case: <price target> (<change from the close>)
- Base case: <price target>
- Bear case: <price target>
"""

# Headings are matched on the line with its trailing whitespace, '#'s and ':' already cut in code
# (:func:`_title_of`): a lazy title followed by ``\s*#*\s*$`` rescans the line's tail from every position.
_HEADING = re.compile(r"^\s{0,3}(#{1,4})\s++(.*)$")
_BOLD_LINE = re.compile(r"^\s{0,3}(\*\*|__)(.+?)\1$")
_NUMBERING = re.compile(r"^(?:section\s+)?(?:\d{1,2}|[ivx]{1,4})\s*[.):-]\s*", re.IGNORECASE)
_RATING_LINE = re.compile(
    r"(?:^|[\s*_>|(\[])(?:investment\s++|final\s++|overall\s++)?rating\s*+[*_`]*+\s*+([:=：|]|is\b|-)\s*+[*_`\"']*+\s*+"
    r"(strong[\s_-]*(?:buy|sell)\b|[A-Za-z][A-Za-z-]*)",
    re.IGNORECASE | re.MULTILINE,
)


def _norm_title(text: str) -> str:
    text = re.sub(r"[*_`]", "", text).strip().lower().replace("&", " and ")
    text = _NUMBERING.sub("", text)
    text = re.sub(r"[^a-z ]+", " ", text)
    return " ".join(text.split())


_SECTION_KEYS = {_norm_title(title): i for i, title in enumerate(SECTIONS)}


@dataclass(frozen=True)
class RatingDeclaration:
    """One ``Rating: X`` line: the section it is in (None before section 1), the word, its canonical rating."""

    section: int | None
    word: str
    rating: str | None


@dataclass
class ParsedReport:
    """A report split into its sections.

    Attributes:
        text: The report (empty when it could not be read).
        error: Why the report could not be read at all (None when it could).
        sections: Section index (0..7) -> body text (the first occurrence).
        order: Section indices in the order their headings appear (duplicates included).
        declarations: Every distinct ``Rating:`` declaration found (section and word; a repeat is kept once).
        rating: The rating traded (HOLD when there is no single valid one).
        rating_problem: Why the rating is the default (None when the report declares one clearly).
    """

    text: str
    error: str | None = None
    sections: dict[int, str] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    declarations: list[RatingDeclaration] = field(default_factory=list)
    rating: str = DEFAULT_RATING
    rating_problem: str | None = None

    @property
    def duplicates(self) -> list[int]:
        seen: set[int] = set()
        dup = []
        for i in self.order:
            if i in seen and i not in dup:
                dup.append(i)
            seen.add(i)
        return dup

    def section(self, i: int) -> str:
        return self.sections.get(i, "")


def decode_report(report: Any) -> tuple[str, str | None]:
    """``(text, problem)``: a str as is, bytes decoded as strict UTF-8; anything else is a problem."""
    if isinstance(report, bytes):
        try:
            report = report.decode("utf-8")
        except UnicodeDecodeError as exc:
            return "", f"the report is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if not isinstance(report, str):
        return "", f"a report is Markdown text (str), got {type(report).__name__}"
    if len(report) > MAX_REPORT_CHARS:
        return "", f"the report has {len(report):,} characters, over the {MAX_REPORT_CHARS:,} limit"
    if "\x00" in report:
        return "", "the report contains NUL characters"
    return report, None


_RATING_WORD = re.compile("rating", re.IGNORECASE)
#: First characters a heading or bold title line can start with (after indentation).
_TITLE_LEADS = ("#", "*", "_")


def _title_of(line: str) -> str | None:
    """The title of a Markdown heading (``## 2. Title ##``) or a bold line (``**Title**:``), or None."""
    heading = _HEADING.match(line)
    if heading is not None:
        return heading.group(2).rstrip().rstrip("#").rstrip()
    bare = line.rstrip()
    bare = bare[:-1].rstrip() if bare.endswith(":") else bare
    bold = _BOLD_LINE.match(bare)
    return bold.group(2) if bold is not None else None


def parse_report(report: Any) -> ParsedReport:
    """Split a report into its eight sections and read its rating (see module doc; never raises)."""
    text, problem = decode_report(report)
    if problem is not None:
        return ParsedReport(text="", error=problem, rating_problem=problem)
    parsed = ParsedReport(text=text)
    current: int | None = None
    bodies: dict[int, list[str]] = {}
    seen: set[tuple[int | None, str]] = set()
    for line in text.splitlines():
        if not line or line.isspace():  # no heading, no rating: only a section's body takes it
            if current is not None and current >= 0:
                bodies[current].append(line)
            continue
        title = _title_of(line) if line.lstrip()[:1] in _TITLE_LEADS else None
        key = _SECTION_KEYS.get(_norm_title(title)) if title is not None else None
        if key is not None:
            parsed.order.append(key)
            current = key if key not in bodies else -1  # a duplicate's body is not read as the section
            if current >= 0:
                bodies[current] = []
            continue
        if current is not None and current >= 0:
            bodies[current].append(line)
        if _RATING_WORD.search(line) is None:  # the declaration's keyword, with the pattern's own case rules
            continue
        for m in _RATING_LINE.finditer(line):
            word = m.group(2).strip()
            rating = _rating_word(word)
            if m.group(1) in ("is", "IS", "Is", "-") and rating is None:
                continue  # prose ("the rating is unchanged"), not a declaration
            section = current if current != -1 else None
            if (section, word) not in seen:  # a repeated declaration adds nothing (and a flood of them stays small)
                seen.add((section, word))
                parsed.declarations.append(RatingDeclaration(section, word, rating))
    parsed.sections = {i: "\n".join(lines).strip() for i, lines in bodies.items()}
    parsed.rating, parsed.rating_problem = _resolve_rating(parsed.declarations)
    return parsed


@functools.lru_cache(maxsize=256)
def _rating_word(word: str) -> str | None:
    return rating_of(word)


def _resolve_rating(decls: list[RatingDeclaration]) -> tuple[str, str | None]:
    if not decls:
        return DEFAULT_RATING, "no 'Rating: X' line"
    bad = [d.word for d in decls if d.rating is None]
    if bad:
        return DEFAULT_RATING, f"{bad[0]!r} is not a rating (valid: {', '.join(RATINGS)})"
    distinct = list(dict.fromkeys(d.rating for d in decls))
    if len(distinct) > 1:
        return DEFAULT_RATING, f"conflicting ratings {' vs '.join(str(r) for r in distinct)}"
    return str(distinct[0]), None


# ------------------------------------------------------------------------------ numbers
_MASKS = (
    re.compile(r"\b10-[KQ]\b", re.IGNORECASE),
    re.compile(r"S&P\s*500|Nasdaq[- ]100|Russell\s*[123]000", re.IGNORECASE),
    re.compile(r"\b(?:RSI|SMA|EMA|MACD|ATR|WMA|ROC|ADX)\s*\(\s*\d+(?:\s*[,/]\s*\d+)*\s*\)", re.IGNORECASE),
    re.compile(r"\b(?:RSI|SMA|EMA|ATR|WMA|ROC|ADX)-?\d+\b", re.IGNORECASE),
    re.compile(r"\b[QH][1-4]\b|\bFY\s?\d{2,4}\b", re.IGNORECASE),
)
_MULT = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "mm": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9,
         "billion": 1e9, "t": 1e12, "tn": 1e12, "trillion": 1e12}
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.,])(?P<open>\()?\s?(?P<sign>[+\-−–])?\s?(?P<cur>\$|USD\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<mult>\s?(?:thousand|million|billion|trillion|bn|mn|mm|tn|[KkMBT])(?![A-Za-z]))?"
    r"(?P<unit>\s?%|\s?percent\b|\s?pp\b|\s?bps?\b|x(?![A-Za-z]))?"
    r"(?P<period>-?\s?(?:day|week|wk|month|year|yr|quarter|session|bar)s?\b)?"
    r"(?P<close>\))?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class NumberToken:
    """A number as written: its value (percent kept as written: ``3.2%`` is 3.2), unit and precision.

    Attributes:
        value: The number with sign and multiplier applied.
        unit: ``"%"`` (also percent, pp), ``"bp"``, ``"$"``, ``"x"`` or ``""``.
        decimals: Digits after the decimal point as written (sets the tolerance).
        text: The matched text.
        start: Offset in the scanned text.
        kind: ``"value"``, ``"period"`` (52-week, 14-day) or ``"year"`` (an integer 1900..2100 without unit).
        scale: The multiplier written (1e9 for B/billion, 1 without one).
    """

    value: float
    unit: str
    decimals: int
    text: str
    start: int
    kind: str = "value"
    scale: float = 1.0

    def tolerance(self) -> float:
        """Half a unit of the last digit written, times the multiplier ($1.2B: 0.05e9), at least 1e-9."""
        return max(0.5 * 10.0 ** (-self.decimals) * self.scale, 1e-9)

    def matches(self, truth: float, *, rel: float = 0.005) -> bool:
        """The number is ``truth`` to its written precision (or within ``rel`` of it)."""
        return abs(self.value - truth) <= max(self.tolerance(), rel * abs(truth)) + 1e-12


def mask_non_numbers(text: str) -> str:
    """Blank out dates, form names, index names and indicator parameters (same length, so offsets hold)."""
    for pattern in (*_DATE_PATTERNS, *_MASKS):
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text


def numbers_in(text: str) -> list[NumberToken]:
    """Every number in ``text`` (see module doc for formats and what is not a number)."""
    return list(_numbers_in(text))


#: Texts whose numbers and dates are remembered: the scorers of one report read ~30 distinct lines and sections
#: each, several times over (a pure function of the text: the key is the whole text).
TEXT_CACHE_SIZE = 1024


@functools.lru_cache(maxsize=TEXT_CACHE_SIZE)
def _numbers_in(text: str) -> tuple[NumberToken, ...]:
    # cached: a report's scorers read the same sections several times (a 60,000-character report of
    # numbers costs 0.25 s a read)
    masked = mask_non_numbers(text)
    out = []
    for m in _NUMBER.finditer(masked):
        raw = m.group("num")
        value = float(raw.replace(",", ""))
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        mult_raw = (m.group("mult") or "").strip()
        mult = "" if mult_raw in ("m", "b", "t") else mult_raw.lower()  # 3m, 2b: not read as multipliers
        scale = _MULT.get(mult, 1.0)
        value *= scale
        unit_raw = (m.group("unit") or "").strip().lower()
        unit = "%" if unit_raw in ("%", "percent", "pp") else ("bp" if unit_raw.startswith("bp") else unit_raw)
        if m.group("cur"):
            unit = unit or "$"
        negative = m.group("sign") in ("-", "−", "–")
        if m.group("open") and m.group("close") and (unit or "," in raw or "." in raw):
            negative = True  # accounting negative: (3.2%), ($1,234.5)
        value = -value if negative else value
        kind = "value"
        if m.group("period") and not unit:  # 52-week, 14 days; but 12% year over year is a value
            kind = "period"
        elif not unit and not mult and decimals == 0 and "," not in raw and 1900 <= value <= 2100:
            kind = "year"
        text = m.group(0).strip()
        if not (m.group("open") and m.group("close")):
            text = text.strip("()").strip()
        out.append(NumberToken(value, unit, decimals, text, m.start("num"), kind, scale))
    return tuple(out)


# ------------------------------------------------------------------------------ dates
_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_MONTH_RE = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATE_PATTERNS = (
    re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b"),
    re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"),
    re.compile(_MONTH_RE + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", re.IGNORECASE),
    re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH_RE + r",?\s+(\d{4})\b", re.IGNORECASE),
)


@dataclass(frozen=True)
class DateToken:
    """A date written in the report (None when the text looks like a date but is not a valid one)."""

    date: _dt.date | None
    text: str
    start: int


def dates_in(text: str) -> list[DateToken]:
    """Every date written in ``text``, in order of appearance (formats in the module doc)."""
    return list(_dates_in(text))


@functools.lru_cache(maxsize=TEXT_CACHE_SIZE)
def _dates_in(text: str) -> tuple[DateToken, ...]:
    found: list[DateToken] = []
    starts: list[int] = []  # the spans taken, sorted and disjoint: an overlap is checked against two neighbours
    ends: list[int] = []
    for k, pattern in enumerate(_DATE_PATTERNS):
        for m in pattern.finditer(text):
            i = bisect.bisect_right(starts, m.start())
            if (i > 0 and ends[i - 1] > m.start()) or (i < len(starts) and starts[i] < m.end()):
                continue
            g = m.groups()
            try:
                if k == 0:
                    y, mo, d = int(g[0]), int(g[1]), int(g[2])
                elif k == 1:
                    mo, d, y = int(g[0]), int(g[1]), int(g[2])
                elif k == 2:
                    mo, d, y = _MONTHS[g[0][:3].lower()], int(g[1]), int(g[2])
                else:
                    d, mo, y = int(g[0]), _MONTHS[g[1][:3].lower()], int(g[2])
                date: _dt.date | None = _dt.date(y, mo, d)
            except ValueError:
                date = None
            starts.insert(i, m.start())
            ends.insert(i, m.end())
            found.append(DateToken(date, m.group(0), m.start()))
    return tuple(sorted(found, key=lambda d: d.start))


def sentences(text: str) -> list[str]:
    """Lines and sentences of ``text`` (split at line ends and at '. ' before a capital or digit)."""
    out = []
    for line in text.splitlines():
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9$(*-])", line) if s.strip()]
    return out


__all__ = [
    "DEFAULT_RATING",
    "DEFAULT_RATING_REASON",
    "MAX_REPORT_CHARS",
    "REPORT_TEMPLATE",
    "SECTIONS",
    "DateToken",
    "NumberToken",
    "ParsedReport",
    "RatingDeclaration",
    "dates_in",
    "decode_report",
    "numbers_in",
    "parse_report",
    "sentences",
]
