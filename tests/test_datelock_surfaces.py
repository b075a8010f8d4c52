"""Counterfactual future invariance of what the date lock lists, names and counts (issue 31, item 2).

For several cut dates D the data is built three ways: as is, with everything after D changed, and with
everything after D deleted. Every answer an agent receives at D through the tools (the JSON text of
each result, error messages included) must be byte-identical across the three. The changes cover the
three surfaces where "later" used to differ from "absent":

* symbols: a symbol listed after D (first bar the next business day, or months later) against the same
  symbol never listed; bars after D of listed symbols changed or deleted; the symbol list given as a
  plain list (one price lookup per symbol) and as the catalog's :class:`~finenvs.data.asof.Listing`;
* filing sections: a filing whose sections carry different filing dates, a section filed on D (public
  only after the close) or later, a filing filed after D, against the same sections absent or refiled
  later with other text, and sections added to later filings;
* XBRL bundles (FinAudit-v0's tools and FinQA-v0's): every shipped bundle released after D, and one more
  released in 2030, against a corpus without them, and against one where they are released later still
  and hold another filing's numbers.

What may differ is only what the evaluator reads after the episode: a request for something that exists
later is counted as a look-ahead attempt, a request for something that never exists is not; the tests
check those counts too. Small hand-made price, news and filing data and symlinked copies of the shipped
XBRL corpus keep the file fast.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from finenvs.data.asof import AsOfView, Listing, LookAheadCounter
from finenvs.data.documents import FILING_COLUMNS, NEWS_COLUMNS, FilingStore, NewsStore, decision_time_utc
from finenvs.data.schema import PriceSeries
from finenvs.errors import DataError, DataFileError, UnknownSymbolError
from finenvs.tasks.audit.env import FinAuditEnv
from finenvs.tasks.qa import knowledge
from finenvs.tasks.qa.env import QA_PROTOCOL
from finenvs.tasks.report.env import REPORT_PROTOCOL
from finenvs.tasks.report.metrics import METRIC_BLOCKS
from finenvs.tasks.trading.protocol import TRADING_PROTOCOL
from finenvs.tools import ToolBox
from finenvs.tools.registry import Tool
from finenvs.xbrl.corpus import Corpus, shipped_corpus, shipped_xbrl_dir
from finenvs.xbrl.model import Filing
from finenvs.xbrl.tasks import eval_instances

#: Cut dates of the market surfaces (weekdays; one at each side of a DST switch, one at a year end).
MARKET_CUTS = ("2019-03-08", "2019-03-11", "2020-12-31", "2024-07-03")
#: symbol -> its first bar, in calendar days after the cut (negative: listed before it). NEVER is never listed.
LISTED = {"OLD": -400, "MID": -20, "LATE": 1, "NEWCO": 75}
ASKED = (*LISTED, "NEVER")
LAST_DAY = 150  # every symbol's last bar, days after the cut
WORLDS = ("as is", "changed after D", "deleted after D")
PEERS = {"OLD": ("MID", "LATE", "NEWCO"), "MID": ("OLD", "LATE"), "LATE": ("OLD", "MID"), "NEWCO": ("OLD",)}


def _day(cut: str, days: int) -> np.datetime64:
    return np.datetime64(cut, "D") + np.timedelta64(days, "D")


def _bars(symbol: str, first: np.datetime64, last: np.datetime64, seed: int) -> PriceSeries:
    dates = np.arange(first, last + 1, dtype="datetime64[D]")
    dates = dates[np.is_busday(dates)]
    rng = np.random.default_rng(seed)
    close = 50.0 * np.exp(np.cumsum(0.01 * rng.standard_normal(dates.size)))
    open_ = close * np.exp(0.003 * rng.standard_normal(dates.size))
    high, low = np.maximum(open_, close) * 1.01, np.minimum(open_, close) * 0.99
    return PriceSeries.from_arrays(symbol, dates, open_, high, low, close, rng.integers(1_000, 9_000, dates.size))


def _after(series: PriceSeries, cut: str, world: str) -> PriceSeries | None:
    """``series`` as the world holds it: bars after the cut scaled (and a later listing moved later), or cut off."""
    cut_day = np.datetime64(cut, "D")
    later = series.dates > cut_day
    if world == "as is" or not later.any():
        return series
    if world == "deleted after D":
        keep = ~later
        if not keep.any():
            return None  # listed after the cut: never listed at all
        return series.slice(0, int(keep.sum()))
    start = 10 if series.dates[0] > cut_day else 0  # a later listing happens later still
    k = np.where(later, 3.0, 1.0)[start:]
    return PriceSeries.from_arrays(series.symbol, series.dates[start:], series.open[start:] * k,
                                   series.high[start:] * k, series.low[start:] * k, series.close[start:] * k,
                                   series.volume[start:] * np.where(later[start:], 7, 1))


def _news(cut: str, world: str) -> NewsStore:
    """Items of every symbol at both sides of the close of the cut day, one of LATE before its listing."""
    close = decision_time_utc(cut)
    hour = np.timedelta64(3600, "s")
    rows = []
    for k, symbol in enumerate(LISTED):
        for j, offset in enumerate((-120 * hour, -1 * hour, 0 * hour, 1 * hour, 80 * hour)):
            rows.append({"id": f"{symbol}-n{j}", "symbol": symbol, "published_at": close + offset + k * np.timedelta64(60, "s"),
                         "title": f"{symbol} headline {j}", "summary": f"{symbol} summary {j}", "source": "Wire",
                         "url": f"https://example.com/{symbol}/{j}", "provider": "test", "provider_sentiment": None})
    if world == "deleted after D":
        rows = [r for r in rows if r["published_at"] <= close]
    elif world == "changed after D":
        for r in rows:
            if r["published_at"] > close:
                r.update(title="rewritten", summary="rewritten", published_at=r["published_at"] + 50 * hour,
                         provider_sentiment="Negative")
        rows.append({"id": "NEVER-n0", "symbol": "NEVER", "published_at": close + 1 * hour, "title": "later",
                     "summary": "", "source": "Wire", "url": "https://example.com/x", "provider": "test",
                     "provider_sentiment": None})
    table = {name: [r[name] for r in rows] for name in NEWS_COLUMNS}
    table["published_at"] = np.array(table["published_at"], dtype="datetime64[s]")
    return NewsStore.from_columns(table)


def _filing_rows(cut: str) -> list[dict[str, Any]]:
    """Filings around the cut: one whose three sections carry three dates (the middle one the cut day)."""
    sections = {
        ("OLD-10-K", "OLD", "10-K"): [("item_1a_risk_factors", -40), ("item_7_mdna", -40)],
        ("OLD-10-Q-MIXED", "OLD", "10-Q"): [("part1_item_2_mdna", -10), ("part2_item_1a_risk_factors", 0),
                                            ("part2_item_5_other", 5)],
        ("MID-10-Q", "MID", "10-Q"): [("part1_item_2_mdna", 1), ("part2_item_1a_risk_factors", 1)],
        ("LATE-10-K", "LATE", "10-K"): [("item_7_mdna", -3)],
    }
    return [{"filing_id": fid, "symbol": sym, "form": form, "filed": _day(cut, days), "section": section,
             "title": section.replace("_", " "), "text": f"{fid} {section}: revenue rose 12%. " * (3 + days % 5),
             "document": f"{fid}.htm"}
            for (fid, sym, form), secs in sections.items() for section, days in secs]


def _filings(cut: str, world: str) -> FilingStore:
    rows = _filing_rows(cut)

    def later(row: dict[str, Any]) -> bool:  # filed f is public from 17:30 New York on f: after the close of f
        return row["filed"] >= np.datetime64(cut, "D")

    if world == "deleted after D":
        rows = [r for r in rows if not later(r)]
    elif world == "changed after D":
        for r in rows:
            if later(r):
                r.update(text="refiled text " * 40, title="refiled", filed=r["filed"] + np.timedelta64(7, "D"))
        rows += [{**r, "section": "item_99_added", "text": "an added section"} for r in rows if later(r)]
        rows.append({"filing_id": "NEWCO-10-K", "symbol": "NEWCO", "form": "10-K", "filed": _day(cut, 2),
                     "section": "item_7_mdna", "title": "MD&A", "text": "not yet", "document": "n.htm"})
    table = {name: [r[name] for r in rows] for name in FILING_COLUMNS if name != "chars"}
    table["chars"] = [len(t) for t in table["text"]]
    table["filed"] = np.array(table["filed"], dtype="datetime64[D]")
    return FilingStore.from_columns(table)


class _Desk:
    """The least an env offers the tools: a family, a protocol, one episode symbol and a fresh view per call."""

    def __init__(self, family: str, protocol: Any, make_view: Callable[[LookAheadCounter], Any], peers=None):
        self.task_family, self.text_protocol = family, protocol
        self.market = SimpleNamespace(symbol="OLD")
        self.peer_map = dict(peers or {})
        self.counter = LookAheadCounter()
        self._make_view = make_view

    def as_of_view(self) -> Any:
        return self._make_view(self.counter)

    def text_state(self) -> dict[str, str]:
        return {"Symbol": "OLD", "Date": str(self.as_of_view().as_of)}

    def metrics_at(self, symbol: str, row: int) -> dict[str, float]:  # numbers of the visible calendar only
        return {name: 0.001 * row + i for i, name in enumerate(n for names in METRIC_BLOCKS.values() for n in names)}


def _market_view_factory(cut: str, world: str, listing: bool) -> Callable[[LookAheadCounter], AsOfView]:
    held = {s: _after(_bars(s, _day(cut, d), _day(cut, LAST_DAY), seed=i), cut, world) for i, (s, d) in
            enumerate(LISTED.items())}
    series = {s: v for s, v in held.items() if v is not None}
    names = sorted(series)
    news, filings = _news(cut, world), _filings(cut, world)

    def lookup(symbol: str) -> PriceSeries:
        if symbol not in series:
            raise UnknownSymbolError(f"unknown symbol {symbol!r}; valid symbols: {names}")  # names later ones too
        return series[symbol]

    def first_bars() -> dict[str, str]:
        return {s: str(v.dates[0]) for s, v in series.items()}

    def make(counter: LookAheadCounter) -> AsOfView:
        symbols = Listing(names, first_bars) if listing else list(names)
        return AsOfView(lookup, cut, counter=counter, news=news, filings=filings, symbols=symbols)

    return make


def _market_battery(cut: str) -> list[tuple[str, dict[str, Any]]]:
    soon, far = str(_day(cut, 30)), str(_day(cut, -30))
    calls: list[tuple[str, dict[str, Any]]] = [("get_state", {}), ("list_filings", {}), ("get_rate", {})]
    for s in ASKED:
        calls += [("get_prices", {"symbol": s, "lookback": 5}), ("get_prices", {"symbol": s, "start": far, "end": soon}),
                  ("get_indicators", {"names": ["sma", "rsi"], "symbol": s, "history": 3}),
                  ("list_news", {"symbol": s, "lookback_days": 3650}), ("list_filings", {"symbol": s}),
                  ("list_filings", {"symbol": s, "form": "10-Q"})]
    store = _news(cut, "as is")
    calls += [("get_news", {"id": str(i)}) for i in [*store.id, "NEVER-n0"]]
    pairs = {(str(r["filing_id"]), str(r["section"])) for r in _filing_rows(cut)}
    pairs |= {("OLD-10-Q-MIXED", "item_99_added"), ("NEWCO-10-K", "item_7_mdna"), ("NO-SUCH-FILING", "item_7_mdna")}
    calls += [("get_filing_section", {"id": f, "section": s, "max_chars": 200}) for f, s in sorted(pairs)]
    return calls


def _report_battery() -> list[tuple[str, dict[str, Any]]]:
    return [call for s in ASKED for call in (("get_peers", {"symbol": s}), ("get_weekly_metrics", {"symbol": s}))]


def _answers(box: ToolBox, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    return [(r.ok, r.text()) for r in (box.call(name, args) for name, args in calls)]


def _market_answers(cut: str, world: str, listing: bool) -> tuple[list[tuple[bool, str]], int]:
    make = _market_view_factory(cut, world, listing)
    trading = ToolBox(_Desk("trading", TRADING_PROTOCOL, make), max_chars=20_000)
    report = ToolBox(_Desk("report", REPORT_PROTOCOL, make, PEERS), max_chars=20_000)
    answers = _answers(trading, _market_battery(cut)) + _answers(report, _report_battery())
    return answers, trading.env.counter.attempts + report.env.counter.attempts


@pytest.mark.parametrize("listing", [True, False], ids=["Listing", "plain list"])
@pytest.mark.parametrize("cut", MARKET_CUTS)
def test_market_tools_answer_alike_whatever_follows_the_cut(cut, listing):
    base, counted = _market_answers(cut, "as is", listing)
    assert len(base) == len(_market_battery(cut)) + len(_report_battery()) >= 70
    for world in WORLDS[1:]:
        answers, attempts = _market_answers(cut, world, listing)
        diff = [k for k, (a, b) in enumerate(zip(base, answers, strict=True)) if a != b]
        assert not diff, (world, [(_market_battery(cut) + _report_battery())[k] for k in diff[:3]])
        if world == "deleted after D":  # only requests for things that exist later are counted
            assert attempts < counted
    # the answers are the same with either kind of symbol list
    assert base == _market_answers(cut, "as is", not listing)[0]


def test_later_symbols_are_named_nowhere_and_answer_like_unknown_ones():
    cut = MARKET_CUTS[0]
    make = _market_view_factory(cut, "as is", listing=True)
    box = ToolBox(_Desk("trading", TRADING_PROTOCOL, make))
    state = box.call("get_state").data
    assert state["readable_symbols"] == ["MID", "OLD"]
    answers = {s: box.call("get_prices", {"symbol": s}) for s in ("LATE", "NEWCO", "NEVER")}
    for result in answers.values():
        assert not result.ok and result.error == (f"unknown symbol <symbol>: no bar of it is readable as of {cut}; "
                                                  "readable symbols: ['MID', 'OLD']")  # the same words for all three
    assert [answers[s].look_ahead for s in ("LATE", "NEWCO", "NEVER")] == [1, 1, 0]
    peers = ToolBox(_Desk("report", REPORT_PROTOCOL, make, PEERS)).call("get_peers", {"symbol": "OLD"}).data
    assert peers["peers"] == ["MID"]
    # control: a clock past every listing reads every symbol, so the lists above were cut by the clock
    view = make(LookAheadCounter()).at(str(_day(cut, LAST_DAY)))
    assert view.symbols() == sorted(LISTED) and len(view.prices("NEWCO")) > 0


@pytest.mark.parametrize("cut", MARKET_CUTS[:2])
def test_the_changes_reach_the_answers_once_the_clock_passes_them(cut):
    """Control: the worlds really differ after the cut (the invariance above is not vacuous)."""
    def later(world: str) -> list[tuple[bool, str]]:
        make = _market_view_factory(cut, world, listing=True)
        box = ToolBox(_Desk("trading", TRADING_PROTOCOL, lambda c: make(c).at(str(_day(cut, 100)))), max_chars=20_000)
        return _answers(box, _market_battery(cut))

    base = later("as is")
    for world in WORLDS[1:]:
        changed = sum(a != b for a, b in zip(base, later(world), strict=True))
        assert changed > 40, world


def test_mixed_filing_dates_are_served_section_by_section():
    cut = MARKET_CUTS[2]
    view = _market_view_factory(cut, "as is", listing=True)(LookAheadCounter())
    (mixed,) = view.filings("OLD", "10-Q")
    assert [s["section"] for s in mixed["sections"]] == ["part1_item_2_mdna"]
    assert mixed["filed"] == str(_day(cut, -10))
    later = "part2_item_1a_risk_factors"  # filed on the cut day: public after its close
    with pytest.raises(DataError) as filed_later:
        view.filing_section("OLD-10-Q-MIXED", later)
    with pytest.raises(DataError) as never_filed:
        view.filing_section("OLD-10-Q-MIXED", "item_99_added")
    assert str(filed_later.value).replace(later, "X") == str(never_filed.value).replace("item_99_added", "X")
    assert "part2" not in str(filed_later.value).replace(later, "") and view.counter.attempts == 1
    nxt = view.at(str(_day(cut, 1)))  # the next day the section is public; the one filed later still is not
    assert [s["section"] for s in nxt.filings("OLD", "10-Q")[0]["sections"]] == ["part1_item_2_mdna", later]
    assert nxt.filing_section("OLD-10-Q-MIXED", later)["filed"] == cut
    coverage = view.filing_coverage("OLD")
    assert coverage["count"] == 2 and coverage["latest_filed"] == str(_day(cut, -10))


def test_trading_env_with_user_frames_lists_and_refuses_later_symbols_alike():
    """End to end through FinTrading-v0 (the user-data path): the other symbols' later bars and listings do not show."""
    import gymnasium as gym
    import pandas as pd

    cut = "2021-06-15"
    episode = _bars("OLD", _day(cut, -400), _day(cut, LAST_DAY), seed=0)

    def frame(world: str) -> pd.DataFrame:
        parts = [episode.to_frame()]
        for i, (s, d) in enumerate(list(LISTED.items())[1:], start=1):
            series = _after(_bars(s, _day(cut, d), _day(cut, LAST_DAY), seed=i), cut, world)
            if series is not None:
                parts.append(series.to_frame())
        return pd.concat(parts, ignore_index=True)

    def answers(world: str) -> list[tuple[bool, str]]:
        env = gym.make("FinTrading-v0", data=frame(world), symbol="OLD", split=None, start=str(_day(cut, -60)),
                       end=str(_day(cut, 60)))
        env.reset(seed=0)
        while str(env.unwrapped.as_of_view().as_of) < cut:
            env.step(1)
        assert str(env.unwrapped.as_of_view().as_of) == cut
        box = ToolBox(env)
        calls = [("get_state", {})] + [("get_prices", {"symbol": s, "lookback": 3}) for s in ASKED]
        return _answers(box, calls)

    base = answers("as is")
    assert json.loads(base[0][1])["readable_symbols"] == ["MID", "OLD"]
    assert base == answers("deleted after D") == answers("changed after D")


