"""Deterministic report-quality score of FinReport-v0 (0-10), checked against the data in code.

The score is the mean of four dimensions, each 10 x the pass ratio of its
atomic checks. Every check is recorded with its result and a reason, so a user
sees exactly why a report lost points. No LLM is needed; an optional ``judge``
adds one more Reasoning check (see :func:`score_report`).

Structure (12 checks)
    Each of the eight sections present and non-empty (8); the sections in the
    schema's order (1); exactly eight sections, none repeated (1); one valid
    rating (1); the rating declared in section 2 and again in section 8, the
    same (1).

Content accuracy (4 + one per labelled figure + 1)
    The ticker is named; the report date is written; the week's close is
    stated and matches; the weekly return is stated and matches; the report
    states at least :data:`MIN_METRICS_STATED` of the 16 weekly metrics. And
    every labelled figure is checked against the value its label means as of
    the report close, to the precision written (half a unit of the last digit,
    or 0.5% of the value, whichever is larger) — not merely found among visible
    values:

    - each of the 16 metrics it states by name ("RSI", "60-day beta", ...), and
      the level a metric's statement gives besides it ("52-week high: -3.2%
      (high 450.12)" states the max close of the last 252 rows; "50-day SMA
      gap ... (SMA 430.00)" the 50-day SMA);
    - price levels (:data:`LEVEL_ALIASES`): the week's high, low and open, the
      previous week's close, the MACD line and signal, the Bollinger (20, 2)
      bands, ATR(14); moving averages named with their window ("20-day SMA",
      "EMA(12)", windows :data:`SMA_WINDOWS` and :data:`EMA_WINDOWS`), computed
      as ``get_indicators`` computes them;
    - a peer's figures: a percent after a peer's ticker is one of its returns
      (the horizon named, e.g. "MSFT's 4-week return", or else any of 1 day,
      1, 4 and 12 weeks); a price after it is its close;
    - scenario moves: "Bull case: 460.00 (+4.3%)" must move the close by the
      percent it states.

    A label's figure is the first number after it on its line, before the
    next label; a label with no number followed closely by another
    (:data:`QUALIFIER_GAP`) owns that one's number ("peer basket weekly return").
    A statement whose line writes another date than the report date is a
    figure of another day and is not checked here. The same figure restated is
    one check.

Evidence fidelity (one per number, date and filing claim)
    Every number in the report traces to a value visible at the report date —
    the symbol's and its peers' bars of the last year, daily returns of the last
    60 days, the 16 metrics and the levels behind them, the latest published
    rates, and numbers printed in news and filings public by the report close —
    to its written precision. Not claimed as evidence: headings, the scenario
    lines of section 8 (forecasts), period lengths (52-week, 14-day), years,
    and unit-less integers 0..10 (counts). Every date written must be on or
    before the report date. A sentence naming a 10-K/10-Q (or an annual or
    quarterly report) must match a filing public by the report close: one of
    that form exists, and a filing date written in the sentence is one of its
    filing dates. A report with nothing to check fails one check ("no
    verifiable evidence").

Reasoning (6 checks, +1 with a judge; 0 when the rating contradicts the thesis)
    The thesis (section 2) states at least one directional signal; the rating's
    direction agrees with the thesis's net signal; a risk in section 7 comes
    with a number; section 8 has at least two bull/base/bear scenarios with
    numeric targets; the targets are ordered bull >= base >= bear; the base case
    agrees with the rating (above the close for a buy, below for a sell, within
    5% for HOLD). Signals are the signed metrics the thesis states (returns,
    excess return, relative strength, MACD histogram, SMA gap: their sign; RSI
    above 70 bearish, below 30 bullish) and direction words (bullish, bearish,
    uptrend, downtrend, outperform, underperform, upside, downside, ...; a
    preceding "not"/"no" flips one). A rating whose direction is opposite to
    the thesis's net signal (a buy on a net bearish thesis, a sell on a net
    bullish one) contradicts the report's own argument: the check "rating
    contradicts the thesis" records it and the reasoning dimension scores 0,
    so the flip costs 2.5 of 10 (it cost 0.83 as one failed check).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import functools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.tasks.report.core import METRIC_NAMES, PERCENT_METRICS
from finenvs.tasks.report.protocol import (
    RISKS,
    SCENARIOS,
    SECTIONS,
    THESIS,
    NumberToken,
    ParsedReport,
    dates_in,
    numbers_in,
    parse_report,
    sentences,
)

DIMENSIONS = ("structure", "content", "evidence", "reasoning")
MIN_METRICS_STATED = 8
#: Unit-less integers up to this are counts, not claims.
MAX_COUNT = 10
#: HOLD's base case must lie within this fraction of the close.
HOLD_BAND = 0.05
#: Characters after a metric's name in which its value is looked for (same line).
VALUE_WINDOW = 80

#: Names a report uses for each metric (lower case; the longest match wins).
METRIC_ALIASES: dict[str, tuple[str, ...]] = {
    "weekly_return": ("weekly return", "week's return", "1-week return", "one-week return", "return for the week",
                      "return this week", "weekly change", "weekly performance", "week-over-week"),
    "volatility_20d": ("20-day volatility", "20-day realized volatility", "20-day realised volatility",
                       "realized volatility", "realised volatility", "volatility"),
    "max_daily_move": ("largest daily move", "max daily move", "maximum daily move", "biggest daily move",
                       "largest one-day move", "largest single-day move"),
    "volume_change": ("volume change", "change in volume", "volume vs", "volume versus"),
    "dist_52w_high": ("52-week high", "52w high", "52 week high", "one-year high"),
    "dist_52w_low": ("52-week low", "52w low", "52 week low", "one-year low"),
    "return_4w": ("4-week return", "four-week return", "1-month return", "one-month return", "20-day return"),
    "return_12w": ("12-week return", "twelve-week return", "3-month return", "three-month return", "60-day return"),
    "rsi_14": ("relative strength index", "rsi"),
    "macd_histogram": ("macd histogram", "macd"),
    "sma50_gap": ("50-day sma", "50-day moving average", "50-day simple moving average", "sma50", "sma(50)",
                  "50-dma"),
    "peer_weekly_return": ("peer basket return", "peer basket", "basket return", "peer return", "peers returned"),
    "excess_weekly_return": ("excess weekly return", "excess return", "relative return"),
    "beta_60d": ("60-day beta", "beta"),
    "correlation_60d": ("60-day correlation", "correlation"),
    "relative_strength_12w": ("12-week relative strength", "relative strength"),
}
CLOSE_ALIASES = ("closing price", "closed at", "weekly close", "week's close", "last close", "close")
#: Names a report uses for the price levels it may label (lower case; checked against ``ReportFacts.levels``).
LEVEL_ALIASES: dict[str, tuple[str, ...]] = {
    "week_high": ("week high", "week's high", "weekly high", "high of the week", "intraweek high",
                  "intra-week high"),
    "week_low": ("week low", "week's low", "weekly low", "low of the week", "intraweek low", "intra-week low"),
    "week_open": ("week open", "week's open", "weekly open", "opened the week at"),
    "prev_week_close": ("previous close", "prior close", "previous week's close", "prior week's close",
                        "last week's close", "previous weekly close"),
    "macd_line": ("macd line",),
    "macd_signal": ("macd signal", "signal line"),
    "boll_upper": ("upper bollinger band", "upper band"),
    "boll_lower": ("lower bollinger band", "lower band"),
    "atr_14": ("average true range", "atr"),
}
#: The price level a metric's label may also state (a price after "52-week high" is the 52-week high).
METRIC_LEVELS = {"dist_52w_high": "high_52w", "dist_52w_low": "low_52w", "sma50_gap": "sma50"}
#: Levels a bare metric label may mean besides the metric ("MACD 2.31" may be the MACD line).
AMBIGUOUS_LEVELS = {"macd_histogram": "macd_line"}
#: Levels that are not prices (any size, either sign): every number after their label claims them.
UNBOUNDED_LEVELS = frozenset({"macd_line", "macd_signal", "atr_14"})
#: Moving-average windows whose levels are checked ("20-day SMA 431.20", "EMA(12) 430.80").
SMA_WINDOWS = (5, 10, 20, 50, 100, 150, 200)
EMA_WINDOWS = (9, 10, 12, 20, 26, 50, 100, 200)
#: Horizon labels that qualify a peer's return ("MSFT's 4-week return").
PEER_HORIZONS = {"weekly_return": "1w", "return_4w": "4w", "return_12w": "12w"}
#: A label followed within this many characters by another label, before any number, owns that one's number
#: ("peer basket weekly return 1.2%" is the basket's; "MSFT's 4-week return" is MSFT's).
QUALIFIER_GAP = 24
_MA_LABEL = re.compile(
    r"(?<![a-z0-9])(?:(?P<n1>\d{1,3})[- ]day (?P<kind1>simple |exponential )?(?P<suffix>moving average|sma|ema|ma)"
    r"|(?P<kind2>sma|ema)(?:\s*\(\s*(?P<n2>\d{1,3})\s*\)|-?(?P<n3>\d{1,3})(?![0-9.])))(?![a-z0-9])")
#: Metrics whose sign is a direction signal when a thesis states them.
SIGNED_SIGNALS = ("weekly_return", "return_4w", "return_12w", "macd_histogram", "sma50_gap", "excess_weekly_return",
                  "relative_strength_12w")
BULL_WORDS = ("bullish", "uptrend", "upside", "outperform", "outperformed", "outperforming", "outperformance",
              "positive momentum", "accelerating", "upgrade", "rebound", "recovery", "oversold", "breakout",
              "tailwind", "tailwinds")
BEAR_WORDS = ("bearish", "downtrend", "downside", "underperform", "underperformed", "underperforming",
              "underperformance", "negative momentum", "decelerating", "downgrade", "overbought", "sell-off",
              "selloff", "breakdown", "headwind", "headwinds")
_NEGATION = re.compile(r"\b(?:not|no|without|lack of|lacks|absent)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)
_SCENARIO_LINE = re.compile(r"\b(bull|base|bear)(?:ish)?(?:[\s-]+case)?\b", re.IGNORECASE)
_FORM_MENTION = re.compile(r"\b(10-K|10-Q|annual report|quarterly report)\b", re.IGNORECASE)
_PERIOD_WORDS = re.compile(r"\b(?:ended|ending|period|quarter|fiscal)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Check:
    """One atomic check: its dimension, name, result (1 pass, 0 fail; a judge may give a fraction) and why."""

    dimension: str
    name: str
    value: float
    reason: str

    @property
    def passed(self) -> bool:
        return self.value >= 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "check": self.name, "passed": self.passed, "value": self.value,
                "reason": self.reason}


@dataclass(frozen=True)
class ReportFacts:
    """What was visible at the report close, against which a report is checked (built by the env).

    Attributes:
        symbol: Ticker of the report.
        report_date: The report day.
        close: Its close.
        metrics: The 16 weekly metrics (fractions for percent metrics).
        levels: Price levels behind the metrics (``high_52w``, ``low_52w``, ``sma50``, ``prev_week_close``, ...).
        peers: The peer basket's symbols.
        plain_values: Sorted visible values written without a percent sign (prices, volumes, metrics, ...).
        percent_values: Sorted visible values written in percent (returns x 100, rates, ...).
        filings: Visible filings of the symbol: ``{"form", "filed"}`` (ISO date), newest first.
        peer_returns: Each peer's returns at the close (fractions): ``{"1d", "1w", "4w", "12w"}``, and ``close``.
        week_closes: The symbol's daily closes of the report week (a close a report states is one of them).
    """

    symbol: str
    report_date: _dt.date
    close: float
    metrics: dict[str, float]
    levels: dict[str, float]
    peers: tuple[str, ...]
    plain_values: np.ndarray = field(repr=False)
    percent_values: np.ndarray = field(repr=False)
    filings: tuple[dict[str, str], ...] = ()
    peer_returns: dict[str, dict[str, float]] = field(default_factory=dict)
    week_closes: tuple[float, ...] = ()

    def traces(self, token: NumberToken) -> bool:
        """The number matches a visible value to its written precision (see module doc)."""
        pool = self.percent_values if token.unit in ("%", "bp") else self.plain_values
        value = token.value / 100.0 if token.unit == "bp" else token.value
        tol = max(token.tolerance(), 0.005 * abs(value)) + 1e-12
        lo = int(np.searchsorted(pool, value - tol, side="left"))
        return lo < pool.size and pool[lo] <= value + tol


def value_pool(values: Iterable[float]) -> np.ndarray:
    """A sorted, de-duplicated, read-only array of the finite values (both signs kept as given)."""
    arr = np.fromiter((float(v) for v in values if v is not None and math.isfinite(float(v))), dtype=np.float64)
    arr = np.unique(np.round(arr, 10))
    arr.setflags(write=False)
    return arr


@dataclass
class QualityCard:
    """The quality score of one report.

    Attributes:
        score: 0..10, the mean of the four dimensions.
        dimensions: ``{structure, content, evidence, reasoning}`` each 0..10.
        checks: Every check, in order.
        rating: The rating traded; ``rating_problem`` why it is the default (None if declared clearly).
        stated: The metric values the report states (first statement of each).
        judge: What the optional judge returned (None without one).
        text: The report as read (empty when it could not be read).
    """

    score: float
    dimensions: dict[str, float]
    checks: list[Check]
    rating: str
    rating_problem: str | None
    stated: dict[str, float]
    judge: dict[str, Any] | None = None
    text: str = field(default="", repr=False)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "dimensions": dict(self.dimensions), "rating": self.rating,
                "rating_problem": self.rating_problem, "stated": dict(self.stated),
                "checks": [c.to_dict() for c in self.checks], "judge": self.judge}


# ------------------------------------------------------------------------------ statements
@functools.lru_cache(maxsize=16)
def _alias_pattern(table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One alternation of every alias, longest first (one left-to-right scan finds non-overlapping labels,
    the longest at each position), and alias -> key."""
    owner = {alias: key for key, names in table for alias in names}
    alternation = "|".join(re.escape(a) for a in sorted(owner, key=lambda a: (-len(a), a)))
    return re.compile(r"(?<![a-z0-9])(?:" + alternation + r")(?![a-z0-9])"), owner


