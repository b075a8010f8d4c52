"""FinReport-v0 report quality: the template writer's score, look-ahead and filing claims, rating/thesis
agreement, malformed reports, number and date parsing, and the optional judge."""

from __future__ import annotations

import datetime as dt
import json
import re
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import finenvs  # noqa: F401
from finenvs.data.catalog import default_catalog
from finenvs.tasks.report.baselines import TemplateReportWriter, llm_judge
from finenvs.tasks.report.core import RATINGS
from finenvs.tasks.report.protocol import MAX_REPORT_CHARS, SECTIONS, dates_in, numbers_in, parse_report
from finenvs.tasks.report.quality import DIMENSIONS, score_report
from finenvs.text.chat import json_quoted

OPPOSITE = {"BUY": "SELL", "SELL": "BUY", "STRONG_BUY": "STRONG_SELL", "STRONG_SELL": "STRONG_BUY"}
#: Every rating declaration the template writes: "Rating: X" (sections 2 and 8) and "the rating is X" (section 1).
_DECLARATION = re.compile(r"(?:(?<=Rating: )|(?<=rating is ))(STRONG_BUY|STRONG_SELL|BUY|SELL|HOLD)\b")


def _env(symbol: str = "AAPL", **kwargs):
    kwargs.setdefault("split", "eval")
    return gym.make("FinReport-v0", symbol=symbol, action_mode="report", **kwargs)


def _heading(n: int) -> str:
    return f"## {n}. {SECTIONS[n - 1]}"


def _inject(report: str, section: int, sentence: str) -> str:
    """The report with ``sentence`` as the first line of section ``section`` (1-based)."""
    heading = _heading(section)
    assert heading in report
    return report.replace(heading, f"{heading}\n{sentence}", 1)


def _drop_section(report: str, section: int) -> str:
    """The report without section ``section`` (heading and body)."""
    start = report.index(_heading(section))
    end = report.index(_heading(section + 1)) if section < len(SECTIONS) else len(report)
    return report[:start] + report[end:]


def _set_rating(report: str, rating: str | None) -> str:
    """Every declaration of the template report set to ``rating`` (None: every declaration removed)."""
    if rating is None:
        out = re.sub(r"^Rating: \w+\n", "", report, flags=re.MULTILINE)
        return re.sub(r", so the rating is \w+\.", ".", out)
    return _DECLARATION.sub(rating, report)


def _conflicting(report: str) -> str:
    """The template report declaring BUY in sections 1 and 2 and SELL in section 8."""
    return re.sub(r"(## 8\. .*\n)Rating: BUY", r"\1Rating: SELL", _set_rating(report, "BUY"))


def _check(card, name: str):
    """The checks of ``card`` named ``name`` (dicts from info["quality"] or Check objects)."""
    if isinstance(card, dict):
        return [c for c in card["checks"] if c["check"] == name]
    return [c for c in card.checks if c.name == name]


def _assert_card_sane(card) -> None:
    """Score and dimensions in [0, 10]; every failed check says why."""
    assert 0.0 <= card.score <= 10.0
    assert set(card.dimensions) == set(DIMENSIONS)
    assert all(0.0 <= v <= 10.0 for v in card.dimensions.values())
    assert card.checks
    for c in card.failed():
        assert c.reason.strip(), c


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def episodes():
    """symbol -> [(report, facts, info)] for every report of the eval episode, written by the template writer."""
    out = {}
    for symbol in ("AAPL", "MSFT"):
        env = _env(symbol)
        env.reset(seed=0)
        writer = TemplateReportWriter(env)
        rows = []
        done = False
        while not done:
            report = writer.write()
            facts = env.unwrapped.facts()
            _, _, terminated, truncated, info = env.step(report)
            rows.append((report, facts, info))
            done = terminated or truncated
        out[symbol] = rows
    return out


@pytest.fixture(scope="module")
def first_report(episodes):
    """AAPL's first eval report (2026-01-02) and its facts."""
    report, facts, _ = episodes["AAPL"][0]
    return report, facts


@pytest.fixture(scope="module")
def june_report():
    """AAPL's first report of 2025-06-02..2025-07-25: before the 10-Q filed 2025-08-01."""
    env = _env("AAPL", split=None, start="2025-06-02", end="2025-07-25")
    env.reset(seed=0)
    return TemplateReportWriter(env).write(), env.unwrapped.facts()