# ---------------------------------------------------------------------------- XBRL bundles
#: One eval instance per release date: the audit date (and the QA as-of date) of each cut.
BUNDLE_CUTS = ("msft_10k_2015-06-30", "amzn_10k_2022-12-31", "aapl_10k_2023-09-30", "nflx_10k_2023-12-31",
               "tsla_10q_2024-06-30")
FUTURE = "zzzz_10q_2030-03-31"
#: A bundle released before every cut, in every world (so that even the earliest QA date sees one).
EARLY = "aaaa_10k_2009-12-31"


def _bundle(root, name: str, source: str, **index: str) -> None:
    """``root/name``: the files of shipped bundle ``source`` (symlinked) with its filing.json amended by ``index``."""
    folder = root / name
    folder.mkdir()
    for path in (shipped_xbrl_dir() / source).iterdir():
        if path.name != "filing.json":
            (folder / path.name).symlink_to(path)
    meta = json.loads((shipped_xbrl_dir() / source / "filing.json").read_text())
    meta.update(bundle=name, copied_from=source, **index)
    (folder / "filing.json").write_text(json.dumps(meta))


class _ReusingCorpus(Corpus):
    """A folder of bundles made by :func:`_bundle`: names and indexes are read from the folder as always, but
    each bundle's filing is the shipped parse of its source with the index's name, date and period (parsing
    the same XML once per corpus and cut would take most of this file's time)."""

    def filing(self, name: str) -> Filing:
        self._check(name)
        if name not in self._cache:
            meta = self.index(name)
            parsed = shipped_corpus().filing(meta["copied_from"])
            self._cache[name] = dataclasses.replace(parsed, bundle=name, filed=meta["filed"],
                                                    period_end=meta["period_end"])
        return self._cache[name]


