"""``finenvs data fetch``: Yahoo bars and news, EDGAR filings and their XBRL into the user layer, offline on
recorded responses.

The Yahoo recordings are written here in ``yfinance``'s output shape (a frame indexed by a time-zone-aware
``Date`` with ``Open, High, Low, Close, Adj Close, Volume``; news as ``Ticker.news`` lists them); the EDGAR ones
are submissions JSON (tests/fixtures/edgar) and the shipped bundles' XBRL documents as EDGAR's filing folders
serve them. They are replayed through the adapters with ``$FINENVS_FETCH_REPLAY``; the layer is a temporary folder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import sys
import types
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from finenvs.cli import main
from finenvs.data.catalog import Catalog
from finenvs.data.fetch import Outcome, fetch_news, fetch_prices, last_final_day, news_rows
from finenvs.data.sources import REPLAY_ENV_VAR, yahoo
from finenvs.data.user_layer import ENV_VAR, UserLayer

FIRST, MIDDLE, LAST = "2026-01-02", "2026-03-31", "2026-04-30"
NY = ZoneInfo("America/New_York")
AFTER_CLOSE = dt.datetime(2026, 11, 27, 23, 0, tzinfo=dt.timezone.utc)


def yahoo_frame(series, lo: str, hi: str, adj: float = 0.99) -> pd.DataFrame:
    """Bars of ``series`` dated ``lo..hi`` as ``yfinance`` returns them (``auto_adjust=False``)."""
    keep = (series.dates >= np.datetime64(lo)) & (series.dates <= np.datetime64(hi))
    index = pd.DatetimeIndex(pd.to_datetime(series.dates[keep]), name="Date").tz_localize(NY)
    close = series.close[keep]
    return pd.DataFrame({"Open": series.open[keep], "High": series.high[keep], "Low": series.low[keep],
                         "Close": close, "Adj Close": close * adj, "Volume": series.volume[keep]}, index=index)


NEWS = [
    {"id": "n-new-1", "content": {"id": "n-new-1", "contentType": "STORY", "title": "Deliveries beat estimates",
                                  "summary": "Quarterly deliveries rose.", "pubDate": "2026-04-16T13:05:00Z",
                                  "provider": {"displayName": "Reuters", "url": "https://www.reuters.com"},
                                  "canonicalUrl": {"url": "https://finance.yahoo.com/news/deliveries-1.html"}}},
    {"id": "n-new-2", "content": {"id": "n-new-2", "contentType": "STORY", "title": "Plant expansion",
                                  "summary": "", "pubDate": "2026-04-17T20:30:00Z",
                                  "provider": {"displayName": "Bloomberg"},
                                  "clickThroughUrl": {"url": "https://finance.yahoo.com/news/plant-2.html"}}},
    {"uuid": "n-old-3", "title": "Analyst day", "publisher": "Investor's Business Daily",
     "link": "https://finance.yahoo.com/m/analyst-3.html", "providerPublishTime": 1776470400, "type": "STORY"},
]


@pytest.fixture(scope="module")
def tsla(catalog):
    return catalog.shipped_series("TSLA")


@pytest.fixture
def replay(tmp_path, monkeypatch, tsla):
    """A recording folder: TSLA2 (TSLA's bars under a name the catalog does not ship), BAD, and news."""
    folder = tmp_path / "recorded"
    yahoo.save_bars(yahoo_frame(tsla, FIRST, LAST), "TSLA2", folder)
    bad = yahoo_frame(tsla, "2026-04-01", LAST)
    bad.iloc[2, bad.columns.get_loc("Close")] = -5.0  # a broken bar on the third row
    yahoo.save_bars(bad, "BAD", folder)
    yahoo.save_news(NEWS, "TSLA2", folder)
    monkeypatch.setenv(REPLAY_ENV_VAR, str(folder))
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "user"))
    return folder


class Spy:
    """The Yahoo adapter, recording each request."""

    def __init__(self):
        self.calls = []

    def fetch_bars(self, symbol, start, end):
        self.calls.append((symbol, start, end))
        return yahoo.fetch_bars(symbol, start, end)


def layer_files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and not p.name.startswith(".")}


# ---------------------------------------------------------------------------- prices
def test_roll_forward_in_two_fetches_equals_one_fetch_and_data_add(replay, tmp_path, catalog, tsla):
    two, one, added = UserLayer(tmp_path / "two"), UserLayer(tmp_path / "one"), UserLayer(tmp_path / "add")
    first = fetch_prices(["TSLA2"], start=FIRST, end=MIDDLE, layer=two, catalog=catalog, sleep=0, now=AFTER_CLOSE)
    second = fetch_prices(["TSLA2"], end=LAST, layer=two, catalog=catalog, sleep=0, now=AFTER_CLOSE)
    whole = fetch_prices(["TSLA2"], start=FIRST, end=LAST, layer=one, catalog=catalog, sleep=0, now=AFTER_CLOSE)
    recorded = yahoo_frame(tsla, FIRST, LAST)
    n_first = int((recorded.index.strftime("%Y-%m-%d") <= MIDDLE).sum())
    assert [(o.status, o.added, o.date_min, o.date_max) for o in first + second + whole] == [
        ("added", n_first, FIRST, MIDDLE), ("added", len(recorded) - n_first, "2026-04-01", LAST),
        ("added", len(recorded), FIRST, LAST)]
    # the same bytes, manifest and digest as one fetch, and as `data add` of the recording written as a CSV
    path = tmp_path / "recorded.csv"
    recorded.reset_index().rename(columns={"Date": "date"}).to_csv(path, index=False)
    added.add_prices(str(path), "TSLA2", catalog=catalog)
    assert layer_files(two.root) == layer_files(one.root) == layer_files(added.root)
    assert two.digest == one.digest == added.digest is not None
    # the bars are scaled to the adjusted close, as `data add` does with an Adj Close column
    got = two.series("TSLA2", "core")
    np.testing.assert_allclose(got.close, recorded["Adj Close"].to_numpy(), rtol=1e-12)
    assert str(got.dates[-1]) == LAST