def _alias_spans(lower: str, aliases: dict[str, tuple[str, ...]]) -> list[tuple[int, int, str]]:
    """``(start, end, key)`` of every alias in ``lower``, without overlaps (linear in the text)."""
    pattern, owner = _alias_pattern(tuple((k, tuple(v)) for k, v in aliases.items()))
    return [(m.start(), m.end(), owner[m.group(0)]) for m in pattern.finditer(lower)]


def _tokens_from(tokens: list[NumberToken], starts: list[int], begin: int, stop: int) -> list[NumberToken]:
    """The tokens starting in ``[begin, stop)`` (``starts`` sorted: a binary search, not a scan)."""
    return tokens[bisect.bisect_left(starts, begin) : bisect.bisect_left(starts, stop)]


def stated_values(text: str, aliases: dict[str, tuple[str, ...]]) -> list[tuple[str, NumberToken, int]]:
    """``(key, number, offset)`` for each alias followed on its line by a number (the first one after it)."""
    lower = text.lower()
    spans = _alias_spans(lower, aliases)
    tokens = [t for t in numbers_in(text) if t.kind == "value"]
    starts = [t.start for t in tokens]
    out = []
    for k, (start, end, key) in enumerate(spans):
        stop = min(len(text), end + VALUE_WINDOW)
        newline = text.find("\n", end, stop)
        if newline != -1:
            stop = newline
        if k + 1 < len(spans):
            stop = min(stop, spans[k + 1][0])  # the next metric's name starts its own statement
        first = _tokens_from(tokens, starts, end, stop)[:1]
        if first:
            out.append((key, first[0], start))
    return out


