"""``finenvs data fetch``: Yahoo bars and news into the user layer, offline on recorded responses.

The recordings are written here in ``yfinance``'s output shape (a frame indexed by a time-zone-aware
``Date`` with ``Open, High, Low, Close, Adj Close, Volume``; news as ``Ticker.news`` lists them) and
replayed through the adapter with ``$FINENVS_FETCH_REPLAY``; the layer is a temporary folder.
"""

from __future__ import annotations

import datetime as dt
import sys
import types
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

    slept = []
    monkeypatch.setattr(fetch.time, "sleep", slept.append)
    fetch_prices(["TSLA2", "BAD", "NOPE"], start="2026-04-01", end=LAST, layer=UserLayer(tmp_path / "l"),
                 catalog=catalog, sleep=0.25, now=AFTER_CLOSE)
    assert slept == [0.25, 0.25]  # between calls, not before the first


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
    monkeypatch.setitem(sys.modules, "edgar", fake)
    (record,) = edgar.fetch_filings("TSLA", "2026-04-01", "2026-04-30", ("8-K",), AGENT)
    assert calls == [("identity", AGENT), ("company", "TSLA"),
                     ("filings", {"form": ["8-K"], "filing_date": "2026-04-01:2026-04-30"})]
    assert (record["filing_date"], record["sections"]) == ("2026-04-22", {"document": "The whole filing."})