def test_a_second_fetch_asks_only_for_days_after_the_last_bar(replay, tmp_path, catalog):
    layer, spy = UserLayer(tmp_path / "layer"), Spy()
    fetch_prices(["TSLA2"], start=FIRST, end=MIDDLE, layer=layer, catalog=catalog, source=spy, sleep=0,
                 now=AFTER_CLOSE)
    fetch_prices(["TSLA2"], start=FIRST, end=LAST, layer=layer, catalog=catalog, source=spy, sleep=0,
                 now=AFTER_CLOSE)
    (again,) = fetch_prices(["TSLA2"], end=LAST, layer=layer, catalog=catalog, source=spy, sleep=0, now=AFTER_CLOSE)
    assert spy.calls == [("TSLA2", FIRST, MIDDLE), ("TSLA2", "2026-04-01", LAST)]  # the third asked nothing
    assert again.status == "up to date" and f"last bar {LAST}" in again.line()
    (weekend,) = fetch_prices(["TSLA2"], end="2026-05-03", layer=layer, catalog=catalog, source=spy, sleep=0,
                              now=AFTER_CLOSE)  # 05-01 is a Friday with no recorded bar; 05-02/03 a weekend
    assert weekend.status == "failed" and "no bars for 2026-05-01..2026-05-03" in weekend.message
    assert spy.calls[-1] == ("TSLA2", "2026-05-01", "2026-05-03")
    (shipped,) = fetch_prices(["TSLA"], layer=layer, catalog=catalog, source=spy, sleep=0, now=AFTER_CLOSE)
    held_last = catalog.shipped_series("TSLA").dates[-1]
    # a shipped symbol resumes after its shipped data
    assert spy.calls[-1] == ("TSLA", str(held_last + np.timedelta64(1, "D")), last_final_day(AFTER_CLOSE))
    assert shipped.status == "failed" and "no recorded bars for TSLA" in shipped.message


def test_todays_bar_is_fetched_only_once_final(replay, tmp_path, catalog):
    before = dt.datetime(2026, 4, 30, 15, 0, tzinfo=NY)
    after = dt.datetime(2026, 4, 30, 18, 30, tzinfo=NY)
    assert (last_final_day(before), last_final_day(after)) == ("2026-04-29", LAST)
    layer = UserLayer(tmp_path / "layer")
    (early,) = fetch_prices(["TSLA2"], start="2026-04-20", end=LAST, layer=layer, catalog=catalog, sleep=0,
                            now=before)
    (late,) = fetch_prices(["TSLA2"], layer=layer, catalog=catalog, sleep=0, now=after)
    assert (early.date_max, late.date_min, late.date_max, late.added) == ("2026-04-29", LAST, LAST, 1)