def _metric_matches(name: str, token: NumberToken, facts: ReportFacts) -> bool:
    truth = facts.metrics.get(name, math.nan)
    if not math.isfinite(truth):
        return False
    if name in PERCENT_METRICS:
        ok = token.matches(100.0 * truth) if token.unit == "%" else token.matches(truth)
        level = METRIC_LEVELS.get(name)
        if not ok and level and token.unit in ("$", "") and abs(token.value) > 1.0:
            ok = token.matches(facts.levels.get(level, math.nan))
        return ok
    if token.unit == "%":
        return False
    other = AMBIGUOUS_LEVELS.get(name)
    return token.matches(truth) or (other is not None and token.matches(facts.levels.get(other, math.nan)))


@dataclass(frozen=True)
class Statement:
    """A labelled figure: the label's key, its kind (``metric``, ``level``, ``peer``), the numbers it states,
    where the label starts, and the qualifier label it owns (a peer's horizon)."""

    key: str
    kind: str
    tokens: tuple[NumberToken, ...]
    start: int
    qualifier: str | None = None


@functools.lru_cache(maxsize=1)
def _label_pattern() -> tuple[re.Pattern[str], dict[str, tuple[str, str]]]:
    """Moving averages, then metric and level names longest first, in one alternation; alias -> (key, kind)."""
    owner = {a: (k, "metric") for k, names in METRIC_ALIASES.items() for a in names}
    owner.update({a: (k, "level") for k, names in LEVEL_ALIASES.items() for a in names})
    alternation = "|".join(re.escape(a) for a in sorted(owner, key=lambda a: (-len(a), a)))
    pattern = re.compile(r"(?P<ma>" + _MA_LABEL.pattern + r")|(?<![a-z0-9])(?P<alias>" + alternation
                         + r")(?![a-z0-9])")
    return pattern, owner