def _corpus(root, cut_filed: str, world: str, *, strict: bool) -> Corpus:
    """The shipped corpus plus FUTURE, as one world holds it after ``cut_filed`` (later: ``>``, or ``>=`` when strict)."""
    root.mkdir(parents=True)
    shipped = shipped_corpus()

    def later(filed: str) -> bool:
        return filed >= cut_filed if strict else filed > cut_filed

    _bundle(root, EARLY, "msft_10k_2015-06-30", filed="2010-02-01", period_end="2009-12-31")
    for name in (*shipped.names, FUTURE):
        source = name if name != FUTURE else "aapl_10k_2023-09-30"
        filed = shipped.index(source)["filed"] if name != FUTURE else "2030-05-01"
        if not later(filed):
            _bundle(root, name, source)
        elif world == "as is":
            _bundle(root, name, source, filed=filed)
        elif world == "changed after D":  # released a year later still, holding another filing's numbers
            other = "msft_10k_2015-06-30" if source != "msft_10k_2015-06-30" else "nflx_10q_2024-09-30"
            _bundle(root, name, other, filed=str(int(filed[:4]) + 1) + filed[4:])
    return _ReusingCorpus(root)


@pytest.fixture(scope="module")
def instances():
    by_bundle = {}
    for inst in eval_instances():
        by_bundle.setdefault(inst.bundle, inst)
    return [by_bundle[b] for b in BUNDLE_CUTS]