def test_what_could_not_be_got_is_named_and_the_others_are_fetched(replay, tmp_path, catalog, capsys):
    code = main(["data", "fetch", "--prices", "TSLA2", "BAD", "NOPE", "--start", "2026-04-01", "--end", LAST,
                 "--sleep", "0"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "[1/3] prices TSLA2: added" in out and "[3/3] could not get prices of NOPE" in out
    assert "fetched" in out and "2 failed" in out
    bad, nope = err.strip().splitlines()
    # the validation error of `data add`: which fetch, the row and the column
    assert bad.startswith("could not get prices of BAD: yahoo bars of BAD 2026-04-01..2026-04-30: row 3")
    assert "close" in bad.lower()
    assert nope.startswith("could not get prices of NOPE: ") and "no recorded bars for NOPE" in nope
    assert UserLayer().series("BAD", "core") is None  # nothing of a broken fetch enters the layer
    assert str(Catalog().series("TSLA2").dates[-1]) == LAST
    assert main(["data", "fetch", "--prices", "BAD", "NOPE", "--start", "2026-04-01", "--sleep", "0"]) == 1
    assert main(["data", "fetch", "--prices", "NEW", "--sleep", "0"]) == 1  # nothing held and no --start
    assert "give --start" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["data", "fetch", "--prices", "TSLA2", "--start", "April"])
    assert exit_.value.code == 2


def test_a_symbol_that_cannot_name_a_file_is_refused_before_any_call(replay, tmp_path, catalog):
    spy = Spy()
    outcomes = fetch_prices(["../prices/TSLA2", "A" * 40], start=FIRST, end=LAST, layer=UserLayer(tmp_path / "l"),
                            catalog=catalog, source=spy, sleep=0, now=AFTER_CLOSE)
    outcomes += fetch_news(["../news/TSLA2"], layer=UserLayer(tmp_path / "l"), catalog=catalog, sleep=0)
    assert spy.calls == [] and [o.status for o in outcomes] == ["failed"] * 3
    assert all("use letters, digits" in o.message and len(o.line()) < 300 for o in outcomes)


def test_calls_are_paced(replay, tmp_path, catalog, monkeypatch):
    import finenvs.data.fetch as fetch

    slept, clock = [], [100.0]
    monkeypatch.setattr(fetch.time, "sleep", slept.append)
    pacer = fetch.Pacer(0.25, clock=lambda: clock[0])  # a clock that stands still: each wait sleeps it all
    fetch_prices(["TSLA2", "BAD", "NOPE"], start="2026-04-01", end=LAST, layer=UserLayer(tmp_path / "l"),
                 catalog=catalog, now=AFTER_CLOSE, pacer=pacer)
    assert slept == [0.25, 0.25]  # between calls, not before the first
    clock[0] += 0.2  # 0.2 s passed since the last call: only the rest is slept
    pacer.wait()
    assert slept[-1] == pytest.approx(0.05)
    clock[0] += 1.0
    pacer.wait()
    assert len(slept) == 3  # a second passed: no sleep


def test_adapter_asks_yfinance_for_unadjusted_daily_bars_with_an_exclusive_end(monkeypatch, tsla):
    asked = {}

    class Ticker:
        def __init__(self, symbol):
            asked["symbol"] = symbol

        def history(self, **kwargs):
            asked.update(kwargs)
            return yahoo_frame(tsla, "2026-04-01", "2026-04-30").assign(Dividends=0.0)

    monkeypatch.delenv(REPLAY_ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "yfinance", types.SimpleNamespace(Ticker=Ticker))
    frame = yahoo.fetch_bars("TSLA", "2026-04-01", "2026-04-30")
    assert asked == {"symbol": "TSLA", "start": "2026-04-01", "end": "2026-05-01", "interval": "1d",
                     "auto_adjust": False, "actions": False}
    assert tuple(frame.columns) == yahoo.BAR_COLUMNS
    monkeypatch.setitem(sys.modules, "yfinance", None)  # not installed
    with pytest.raises(yahoo.SourceError, match=r"pip install 'finenvs\[data\]'"):
        yahoo.fetch_news("TSLA")


# ---------------------------------------------------------------------------- news
def test_news_of_both_yfinance_shapes_enter_the_layer_date_locked(replay, tmp_path, catalog, tsla):
    rows = news_rows(NEWS, "TSLA2")
    assert [(r["id"], r["source"], r["published_at"], r["url"]) for r in rows] == [
        ("n-new-1", "Reuters", "2026-04-16T13:05:00Z", "https://finance.yahoo.com/news/deliveries-1.html"),
        ("n-new-2", "Bloomberg", "2026-04-17T20:30:00Z", "https://finance.yahoo.com/news/plant-2.html"),
        ("n-old-3", "Investor's Business Daily", "2026-04-18T00:00:00Z", "https://finance.yahoo.com/m/analyst-3.html")]
    fetch_prices(["TSLA2"], start=FIRST, end=LAST, sleep=0, now=AFTER_CLOSE)
    (first,) = fetch_news(["TSLA2"], end="2026-04-17", sleep=0)
    assert (first.status, first.added, first.date_min, first.date_max) == ("added", 2, "2026-04-16", "2026-04-17")
    # the date lock: the item published after the 04-16 close (20:00 UTC) is not seen on 04-16
    assert [i["id"] for i in catalog.as_of("2026-04-16").news("TSLA2")] == ["n-new-1"]
    assert [i["id"] for i in catalog.as_of("2026-04-17").news("TSLA2")] == ["n-new-1"]
    assert [i["id"] for i in catalog.as_of("2026-04-20").news("TSLA2")] == ["n-new-2", "n-new-1"]
    edited = [dict(NEWS[0], content={**NEWS[0]["content"], "title": "Deliveries beat estimates (updated)"}), *NEWS[1:]]
    yahoo.save_news(edited, "TSLA2", replay)
    (second,) = fetch_news(["TSLA2"], sleep=0)  # held items are not re-added, even edited since
    assert (second.status, second.added, second.skipped) == ("added", 1, 2)
    (third,) = fetch_news(["TSLA2"], sleep=0)
    assert third.status == "up to date"
    assert len(UserLayer().documents("news")["id"]) == 3


def test_a_broken_news_item_is_named(replay, tmp_path):
    broken = [dict(NEWS[2], uuid="n-ftp", link="ftp://example.com/x")]
    yahoo.save_news(broken, "TSLA3", replay)
    (got, missing) = fetch_news(["TSLA3", "NOPE"], sleep=0)
    assert got == Outcome("news", "TSLA3", "failed", message=(
        "yahoo news of TSLA3: row 1, column 'url': 'ftp://example.com/x' is not an http(s) URL"))
    assert missing.status == "failed" and "no recorded news for NOPE" in missing.message
    assert UserLayer().documents("news") is None


# ---------------------------------------------------------------------------- filings (SEC EDGAR)
FILINGS = [
    {"accession_number": "0000000001-26-000010", "cik": 1, "company": "Example Motors", "form": "10-Q",
     "filing_date": "2026-04-22", "url": "https://www.sec.gov/Archives/edgar/data/1/q1.htm",
     "sections": {"Item 2": "Management's discussion: revenue rose.", "Item 1A": "Risk factors unchanged."}},
    {"accession_number": "0000000001-26-000011", "cik": 1, "company": "Example Motors", "form": "8-K",
     "filing_date": "2026-04-28", "url": "https://www.sec.gov/Archives/edgar/data/1/8k.htm",
     "sections": {"Item 2.02": "Results of operations."}},
    {"accession_number": "0000000001-26-000012", "cik": 1, "company": "Example Motors", "form": "4",
     "filing_date": "2026-04-29", "sections": {"document": "not asked for"}},
]
AGENT = "Example Researcher research@example.com"


def test_filings_need_a_declared_user_agent(replay, tmp_path, catalog, monkeypatch, capsys):
    from finenvs.data.fetch import fetch_filings
    from finenvs.data.sources import edgar

    edgar.save_filings(FILINGS, "TSLA2", replay)
    monkeypatch.delenv(edgar.IDENTITY_ENV_VAR, raising=False)
    with pytest.raises(yahoo.SourceError, match="requires a declared User-Agent"):
        fetch_filings(["TSLA2"], start="2026-04-01", sleep=0)
    with pytest.raises(yahoo.SourceError, match="a name and an e-mail address"):
        fetch_filings(["TSLA2"], user_agent="curl/8.0", start="2026-04-01", sleep=0)
    with pytest.raises(SystemExit) as exit_:
        main(["data", "fetch", "--filings", "TSLA2", "--start", "2026-04-01", "--sleep", "0"])
    assert exit_.value.code == 2 and "User-Agent" in capsys.readouterr().err
    assert UserLayer().documents("filings") is None
    monkeypatch.setenv(edgar.IDENTITY_ENV_VAR, AGENT)  # edgartools' own variable also declares it
    assert edgar.user_agent() == AGENT


def test_filings_enter_the_layer_date_locked_and_resume(replay, tmp_path, catalog, capsys):
    from finenvs.data.fetch import fetch_filings
    from finenvs.data.sources import edgar

    edgar.save_filings(FILINGS, "TSLA2", replay)
    code = main(["data", "fetch", "--filings", "TSLA2", "--start", "2026-04-01", "--end", "2026-04-25",
                 "--user-agent", AGENT, "--sleep", "0"])
    assert code == 0 and "[1/1] filings TSLA2: added 2 filing sections (2026-04-22..2026-04-22)" in capsys.readouterr().out
    assert catalog.as_of("2026-04-22").filings("TSLA2") == []  # the date lock of `data add --filings`
    assert [f["id"] for f in catalog.as_of("2026-04-23").filings("TSLA2")] == ["0000000001-26-000010"]
    (second,) = fetch_filings(["TSLA2"], user_agent=AGENT, end=LAST, sleep=0, now=AFTER_CLOSE)  # resumes at 04-22
    assert (second.status, second.added, second.skipped, second.date_min) == ("added", 1, 2, "2026-04-28")
    (third,) = fetch_filings(["TSLA2"], user_agent=AGENT, end=LAST, sleep=0, now=AFTER_CLOSE)
    assert third.status == "up to date"
    table = UserLayer().documents("filings")
    assert sorted(zip(table["filing_id"], table["section"], table["form"], strict=True)) == [
        ("0000000001-26-000010", "Item 1A", "10-Q"), ("0000000001-26-000010", "Item 2", "10-Q"),
        ("0000000001-26-000011", "Item 2.02", "8-K")]  # the form 4 was not asked for
    broken = [dict(FILINGS[1], accession_number="0000000001-26-000013", filing_date="2026-04-30",
                   sections={"Item 8.01": ""})]
    edgar.save_filings(broken, "TSLA3", replay)
    (bad,) = fetch_filings(["TSLA3"], user_agent=AGENT, start="2026-04-01", end=LAST, sleep=0, now=AFTER_CLOSE)
    assert bad.status == "failed" and bad.message.startswith("edgar filings of TSLA3: row 1, column 'text'")


def test_edgar_adapter_declares_the_user_agent_before_asking(monkeypatch):
    from finenvs.data.sources import edgar

    calls = []

    class Filing:
        url = "https://www.sec.gov/x.htm"

        def to_dict(self):
            return {"accession_number": "0000000001-26-000010", "cik": 1, "company": "Example Motors",
                    "form": "8-K", "filing_date": dt.date(2026, 4, 22)}

        def obj(self):
            raise ValueError("no parsed object for this form")

        def text(self):
            return "The whole filing."

    class Company:
        def __init__(self, symbol):
            calls.append(("company", symbol))

        def get_filings(self, **kwargs):
            calls.append(("filings", kwargs))
            return [Filing()]

    fake = types.SimpleNamespace(set_identity=lambda agent: calls.append(("identity", agent)), Company=Company)
    monkeypatch.delenv(REPLAY_ENV_VAR, raising=False)
    monkeypatch.delenv(edgar.RATE_ENV_VAR, raising=False)  # the adapter sets it: restored after the test
    monkeypatch.setitem(sys.modules, "edgar", fake)
    (record,) = edgar.fetch_filings("TSLA", "2026-04-01", "2026-04-30", ("8-K",), AGENT)
    assert calls == [("identity", AGENT), ("company", "TSLA"),
                     ("filings", {"form": ["8-K"], "filing_date": "2026-04-01:2026-04-30"})]
    assert (record["filing_date"], record["sections"]) == ("2026-04-22", {"document": "The whole filing."})


# ---------------------------------------------------------------------------- XBRL (SEC EDGAR)
# Recorded responses: the submissions JSON written by hand in EDGAR's form (tests/fixtures/edgar) and, as the filing
# folders EDGAR serves, the shipped bundles' XBRL documents (real SEC files); one with a fact made not a number.
EDGAR_FIXTURES = Path(__file__).parent / "fixtures" / "edgar"
SHIPPED_XBRL = Path(__file__).resolve().parents[1] / "envs_data" / "xbrl"
RECORDED_XBRL = {"0000320193-23-000106": "aapl_10k_2023-09-30",
                 "0000320193-25-000057": "aapl_10q_2025-03-29_0000320193-25-000057",
                 "0001065280-24-000030": "nflx_10k_2023-12-31", "0001065280-24-000287": "nflx_10q_2024-09-30",
                 "0001628280-24-032662": "tsla_10q_2024-06-30"}
BROKEN_FACT = "0001628280-24-032662"
XBRL_START, XBRL_END = "2023-01-01", "2025-06-30"
AAPL_10Q = "aapl_10q_2025-03-29_0000320193-25-000057"
NFLX_10K, NFLX_10Q = "nflx_10k_2023-12-31_0001065280-24-000030", "nflx_10q_2024-09-30_0001065280-24-000287"
FETCHED = ["aapl_10k_2023-09-30_0000320193-23-000106", AAPL_10Q, NFLX_10K, NFLX_10Q]


def break_a_fact(instance: bytes) -> bytes:
    """The instance with the text of its first ``decimals="-6"`` fact made not a number."""
    return re.sub(rb'(decimals="-6"[^>]*>)(-?\d+)(<)', rb"\g<1>12x4\g<3>", instance, count=1)


def record_xbrl(folder: Path, accessions=tuple(RECORDED_XBRL), accepted: str | None = None) -> Path:
    from finenvs.data.sources import edgar

    shutil.copytree(EDGAR_FIXTURES / "submissions", folder / "edgar" / "submissions", dirs_exist_ok=True)
    for accession in accessions:
        files = {p.name: p.read_bytes() for p in (SHIPPED_XBRL / RECORDED_XBRL[accession]).iterdir()
                 if p.name != "filing.json"}
        if accession == BROKEN_FACT:
            files = {n: break_a_fact(d) if n.endswith("_htm.xml") else d for n, d in files.items()}
        edgar.save_xbrl_files(files, accession, folder, accepted=accepted)
    return folder


@pytest.fixture(scope="module")
def edgar_recording(tmp_path_factory):
    return record_xbrl(tmp_path_factory.mktemp("edgar-recorded"))


@pytest.fixture
def xbrl_replay(edgar_recording, tmp_path, monkeypatch):
    monkeypatch.setenv(REPLAY_ENV_VAR, str(edgar_recording))
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "user"))
    return edgar_recording