def _label_spans(text: str, peers: Iterable[str]) -> list[tuple[int, int, str, str]]:
    """``(start, end, key, kind)`` of every label in ``text``: moving averages, metric and level names
    (case-insensitive, the longest at each position) and peer tickers (case-sensitive), without overlaps.
    Two scans and a merge: linear in the text."""
    pattern, owner = _label_pattern()
    found: list[tuple[int, int, str, str]] = []
    for m in pattern.finditer(text.lower()):
        if m.group("ma") is not None:
            n = int(m.group("n1") or m.group("n2") or m.group("n3"))
            kind = (m.group("kind1") or m.group("suffix") or m.group("kind2") or "").strip()
            ema = kind in ("exponential", "ema")
            key = "sma50_gap" if n == 50 and not ema else f"{'ema' if ema else 'sma'}_{n}"
            found.append((m.start(), m.end(), key, "metric" if key == "sma50_gap" else "level"))
        else:
            key, kind = owner[m.group("alias")]
            found.append((m.start(), m.end(), key, kind))
    names = sorted({p for p in peers if p}, key=lambda p: (-len(p), p))
    if not names:
        return found
    peer_re = re.compile(r"(?<![A-Za-z0-9.])(?:" + "|".join(re.escape(p) for p in names) + r")(?![A-Za-z0-9])")
    merged: list[tuple[int, int, str, str]] = []
    k = 0
    for m in peer_re.finditer(text):
        while k < len(found) and found[k][1] <= m.start():
            merged.append(found[k])
            k += 1
        if k < len(found) and found[k][0] < m.end():
            continue  # inside a metric or level name
        merged.append((m.start(), m.end(), m.group(0), "peer"))
    return merged + found[k:]


def labelled_statements(text: str, peers: Iterable[str] = ()) -> list[Statement]:
    """Every labelled figure of ``text``: each label with the value numbers after it on its line, up to the
    next label (or :data:`VALUE_WINDOW` characters). A label with no number of its own that is followed within
    :data:`QUALIFIER_GAP` characters by another label owns that label's numbers (the second is its qualifier)."""
    spans = _label_spans(text, peers)
    tokens = [t for t in numbers_in(text) if t.kind == "value"]
    starts = [t.start for t in tokens]
    out: list[Statement] = []
    k = 0
    while k < len(spans):
        start, _, key, kind = spans[k]
        qualifier = None
        j = k
        while True:
            nxt = spans[j + 1][0] if j + 1 < len(spans) else len(text)
            has_number = bisect.bisect_left(starts, spans[j][1]) < bisect.bisect_left(starts, nxt)
            if (has_number or j + 1 >= len(spans) or nxt - spans[j][1] > QUALIFIER_GAP
                    or "\n" in text[spans[j][1]:nxt]):
                break
            j += 1
            qualifier = qualifier or spans[j][2]
        stop = min(len(text), spans[j][1] + VALUE_WINDOW)
        newline = text.find("\n", spans[j][1], stop)
        if newline != -1:
            stop = newline
        if j + 1 < len(spans):
            stop = min(stop, spans[j + 1][0])
        found = tuple(_tokens_from(tokens, starts, spans[j][1], stop))
        if found:
            out.append(Statement(key, kind, found, start, qualifier))
        k = j + 1
    return out


