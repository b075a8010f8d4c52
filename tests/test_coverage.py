"""Coverage of the news and filing tools: what the data holds up to the clock, and nothing after it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import finenvs  # noqa: F401  (registers the envs)
from finenvs.data import AsOfView, LookAheadCounter
from finenvs.data.documents import FILING_COLUMNS, NEWS_COLUMNS, FilingStore, NewsStore, decision_time_utc
from finenvs.tools import ToolBox
from finenvs.tools.market import MAX_SYMBOLS_LISTED, get_filing_section, get_news, list_filings, list_news
from finenvs.tools.registry import ToolContext

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
CUT = "2025-03-12"  # Wednesday; every row in FUTURE_* is public only after its close (20:00 UTC)
AS_OFS = ["2025-03-03", "2025-03-06", "2025-03-07", "2025-03-10", "2025-03-11", CUT]

# (id, symbol, published UTC)
PAST_NEWS = [
    ("a1", "AAA", "2025-03-03T12:00:00"),
    ("a2", "AAA", "2025-03-07T21:00:00"),  # exactly Friday's close (21:00 UTC before DST): visible that day
    ("a3", "AAA", "2025-03-10T20:00:01"),  # a second after Monday's close: visible Tuesday
    ("b1", "BBB", "2025-03-05T09:30:00"),
    ("b2", "BBB", "2025-03-12T20:00:00"),  # exactly the cut's close
]
FUTURE_NEWS = [
    ("a9", "AAA", "2025-03-12T20:00:01"),
    ("a10", "AAA", "2025-04-30T10:00:00"),
    ("c1", "CCC", "2025-03-13T10:00:00"),  # a symbol with no news up to the cut
    ("z1", "ZZZ", "2025-05-01T10:00:00"),  # a symbol that appears only after the cut
]
# (filing id, symbol, form, filed, sections)
PAST_FILINGS = [
    ("AAA-K", "AAA", "10-K", "2025-03-03", ["item_1a", "item_7"]),
    ("AAA-Q", "AAA", "10-Q", "2025-03-07", ["item_2"]),  # public after Friday's 17:30: usable from Monday
    ("BBB-Q", "BBB", "10-Q", "2025-03-10", ["item_2"]),
]
FUTURE_FILINGS = [
    ("AAA-Q2", "AAA", "10-Q", CUT, ["item_2"]),  # filed on the cut day: public after its close
    ("CCC-K", "CCC", "10-K", "2025-03-20", ["item_7"]),
    ("ZZZ-K", "ZZZ", "10-K", "2025-05-02", ["item_7", "item_99"]),
]


def _news(rows: list[tuple[str, str, str]]) -> NewsStore:
    table: dict[str, list[Any]] = {name: [] for name in NEWS_COLUMNS}
    for news_id, symbol, published in rows:
        for name, value in (
            ("id", news_id), ("symbol", symbol), ("published_at", np.datetime64(published, "s")),
            ("title", f"title {news_id}"), ("summary", f"summary {news_id}"), ("source", "Wire"),
            ("url", f"https://example.com/{news_id}"), ("provider", "hand"), ("provider_sentiment", None),
        ):
            table[name].append(value)
    table["published_at"] = np.array(table["published_at"], dtype="datetime64[s]")
    return NewsStore.from_columns(table)


def _filings(rows: list[tuple[str, str, str, str, list[str]]]) -> FilingStore:
    table: dict[str, list[Any]] = {name: [] for name in FILING_COLUMNS}
    for filing_id, symbol, form, filed, sections in rows:
        for section in sections:
            text = f"text of {filing_id} {section}"
            for name, value in (
                ("filing_id", filing_id), ("symbol", symbol), ("form", form), ("filed", filed),
                ("section", section), ("title", section.upper()), ("text", text), ("chars", len(text)),
                ("document", f"{filing_id}.htm"),
            ):
                table[name].append(value)
    table["filed"] = np.array(table["filed"], dtype="datetime64[D]")
    return FilingStore.from_columns(table)


def _rewritten_news() -> list[tuple[str, str, str]]:
    """The future rows changed: other ids and times, more of them, a new symbol."""
    return [(f"x{k}", sym, f"2025-03-{13 + k}T0{k}:00:00") for k, sym in enumerate(["AAA", "DDD", "AAA", "CCC"])]


def _rewritten_filings() -> list[tuple[str, str, str, str, list[str]]]:
    return [("AAA-K2", "AAA", "10-K", "2025-03-13", ["item_7"]), ("DDD-Q", "DDD", "10-Q", CUT, ["item_2"])]


def _no_prices(symbol: str):
    raise AssertionError(f"these tests read no prices (asked for {symbol})")


@dataclass
class _StubEnv:
    """Just enough of an env for a ToolContext: an as-of view at a fixed clock."""

    as_of: str

    def as_of_view(self) -> AsOfView:
        return AsOfView(_no_prices, self.as_of, counter=LookAheadCounter())

    @property
    def market(self) -> Any:
        return type("Market", (), {"symbol": "AAA"})()


def _answers(as_of: str, news: NewsStore, filings: FilingStore) -> list[str]:
    """The JSON of every news and filing answer at ``as_of`` (errors as their message)."""
    ctx = ToolContext(_StubEnv(as_of), news=news, filings=filings)
    calls = [
        *[(list_news, {"symbol": s, "lookback_days": d}) for s in ("AAA", "BBB", "CCC", "ZZZ") for d in (0, 2, 3650)],
        (list_news, {"symbol": "AAA", "start": "2025-03-01", "end": "2025-12-31"}),
        *[(get_news, {"id": news_id}) for news_id, _, _ in PAST_NEWS + FUTURE_NEWS],
        *[(list_filings, {"symbol": s}) for s in ("AAA", "BBB", "CCC", "ZZZ")],
        (list_filings, {"symbol": "AAA", "form": "10-Q"}),
        *[(get_filing_section, {"id": fid, "section": sections[0]}) for fid, *_, sections in PAST_FILINGS],
    ]
    out = []
    for func, args in calls:
        try:
            out.append(json.dumps(func(ctx, **args), sort_keys=False))
        except Exception as exc:  # noqa: BLE001  (an error answer is part of what must not change)
            out.append(f"{type(exc).__name__}: {exc}")
    return out


@pytest.mark.parametrize("as_of", AS_OFS)
def test_coverage_is_invariant_to_every_row_after_the_clock(as_of):
    past_news, past_filings = _news(PAST_NEWS), _filings(PAST_FILINGS)
    worlds = [
        (_news(PAST_NEWS + FUTURE_NEWS), _filings(PAST_FILINGS + FUTURE_FILINGS)),
        (_news(PAST_NEWS + _rewritten_news()), _filings(PAST_FILINGS + _rewritten_filings())),
    ]
    deleted = _answers(as_of, past_news, past_filings)
    for news, filings in worlds:
        assert _answers(as_of, news, filings) == deleted, as_of
    # and the coverage fields are really there in what was compared
    assert all('"coverage"' in answer for answer in deleted if not answer.startswith("DataError"))


def test_the_future_rows_do_change_the_answers_after_the_clock():
    later = "2025-05-05"
    assert _answers(later, _news(PAST_NEWS), _filings(PAST_FILINGS)) != _answers(
        later, _news(PAST_NEWS + FUTURE_NEWS), _filings(PAST_FILINGS + FUTURE_FILINGS)
    )


def _coverage(as_of: str, tool: Any, **args: Any) -> dict[str, Any]:
    news, filings = _news(PAST_NEWS + FUTURE_NEWS), _filings(PAST_FILINGS + FUTURE_FILINGS)
    return tool(ToolContext(_StubEnv(as_of), news=news, filings=filings), **args)["coverage"]


def test_news_coverage_counts_the_items_public_by_the_close():
    friday = _coverage("2025-03-07", list_news, symbol="AAA", lookback_days=0)
    assert (friday["count"], friday["first_published_at"], friday["latest_published_at"]) == (
        2, "2025-03-03T12:00:00Z", "2025-03-07T21:00:00Z")
    assert friday["days_since_latest"] == 0 and "not covered" not in friday["note"]
    monday = _coverage("2025-03-10", list_news, symbol="AAA")  # a3 is a second after Monday's close
    assert monday["count"] == 2 and monday["days_since_latest"] == 3 and "not covered" not in monday["note"]
    tuesday = _coverage("2025-03-11", list_news, symbol="AAA")
    assert tuesday["count"] == 3 and tuesday["latest_published_at"] == "2025-03-10T20:00:01Z"
    stale = _coverage("2025-03-17", list_news, symbol="BBB")
    assert stale["days_since_latest"] == 5
    assert "the newest item held is 5 day(s) old" in stale["note"]
    assert "later days not covered" in stale["note"] and "not proof" in stale["note"]


def test_a_symbol_without_visible_news_is_told_which_symbols_have_some():
    cut = _coverage(CUT, list_news, symbol="CCC")
    assert cut["count"] == 0 and cut["first_published_at"] is None and cut["latest_published_at"] is None
    assert cut["symbols_with_news"] == ["AAA", "BBB"]  # not CCC (its first item is later), never ZZZ
    assert "no news item for CCC held up to this close" in cut["note"]
    early = _coverage("2025-03-04", list_news, symbol="BBB")
    assert early["symbols_with_news"] == ["AAA"]
    later = _coverage("2025-05-05", list_news, symbol="QQQ")
    assert later["symbols_with_news"] == ["AAA", "BBB", "CCC", "ZZZ"]


def test_filing_coverage_counts_filings_public_by_the_close():
    friday = _coverage("2025-03-07", list_filings, symbol="AAA")  # AAA-Q is filed Friday: not yet usable
    assert (friday["count"], friday["first_filed"], friday["latest_filed"], friday["forms"]) == (
        1, "2025-03-03", "2025-03-03", {"10-K": 1})
    monday = _coverage("2025-03-10", list_filings, symbol="AAA", form="10-K")  # the form filter lists, not covers
    assert (monday["count"], monday["latest_filed"], monday["forms"]) == (2, "2025-03-07", {"10-K": 1, "10-Q": 1})
    assert monday["days_since_latest"] == 3 and "not proof" not in monday["note"]
    stale = _coverage("2025-09-01", list_filings, symbol="BBB")
    assert stale["days_since_latest"] == 175 and "likely does not cover the later ones" in stale["note"]
    none = _coverage(CUT, list_filings, symbol="CCC")
    assert none["count"] == 0 and none["forms"] == {} and none["symbols_with_filings"] == ["AAA", "BBB"]
    section = get_filing_section(ToolContext(_StubEnv(CUT), filings=_filings(PAST_FILINGS)), "BBB-Q", "item_2")
    assert section["symbol"] == "BBB" and section["as_of"] == CUT and section["coverage"]["count"] == 1
    assert "symbol" not in section["coverage"] and "as_of" not in section["coverage"]  # said once, above it


def test_no_coverage_string_is_dated_after_the_clock():
    for as_of in AS_OFS:
        for answer in _answers(as_of, _news(PAST_NEWS + FUTURE_NEWS), _filings(PAST_FILINGS + FUTURE_FILINGS)):
            if answer.startswith("DataError"):
                continue
            coverage = json.dumps(json.loads(answer)["coverage"])
            assert all(day <= as_of for day in DATE.findall(coverage)), (as_of, coverage)


def test_symbol_lists_are_capped():
    rows = [(f"n{k}", f"S{k:03d}", "2025-03-03T12:00:00") for k in range(MAX_SYMBOLS_LISTED + 7)]
    ctx = ToolContext(_StubEnv(CUT), news=_news(rows), filings=_filings(PAST_FILINGS))
    coverage = list_news(ctx, symbol="NONE")["coverage"]
    assert len(coverage["symbols_with_news"]) == MAX_SYMBOLS_LISTED
    assert coverage["symbols_with_news_total"] == MAX_SYMBOLS_LISTED + 7
    assert f"{MAX_SYMBOLS_LISTED + 7} symbol(s)" in coverage["note"]


# ---------------------------------------------------------------- the shipped data on a 2026 window
def _shipped_with_future(news: NewsStore, filings: FilingStore, cut: str) -> tuple[NewsStore, FilingStore]:
    """The shipped stores plus rows public only after ``cut``'s close, for held and unheld symbols."""
    cut_time = decision_time_utc(cut)
    extra = [(f"late-{s}-{k}", s, cut_time + np.timedelta64(delay, "s"))
             for s in ("TSLA", "ADBE", "ZZZZ") for k, delay in enumerate((1, 86_400, 30 * 86_400))]
    table = {name: list(getattr(news, name)) for name in NEWS_COLUMNS if name != "published_at"}
    table["published_at"] = list(news.published)
    for news_id, symbol, when in extra:
        for name, value in (("id", news_id), ("symbol", symbol), ("published_at", when), ("title", "later"),
                            ("summary", "later"), ("source", "Oracle"), ("url", "https://example.com/later"),
                            ("provider", "test"), ("provider_sentiment", None)):
            table[name].append(value)
    table["published_at"] = np.array(table["published_at"], dtype="datetime64[s]")
    ftable = {name: list(getattr(filings, name)) for name in FILING_COLUMNS if name not in ("filed", "chars")}
    ftable["filed"] = list(filings.filed)
    for filing_id, symbol, filed in (("TSLA-10-K-LATE", "TSLA", cut), ("MSFT-10-Q-LATE", "MSFT", cut)):
        for name, value in (("filing_id", filing_id), ("symbol", symbol), ("form", "10-K"),
                            ("filed", np.datetime64(filed, "D")), ("section", "item_7_mdna"),
                            ("title", "later"), ("text", "later"), ("document", "later.htm")):
            ftable[name].append(value)
    ftable["chars"] = [len(t) for t in ftable["text"]]
    ftable["filed"] = np.array(ftable["filed"], dtype="datetime64[D]")
    return NewsStore.from_columns(table), FilingStore.from_columns(ftable)


