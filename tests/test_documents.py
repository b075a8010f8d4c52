"""News and filings: the hand-computed New York clock, visibility through the as-of view, shipped corpus."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from finenvs.data import AsOfView, LookAheadCounter, shipped_data_dir, verify_data
from finenvs.data.documents import (
    FILING_COLUMNS,
    NEWS_COLUMNS,
    FilingStore,
    NewsStore,
    decision_time_utc,
    eastern_utc_offset_hours,
    filing_available_utc,
)
from finenvs.errors import DataError

NEW_YORK = ZoneInfo("America/New_York")
SYMBOL = "AAA"
# 2025-03-09 (Sunday) is the first day of daylight saving time: the Friday before closes
# at 21:00 UTC, the Monday after at 20:00 UTC.
FRIDAY, MONDAY, TUESDAY, WEDNESDAY = "2025-03-07", "2025-03-10", "2025-03-11", "2025-03-12"


# ---------------------------------------------------------------- the clock
def _utc(local: dt.datetime) -> np.datetime64:
    return np.datetime64(local.astimezone(dt.timezone.utc).replace(tzinfo=None), "s")


def test_new_york_clock_agrees_with_zoneinfo_2007_to_2030():
    day, last = dt.date(2007, 1, 1), dt.date(2030, 12, 31)
    checked, wrong = 0, []
    while day <= last:
        close = dt.datetime.combine(day, dt.time(16, 0), NEW_YORK)
        cutoff = dt.datetime.combine(day, dt.time(17, 30), NEW_YORK)
        d64 = np.datetime64(day.isoformat(), "D")
        if eastern_utc_offset_hours(d64) != -close.utcoffset() // dt.timedelta(hours=1):
            wrong.append(("offset", day))
        if decision_time_utc(d64) != _utc(close):
            wrong.append(("close", day))
        if filing_available_utc(d64) != _utc(cutoff):
            wrong.append(("filing", day))
        checked += 1
        day += dt.timedelta(days=1)
    assert checked == 8766
    assert wrong == []


def test_clock_on_the_days_around_the_switches():
    # hand-checked anchors: the Sundays of the switch and the weekdays either side
    assert str(decision_time_utc(FRIDAY)) == "2025-03-07T21:00:00"
    assert str(decision_time_utc("2025-03-09")) == "2025-03-09T20:00:00"
    assert str(decision_time_utc(MONDAY)) == "2025-03-10T20:00:00"
    assert str(decision_time_utc("2025-10-31")) == "2025-10-31T20:00:00"
    assert str(decision_time_utc("2025-11-02")) == "2025-11-02T21:00:00"
    assert str(filing_available_utc(MONDAY)) == "2025-03-10T21:30:00"
    assert str(filing_available_utc("2025-01-15")) == "2025-01-15T22:30:00"


# ---------------------------------------------------------------- hand-made stores
def _news(items: list[tuple[str, str]], symbol: str = SYMBOL) -> NewsStore:
    """A news store of ``(id, published UTC)`` items (given out of order on purpose)."""
    table = {name: [] for name in NEWS_COLUMNS}
    for news_id, published in reversed(items):
        table["id"].append(news_id)
        table["symbol"].append(symbol)
        table["published_at"].append(np.datetime64(published, "s"))
        table["title"].append(f"title of {news_id}")
        table["summary"].append(f"summary of {news_id}")
        table["source"].append("Wire")
        table["url"].append(f"https://example.com/{news_id}")
        table["provider"].append("hand")
        table["provider_sentiment"].append(None)
    return NewsStore.from_columns(table)


def _filings(filings: list[tuple[str, str, list[str]]]) -> FilingStore:
    """A filing store of ``(filing id, filed date, sections)``."""
    table = {name: [] for name in FILING_COLUMNS}
    for filing_id, filed, sections in filings:
        for section in sections:
            text = f"text of {filing_id} {section}"
            for name, value in (
                ("filing_id", filing_id), ("symbol", SYMBOL), ("form", "10-K"), ("filed", filed),
                ("section", section), ("title", section.upper()), ("text", text), ("chars", len(text)),
                ("document", f"{filing_id}.htm"),
            ):
                table[name].append(value)
    return FilingStore.from_columns(table)


def _no_prices(symbol: str):
    raise AssertionError(f"these tests read no prices (asked for {symbol})")


def _view(as_of: str, news: NewsStore | None = None, filings: FilingStore | None = None) -> AsOfView:
    return AsOfView(_no_prices, as_of, counter=LookAheadCounter(), news=news, filings=filings)


def _ids(items: list[dict]) -> list[str]:
    return [item["id"] for item in items]


def test_news_published_exactly_at_the_close_is_visible_one_second_later_is_not():
    store = _news([
        ("fri-at", "2025-03-07T21:00:00"), ("fri-after", "2025-03-07T21:00:01"),
        ("mon-at", "2025-03-10T20:00:00"), ("mon-after", "2025-03-10T20:00:01"),
    ])
    friday, monday = _view(FRIDAY, store), _view(MONDAY, store)
    assert _ids(friday.news(SYMBOL, lookback_days=None)) == ["fri-at"]
    assert _ids(monday.news(SYMBOL, lookback_days=None)) == ["mon-at", "fri-after", "fri-at"]
    assert friday.news_item("fri-at")["published_at"] == "2025-03-07T21:00:00Z"
    assert monday.news_item("mon-at")["url"] == "https://example.com/mon-at"
    with pytest.raises(DataError):
        monday.news_item("mon-after")
    assert _ids(_view(TUESDAY, store).news(SYMBOL, lookback_days=None))[0] == "mon-after"


def test_filing_is_invisible_on_its_filing_date_and_visible_the_next_weekday():
    store = _filings([("F-fri", FRIDAY, ["item_1a", "item_7"]), ("F-tue", TUESDAY, ["item_7"])])
    assert _view(FRIDAY, filings=store).filings() == []
    monday = _view(MONDAY, filings=store).filings()
    assert [(f["id"], f["filed"], f["available_at"]) for f in monday] == [
        ("F-fri", FRIDAY, "2025-03-07T22:30:00Z")
    ]
    assert [s["section"] for s in monday[0]["sections"]] == ["item_1a", "item_7"]
    assert _ids(_view(TUESDAY, filings=store).filings()) == ["F-fri"]
    assert _ids(_view(WEDNESDAY, filings=store).filings()) == ["F-tue", "F-fri"]  # newest first
    with pytest.raises(DataError):
        _view(TUESDAY, filings=store).filing_section("F-tue", "item_7")
    assert _view(WEDNESDAY, filings=store).filing_section("F-tue", "item_7")["text"] == "text of F-tue item_7"


def _message(exc: pytest.ExceptionInfo, asked: str) -> str:
    return str(exc.value).replace(repr(asked), "<id>")


def test_a_not_yet_public_news_item_reads_like_a_missing_one_but_is_counted():
    view = _view(MONDAY, _news([("old", "2025-03-03T15:00:00"), ("later", "2025-03-10T20:00:01")]))
    with pytest.raises(DataError) as missing:
        view.news_item("no-such-id")
    assert view.counter.attempts == 0
    with pytest.raises(DataError) as future:
        view.news_item("later")
    assert view.counter.attempts == 1
    assert _message(future, "later") == _message(missing, "no-such-id")
    assert view.counter.log[0].as_of == MONDAY
    view.news_item("old")
    assert view.counter.attempts == 1


def test_a_not_yet_public_filing_reads_like_a_missing_one_but_is_counted():
    view = _view(TUESDAY, filings=_filings([("F-old", FRIDAY, ["item_7"]), ("F-new", TUESDAY, ["item_7"])]))
    with pytest.raises(DataError) as missing:
        view.filing_section("F-none", "item_7")
    assert view.counter.attempts == 0
    with pytest.raises(DataError) as future:
        view.filing_section("F-new", "item_7")
    assert view.counter.attempts == 1
    assert _message(future, "F-new") == _message(missing, "F-none")
    # a section the future filing lacks gets the same answer: its section list is not revealed
    with pytest.raises(DataError) as future_bad_section:
        view.filing_section("F-new", "no_such_section")
    assert _message(future_bad_section, "F-new") == _message(missing, "F-none")
    assert view.counter.attempts == 2
    with pytest.raises(DataError, match=r"its sections: \['item_7'\]"):
        view.filing_section("F-old", "no_such_section")
    assert view.counter.attempts == 2


def test_news_end_past_the_clock_is_counted_and_clipped():
    store = _news([("a", "2025-03-10T19:00:00"), ("b", "2025-03-10T20:30:00"), ("c", "2025-03-12T12:00:00")])
    view = _view(MONDAY, store)
    assert _ids(view.news(SYMBOL, end="2025-12-31")) == ["a"]
    assert view.counter.attempts == 1
    assert _ids(view.news(SYMBOL, start="2025-03-11")) == []
    assert view.counter.attempts == 2
    assert _ids(view.news(SYMBOL, end=MONDAY)) == ["a"]
    assert _ids(view.news(SYMBOL, end=FRIDAY)) == []
    assert view.counter.attempts == 2
    assert view.news("OTHER") == [] and _view(MONDAY).news(SYMBOL) == []


def test_news_lookback_and_start_windows_are_open_below_and_closed_above():
    store = _news([
        ("lb-edge", "2025-03-07T20:00:00"),  # exactly 3 * 24 h before Monday's close
        ("lb-in", "2025-03-07T20:00:01"),
        ("st-edge", "2025-03-06T21:00:00"),  # exactly Thursday's close (before DST)
        ("st-in", "2025-03-06T21:00:01"),
        ("close", "2025-03-10T20:00:00"),
    ])
    view = _view(MONDAY, store)
    assert _ids(view.news(SYMBOL, lookback_days=3)) == ["close", "lb-in"]
    assert _ids(view.news(SYMBOL, start=FRIDAY)) == ["close", "lb-in", "lb-edge", "st-in"]
    assert _ids(view.news(SYMBOL, lookback_days=0)) == []
    assert _ids(view.news(SYMBOL, lookback_days=None)) == ["close", "lb-in", "lb-edge", "st-in", "st-edge"]
    assert _ids(view.news(SYMBOL, start=FRIDAY, end=FRIDAY)) == ["lb-in", "lb-edge", "st-in"]
    assert view.counter.attempts == 0
    with pytest.raises(DataError, match="lookback_days=-1"):
        view.news(SYMBOL, lookback_days=-1)


# ---------------------------------------------------------------- the shipped corpus
def test_shipped_news_and_filings_are_present_and_attributed(catalog):
    news, filings = catalog.news(), catalog.filings()
    assert len(news) > 1000 and len(filings) > 0
    assert all(isinstance(s, str) and s.strip() for s in news.source.tolist())
    assert all(isinstance(u, str) and u.strip() for u in news.url.tolist())
    assert all(isinstance(t, str) and t.strip() for t in filings.text.tolist())
    assert {"AAPL", "MSFT"} <= set(news.symbols())
    assert "AAPL-10-K-2024-11-01" in set(filings.filing_id.tolist())


def test_verify_reports_a_news_file_whose_bytes_changed(tmp_path: Path):
    import duckdb

    root = tmp_path / "envs_data"
    shutil.copytree(shipped_data_dir(), root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = root / "news" / "news.parquet"
    con = duckdb.connect()
    try:
        frame = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
        frame.loc[17, "url"] = ""
        con.register("frame", frame)
        con.execute(f"COPY (SELECT * FROM frame) TO '{path}' (FORMAT PARQUET)")
    finally:
        con.close()
    result = verify_data(root)
    assert not result.ok
    assert len(result.problems) == 1
    assert result.problems[0].startswith("news/news.parquet: sha256 ")
    assert "does not match" in result.problems[0]