def _price_like(token: NumberToken) -> bool:
    return token.unit in ("$", "") and abs(token.value) > 1.0


def _figure_check(st: Statement, facts: ReportFacts) -> tuple[str, bool, str] | None:
    """``(check name, passed, reason)`` of one labelled figure, or None when the label claims nothing checkable
    (a level the facts do not hold, a peer qualified by something other than a return)."""
    first = st.tokens[0]
    if st.kind == "peer":
        rets = facts.peer_returns.get(st.key)
        if rets is None:
            return None
        if st.qualifier is not None and st.qualifier not in PEER_HORIZONS:
            return None
        pct = next((t for t in st.tokens if t.unit == "%"), None)
        if pct is not None:
            horizons = [PEER_HORIZONS[st.qualifier]] if st.qualifier else ["1d", "1w", "4w", "12w"]
            truths = [100.0 * rets[h] for h in horizons if math.isfinite(rets.get(h, math.nan))]
            ok = any(pct.matches(v) for v in truths)
            shown = ", ".join(f"{h} {100 * rets[h]:+.2f}%" for h in horizons if math.isfinite(rets.get(h, math.nan)))
            return f"stated {st.key} return", ok, f"{pct.text} vs {st.key} {shown or 'n/a'}"
        if st.qualifier is None and _price_like(first):
            ok = first.matches(rets.get("close", math.nan))
            return f"stated {st.key} close", ok, f"{first.text} vs {st.key} close {rets.get('close', math.nan):.2f}"
        return None
    if st.kind == "metric":
        return None  # metrics are checked by content_checks (first number); their levels below
    truth = facts.levels.get(st.key, math.nan)
    small = st.key in UNBOUNDED_LEVELS
    price = next((t for t in st.tokens if (t.unit in ("$", "") and small) or _price_like(t)), None)
    if price is None or not math.isfinite(truth):
        return None
    ok = price.matches(truth)
    return f"stated {st.key}", ok, f"{price.text} vs {truth:.2f} as of {facts.report_date}"


def _metric_level_check(st: Statement, facts: ReportFacts) -> tuple[str, bool, str] | None:
    """The price level a metric's statement states besides its first number ("52-week high -3.2% (high 450.12)")."""
    level = METRIC_LEVELS.get(st.key)
    if level is None or len(st.tokens) < 2:
        return None
    price = next((t for t in st.tokens[1:] if _price_like(t)), None)
    truth = facts.levels.get(level, math.nan)
    if price is None or not math.isfinite(truth):
        return None
    return f"stated {level}", price.matches(truth), f"{price.text} vs {truth:.2f} as of {facts.report_date}"


def _other_dates(text: str, facts: ReportFacts) -> list[int]:
    """Offsets of the dates written in ``text`` other than the report date, sorted."""
    return [d.start for d in dates_in(text) if d.date is not None and d.date != facts.report_date]


def _dated_elsewhere(text: str, st: Statement, other_dates: list[int]) -> bool:
    """The statement's line, from at most :data:`VALUE_WINDOW` characters before its label to its last number,
    writes a date other than the report date (a figure of another day: not checked against the report close)."""
    begin = max(text.rfind("\n", max(0, st.start - VALUE_WINDOW), st.start) + 1, st.start - VALUE_WINDOW, 0)
    end = st.tokens[-1].start + len(st.tokens[-1].text)
    return bisect.bisect_left(other_dates, begin) < bisect.bisect_left(other_dates, end)


def figure_checks(text: str, facts: ReportFacts) -> list[Check]:
    """Content checks of the labelled price levels, moving averages, indicator lines and peers' figures a report
    states (each distinct statement once), against the value each label means as of the report close."""
    checks: list[Check] = []
    seen: set[tuple[str, str]] = set()
    other_dates = _other_dates(text, facts)
    for st in labelled_statements(text, facts.peers):
        if _dated_elsewhere(text, st, other_dates):
            continue
        result = _metric_level_check(st, facts) if st.kind == "metric" else _figure_check(st, facts)
        if result is None:
            continue
        name, ok, reason = result
        if (name, reason) in seen:
            continue
        seen.add((name, reason))
        checks.append(Check("content", name, float(ok), reason + ("" if ok else " (outside tolerance)")))
    return checks