# ------------------------------------------------------------------------------ 1. template writer
@pytest.mark.parametrize("symbol", ["AAPL", "MSFT"])
def test_template_report_has_full_structure_and_accurate_content(episodes, symbol):
    rows = episodes[symbol]
    assert len(rows) == 13  # every report day of the eval split
    dates = [info["report_date"] for _, _, info in rows]
    assert len(set(dates)) == len(dates)
    for report, facts, info in rows:
        quality = info["quality"]
        failed = [(c["check"], c["reason"]) for c in quality["checks"] if not c["passed"]]
        assert quality["dimensions"]["structure"] == 10.0, (info["report_date"], failed)
        assert quality["dimensions"]["content"] >= 9.0, (info["report_date"], failed)
        assert "invalid_action" not in info
        assert quality["rating"] == info["rating"] and quality["rating_problem"] is None
        assert str(facts.report_date) == info["report_date"]
        # the env's score is the direct score of the same text against the same facts
        direct = score_report(report, facts)
        assert direct.score == pytest.approx(quality["score"])
        assert direct.dimensions == pytest.approx(quality["dimensions"])
    summary = rows[-1][2]["quality_summary"]
    assert summary["reports"] == 13 and summary["invalid_ratings"] == 0
    assert summary["dimensions"]["structure"] == 10.0


def test_template_report_states_the_close_and_weekly_return(first_report):
    report, facts = first_report
    card = score_report(report, facts)
    for name in ("ticker named", "report date written", "week's close", "weekly return"):
        (check,) = _check(card, name)
        assert check.passed, check
    assert card.stated["weekly_return"] == pytest.approx(100 * facts.metrics["weekly_return"], abs=0.005)


# ------------------------------------------------------------------------------ 2. look-ahead evidence
def _future_closes(facts, symbol: str = "AAPL") -> list[tuple[str, str]]:
    """(date, close as written) of the symbol's closes after the report date that trace to nothing visible."""
    series = default_catalog().series(symbol, "core")
    after = series.dates.astype("datetime64[D]") > np.datetime64(facts.report_date)
    out = []
    for day, close in zip(series.dates[after], series.close[after], strict=True):
        written = f"{close:.2f}"
        (token,) = numbers_in(written)
        if not facts.traces(token):
            out.append((str(day)[:10], written))
    return out


def test_future_price_fails_evidence(first_report):
    report, facts = first_report
    future = _future_closes(facts)
    assert future, "every later AAPL close happens to match a visible value; pick another report date"
    _, price = future[0]
    base = score_report(report, facts)
    assert base.dimensions["evidence"] == 10.0
    card = score_report(_inject(report, 4, f"AAPL shares are worth {price} each."), facts)
    _assert_card_sane(card)
    assert card.dimensions["evidence"] < base.dimensions["evidence"]
    assert card.dimensions["structure"] == 10.0
    (check,) = _check(card, f"number {price}")
    assert not check.passed and check.dimension == "evidence"
    assert f"no value visible at {facts.report_date}" in check.reason
    # control: the same sentence with the report day's own close traces
    ok = score_report(_inject(report, 4, f"AAPL shares are worth {facts.close:.2f} each."), facts)
    assert ok.dimensions["evidence"] == 10.0


def test_future_price_with_its_date_fails_number_and_date(first_report):
    report, facts = first_report
    day, price = _future_closes(facts)[0]
    card = score_report(_inject(report, 1, f"AAPL traded at {price} on {day}."), facts)
    failed = {c.name for c in card.failed()}
    assert f"number {price}" in failed
    assert f"date {day}" in failed


@pytest.mark.parametrize("fmt", ["%Y-%m-%d", "%B %d, %Y", "%d %b %Y", "%m/%d/%Y"])
def test_date_after_report_date_fails_evidence(first_report, fmt):
    report, facts = first_report
    later = (facts.report_date + dt.timedelta(days=7)).strftime(fmt)
    earlier = (facts.report_date - dt.timedelta(days=7)).strftime(fmt)
    card = score_report(_inject(report, 4, f"The next product event is on {later}."), facts)
    (check,) = _check(card, f"date {later}")
    assert check.name.startswith("date") and not check.passed
    assert "after the report date" in check.reason
    assert card.dimensions["evidence"] < 10.0
    ok = score_report(_inject(report, 4, f"The last product event was on {earlier}."), facts)
    (check,) = _check(ok, f"date {earlier}")
    assert check.passed
    assert ok.dimensions["evidence"] == 10.0


def test_invalid_date_fails_evidence(first_report):
    report, facts = first_report
    card = score_report(_inject(report, 4, "A product event was held on 2025-02-30."), facts)
    (check,) = _check(card, "date 2025-02-30")
    assert not check.passed and check.reason == "not a valid date"


# ------------------------------------------------------------------------------ 3. filing claims
def _filing_checks(card, form: str):
    return _check(card, f"filing claim {form}")