def test_shipped_answers_on_the_eval_window_ignore_rows_after_the_clock(catalog):
    cut = "2026-02-10"
    news, filings = catalog.news(), catalog.filings()
    news_b, filings_b = _shipped_with_future(news, filings, cut)
    env = gym.make("FinTrading-v0", symbol="TSLA", split="eval")
    _, info = env.reset(seed=0)
    box_a, box_b = ToolBox(env, news=news, filings=filings), ToolBox(env, news=news_b, filings=filings_b)
    calls = [
        *[("list_news", {"symbol": s, "lookback_days": 3650, "limit": 5}) for s in ("TSLA", "ADBE", "ZZZZ", "AAPL")],
        *[("list_filings", {"symbol": s}) for s in ("TSLA", "MSFT", "ADBE")],
        ("get_news", {"id": "late-TSLA-0"}),
        ("get_filing_section", {"id": "TSLA-10-Q-2025-07-24", "section": "part2_item_1a_risk_factors"}),
    ]
    checked = 0
    while info["date"] <= cut:
        for name, args in calls:
            assert box_a.call(name, args).text() == box_b.call(name, args).text(), (info["date"], name, args)
            checked += 1
        _, _, _, _, info = env.step(1)
    assert checked > 0
    tsla = box_a.call("list_news", {"lookback_days": 7}).data  # a day after the cut: the same coverage
    assert tsla["count"] == 0 and tsla["coverage"]["latest_published_at"].startswith("2025-11-16")
    assert "later days not covered" in tsla["coverage"]["note"]
    # the perturbation is real: after the cut the answers differ
    assert box_a.call("list_news", {"symbol": "ADBE"}).text() != box_b.call("list_news", {"symbol": "ADBE"}).text()


def test_coverage_survives_the_smallest_output_cap(catalog):
    env = gym.make("FinTrading-v0", symbol="TSLA", split="eval")
    env.reset(seed=0)
    box = ToolBox(env, max_chars=1000)
    for name, args in (("list_news", {"symbol": "ADBE"}), ("list_news", {"lookback_days": 3650, "limit": 200}),
                       ("list_filings", {}), ("list_filings", {"symbol": "MSFT"})):
        result = box.call(name, args)
        assert result.ok and len(result.text()) <= 1000, (name, args)
        assert result.data["symbol"] == args.get("symbol", "TSLA")
        assert result.data["coverage"]["note"]