def scenario_move_checks(parsed: ParsedReport, facts: ReportFacts) -> list[Check]:
    """A scenario line that states its move in percent ("Bull case: 460.00 (+4.3%)") must move the close by it."""
    checks = []
    seen: set[str] = set()
    for line in parsed.section(SCENARIOS).splitlines():
        m = _SCENARIO_LINE.search(line)
        if not m or m.group(1).lower() in seen:
            continue
        nums = [t for t in numbers_in(line[m.end():]) if t.kind == "value"]
        target = next((t for t in nums if t.unit in ("$", "") and t.value > 0), None)
        move = next((t for t in nums if t.unit == "%"), None)
        if target is None or move is None or facts.close <= 0:
            continue
        seen.add(m.group(1).lower())  # the first line of each scenario, as its target is read
        truth = 100.0 * (target.value / facts.close - 1.0)
        ok = move.matches(truth, rel=0.0) or abs(move.value - truth) <= 0.05 + move.tolerance()
        checks.append(Check("content", f"scenario {m.group(1).lower()} move", float(ok),
                            f"{move.text} stated; {target.text} is {truth:+.2f}% from the close {facts.close:.2f}"))
    return checks


# ------------------------------------------------------------------------------ dimensions
def structure_checks(parsed: ParsedReport) -> list[Check]:
    checks = []
    for i, title in enumerate(SECTIONS):
        body = parsed.sections.get(i)
        if parsed.error:
            ok, why = False, parsed.error
        elif body is None:
            ok, why = False, "missing"
        elif not re.sub(r"[#*_`\s-]+", "", body):
            ok, why = False, "present but empty"
        else:
            ok, why = True, f"{len(body)} characters"
        checks.append(Check("structure", f"section {i + 1} '{title}'", float(ok), why))
    first = list(dict.fromkeys(parsed.order))
    ordered = first == sorted(first) and bool(first)
    checks.append(Check("structure", "sections in order", float(ordered),
                        "in schema order" if ordered else f"order found: {[i + 1 for i in first] or 'none'}"))
    exact = len(parsed.order) == len(SECTIONS) and not parsed.duplicates
    why = ("eight sections, none repeated" if exact else
           f"repeated: {[i + 1 for i in parsed.duplicates]}" if parsed.duplicates else
           f"{len(set(parsed.order))} of {len(SECTIONS)} sections found")
    checks.append(Check("structure", "exactly eight sections", float(exact), why))
    ok = parsed.rating_problem is None
    checks.append(Check("structure", "one valid rating", float(ok),
                        f"Rating: {parsed.rating}" if ok else parsed.rating_problem or ""))
    in2 = [d.rating for d in parsed.declarations if d.section == THESIS]
    in8 = [d.rating for d in parsed.declarations if d.section == SCENARIOS]
    agree = bool(in2) and bool(in8) and len(set(in2 + in8)) == 1 and None not in in2 + in8
    why = (f"{in2[0]} in both" if agree else "no rating in section 2" if not in2 else
           "no rating in section 8" if not in8 else f"section 2 says {in2[:5]}, section 8 says {in8[:5]}")
    checks.append(Check("structure", "rating in sections 2 and 8 agrees", float(agree), why))
    return checks


def content_checks(parsed: ParsedReport, facts: ReportFacts) -> tuple[list[Check], dict[str, float]]:
    text = parsed.text
    checks = []
    named = bool(text) and re.search(r"(?<![A-Za-z0-9])" + re.escape(facts.symbol) + r"(?![A-Za-z0-9])", text)
    checks.append(Check("content", "ticker named", float(bool(named)),
                        f"{facts.symbol} named" if named else f"{facts.symbol} never named"))
    written = [d.date for d in dates_in(text)]
    ok = facts.report_date in written
    checks.append(Check("content", "report date written", float(ok),
                        f"{facts.report_date} written" if ok else f"{facts.report_date} not written"))
    closes = [tok for _, tok, _ in stated_values(text, {"close": CLOSE_ALIASES})]
    ok = any(t.unit != "%" and t.matches(facts.close) for t in closes)
    checks.append(Check("content", "week's close", float(ok),
                        f"close {facts.close:.2f} stated" if ok else
                        f"close {facts.close:.2f} not stated (found {[t.text for t in closes][:4]})"))
    stated: dict[str, float] = {}
    seen: set[str] = set()
    checked: set[tuple[str, str]] = set()
    other_dates = _other_dates(text, facts)
    for st in labelled_statements(text, facts.peers):
        if st.kind != "metric" or _dated_elsewhere(text, st, other_dates):
            continue
        name, tok = st.key, st.tokens[0]
        if name not in seen:
            seen.add(name)
            stated[name] = tok.value
        if (name, tok.text) in checked:  # the same figure restated is one claim
            continue
        checked.add((name, tok.text))
        truth = facts.metrics.get(name, math.nan)
        ok = _metric_matches(name, tok, facts)
        shown = (f"{100 * truth:.2f}%" if name in PERCENT_METRICS else f"{truth:.4g}") if math.isfinite(truth) else "n/a"
        label = "weekly return" if name == "weekly_return" else f"stated {name}"
        checks.append(Check("content", label, float(ok),
                            f"{tok.text} vs tool {shown}" + ("" if ok else " (outside tolerance)")))
    checks += figure_checks(text, facts)
    checks += scenario_move_checks(parsed, facts)
    if "weekly_return" not in seen:
        checks.append(Check("content", "weekly return", 0.0, "the weekly return is not stated"))
    ok = len(seen) >= MIN_METRICS_STATED
    missing = [m for m in METRIC_NAMES if m not in seen]
    checks.append(Check("content", f"states >= {MIN_METRICS_STATED} of the 16 weekly metrics", float(ok),
                        f"{len(seen)} stated" + ("" if ok else f"; not stated: {missing}")))
    return checks, stated