def test_claim_about_a_filing_not_yet_filed_fails(june_report):
    report, facts = june_report
    assert facts.report_date < dt.date(2025, 8, 1)
    assert not any(f["form"] == "10-Q" for f in facts.filings)
    assert all(f["filed"] <= str(facts.report_date) for f in facts.filings)
    base = score_report(report, facts)
    card = score_report(_inject(report, 5, "The 10-Q filed 2025-08-01 shows services growth."), facts)
    _assert_card_sane(card)
    assert card.dimensions["evidence"] < base.dimensions["evidence"]
    (check,) = _filing_checks(card, "10-Q")
    assert not check.passed
    assert "no 10-Q" in check.reason and str(facts.report_date) in check.reason
    (date_check,) = _check(card, "date 2025-08-01")
    assert not date_check.passed


def test_claim_matching_a_visible_filing_passes(june_report):
    report, facts = june_report
    filed = next(f["filed"] for f in facts.filings if f["form"] == "10-K")
    base = score_report(report, facts)
    for sentence in (f"The 10-K filed {filed} lists supply-chain risk.",
                     f"The annual report filed {filed} lists supply-chain risk."):
        card = score_report(_inject(report, 5, sentence), facts)
        claims = _filing_checks(card, "10-K")
        assert len(claims) == len(_filing_checks(base, "10-K")) + 1
        assert all(c.passed for c in claims), claims
        assert card.dimensions["evidence"] == base.dimensions["evidence"] == 10.0


def test_claim_with_a_wrong_filing_date_fails(june_report):
    report, facts = june_report
    card = score_report(_inject(report, 5, "The 10-K filed 2025-03-03 lists supply-chain risk."), facts)
    assert any(not c.passed and "2025-03-03" in c.reason for c in _filing_checks(card, "10-K"))


def test_same_filing_claim_passes_once_the_filing_is_public(first_report):
    report, facts = first_report
    assert {"form": "10-Q", "filed": "2025-08-01"} in facts.filings
    card = score_report(_inject(report, 5, "The 10-Q filed 2025-08-01 shows services growth."), facts)
    assert all(c.passed for c in _filing_checks(card, "10-Q"))
    assert card.dimensions["evidence"] == 10.0


# ------------------------------------------------------------------------------ 4. rating vs thesis
@pytest.mark.parametrize("symbol", ["AAPL", "MSFT"])
def test_rating_contradicting_thesis_loses_reasoning(episodes, symbol):
    flipped_any = 0
    for report, facts, _ in episodes[symbol]:
        base = score_report(report, facts)
        if base.rating == "HOLD":  # no opposite direction; covered by the explicit thesis test below
            continue
        assert _check(base, "rating agrees with thesis")[0].passed
        flipped = _set_rating(report, OPPOSITE[base.rating])
        assert parse_report(flipped).rating == OPPOSITE[base.rating]
        card = score_report(flipped, facts)
        assert card.rating == OPPOSITE[base.rating] and card.rating_problem is None
        assert card.dimensions["structure"] == 10.0
        assert card.dimensions["reasoning"] < base.dimensions["reasoning"]
        (check,) = _check(card, "rating agrees with thesis")
        assert not check.passed and "net signal" in check.reason
        flipped_any += 1
    assert flipped_any >= 5


_ONE_SIDED_THESIS = ("The stock is in an uptrend with bullish momentum, a breakout above resistance and "
                     "upside to the targets.")


@pytest.mark.parametrize(("rating", "agrees"), [("BUY", True), ("STRONG_BUY", True), ("HOLD", False),
                                                 ("SELL", False), ("STRONG_SELL", False)])
def test_rating_against_a_one_sided_thesis(first_report, rating, agrees):
    report, facts = first_report
    start = report.index("Signals (")
    end = report.index(_heading(3))
    text = _set_rating(report[:start] + _ONE_SIDED_THESIS + "\n\n" + report[end:], rating)
    card = score_report(text, facts)
    assert card.rating == rating and card.dimensions["structure"] == 10.0
    (check,) = _check(card, "rating agrees with thesis")
    assert check.passed is agrees, check


# ------------------------------------------------------------------------------ 5. malformed reports
@pytest.mark.parametrize("section", range(1, 9))
def test_missing_section_fails_its_check(first_report, section):
    report, facts = first_report
    card = score_report(_drop_section(report, section), facts)
    _assert_card_sane(card)
    assert card.dimensions["structure"] < 10.0
    (check,) = _check(card, f"section {section} '{SECTIONS[section - 1]}'")
    assert not check.passed and check.reason == "missing"
    (count,) = _check(card, "exactly eight sections")
    assert not count.passed and "7 of 8" in count.reason