class EdgarSpy:
    """The EDGAR adapter, recording each call."""

    def __init__(self):
        self.listed, self.downloaded = [], []

    def list_xbrl_filings(self, symbol, start, end, forms, identity):
        from finenvs.data.sources import edgar

        self.listed.append((symbol, start, end))
        return edgar.list_xbrl_filings(symbol, start, end, forms, identity)

    def fetch_xbrl_files(self, record, identity):
        from finenvs.data.sources import edgar

        self.downloaded.append(record["accession_number"])
        return edgar.fetch_xbrl_files(record, identity)


def test_xbrl_bundles_enter_the_layer_as_the_corpus_finaudit_reads(xbrl_replay, capsys):
    import gymnasium as gym

    from finenvs.xbrl.corpus import ROW_COUNTERS, Corpus, shipped_corpus

    code = main(["data", "fetch", "--xbrl", "AAPL", "NFLX", "TSLA", "--start", XBRL_START, "--end", XBRL_END,
                 "--user-agent", AGENT, "--sleep", "0"])
    out, err = capsys.readouterr()
    assert code == 0
    assert ("[1/3] xbrl AAPL: added 2 XBRL bundles with 1924 facts (2023-11-03..2025-05-02); 0 already held; "
            "could not get 1") in out
    assert "[1/3]   0000320193-25-000057 (10-Q filed 2025-05-02): 760 facts, seen from 2025-05-02" in out  # progress
    assert "fetched 0 bars, 0 news items, 0 filing sections and 4 XBRL bundles (4172 facts); 2 of 3 requests done, " \
           "1 failed, 1 in part" in out  # TSLA got nothing; AAPL all but one filing
    missing, broken, field = err.strip().splitlines()  # what it could not get: the filing and the file or field
    assert missing.startswith("could not get xbrl of AAPL: 0000320193-24-000069 (10-Q filed 2024-08-02): SourceError: "
                              "no recorded XBRL documents for 0000320193-24-000069")
    assert broken.startswith("could not get xbrl of TSLA: 0001628280-24-032662 (10-Q filed 2024-07-24): "
                             "tsla-20240630_htm.xml: fact us-gaap:") and "'12x4' is not a number" in broken
    assert field == ("could not get xbrl of TSLA: edgar filings of TSLA 0001628280-24-043486: field "
                     "'acceptanceDateTime': '' is not a timestamp YYYY-MM-DDTHH:MM:SS")
    layer = UserLayer()
    assert sorted(layer.xbrl_bundles()) == FETCHED  # nothing of a refused filing entered, no staging left behind
    assert sorted(p.name for p in layer.root.iterdir() if p.name != ".lock") == ["MANIFEST.json", "xbrl"]
    corpus = Corpus(layer.xbrl_dir)  # the form of the shipped corpus: the same files parse to the same filing
    got, shipped = corpus.filing(AAPL_10Q), shipped_corpus().filing(AAPL_10Q)
    assert (got.facts, got.calculation, got.labels) == (shipped.facts, shipped.calculation, shipped.labels)
    assert (got.ticker, got.form, got.period_end, got.filed) == ("AAPL", "10-Q", "2025-03-29", "2025-05-02")
    index = corpus.index(AAPL_10Q)
    assert (index["accession_no"], index["filing_date"], index["accepted"], index["cik"]) == (
        "0000320193-25-000057", "2025-05-02", "2025-05-02T06:01:36.000Z", 320193)
    entries = layer.xbrl_bundles()[AAPL_10Q]  # every file in the manifest, with its rows and known-from day
    assert {e.file.rsplit("/", 1)[1]: e.rows for e in entries}["aapl-20250329_htm.xml"] == 760
    assert {(e.symbol, e.date_min, e.date_max) for e in entries} == {("AAPL", "2025-05-02", "2025-05-02")}
    assert main(["data", "list"]) == 0
    assert (f"xbrl: user 4 bundles (AAPL, NFLX), seen from 2023-11-03..2025-05-02, corpus folder {layer.xbrl_dir}"
            in capsys.readouterr().out)
    env = gym.make("FinAudit-v0", corpus=str(layer.xbrl_dir))  # FinAudit-v0 plays the fetched corpus
    _, info = env.reset(seed=0)
    assert info["bundle"] in FETCHED and info["as_of"] == corpus.filing(info["bundle"]).filed
    checked = layer.verify(row_counters=ROW_COUNTERS)  # as `finenvs data verify` does: re-hashed and recounted
    assert checked.problems == [] and len(checked.checked) == 4 * 7
    assert f"xbrl/{AAPL_10Q}/aapl-20250329_htm.xml: ok (760 rows, 2025-05-02..2025-05-02" in "\n".join(checked.checked)
    cal = layer.xbrl_dir / AAPL_10Q / "aapl-20250329_cal.xml"
    cal.write_bytes(b"<xbrl/>")  # edited by hand
    (layer.xbrl_dir / AAPL_10Q / "extra_lab.xml").write_bytes(b"<x/>")  # and a file no fetch wrote
    problems = layer.verify(row_counters=ROW_COUNTERS).problems
    assert len(problems) == 2 and problems[0].startswith(f"user layer: {cal}: sha256")
    assert "extra_lab.xml: not in its MANIFEST.json: no fetch wrote it, yet a corpus of this folder reads it" \
        in problems[1]