def _exempt_lines(parsed: ParsedReport) -> set[str]:
    lines = {ln.strip() for ln in parsed.section(SCENARIOS).splitlines() if _SCENARIO_LINE.search(ln)}
    return {ln for ln in lines if ln}


def evidence_checks(parsed: ParsedReport, facts: ReportFacts) -> list[Check]:
    checks: list[Check] = []
    exempt = _exempt_lines(parsed)
    for line in parsed.text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped in exempt:
            continue
        for tok in numbers_in(line):
            if tok.kind != "value" or (not tok.unit and tok.decimals == 0 and abs(tok.value) <= MAX_COUNT):
                continue
            ok = facts.traces(tok)
            checks.append(Check("evidence", f"number {tok.text}", float(ok),
                                "matches a visible value" if ok else
                                f"no value visible at {facts.report_date} matches {tok.text}"))
        for d in dates_in(line):
            if d.date is None:
                checks.append(Check("evidence", f"date {d.text}", 0.0, "not a valid date"))
            else:
                ok = d.date <= facts.report_date
                checks.append(Check("evidence", f"date {d.text}", float(ok),
                                    "on or before the report date" if ok else
                                    f"after the report date {facts.report_date}: not visible yet"))
    for sentence in sentences(parsed.text):
        for m in _FORM_MENTION.finditer(sentence):
            form = {"annual report": "10-K", "quarterly report": "10-Q"}.get(m.group(1).lower(), m.group(1).upper())
            checks.append(_filing_claim(sentence, form, facts))
    if not checks:
        checks.append(Check("evidence", "no verifiable evidence", 0.0, "the report cites no number, date or filing"))
    return checks


def _filing_claim(sentence: str, form: str, facts: ReportFacts) -> Check:
    filed = [f["filed"] for f in facts.filings if f["form"].upper() == form]
    name = f"filing claim {form}"
    if not filed:
        return Check("evidence", name, 0.0, f"no {form} of {facts.symbol} is filed by {facts.report_date}")
    dates = [str(d.date) for d in dates_in(sentence) if d.date is not None]
    if not dates or any(d in filed for d in dates):
        return Check("evidence", name, 1.0, f"a {form} filed {filed[0]} is public by the report date")
    if _PERIOD_WORDS.search(sentence) and all(d <= str(facts.report_date) for d in dates):
        return Check("evidence", name, 1.0, f"period dates; a {form} filed {filed[0]} is public")
    return Check("evidence", name, 0.0, f"no {form} filed on {', '.join(dates)} is public by {facts.report_date} "
                 f"(filed: {', '.join(filed[:3])})")


def thesis_signals(text: str) -> list[tuple[str, int]]:
    """Directional signals of a thesis: ``(what, +1 bullish / -1 bearish)`` (see module doc)."""
    out: list[tuple[str, int]] = []
    for name, tok, _ in stated_values(text, METRIC_ALIASES):
        if name in SIGNED_SIGNALS and tok.value != 0:
            out.append((f"{name} {tok.text}", 1 if tok.value > 0 else -1))
        elif name == "rsi_14" and tok.unit != "%" and (tok.value > 70 or tok.value < 30):
            out.append((f"RSI {tok.text}", -1 if tok.value > 70 else 1))
    lower = text.lower()
    for words, sign in ((BULL_WORDS, 1), (BEAR_WORDS, -1)):
        for word in words:
            for m in re.finditer(r"(?<![a-z-])" + re.escape(word) + r"(?![a-z])", lower):
                flipped = bool(_NEGATION.search(lower[max(0, m.start() - 40) : m.start()]))
                out.append((("not " if flipped else "") + word, -sign if flipped else sign))
    return out


def _scenario_targets(parsed: ParsedReport) -> dict[str, float]:
    targets: dict[str, float] = {}
    for line in parsed.section(SCENARIOS).splitlines():
        m = _SCENARIO_LINE.search(line)
        if not m:
            continue
        name = m.group(1).lower()
        after = line[m.end():]
        nums = [t for t in numbers_in(after) if t.kind == "value" and t.unit in ("$", "") and t.value > 0]
        if nums and name not in targets:
            targets[name] = nums[0].value
    return targets