def test_duplicated_section_fails_exactly_eight(first_report):
    report, facts = first_report
    card = score_report(report + f"\n{_heading(4)}\nAnother headline.\n", facts)
    _assert_card_sane(card)
    assert card.dimensions["structure"] < 10.0
    (check,) = _check(card, "exactly eight sections")
    assert not check.passed and "repeated: [4]" in check.reason


def test_sections_out_of_order_fail(first_report):
    report, facts = first_report
    s3 = report[report.index(_heading(3)) : report.index(_heading(4))]
    swapped = _drop_section(report, 3).replace(_heading(7), s3 + _heading(7))
    card = score_report(swapped, facts)
    (check,) = _check(card, "sections in order")
    assert not check.passed and "order found" in check.reason


_BAD_RATINGS = {
    "conflicting": (_conflicting, "conflicting"),
    "no rating": (lambda r: _set_rating(r, None), "no 'Rating: X' line"),
    "invalid word": (lambda r: _set_rating(r, "OUTPERFORM"), "'OUTPERFORM' is not a rating"),
}


@pytest.mark.parametrize("case", list(_BAD_RATINGS))
def test_bad_rating_trades_as_hold_and_is_invalid(first_report, case):
    report, _ = first_report
    make, problem = _BAD_RATINGS[case]
    text = make(report)
    env = _env("AAPL")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(text)
    assert problem in info["invalid_action"]
    assert info["rating"] == "HOLD" and info["target_position"] == 0.0 and info["position"] == 0.0
    assert reward == 0.0  # flat from a flat start: no fee, no market risk
    quality = info["quality"]
    assert quality["rating"] == "HOLD" and problem in quality["rating_problem"]
    assert 0.0 <= quality["score"] <= 10.0 and quality["dimensions"]["structure"] < 10.0
    (check,) = _check(quality, "one valid rating")
    assert not check["passed"] and problem in check["reason"]
    assert env.unwrapped.history[0]["invalid"] == info["invalid_action"]


def test_conflicting_ratings_in_sections_2_and_8(first_report):
    report, facts = first_report
    card = score_report(_conflicting(report), facts)
    assert card.rating == "HOLD" and "conflicting" in card.rating_problem
    (check,) = _check(card, "rating in sections 2 and 8 agrees")
    assert not check.passed and "section 2 says ['BUY'], section 8 says ['SELL']" in check.reason


_UNREADABLE = {
    "non-UTF-8 bytes": (lambda r: b"\xff\xfe" + r.encode(), "not UTF-8"),
    "enormous text": (lambda r: r + "x" * (MAX_REPORT_CHARS + 1), "over the 60,000 limit"),
    "NUL character": (lambda r: r + "\x00", "NUL"),
    "None": (lambda r: None, "got NoneType"),
    "int": (lambda r: 7, "got int"),
    "empty string": (lambda r: "", "no 'Rating: X' line"),
    "whitespace": (lambda r: " \n\t\n", "no 'Rating: X' line"),
}


@pytest.mark.parametrize("case", list(_UNREADABLE))
def test_unreadable_report_never_crashes_and_says_why(first_report, case):
    report, facts = first_report
    make, why = _UNREADABLE[case]
    card = score_report(make(report), facts)
    _assert_card_sane(card)
    assert card.score == 0.0
    assert card.rating == "HOLD" and why in card.rating_problem
    assert all(c.reason for c in card.checks)
    assert card.to_dict()["score"] == 0.0


@pytest.mark.parametrize("case", ["non-UTF-8 bytes", "enormous text", "empty string"])
def test_unreadable_report_through_the_env_is_invalid_hold(first_report, case):
    report, _ = first_report
    make, why = _UNREADABLE[case]
    env = _env("AAPL")
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step(make(report))
    assert why in info["invalid_action"] and info["rating"] == "HOLD" and info["position"] == 0.0
    assert info["quality"]["score"] == 0.0
    assert not (terminated or truncated)
    # the episode goes on with the next report
    _, _, _, _, info = env.step(TemplateReportWriter(env).write())
    assert "invalid_action" not in info and info["quality"]["dimensions"]["structure"] == 10.0


def test_utf8_bytes_report_scores_like_the_text(first_report):
    report, facts = first_report
    assert score_report(report.encode("utf-8"), facts).score == pytest.approx(score_report(report, facts).score)


def test_non_report_action_is_rejected_by_the_env():
    env = _env("AAPL")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="invalid action of type NoneType"):
        env.step(None)