def test_xbrl_is_seen_from_its_acceptance_day_never_before(xbrl_replay, tmp_path, monkeypatch):
    from finenvs.data.fetch import fetch_xbrl, known_from
    from finenvs.tasks.audit.env import AuditView
    from finenvs.xbrl.corpus import Corpus, bundle_rows

    # accepted after 17:30 the day before: the filing date (the next day) wins; a later acceptance wins over it
    assert known_from("2024-10-18", "2024-10-17T18:05:12.000Z", None) == "2024-10-18"
    assert known_from("2025-05-02", "2025-05-02T06:01:36.000Z", "2025-05-05T09:00:00") == "2025-05-05"
    (got,) = fetch_xbrl(["NFLX"], check=bundle_rows, user_agent=AGENT, start=XBRL_START, end=XBRL_END, sleep=0)
    assert (got.status, got.added, got.date_min, got.date_max) == ("added", 2, "2024-01-26", "2024-10-18")
    corpus = Corpus(UserLayer().xbrl_dir)
    assert corpus.index(NFLX_10Q)["accepted"] == "2024-10-17T18:05:12.000Z"
    before = AuditView(corpus, "2024-10-17", NFLX_10K, corpus.filing(NFLX_10K))
    assert before.visible() == [NFLX_10K]
    with pytest.raises(ValueError) as not_yet:
        before.get(NFLX_10Q)
    with pytest.raises(ValueError) as unknown:
        before.get("nflx_10q_2099-12-31_0001065280-99-000001")
    assert str(not_yet.value).replace(NFLX_10Q, "X") == str(unknown.value).replace(
        "nflx_10q_2099-12-31_0001065280-99-000001", "X")  # a bundle not yet accepted answers as one never filed
    assert before.counter.attempts == 1  # and asking for it is a look-ahead attempt
    assert AuditView(corpus, "2024-10-18", NFLX_10K, corpus.filing(NFLX_10K)).visible() == [NFLX_10K, NFLX_10Q]
    # the SGML header's acceptance time (EDGAR's own, Eastern) is read too: later than the filing date, it wins
    late = record_xbrl(tmp_path / "late", ["0001065280-24-000287"], accepted="2024-10-21T08:00:00")
    monkeypatch.setenv(REPLAY_ENV_VAR, str(late))
    layer = UserLayer(tmp_path / "late-layer")
    (got,) = fetch_xbrl(["NFLX"], check=bundle_rows, user_agent=AGENT, start="2024-10-01", end=XBRL_END,
                        layer=layer, sleep=0)
    assert (got.added, got.date_min, got.problems) == (1, "2024-10-21", ())
    assert Corpus(layer.xbrl_dir).filing(NFLX_10Q).filed == "2024-10-21"