def _xbrl_battery(concept: str) -> list[tuple[str, dict[str, Any]]]:
    names = [EARLY, *shipped_corpus().names, FUTURE, "no_such_bundle", "../msft_10k_2015-06-30", "/etc/passwd"]
    calls: list[tuple[str, dict[str, Any]]] = [("resolve_filing", {})]
    calls += [("resolve_filing", {"ticker": t}) for t in ("AAPL", "AMZN", "MSFT", "NFLX", "TSLA", "ZZZZ")]
    for name in names:
        calls += [("get_facts", {"concept": concept, "bundle": name}),
                  ("search_concepts", {"query": "revenue", "bundle": name, "limit": 3})]
    return calls


def _audit_answers(tmp_path, inst, world: str) -> tuple[list[tuple[bool, str]], dict[str, Any], int]:
    root = tmp_path / f"audit-{inst.bundle}-{world.replace(' ', '_')}"
    env = FinAuditEnv(split="eval", instances=[inst])
    env.corpus = _corpus(root, inst.issued, world, strict=False)  # the env reads bundles only through it
    obs, info = env.reset(options={"index": 0})
    box = ToolBox(env, max_chars=50_000)
    calls = _xbrl_battery(inst.concept)
    calls += [(n, {"concept": inst.concept, "bundle": b}) for n in ("get_calculation", "get_concept")
              for b in (FUTURE, "no_such_bundle", inst.bundle)]
    calls += [("get_facts", {"concepts": [inst.concept, "us-gaap:Assets", "us-gaap:NoSuchConcept"], "bundle": b})
              for b in (FUTURE, "no_such_bundle", inst.bundle)]
    answers = _answers(box, calls)
    for _, text in answers:
        assert str(root) not in text and str(shipped_xbrl_dir()) not in text and "envs_data" not in text
    _, reward, _, _, final = env.step({"reported_value": 0, "calculated_value": 0})
    attempts = final.pop("look_ahead_attempts")
    return answers, {"obs": obs, "info": info, "reward": reward, "final": final}, attempts