def test_report_of_headings_only_scores_low_with_reasons(first_report):
    _, facts = first_report
    card = score_report("\n".join(f"## {t}" for t in SECTIONS), facts)
    _assert_card_sane(card)
    assert card.score < 1.0
    assert all(c.reason == "present but empty" for c in card.checks if c.name.startswith("section "))
    (check,) = _check(card, "no verifiable evidence")
    assert not check.passed


# ------------------------------------------------------------------------------ 6. numbers and dates
@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("$1.2B", 1.2e9, "$"),
        ("USD 1.2bn", 1.2e9, "$"),
        ("3.4 million", 3.4e6, ""),
        ("1,234.5", 1234.5, ""),
        ("-3.2%", -3.2, "%"),
        ("\u22123.2%", -3.2, "%"),
        ("(3.2%)", -3.2, "%"),
        ("($1,234.5)", -1234.5, "$"),
        ("+5 pp", 5.0, "%"),
        ("25 bps", 25.0, "bp"),
        ("0.85x", 0.85, "x"),
        ("closed at 270.27.", 270.27, ""),
    ],
)
def test_numbers_in_reads_report_formats(text, value, unit):
    (token,) = numbers_in(text)
    assert token.value == pytest.approx(value)
    assert token.unit == unit
    assert token.kind == "value"


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("52-week", ["period"]),
        ("14-day", ["period"]),
        ("12-week return", ["period"]),
        ("RSI(14)", []),
        ("MACD(12,26,9)", []),
        ("10-Q", []),
        ("10-K", []),
        ("S&P 500", []),
        ("2026", ["year"]),
        ("in fiscal 2025", ["year"]),
        ("Q3", []),
    ],
)
def test_numbers_in_does_not_claim_periods_years_forms_or_indices(text, kinds):
    assert [t.kind for t in numbers_in(text)] == kinds


def test_numbers_in_keeps_precision_and_offsets():
    text = "RSI(14) 43.84, 52-week high 285.41 and a -0.87% move"
    values = [t for t in numbers_in(text) if t.kind == "value"]
    assert [(t.value, t.unit, t.decimals) for t in values] == [(43.84, "", 2), (285.41, "", 2), (-0.87, "%", 2)]
    for t in values:
        assert text[t.start:].startswith(t.text.lstrip("+-\u2212(").lstrip("$"))


@pytest.mark.parametrize(
    "text", ["2026-03-27", "2026/03/27", "March 27, 2026", "Mar. 27, 2026", "27 Mar 2026", "27 March 2026",
             "03/27/2026"])
def test_dates_in_reads_report_formats(text):
    (token,) = dates_in(f"as of {text}, the close")
    assert token.date == dt.date(2026, 3, 27)
    assert token.text.rstrip(",") == text


@pytest.mark.parametrize("text", ["2026-02-30", "02/30/2026", "30 Feb 2026"])
def test_dates_in_flags_invalid_dates(text):
    (token,) = dates_in(text)
    assert token.date is None


def test_dates_are_not_read_as_numbers():
    assert numbers_in("on 2026-03-27 and March 27, 2026") == []


def test_fabricated_percent_fails_evidence(first_report):
    report, facts = first_report
    (token,) = numbers_in("87.3%")
    assert not facts.traces(token)
    card = score_report(_inject(report, 5, "Services revenue grew 87.3% over the last quarter."), facts)
    (check,) = _check(card, "number 87.3%")
    assert not check.passed and card.dimensions["evidence"] < 10.0


@pytest.mark.parametrize("text", ["revenue grew 12% year over year", "a -0.87% week", "up 2.3% month-over-month",
                                  "a $5 day range"])
def test_value_with_unit_before_a_period_word_is_a_value(text):
    (token,) = numbers_in(text)
    assert token.kind == "value"


def test_fabricated_percent_year_over_year_fails_evidence(first_report):
    report, facts = first_report
    card = score_report(_inject(report, 5, "Services revenue grew 87.3% year over year."), facts)
    assert card.dimensions["evidence"] < 10.0
    assert any(c.name.startswith("number 87.3%") and not c.passed for c in card.checks)


def test_tolerance_of_a_multiplied_decimal_is_half_its_last_digit():
    (whole,) = numbers_in("$2B")
    assert whole.matches(2.4e9) and not whole.matches(2.6e9)
    (billions,) = numbers_in("$1.2B")
    assert billions.tolerance() == pytest.approx(0.05e9)
    assert billions.matches(1.24e9)
    (millions,) = numbers_in("3.4 million")
    assert millions.matches(3.43e6)