def test_xbrl_fetched_in_steps_equals_one_fetch_and_resumes_by_accession(xbrl_replay, tmp_path):
    from finenvs.data.fetch import fetch_xbrl
    from finenvs.xbrl.corpus import bundle_rows

    steps, once, spy = UserLayer(tmp_path / "steps"), UserLayer(tmp_path / "once"), EdgarSpy()
    outcomes = [fetch_xbrl(["AAPL", "NFLX"], check=bundle_rows, user_agent=AGENT, start=XBRL_START, end=cut,
                           layer=steps, source=spy, sleep=0) for cut in ("2023-12-31", "2024-12-31", XBRL_END)]
    fetch_xbrl(["AAPL", "NFLX"], check=bundle_rows, user_agent=AGENT, start=XBRL_START, end=XBRL_END, layer=once,
               sleep=0)
    assert layer_files(steps.root) == layer_files(once.root) and steps.digest == once.digest is not None
    assert [[(o.status, o.added, o.skipped) for o in step] for step in outcomes] == [
        [("added", 1, 0), ("up to date", 0, 0)], [("failed", 0, 1), ("added", 2, 0)],
        [("added", 1, 1), ("up to date", 0, 2)]]
    # a held filing is never downloaded again; the one that could not be got is asked for on each later fetch
    assert spy.downloaded == ["0000320193-23-000106", "0000320193-24-000069", "0001065280-24-000030",
                              "0001065280-24-000287", "0000320193-24-000069", "0000320193-25-000057"]
    (aapl, nflx) = fetch_xbrl(["AAPL", "NFLX"], check=bundle_rows, user_agent=AGENT, end=XBRL_END, layer=steps,
                              source=spy, sleep=0)  # no --start: from the earliest filing held
    assert spy.listed[-2:] == [("AAPL", "2023-11-03", XBRL_END), ("NFLX", "2024-01-26", XBRL_END)]
    assert spy.downloaded[-1] == "0000320193-24-000069" and (aapl.status, nflx.status) == ("failed", "up to date")
    (new,) = fetch_xbrl(["MSFT"], check=bundle_rows, user_agent=AGENT, layer=steps, source=spy, sleep=0)
    assert new.status == "failed" and "give --start" in new.message and spy.listed[-1][0] == "NFLX"