def reasoning_checks(parsed: ParsedReport, facts: ReportFacts, direction: int) -> list[Check]:
    checks = []
    signals = thesis_signals(parsed.section(THESIS))
    net = sum(s for _, s in signals)
    checks.append(Check("reasoning", "thesis states signals", float(bool(signals)),
                        f"{len(signals)} signal(s): {[w for w, _ in signals][:6]}" if signals else
                        "section 2 states no directional signal"))
    both = any(s > 0 for _, s in signals) and any(s < 0 for _, s in signals)
    if direction > 0:
        ok, want = net > 0, "a net bullish thesis"
    elif direction < 0:
        ok, want = net < 0, "a net bearish thesis"
    else:
        ok, want = net == 0 or both, "a mixed or neutral thesis"
    checks.append(Check("reasoning", "rating agrees with thesis", float(ok and bool(signals)),
                        f"{parsed.rating} needs {want}; net signal {net:+d}"))
    risks = [s for s in sentences(parsed.section(RISKS))
             if any(t.kind == "value" and (t.unit or t.decimals or t.value > MAX_COUNT) for t in numbers_in(s))]
    checks.append(Check("reasoning", "a risk with a metric", float(bool(risks)),
                        f"{risks[0][:80]!r}" if risks else "section 7 quantifies no risk"))
    targets = _scenario_targets(parsed)
    ok = len(targets) >= 2
    checks.append(Check("reasoning", "scenarios with numeric targets", float(ok),
                        f"targets {targets}" if targets else "no bull/base/bear line with a target in section 8"))
    order = [targets[k] for k in ("bull", "base", "bear") if k in targets]
    ordered = len(order) >= 2 and all(a >= b for a, b in zip(order, order[1:], strict=False))
    checks.append(Check("reasoning", "targets ordered bull >= base >= bear", float(ordered),
                        f"{order}" if order else "no targets"))
    base = targets.get("base", float(np.mean(list(targets.values()))) if targets else math.nan)
    if not math.isfinite(base):
        ok, why = False, "no target to compare with the close"
    else:
        change = base / facts.close - 1.0
        ok = change > 0 if direction > 0 else change < 0 if direction < 0 else abs(change) <= HOLD_BAND
        why = f"base {base:.2f} is {100 * change:+.1f}% from the close {facts.close:.2f} for {parsed.rating}"
    checks.append(Check("reasoning", "base case agrees with rating", float(ok), why))
    return checks


#: ``judge(report_text, context) -> score in [0, 1]`` or ``(score, reason)``.
Judge = Callable[[str, dict[str, Any]], Any]


def score_report(
    report: Any,
    facts: ReportFacts,
    *,
    direction_of: Callable[[str], float] | None = None,
    judge: Judge | None = None,
) -> QualityCard:
    """Parse and score one report (never raises for any report input).

    Args:
        report: The report (str; bytes are decoded as UTF-8).
        facts: What was visible at the report close.
        direction_of: Rating -> position, whose sign is the direction (default: HERCULEAN's position map).
        judge: Optional LLM judge of the reasoning: called with the report text and a
            context dict (symbol, date, rating, metrics); its score in [0, 1] is one more
            Reasoning check. A judge that raises or returns something else is recorded in
            ``card.judge["error"]`` and adds no check.
    """
    parsed = parse_report(report)
    rating = parsed.rating
    if direction_of is None:
        direction = 1 if rating in ("BUY", "STRONG_BUY") else -1 if rating in ("SELL", "STRONG_SELL") else 0
    else:
        direction = int(np.sign(direction_of(rating)))
    structure = structure_checks(parsed)
    content, stated = content_checks(parsed, facts)
    evidence = evidence_checks(parsed, facts)
    reasoning = reasoning_checks(parsed, facts, direction)
    net = sum(sign for _, sign in thesis_signals(parsed.section(THESIS)))
    contradicts = direction * net < 0
    if contradicts:
        reasoning.append(Check("reasoning", "rating contradicts the thesis", 0.0,
                               f"{rating} against a net thesis signal of {net:+d}: the reasoning dimension scores 0"))
    judged = None
    if judge is not None:
        judged = _run_judge(judge, parsed, facts)
        if "score" in judged:
            reasoning.append(Check("reasoning", "judge", judged["score"], judged.get("reason", "")))
    groups = {"structure": structure, "content": content, "evidence": evidence, "reasoning": reasoning}
    dims = {k: 10.0 * float(np.mean([c.value for c in v])) for k, v in groups.items()}
    if contradicts:
        dims["reasoning"] = 0.0
    return QualityCard(
        score=float(np.mean(list(dims.values()))),
        dimensions=dims,
        checks=[c for k in DIMENSIONS for c in groups[k]],
        rating=rating,
        rating_problem=parsed.rating_problem,
        stated=stated,
        judge=judged,
        text=parsed.text,
    )


def _run_judge(judge: Judge, parsed: ParsedReport, facts: ReportFacts) -> dict[str, Any]:
    context = {"symbol": facts.symbol, "date": str(facts.report_date), "rating": parsed.rating,
               "close": facts.close, "metrics": dict(facts.metrics)}
    try:
        out = judge(parsed.text, context)
        score, reason = (out if isinstance(out, tuple) else (out, ""))
        score = float(score)
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"judge score {score} is outside [0, 1]")
    except Exception as exc:  # a judge is optional: its failure never costs the report or crashes the run
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"score": score, "reason": str(reason)}


__all__ = [
    "BEAR_WORDS",
    "BULL_WORDS",
    "DIMENSIONS",
    "LEVEL_ALIASES",
    "METRIC_ALIASES",
    "MIN_METRICS_STATED",
    "Check",
    "Judge",
    "QualityCard",
    "ReportFacts",
    "content_checks",
    "evidence_checks",
    "figure_checks",
    "labelled_statements",
    "reasoning_checks",
    "score_report",
    "stated_values",
    "structure_checks",
    "thesis_signals",
    "value_pool",
]