# ------------------------------------------------------------------------------ 7. the optional judge
def test_judge_score_is_one_more_reasoning_check(first_report):
    report, facts = first_report
    seen = {}

    def judge(text, context):
        seen.update(text=text, context=context)
        return 0.5

    base = score_report(report, facts)
    card = score_report(report, facts, judge=judge)
    (check,) = _check(card, "judge")
    assert check.dimension == "reasoning" and check.value == 0.5 and not check.passed
    assert card.judge == {"score": 0.5, "reason": ""}
    n = len([c for c in base.checks if c.dimension == "reasoning"])
    assert card.dimensions["reasoning"] == pytest.approx((base.dimensions["reasoning"] * n + 5.0) / (n + 1))
    assert card.dimensions["reasoning"] < base.dimensions["reasoning"]
    assert seen["text"] == report
    assert seen["context"]["symbol"] == "AAPL" and seen["context"]["date"] == str(facts.report_date)
    assert seen["context"]["rating"] == base.rating


def test_judge_with_reason_tuple(first_report):
    report, facts = first_report
    card = score_report(report, facts, judge=lambda text, ctx: (1.0, "coherent"))
    (check,) = _check(card, "judge")
    assert check.passed and check.reason == "coherent"


@pytest.mark.parametrize(
    ("judge", "error"),
    [
        (lambda text, ctx: 1 / 0, "ZeroDivisionError"),
        (lambda text, ctx: 1.5, "outside [0, 1]"),
        (lambda text, ctx: "great", "ValueError"),
        (lambda text, ctx: float("nan"), "outside [0, 1]"),
    ],
    ids=["raises", "out-of-range", "not-a-number", "nan"],
)
def test_failing_judge_is_recorded_and_adds_no_check(first_report, judge, error):
    report, facts = first_report
    base = score_report(report, facts)
    card = score_report(report, facts, judge=judge)
    assert error in card.judge["error"]
    assert "score" not in card.judge
    assert _check(card, "judge") == []
    assert card.dimensions == base.dimensions and card.score == base.score


class _FakeAgent:
    """An OpenAI-compatible chat agent stand-in: ``await complete(messages, tools)`` -> reply with ``.content``."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.calls: list[list[dict]] = []

    async def complete(self, messages, tools):
        self.calls.append(messages)
        return SimpleNamespace(content=self.content)


def test_llm_judge_through_the_env():
    agent = _FakeAgent('Sure. {"score": 0.8, "reason": "ok"}')
    env = _env("AAPL", judge=llm_judge(agent))
    env.reset(seed=0)
    report = TemplateReportWriter(env).write()
    _, _, _, _, info = env.step(report)
    quality = info["quality"]
    assert quality["judge"] == {"score": 0.8, "reason": "ok"}
    (check,) = _check(quality, "judge")
    assert check["dimension"] == "reasoning" and check["value"] == 0.8 and check["reason"] == "ok"
    assert len(agent.calls) == 1
    system, user = agent.calls[0]
    assert system["role"] == "system" and "JSON" in system["content"]
    assert user["role"] == "user" and '"symbol": "AAPL"' in user["content"]
    # the report travels as one JSON string that decodes back to it: nothing in it can pose as context or claims
    head, literal = user["content"].split("\n\nReport (one JSON string):\n")
    assert json.loads(literal) == report and literal == json_quoted(report) and "\n" not in literal


def test_llm_judge_unreadable_reply_is_recorded_by_the_env():
    env = _env("AAPL", judge=llm_judge(_FakeAgent("I cannot answer that.")))
    env.reset(seed=0)
    _, _, _, _, info = env.step(TemplateReportWriter(env).write())
    quality = info["quality"]
    assert "no JSON object" in quality["judge"]["error"]
    assert _check(quality, "judge") == []
    assert quality["dimensions"]["reasoning"] == 10.0


def test_env_rejects_a_judge_that_is_not_callable():
    with pytest.raises(ValueError, match="judge must be callable"):
        _env("AAPL", judge="gpt-4")


def test_prose_about_the_rating_is_not_a_declaration():
    """'Our rating is unchanged.' is prose; only rating words after 'is' declare one."""
    parsed = parse_report("## Investment Rating and Thesis\nOur rating is unchanged.\nRating: BUY\n")
    assert parsed.rating == "BUY" and parsed.rating_problem is None
    assert [d.rating for d in parsed.declarations] == ["BUY"]
    parsed = parse_report("Our rating is unchanged.\nOur rating is SELL.")
    assert parsed.rating == "SELL"


_SNIPPETS = ["Rating: BUY", "Rating: SELL", "## Risk Factors", "## 2. Investment Rating and Thesis", "(3.2%)",
             "$1.2B", "2027-01-01", "The 10-Q filed 2030-01-01 says", "Q9 99999", "1e308", "9" * 400, "−", "|",
             "**", "\n", "RSI(14): ", "Bull case: ", "February 30, 2026", "\x00", "é中"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 2), st.sampled_from(_SNIPPETS)), max_size=25))
def test_mutated_reports_never_crash_and_stay_in_range(first_report, edits):
    """Random edits of a valid report (cuts, insertions of ratings, headings, odd numbers and dates)."""
    report, facts = first_report
    text = report
    for where, op, snippet in edits:
        k = int(where * len(text))
        text = text[:k] + snippet + text[k:] if op else text[:k] + text[k + len(snippet) :]
    card = score_report(text, facts)
    assert 0.0 <= card.score <= 10.0
    assert all(0.0 <= v <= 10.0 for v in card.dimensions.values())
    assert card.rating in RATINGS
    assert card.rating_problem is None or card.rating == "HOLD"  # an unclear rating always trades flat
    assert all(c.reason is not None for c in card.checks)


# ------------------------------------------------------------------------------ 6. labelled figures
_LEVEL_IN_LINE = re.compile(r"52-week (high|low):[^\n]*\((?:high|low) (\d+\.\d+)\)")


def _scaled_numbers(line: str, factor: float) -> str:
    """``line`` with every value number moved by ``factor`` (written precision kept)."""
    out, last = [], 0
    for tok in numbers_in(line):
        if tok.kind != "value":
            continue
        m = re.match(r"\d+(?:\.\d+)?", line[tok.start:])
        if m is None:
            continue
        digits = m.group(0)
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        out.append(line[last:tok.start] + f"{float(digits) * factor:.{decimals}f}")
        last = tok.start + len(digits)
    return "".join(out) + line[last:]


def _checks_named(card, prefix: str):
    return [c for c in card.checks if c.name.startswith(prefix)]


@pytest.mark.parametrize("symbol", ["AAPL", "MSFT"])
def test_template_writer_states_the_52_week_levels_of_a_year_of_bars(episodes, symbol):
    """The levels are the max/min of the last 252 closes as of the report (what dist_52w_* mean): the metrics
    tool's ``levels``, which the writer states."""
    for report, facts, info in episodes[symbol]:
        found = dict(_LEVEL_IN_LINE.findall(report))
        assert set(found) == {"high", "low"}, report
        assert float(found["high"]) == pytest.approx(facts.levels["high_52w"], abs=0.006)
        assert float(found["low"]) == pytest.approx(facts.levels["low_52w"], abs=0.006)
        named = {c["check"]: c["passed"] for c in info["quality"]["checks"]}
        assert named["stated high_52w"] and named["stated low_52w"]
        assert named["scenario base move"] and named["stated week_high"] and named["stated week_low"]