@pytest.mark.parametrize("k", range(len(BUNDLE_CUTS)), ids=BUNDLE_CUTS)
def test_audit_tools_answer_alike_whatever_is_released_after_the_audit_date(tmp_path, instances, k):
    inst = instances[k]
    base, episode, counted = _audit_answers(tmp_path, inst, "as is")
    later = [n for n in shipped_corpus().names if shipped_corpus().index(n)["filed"] > inst.issued]
    # get_facts and search_concepts per later bundle, 3 more of FUTURE (get_calculation, get_concept, get_facts of
    # several concepts)
    assert counted == 2 * (len(later) + 1) + 3
    for world in WORLDS[1:]:
        answers, other, attempts = _audit_answers(tmp_path, inst, world)
        diff = [k for k, (a, b) in enumerate(zip(base, answers, strict=True)) if a != b]
        assert not diff, (world, diff[:3], answers[diff[0]] if diff else None)
        assert other == episode
        assert attempts == (counted if world == "changed after D" else 0)


def _no_prices(symbol: str) -> PriceSeries:
    raise UnknownSymbolError(symbol)


def _qa_answers(tmp_path, inst, world: str) -> tuple[list[tuple[bool, str]], int]:
    root = tmp_path / f"qa-{inst.bundle}-{world.replace(' ', '_')}"
    corpus = _corpus(root, inst.issued, world, strict=True)  # QA sees filings released before its date

    def make(counter: LookAheadCounter) -> knowledge.QAView:
        market = AsOfView(_no_prices, inst.issued, counter=counter, symbols=[])
        return knowledge.QAView(market, corpus)

    box = ToolBox(_Desk("qa", QA_PROTOCOL, make), max_chars=50_000)
    answers = _answers(box, _xbrl_battery("us-gaap:Revenues"))
    for _, text in answers:
        assert str(root) not in text and "envs_data" not in text
    return answers, box.env.counter.attempts