def test_xbrl_calls_keep_to_edgars_rate_limit(xbrl_replay, tmp_path, monkeypatch):
    import finenvs.data.fetch as fetch
    from finenvs.data.sources import edgar

    def rows_unchecked(folder):  # pacing is the subject here, not the bundle check
        return {p.name: 1 for p in folder.iterdir()}

    slept, spy = [], EdgarSpy()
    monkeypatch.setattr(fetch.time, "sleep", slept.append)
    pacer = fetch.Pacer(0.0, clock=lambda: 5.0)  # --sleep 0 and a clock that stands still
    fetch.fetch_xbrl(["AAPL", "NFLX"], check=rows_unchecked, user_agent=AGENT, start=XBRL_START, end=XBRL_END,
                     layer=UserLayer(tmp_path / "l"), source=spy, pacer=pacer)
    calls = len(spy.listed) + len(spy.downloaded)
    assert calls == 2 + 5 and slept == [1 / edgar.MAX_REQUESTS_PER_SECOND] * (calls - 1)  # never above 10 a second


def test_a_held_bundle_cannot_change(xbrl_replay, tmp_path):
    from finenvs.errors import DataError
    from finenvs.xbrl.corpus import bundle_rows

    layer = UserLayer(tmp_path / "layer")
    (layer.root / ".staging-1-dead" / "nflx_q3").mkdir(parents=True)  # what an add killed mid-way leaves
    files = {p.name: p.read_bytes() for p in (SHIPPED_XBRL / "nflx_10q_2024-09-30").iterdir()}
    first = layer.add_xbrl("nflx_q3", files, symbol="NFLX", filed="2024-10-18", check=bundle_rows, source="test")
    again = layer.add_xbrl("nflx_q3", files, symbol="NFLX", filed="2024-10-18", check=bundle_rows, source="test")
    assert (first.added, first.rows, again.added, again.skipped, again.digest) == (1, 1162, 0, 1, first.digest)
    changed = {**files, "nflx-20241018_lab.xml": files["nflx-20241018_lab.xml"] + b"\n"}
    with pytest.raises(DataError, match=r"test: file 'nflx-20241018_lab.xml' of bundle 'nflx_q3' differs"):
        layer.add_xbrl("nflx_q3", changed, symbol="NFLX", filed="2024-10-18", check=bundle_rows, source="test")
    no_cal = {n: d for n, d in files.items() if not n.endswith("_cal.xml")}
    with pytest.raises(DataError, match=r"nflx_q4: bundle is missing its cal \(_cal.xml\) file"):
        layer.add_xbrl("nflx_q4", no_cal, symbol="NFLX", filed="2024-10-18", check=bundle_rows, source="test")
    for bundle, name in (("../up", "a.xml"), ("ok", "../a.xml")):
        with pytest.raises(DataError, match="test: (bundle|file) name"):
            layer.add_xbrl(bundle, {name: b"x"}, symbol="NFLX", filed="2024-10-18", check=bundle_rows, source="test")
    assert sorted(layer.xbrl_bundles()) == ["nflx_q3"] and layer.digest == first.digest
    assert sorted(p.name for p in layer.root.iterdir()) == [".lock", "MANIFEST.json", "xbrl"]


def test_xbrl_needs_a_declared_user_agent(xbrl_replay, monkeypatch, capsys):
    from finenvs.data.sources import edgar

    monkeypatch.delenv(edgar.IDENTITY_ENV_VAR, raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["data", "fetch", "--xbrl", "AAPL", "--start", XBRL_START, "--sleep", "0"])
    assert exit_.value.code == 2 and "--xbrl: SEC EDGAR requires a declared User-Agent" in capsys.readouterr().err
    assert UserLayer().xbrl_bundles() == {}