def test_wrong_52_week_level_costs_content(first_report):
    report, facts = first_report
    base = score_report(report, facts)
    low = facts.levels["low_52w"]
    wrong = re.sub(r"\(low \d+\.\d+\)", f"(low {low * 1.3:.2f})", report)
    card = score_report(wrong, facts)
    (check,) = _checks_named(card, "stated low_52w")
    assert not check.passed and f"{low:.2f}" in check.reason
    assert card.dimensions["content"] < base.dimensions["content"] and card.score < base.score


def test_each_labelled_line_perturbed_costs_points(first_report):
    """Section 3 line by line: 15% off on any line with a labelled figure lowers content accuracy."""
    report, facts = first_report
    base = score_report(report, facts)
    start, end = report.index(_heading(3)), report.index(_heading(4))
    lines = [ln for ln in report[start:end].splitlines() if ln.startswith("- ") and numbers_in(ln)]
    assert len(lines) >= 9
    for line in lines:
        card = score_report(report.replace(line, _scaled_numbers(line, 1.15), 1), facts)
        assert card.dimensions["content"] < base.dimensions["content"], line
        assert card.score < base.score, line


_LABELLED = [
    ("20-day SMA", "sma_20", "The 20-day SMA stands at {v:.2f}."),
    ("SMA(200)", "sma_200", "- SMA(200): {v:.2f}"),
    ("EMA", "ema_12", "- 12-day EMA: {v:.2f}"),
    ("MACD line", "macd_line", "- MACD line {v:.4f} against a signal line of {w:.4f}"),
    ("upper band", "boll_upper", "- Upper Bollinger band: {v:.2f}"),
    ("ATR", "atr_14", "- Average true range: {v:.2f}"),
    ("week open", "week_open", "- The week's open was {v:.2f}."),
    ("previous close", "prev_week_close", "- Previous close: {v:.2f}"),
]