@pytest.mark.parametrize("k", range(len(BUNDLE_CUTS)), ids=BUNDLE_CUTS)
def test_qa_xbrl_tools_answer_alike_whatever_is_released_from_the_as_of_date(tmp_path, instances, k):
    inst = instances[k]
    base, counted = _qa_answers(tmp_path, inst, "as is")
    assert counted > 0
    for world in WORLDS[1:]:
        answers, attempts = _qa_answers(tmp_path, inst, world)
        assert answers == base, world
        assert attempts == (counted if world == "changed after D" else 0)


# ---------------------------------------------------------------------------- no install path in any error
def test_a_data_file_error_inside_a_tool_reaches_the_agent_without_its_path(tmp_path):
    where = tmp_path / "user" / "filings.csv"

    def broken(ctx):
        raise DataFileError(f"{where}: its file records do not match its digest")

    def crashing(ctx):
        raise FileNotFoundError(2, "No such file or directory", str(shipped_xbrl_dir() / "x" / "filing.json"))

    tools = [Tool(name, "test", {"type": "object", "properties": {}, "additionalProperties": False}, func)
             for name, func in (("broken", broken), ("crashing", crashing))]
    make = _market_view_factory(MARKET_CUTS[0], "as is", listing=True)
    box = ToolBox(_Desk("trading", TRADING_PROTOCOL, make), extra=tools)
    first, second = box.call("broken"), box.call("crashing")
    assert first.error == "<path>: its file records do not match its digest"
    assert second.error.startswith("internal error in crashing: FileNotFoundError") and "<path>" in second.error
    for result in (first, second):
        assert str(tmp_path) not in result.text() and str(shipped_xbrl_dir()) not in result.text()
    # text that only looks like a path is kept: pairs, forms, dates, URLs
    from finenvs.tools.registry import redact_paths

    for text in ("unknown symbol 'AAPL/MSFT'", "form 10-K/A", "from 2019/03/08", "see https://www.sec.gov/x"):
        assert redact_paths(text) == text


