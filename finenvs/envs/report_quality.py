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

Content accuracy (4 + one per metric stated + 1)
    The ticker is named; the report date is written; the week's close is
    stated and matches; the weekly return is stated and matches; every one of
    the 16 weekly metrics the report states (by name, e.g. "RSI", "60-day beta")
    matches the tool's value to the precision written (half a unit of the last
    digit, or 0.5% of the value, whichever is larger); the report states at
    least :data:`MIN_METRICS_STATED` of the 16.

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

Reasoning (6 checks, +1 with a judge)
    The thesis (section 2) states at least one directional signal; the rating's
    direction agrees with the thesis's net signal; a risk in section 7 comes
    with a number; section 8 has at least two bull/base/bear scenarios with
    numeric targets; the targets are ordered bull >= base >= bear; the base case
    agrees with the rating (above the close for a buy, below for a sell, within
    5% for HOLD). Signals are the signed metrics the thesis states (returns,
    excess return, relative strength, MACD histogram, SMA gap: their sign; RSI
    above 70 bearish, below 30 bullish) and direction words (bullish, bearish,
    uptrend, downtrend, outperform, underperform, upside, downside, ...; a
    preceding "not"/"no" flips one).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.envs.report_core import METRIC_NAMES, PERCENT_METRICS
from finenvs.envs.report_text import (
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
def _alias_spans(lower: str, aliases: dict[str, tuple[str, ...]]) -> list[tuple[int, int, str]]:
    pairs = sorted(((a, k) for k, names in aliases.items() for a in names), key=lambda p: -len(p[0]))
    taken: list[tuple[int, int]] = []
    found = []
    for alias, key in pairs:
        for m in re.finditer(r"(?<![a-z0-9])" + re.escape(alias) + r"(?![a-z0-9])", lower):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), m.end(), key))
    return sorted(found)


def stated_values(text: str, aliases: dict[str, tuple[str, ...]]) -> list[tuple[str, NumberToken, int]]:
    """``(key, number, offset)`` for each alias followed on its line by a number (the first one after it)."""
    lower = text.lower()
    spans = _alias_spans(lower, aliases)
    tokens = [t for t in numbers_in(text) if t.kind == "value"]
    out = []
    for k, (start, end, key) in enumerate(spans):
        stop = min(len(text), end + VALUE_WINDOW)
        newline = text.find("\n", end)
        if newline != -1:
            stop = min(stop, newline)
        if k + 1 < len(spans):
            stop = min(stop, spans[k + 1][0])  # the next metric's name starts its own statement
        for tok in tokens:
            if end <= tok.start < stop:
                out.append((key, tok, start))
                break
    return out


def _metric_matches(name: str, token: NumberToken, facts: ReportFacts) -> bool:
    truth = facts.metrics.get(name, math.nan)
    if not math.isfinite(truth):
        return False
    if name in PERCENT_METRICS:
        ok = token.matches(100.0 * truth) if token.unit == "%" else token.matches(truth)
        level = {"dist_52w_high": "high_52w", "dist_52w_low": "low_52w", "sma50_gap": "sma50"}.get(name)
        if not ok and level and token.unit in ("$", "") and abs(token.value) > 1.0:
            ok = token.matches(facts.levels.get(level, math.nan))
        return ok
    return token.unit != "%" and token.matches(truth)


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
    statements = stated_values(text, METRIC_ALIASES)
    stated: dict[str, float] = {}
    seen: set[str] = set()
    for name, tok, _ in statements:
        if name in seen:
            continue
        seen.add(name)
        stated[name] = tok.value
        truth = facts.metrics.get(name, math.nan)
        ok = _metric_matches(name, tok, facts)
        shown = (f"{100 * truth:.2f}%" if name in PERCENT_METRICS else f"{truth:.4g}") if math.isfinite(truth) else "n/a"
        label = "weekly return" if name == "weekly_return" else f"stated {name}"
        checks.append(Check("content", label, float(ok),
                            f"{tok.text} vs tool {shown}" + ("" if ok else " (outside tolerance)")))
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
    direction_of: Callable[[str], int] | None = None,
    judge: Judge | None = None,
) -> QualityCard:
    """Parse and score one report (never raises for any report input).

    Args:
        report: The report (str; bytes are decoded as UTF-8).
        facts: What was visible at the report close.
        direction_of: Rating -> -1/0/+1 (default: the sign of HERCULEAN's position map).
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
    judged = None
    if judge is not None:
        judged = _run_judge(judge, parsed, facts)
        if "score" in judged:
            reasoning.append(Check("reasoning", "judge", judged["score"], judged.get("reason", "")))
    groups = {"structure": structure, "content": content, "evidence": evidence, "reasoning": reasoning}
    dims = {k: 10.0 * float(np.mean([c.value for c in v])) for k, v in groups.items()}
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
    "METRIC_ALIASES",
    "MIN_METRICS_STATED",
    "Check",
    "Judge",
    "QualityCard",
    "ReportFacts",
    "content_checks",
    "evidence_checks",
    "reasoning_checks",
    "score_report",
    "stated_values",
    "structure_checks",
    "thesis_signals",
    "value_pool",
]