@pytest.mark.parametrize(("what", "level", "sentence"), _LABELLED, ids=[x[0] for x in _LABELLED])
def test_labelled_level_is_checked_against_its_meaning(first_report, what, level, sentence):
    report, facts = first_report
    truth = facts.levels[level]
    other = facts.levels.get("macd_signal", 0.0)
    right = score_report(_inject(report, 3, sentence.format(v=truth, w=other)), facts)
    (ok,) = _checks_named(right, f"stated {level}")
    assert ok.passed, ok
    wrong = score_report(_inject(report, 3, sentence.format(v=truth * 1.2 + 1.0, w=other)), facts)
    (bad,) = _checks_named(wrong, f"stated {level}")
    assert not bad.passed and "outside tolerance" in bad.reason
    assert wrong.dimensions["content"] < right.dimensions["content"]


def test_a_level_of_another_day_is_not_claimed_for_the_report_close(first_report):
    report, facts = first_report
    card = score_report(_inject(report, 3, f"- On 2025-11-03 the 20-day SMA was {facts.levels['sma_20'] * 1.1:.2f}."),
                        facts)
    assert not _checks_named(card, "stated sma_20")


def test_a_price_after_sma_is_not_a_window(first_report):
    """"SMA 492.08" is the 50-day SMA's level in its statement, not a moving average of 492 days."""
    report, facts = first_report
    sma50 = facts.levels["sma50"]
    card = score_report(_inject(report, 3, f"- 50-day SMA gap: {100 * facts.metrics['sma50_gap']:.2f}% "
                                           f"(SMA {sma50 * 1.2:.2f})"), facts)
    assert [c.passed for c in _check(card, "stated sma50")] == [False, True]  # the wrong one, then the template's


def test_peer_returns_are_checked_per_peer(first_report):
    report, facts = first_report
    peer = facts.peers[0]
    r4 = facts.peer_returns[peer]["4w"]
    right = score_report(_inject(report, 6, f"- {peer}'s 4-week return: {100 * r4:+.2f}%"), facts)
    assert [c.passed for c in _checks_named(right, f"stated {peer} return")] == [True]
    wrong = score_report(_inject(report, 6, f"- {peer}'s 4-week return: {100 * r4 + 3:+.2f}%"), facts)
    (check,) = _checks_named(wrong, f"stated {peer} return")
    assert not check.passed and "4w" in check.reason
    # the same figure claimed as the peer's weekly return is wrong unless the two coincide
    weekly = score_report(_inject(report, 6, f"- {peer} weekly return {100 * r4:+.2f}%"), facts)
    (check,) = _checks_named(weekly, f"stated {peer} return")
    assert check.passed is (abs(facts.peer_returns[peer]["1w"] - r4) < 1e-4)


def test_scenario_move_must_match_its_target(first_report):
    report, facts = first_report
    m = re.search(r"- Bull case: (\d+\.\d+) \(([+-]\d+\.\d+)% from the close", report)
    assert m is not None
    wrong = report.replace(m.group(0), m.group(0).replace(m.group(2), f"{float(m.group(2)) + 2:+.2f}"))
    card = score_report(wrong, facts)
    (check,) = _checks_named(card, "scenario bull move")
    assert not check.passed and card.score < score_report(report, facts).score


def test_contradicting_rating_voids_reasoning(episodes):
    """A rating against the report's own net thesis scores 0 in reasoning: it costs 2.5 of 10 (it cost
    0.83 before the gate; benchmarks/report_quality.py)."""
    costs = []
    for report, facts, _ in episodes["AAPL"] + episodes["MSFT"]:
        base = score_report(report, facts)
        if base.rating == "HOLD":
            continue
        card = score_report(_set_rating(report, OPPOSITE[base.rating]), facts)
        assert card.dimensions["reasoning"] == 0.0
        assert _checks_named(card, "rating contradicts the thesis")
        costs.append(base.score - card.score)
    assert costs and min(costs) >= 2.0


def test_scores_order_right_flipped_perturbed_copied(episodes):
    """For every template report: right > contradictory rating > every number 15% off > the blank template."""
    env = _env("AAPL")
    env.reset(seed=0)
    blank = env.unwrapped.report_template()
    for report, facts, _ in episodes["AAPL"]:
        right = score_report(report, facts).score
        rating = score_report(report, facts).rating
        flipped = score_report(_set_rating(report, OPPOSITE.get(rating, "SELL")), facts).score
        perturbed = score_report("\n".join(ln if ln.startswith("#") else _scaled_numbers(ln, 1.15)
                                           for ln in report.splitlines()), facts).score
        copied = score_report(blank.replace(str(env.unwrapped.facts().report_date), str(facts.report_date)),
                              facts).score
        assert right == 10.0
        assert right > flipped > perturbed > copied, (facts.report_date, flipped, perturbed, copied)