def test_a_peer_listed_after_the_report_day_is_neither_named_nor_used():
    """FinReport-v0 on AAPL in 2008 (2000-2024 data): META lists in 2012. Its basket with META answers exactly as
    the basket without it, in the RL observation, the prompt, the info and the peer tools (the reset used to crash
    on the unlisted peer's empty history)."""
    import gymnasium as gym

    kwargs = dict(symbol="AAPL", dataset="yahoo_2000_2024", start="2008-01-02", end="2008-03-31")

    def play(peers: list[str]) -> list[str]:
        base = gym.make("FinReport-v0", peers={"AAPL": peers}, **kwargs)
        obs, info = base.reset(seed=0)
        seen = [obs.tobytes().hex(), json.dumps(info, default=str, sort_keys=True)]
        obs, reward, *_, info = base.step(4)
        seen += [obs.tobytes().hex(), repr(reward), json.dumps(info, default=str, sort_keys=True)]
        text = gym.make("FinReport-text-v0", peers={"AAPL": peers}, **kwargs)
        prompt, info = text.reset(seed=0)
        seen += [prompt, json.dumps(info, default=str, sort_keys=True),
                 text.call_tool("get_peers", {}).text(), text.call_tool("get_weekly_metrics", {}).text()]
        return seen

    with_later, without = play(["MSFT", "GOOGL", "AMZN", "META"]), play(["MSFT", "GOOGL", "AMZN"])
    assert with_later == without
    assert not any("META" in s for s in with_later)