def test_edgar_xbrl_adapter_asks_edgartools_for_the_filings_xbrl_documents(monkeypatch):
    from finenvs.data.sources import edgar

    calls = []
    instance = (SHIPPED_XBRL / AAPL_10Q / "aapl-20250329_htm.xml").read_text(encoding="utf-8")

    def attachment(kind, name, content):
        return types.SimpleNamespace(document_type=kind, document=name, content=content)

    class Filing:
        def __init__(self, **kwargs):
            calls.append(("filing", kwargs))
            self.attachments = types.SimpleNamespace(data_files=[
                attachment("EX-101.SCH", "aapl-20250329.xsd", "<schema/>"),
                attachment("EX-101.CAL", "aapl-20250329_cal.xml", "<linkbase/>"),
                attachment("XML", "aapl-20250329_htm.xml", instance),
                attachment("XML", "FilingSummary.xml", "<FilingSummary/>"),  # not XBRL: left out
                attachment("ZIP", "0000320193-25-000057-xbrl.zip", b"PK")])
            self.header = types.SimpleNamespace(acceptance_datetime=dt.datetime(2025, 5, 2, 6, 1, 36))

    class Company:
        def __init__(self, symbol):
            calls.append(("company", symbol))

        def get_filings(self, **kwargs):
            calls.append(("filings", kwargs))
            return [types.SimpleNamespace(accession_no="0000320193-25-000057", cik=320193, company="Apple Inc.",
                                          form="10-Q", filing_date=dt.date(2025, 5, 2), report_date="2025-03-29",
                                          acceptance_datetime=dt.datetime(2025, 5, 2, 6, 1, 36), is_xbrl=True)]

    fake = types.SimpleNamespace(set_identity=lambda agent: calls.append(("identity", agent)), Company=Company,
                                 Filing=Filing)
    monkeypatch.delenv(REPLAY_ENV_VAR, raising=False)
    monkeypatch.setenv(edgar.RATE_ENV_VAR, "50")  # more than EDGAR allows: capped before edgartools reads it
    monkeypatch.setitem(sys.modules, "edgar", fake)
    (record,) = edgar.list_xbrl_filings("AAPL", "2025-01-01", "2025-06-30", ("10-Q",), AGENT)
    assert calls == [("identity", AGENT), ("company", "AAPL"),
                     ("filings", {"form": ["10-Q"], "filing_date": "2025-01-01:2025-06-30"})]
    assert record == {"accession_number": "0000320193-25-000057", "cik": 320193, "company": "Apple Inc.",
                      "form": "10-Q", "filing_date": "2025-05-02", "report_date": "2025-03-29",
                      "acceptance_datetime": "2025-05-02 06:01:36", "is_xbrl": True}
    assert os.environ[edgar.RATE_ENV_VAR] == "10"
    got = edgar.fetch_xbrl_files(record, AGENT)
    assert sorted(got["files"]) == ["aapl-20250329.xsd", "aapl-20250329_cal.xml", "aapl-20250329_htm.xml"]
    assert got["files"]["aapl-20250329_htm.xml"] == instance.encode("utf-8") and got["accepted"] == "2025-05-02T06:01:36"
    assert calls[-1] == ("filing", {"cik": 320193, "company": "Apple Inc.", "form": "10-Q", "filing_date": "2025-05-02",
                                    "accession_no": "0000320193-25-000057"})
    with pytest.raises(edgar.SourceError, match="accession number"):
        edgar.fetch_xbrl_files({"accession_number": "../../etc"}, AGENT)


def test_a_submissions_json_that_is_not_one_is_named(tmp_path, monkeypatch):
    from finenvs.data.sources import edgar

    doc = json.loads((EDGAR_FIXTURES / "submissions" / "AAPL.json").read_text())
    del doc["filings"]["recent"]["acceptanceDateTime"]
    edgar.save_submissions(doc, "AAPL", tmp_path)
    monkeypatch.setenv(REPLAY_ENV_VAR, str(tmp_path))
    with pytest.raises(edgar.SourceError, match=r"AAPL.json: field 'filings.recent.acceptanceDateTime' is missing"):
        edgar.list_xbrl_filings("AAPL", XBRL_START, XBRL_END, ("10-Q",), AGENT)
    doc["filings"]["recent"]["acceptanceDateTime"] = ["2025-05-02T06:01:36.000Z"]
    edgar.save_submissions(doc, "AAPL", tmp_path)
    with pytest.raises(edgar.SourceError, match=r"'filings.recent.acceptanceDateTime' has 1 entries, "
                                                r"'filings.recent.accessionNumber' 5"):
        edgar.list_xbrl_filings("AAPL", XBRL_START, XBRL_END, ("10-Q",), AGENT)


# ---------------------------------------------------------------------------- the daily live loop
def test_data_fetch_then_llm_resume_live_day_by_day_equals_one_run(replay, tmp_path, monkeypatch, capsys):
    """The scheduled job of docs/data.md: ``data fetch`` then ``llm --resume RUN --live``, on recorded bars."""
    from finenvs.evaluation.runlog import read_trajectories
    from finenvs.evaluation.score import score_run

    def steps(run):
        return [(r["date"], r["action"], r["reward"]) for r in read_trajectories(run / "trajectories.jsonl")[0]
                if r.get("type") == "step"]

    runs, window = tmp_path / "runs", ["--split", "live", "--end", LAST]
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "live-layer"))
    codes = [main(["data", "fetch", "--prices", "TSLA2", "--start", FIRST, "--end", "2026-04-02", "--sleep", "0"]),
             main(["llm", "--env", "FinTrading-v0", "--symbols", "TSLA2", *window, "--live", "--out", str(runs),
                   "--name", "live", "--quiet"])]
    for day in ("2026-04-15", "2026-04-22", LAST):
        codes += [main(["data", "fetch", "--prices", "TSLA2", "--end", day, "--sleep", "0"]),
                  main(["llm", "--resume", str(runs / "live"), "--live", "--quiet"])]
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "whole-layer"))
    codes += [main(["data", "fetch", "--prices", "TSLA2", "--start", FIRST, "--end", LAST, "--sleep", "0"]),
              main(["llm", "--env", "FinTrading-v0", "--symbols", "TSLA2", *window, "--out", str(runs), "--name",
                    "whole", "--quiet"])]
    capsys.readouterr()
    assert codes == [0] * 10
    live, whole = score_run(runs / "live"), score_run(runs / "whole")
    assert live.status == whole.status == "reproduced"
    assert steps(runs / "live") == steps(runs / "whole") and len(steps(runs / "whole")) == 20
    assert live.episodes[0].metrics["standard"] == whole.episodes[0].metrics["standard"]
    assert live.episodes[0].metrics["herculean"] == whole.episodes[0].metrics["herculean"]
    assert layer_files(tmp_path / "live-layer") == layer_files(tmp_path / "whole-layer")
