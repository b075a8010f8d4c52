"""Agent tools: future invariance, the date lock, look-ahead counting, bad input, caps, indicators."""

from __future__ import annotations

import json
import math
import re

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import finenvs  # noqa: F401  (registers the envs)
from finenvs.data import load_prices
from finenvs.data.documents import FILING_COLUMNS, NEWS_COLUMNS, FilingStore, NewsStore, decision_time_utc
from finenvs.tools import COMMIT_TOOL, MARKET_TOOLS, ToolBox, cap_output
from finenvs.tools import indicators as ind
from helpers import perturb_after

WINDOW = {"start": "2025-02-03", "end": "2025-06-30"}
FAR = "2026-12-31"
ALL_TOOLS = [tool.name for tool in MARKET_TOOLS] + [COMMIT_TOOL]
PARAMS = {
    "sma": {"window": 5},
    "ema": {"window": 50},
    "rsi": {"window": 7},
    "macd": {"fast": 5, "slow": 35, "signal": 4},
    "bollinger": {"window": 10, "num_std": 1.5},
    "atr": {"window": 21},
    "realized_vol": {"window": 60},
}
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _env(frame: pd.DataFrame, **window: str) -> gym.Env:
    return gym.make("FinTrading-v0", data=frame, symbol="AAPL", split=None, **(window or WINDOW))


def _day(date: str, days: int = 0) -> str:
    return str(np.datetime64(date, "D") + np.timedelta64(days, "D"))


# ---------------------------------------------------------------- counterfactual documents
def _perturbed_news(store: NewsStore, cut: str, rng: np.random.Generator) -> NewsStore:
    """Copy of ``store``: items published after ``cut``'s close rewritten and moved later, plus new ones."""
    cut_time = decision_time_utc(cut)
    names = [name for name in NEWS_COLUMNS if name != "published_at"]
    cols = {name: np.array(getattr(store, name), dtype=object) for name in names}
    published = store.published.copy()
    future = published > cut_time
    n = int(future.sum())
    assert n > 0
    cols["title"][future] = [f"rewritten headline {k}" for k in range(n)]
    cols["summary"][future] = "rewritten summary"
    cols["source"][future] = "Elsewhere"
    cols["url"][future] = "https://example.com/rewritten"
    cols["provider_sentiment"][future] = "Positive"
    published[future] += rng.integers(1, 5 * 86_400, n).astype("timedelta64[s]")
    extra = [
        (f"extra-{symbol}-{k}", symbol, cut_time + np.timedelta64(delay, "s"))
        for symbol in ("AAPL", "MSFT", "NVDA")
        for k, delay in enumerate((1, 3_600, 3 * 86_400, 40 * 86_400))
    ]
    table = {name: list(values) for name, values in cols.items()}
    table["published_at"] = list(published)
    for news_id, symbol, when in extra:
        for name, value in (
            ("id", news_id), ("symbol", symbol), ("published_at", when), ("title", f"future {news_id}"),
            ("summary", "not yet written"), ("source", "Oracle"), ("url", f"https://example.com/{news_id}"),
            ("provider", "test"), ("provider_sentiment", "Negative"),
        ):
            table[name].append(value)
    table["published_at"] = np.array(table["published_at"], dtype="datetime64[s]")
    return NewsStore.from_columns(table)


def _perturbed_filings(store: FilingStore, cut: str, rng: np.random.Generator) -> FilingStore:
    """Copy of ``store``: filings public after ``cut``'s close rewritten and refiled later, plus new ones."""
    cut_time = decision_time_utc(cut)
    table = {name: list(getattr(store, name)) for name in FILING_COLUMNS if name not in ("filed", "chars")}
    table["filed"] = list(store.filed)
    future = store.available_at() > cut_time
    assert future.any()
    delays = {fid: int(rng.integers(1, 30)) for fid in set(store.filing_id[future].tolist())}
    for i in np.flatnonzero(future):
        table["text"][i] = "rewritten filing text. " * int(rng.integers(1, 400))
        table["title"][i] = f"rewritten {table['title'][i]}"
        table["filed"][i] = store.filed[i] + np.timedelta64(delays[store.filing_id[i]], "D")
        table["form"][i] = "10-Q" if store.form[i] == "10-K" else "10-K"
    for filing_id in sorted(delays):  # one more section each, so a leaked section list would differ
        i = int(np.flatnonzero(store.filing_id == filing_id)[0])
        for name in table:
            table[name].append(table[name][i])
        table["section"][-1], table["text"][-1] = "item_99_added", "an added section"
    for filing_id, symbol, filed in (
        ("AAPL-10-Q-EXTRA-A", "AAPL", np.datetime64(cut, "D")),  # filed on the cut day: public after close
        ("AAPL-10-Q-EXTRA-B", "AAPL", np.datetime64(cut, "D") + 1),
        ("NVDA-10-Q-EXTRA", "NVDA", np.datetime64(cut, "D") + 10),
    ):
        for section in ("part1_item_2_mdna", "part2_item_1a_risk_factors"):
            for name, value in (
                ("filing_id", filing_id), ("symbol", symbol), ("form", "10-Q"), ("filed", filed),
                ("section", section), ("title", section), ("text", f"{filing_id} says the future"),
                ("document", f"{filing_id}.htm"),
            ):
                table[name].append(value)
    table["chars"] = [len(text) for text in table["text"]]
    table["filed"] = np.array(table["filed"], dtype="datetime64[D]")
    return FilingStore.from_columns(table)


def _future_ids(news: NewsStore, filings: FilingStore, cut: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Ids of the unperturbed store that are public only after the close of ``cut``."""
    cut_time = decision_time_utc(cut)
    news_ids = []
    for symbol in ("AAPL", "MSFT"):
        lo, hi = news.symbol_rows(symbol)
        later = lo + np.flatnonzero(news.published[lo:hi] > cut_time)
        news_ids += [str(news.id[later[0]]), str(news.id[later[-1]])]
    filing_ids = {}
    for i in np.flatnonzero(filings.available_at() > cut_time):
        filing_ids.setdefault(str(filings.filing_id[i]), str(filings.section[i]))
    return news_ids, sorted(filing_ids.items())


def _battery(as_of: str, future_news: list[str], future_filings: list[tuple[str, str]],
             visible_news: list[str], visible_filings: list[tuple[str, str]]) -> list[tuple[str, dict]]:
    """Calls to every tool, many of them asking past ``as_of``."""
    soon, later = _day(as_of, 1), _day(as_of, 30)
    return [
        ("get_state", {}),
        ("get_prices", {}),
        ("get_prices", {"lookback": 5}),
        ("get_prices", {"lookback": 10_000}),
        ("get_prices", {"end": soon}),
        ("get_prices", {"end": FAR, "lookback": 3}),
        ("get_prices", {"start": "2023-01-01", "end": later}),
        ("get_prices", {"start": soon}),
        ("get_prices", {"start": soon, "end": FAR}),
        ("get_prices", {"start": "2025-01-02", "end": "2025-01-10"}),
        ("get_indicators", {"names": list(ind.INDICATORS)}),
        ("get_indicators", {"names": list(ind.INDICATORS), "history": 250, "params": PARAMS}),
        ("list_news", {}),
        ("list_news", {"lookback_days": 0}),
        ("list_news", {"lookback_days": 3650, "limit": 200}),
        ("list_news", {"end": FAR}),
        ("list_news", {"start": soon}),
        ("list_news", {"start": "2025-01-01", "end": later, "limit": 200}),
        ("list_news", {"symbol": "MSFT", "lookback_days": 30, "end": soon}),
        ("list_news", {"symbol": "NVDA", "start": as_of, "end": FAR}),
        ("get_news", {"id": "no-such-news"}),
        *[("get_news", {"id": news_id}) for news_id in future_news + visible_news],
        ("list_filings", {}),
        ("list_filings", {"form": "10-Q"}),
        ("list_filings", {"form": "10-K"}),
        *[("list_filings", {"symbol": symbol}) for symbol in ("NVDA", "IBM", "CRM", "TSLA")],
        ("get_filing_section", {"id": "no-such-filing", "section": "item_7_mdna"}),
        *[("get_filing_section", {"id": fid, "section": section}) for fid, section in future_filings],
        *[("get_filing_section", {"id": fid, "section": "no_such_section"}) for fid, _ in future_filings[:2]],
        *[
            ("get_filing_section", {"id": fid, "section": section, "offset": 1000, "max_chars": 6000})
            for fid, section in visible_filings
        ],
        ("get_rate", {}),
        ("get_rate", {"series": "DGS10"}),
        (COMMIT_TOOL, {"action": "BUY"}),
        (COMMIT_TOOL, {"action": "flat", "reasoning": "wait"}),
        (COMMIT_TOOL, {"action": "moon"}),
    ]


@pytest.mark.parametrize("cut", ["2025-02-25", "2025-05-15"])
def test_every_tool_is_invariant_to_the_future(cut, catalog, aapl_frame):
    rng = np.random.default_rng(7)
    news, filings = catalog.news(), catalog.filings()
    news_b, filings_b = _perturbed_news(news, cut, rng), _perturbed_filings(filings, cut, rng)
    env_a, env_b = _env(aapl_frame), _env(perturb_after(aapl_frame, cut, rng))
    boxes = [
        (ToolBox(env_a, news=news, filings=filings, max_chars=cap),
         ToolBox(env_b, news=news_b, filings=filings_b, max_chars=cap))
        for cap in (8_000, 1_000)
    ]
    future_news, future_filings = _future_ids(news, filings, cut)
    assert "AAPL-10-Q-2025-08-01" in dict(future_filings)
    _, info_a = env_a.reset(seed=0)
    _, info_b = env_b.reset(seed=0)
    actions = rng.integers(0, 3, 500).tolist()
    tested, seen_news, seen_filings, look_ahead, called = [], 0, 0, 0, set()
    k = 0
    while info_a["date"] <= cut:
        assert info_a == info_b
        as_of = info_a["date"]
        if k % 4 == 0 or as_of == cut:
            tested.append(as_of)
            box = boxes[0][0]
            listed = box.call("list_news", {"lookback_days": 3650, "limit": 3}).data["items"]
            shown = box.call("list_filings", {}).data["filings"]
            visible_filings = [(f["id"], s["section"]) for f in shown for s in f["sections"]][:2]
            visible_news = [item["id"] for item in listed]
            calls = _battery(as_of, future_news, future_filings, visible_news, visible_filings)
            for tools_a, tools_b in boxes:
                for name, args in calls:
                    ra, rb = tools_a.call(name, args), tools_b.call(name, args)
                    where = f"{name}({args}) at {as_of}, cut {cut}, cap {tools_a.max_chars}"
                    assert ra.text() == rb.text(), where
                    assert (ra.ok, ra.truncated, ra.look_ahead) == (rb.ok, rb.truncated, rb.look_ahead), where
                    look_ahead += ra.look_ahead
                    called.add(name)
                    seen_news += name == "list_news" and ra.ok and ra.data["count"] > 0
                    seen_filings += name == "list_filings" and ra.ok and ra.data["count"] > 0
        _, _, _, _, info_a = env_a.step(actions[k])
        _, _, _, _, info_b = env_b.step(actions[k])
        k += 1
    assert cut in tested and len(tested) >= 4
    assert called == set(ALL_TOOLS)
    assert seen_news > 0 and seen_filings > 0 and look_ahead > 0
    # and the perturbation is real: ten trading days after the cut, prices, news and filings all differ
    for _ in range(10):
        env_a.step(1)
        env_b.step(1)
    tools_a, tools_b = boxes[0]
    later = (("get_prices", {"lookback": 5}), ("list_news", {"lookback_days": 30}), ("list_filings", {}))
    for name, args in later:
        assert tools_a.call(name, args).text() != tools_b.call(name, args).text(), name


# ---------------------------------------------------------------- nothing dated after the clock
FREE_TEXT = {"title", "summary", "text", "url", "document"}  # publishers' prose may name any date
TIMESTAMPS = {"published_at", "available_at", "visible_until_utc", "decision_time_utc"}


def _strings(node, key: str | None = None):
    """``(key, string)`` for every string in a JSON value, with the dict key that holds it."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v, key)
    elif isinstance(node, str):
        yield key, node


def test_no_tool_output_is_dated_after_the_clock(catalog, aapl_frame):
    env = _env(aapl_frame)
    tools = ToolBox(env)
    news, filings = catalog.news(), catalog.filings()
    future_news, future_filings = _future_ids(news, filings, "2025-02-03")
    _, info = env.reset(seed=0)
    checked_rows = checked_items = 0
    for k in range(200):
        as_of = info["date"]
        if k % 9 == 0:
            close = decision_time_utc(as_of)
            visible = [("AAPL-10-K-2024-11-01", "item_7a_market_risk")]
            for name, args in _battery(as_of, future_news, future_filings, [], visible):
                result = tools.call(name, args)
                if not result.ok and DATE.search(json.dumps(args)):
                    continue  # an error message may quote the date the agent asked for
                for key, value in _strings(result.data):
                    if key in FREE_TEXT:
                        continue
                    if name == "get_state" and key == "date":  # "<as_of> (decision k of n; window a..b)"
                        assert value.startswith(as_of + " ")
                        continue
                    if key in TIMESTAMPS:
                        assert np.datetime64(value.rstrip("Z"), "s") <= close, (name, args, key, value)
                        checked_items += key == "published_at"
                    assert all(d <= as_of for d in DATE.findall(value)), (name, args, key, value)
                if name == "list_filings" and result.ok:
                    assert all(f["filed"] < as_of for f in result.data["filings"])
                if name == "get_prices" and result.ok and result.data["rows"]:
                    checked_rows += 1
                    assert result.data["rows"][-1][0] <= as_of
                    if "end" not in args and "start" not in args:
                        assert result.data["rows"][-1][0] == as_of
                if name == "get_rate":  # a day's print is published the next business day
                    assert result.data["observation_date"] < as_of
        _, _, terminated, truncated, info = env.step(int(k % 3))
        if terminated or truncated:
            break
    assert checked_rows > 0 and checked_items > 0


# ---------------------------------------------------------------- look-ahead counting
def test_reads_past_the_clock_are_counted_and_reported_in_info(catalog, aapl_frame):
    env = _env(aapl_frame)
    tools = ToolBox(env)
    _, info = env.reset(seed=0)
    as_of = info["date"]
    peek = tools.call("get_prices", {"end": FAR})
    assert peek.ok and peek.look_ahead == 1
    dates = [row[0] for row in peek.data["rows"]]
    assert len(dates) == 20 and max(dates) == as_of
    assert peek.data == tools.call("get_prices", {}).data
    assert tools.call("get_prices", {"lookback": 5}).look_ahead == 0
    _, _, _, _, info = env.step(1)
    assert info["look_ahead_attempts"] == 1
    as_of = info["date"]

    news = catalog.news()
    lo, hi = news.symbol_rows("AAPL")
    future_news = str(news.id[lo + np.flatnonzero(news.published[lo:hi] > decision_time_utc(as_of))[0]])
    both = tools.call("list_news", {"start": _day(as_of, 1), "end": FAR})
    assert both.ok and both.look_ahead == 2 and both.data["items"] == []
    hidden = tools.call("get_news", {"id": future_news})
    assert not hidden.ok and hidden.look_ahead == 1
    missing = tools.call("get_news", {"id": "no-such-news"})
    assert not missing.ok and missing.look_ahead == 0
    assert hidden.error.replace(repr(future_news), "<id>") == missing.error.replace("'no-such-news'", "<id>")
    section = tools.call("get_filing_section", {"id": "AAPL-10-Q-2025-08-01", "section": "part1_item_2_mdna"})
    assert not section.ok and section.look_ahead == 1
    for name, args in (("get_indicators", {"names": ["sma"]}), ("get_rate", {}), ("list_filings", {})):
        assert tools.call(name, args).look_ahead == 0
    _, _, _, _, info = env.step(1)
    assert info["look_ahead_attempts"] == 5
    _, info = env.reset(seed=0)
    assert info["look_ahead_attempts"] == 0


# ---------------------------------------------------------------- bad input
BAD_CALLS = [
    ("no_such_tool", {}, "unknown tool 'no_such_tool'; available tools: ['get_state', 'get_prices'"),
    (None, {}, "unknown tool 'None'"),
    (["get_prices"], {}, "unknown tool"),
    ("get_prices", '{"lookback": ', "arguments of get_prices are not valid JSON"),
    ("get_prices", "[1, 2]", "arguments of get_prices must be a JSON object, got list"),
    ("get_prices", [1, 2], "must be a JSON object, got list"),
    ("get_prices", 7, "must be a JSON object, got int"),
    ("get_prices", {"lookback": "x"}, "lookback must be of type integer, got str 'x'"),
    ("get_prices", {"lookback": True}, "lookback must be of type integer"),
    ("get_prices", {"lookback": 2.5}, "lookback must be of type integer"),
    ("get_indicators", {"names": [1]}, "names[0] must be of type string"),
    ("get_indicators", {"names": ["sma", "nope"]}, "names[1] must be one of"),
    ("get_indicators", {"names": []}, "names must have at least 1 item"),
    ("get_indicators", {}, "missing the required field 'names'"),
    ("get_prices", {"foo": 1},
     "unknown field ['foo']; valid fields: ['columns', 'end', 'lookback', 'start', 'symbol']"),
    ("get_indicators", {"names": ["sma"], "params": {"sma": {"span": 3}}}, "unknown field ['span']"),
    ("get_prices", {"lookback": 0}, "lookback must be >= 1, got 0"),
    ("get_prices", {"lookback": 10_001}, "lookback must be <= 10000"),
    ("list_news", {"limit": 0}, "limit must be >= 1"),
    ("list_news", {"lookback_days": -1}, "lookback_days must be >= 0"),
    ("get_indicators", {"names": ["sma"], "history": 251}, "history must be <= 250"),
    ("get_indicators", {"names": ["sma"], "params": {"sma": {"window": 0}}},
     "params.sma.window must be >= 1"),
    ("get_indicators", {"names": ["bollinger"], "params": {"bollinger": {"num_std": math.nan}}},
     "params.bollinger.num_std must be of type number"),
    ("get_indicators", {"names": ["macd"], "params": {"macd": {"fast": 30, "slow": 10}}},
     "needs fast < slow"),
    ("get_filing_section", {"id": "x", "section": "y", "max_chars": 50}, "max_chars must be >= 100"),
    ("get_filing_section", {"id": "x", "section": "y", "offset": -1}, "offset must be >= 0"),
    ("get_rate", {"series": "LIBOR"}, "series must be one of ['DTB3', 'DGS10']"),
    ("list_filings", {"form": "8-K"}, "form must be one of ['10-K', '10-Q']"),
    ("get_prices", {"start": "2025-02-30"}, "start is not a date"),
    ("get_prices", {"end": "not a date at all"}, "end is not a date"),
    ("list_news", {"start": "yesterday!!"}, "is not a date"),
    ("get_prices", {"start": "2025"}, "start must have at least 10 characters"),
    ("get_prices", {"start": "2025-01-02", "lookback": 5}, "pass either start or lookback"),
    ("get_news", {}, "missing the required field 'id'"),
    ("get_news", {"id": 5}, "id must be of type string"),
    ("get_prices", {"symbol": "ZZZZ"}, "unknown symbol <symbol>: no bar of it is readable as of "),
    ("get_prices", {"symbol": "ZZZZ"}, "; readable symbols: ['AAPL']"),
    ("get_indicators", {"names": ["sma"], "symbol": "ZZZZ"}, "unknown symbol <symbol>"),
    ("get_filing_section", {"id": "AAPL-10-K-2024-11-01", "section": "item_99"},
     "its sections: ['item_1a_risk_factors', 'item_7_mdna', 'item_7a_market_risk']"),
    (COMMIT_TOOL, {"action": "moon"}, "unknown action 'moon'; valid: ['SELL', 'HOLD', 'BUY']"),
    (COMMIT_TOOL, {}, "commit_action needs a string 'action'"),
    (COMMIT_TOOL, "{oops", "arguments of commit_action are not valid JSON"),
]


@pytest.fixture(scope="module")
def live_tools(aapl_frame) -> ToolBox:
    env = _env(aapl_frame)
    env.reset(seed=0)
    return ToolBox(env)


@pytest.mark.parametrize(
    ("name", "arguments", "expected"), BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)]
)
def test_bad_input_is_an_error_result_never_an_exception(live_tools, name, arguments, expected):
    result = live_tools.call(name, arguments)
    assert not result.ok
    assert expected in result.error
    if result.commit is not None:  # a commit the protocol cannot read is taken as its safe default
        assert result.data["accepted"] is False and result.commit.name == "HOLD"
    else:
        assert result.data == {"error": result.error}
    assert result.look_ahead == 0
    json.loads(result.text())


def test_unknown_symbol_error_lists_the_readable_catalog_symbols(catalog):
    env = gym.make("FinTrading-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    result = ToolBox(env).call("get_prices", {"symbol": "ZZZZ"})
    assert not result.ok
    assert f"readable symbols: {catalog.symbols()}" in result.error  # every core symbol is listed from 2024-01-02


def test_tools_before_reset_are_errors(aapl_frame):
    tools = ToolBox(_env(aapl_frame))
    minimal = {"get_indicators": {"names": ["sma"]}, "get_news": {"id": "x"},
               "get_filing_section": {"id": "x", "section": "y"}}
    for tool in MARKET_TOOLS:
        result = tools.call(tool.name, minimal.get(tool.name, {}))
        assert not result.ok and result.look_ahead == 0, tool.name
        assert "reset" in result.error, tool.name


# ---------------------------------------------------------------- output caps and paging
def test_large_results_fit_the_cap_and_say_what_was_cut(aapl_frame):
    env = _env(aapl_frame, start="2025-06-02", end="2025-06-30")
    _, info = env.reset(seed=0)
    full, small = ToolBox(env, max_chars=1_000_000), ToolBox(env, max_chars=1000)

    everything = full.call("get_prices", {"lookback": 400})
    capped = small.call("get_prices", {"lookback": 400})
    assert not everything.truncated and everything.data["count"] == len(everything.data["rows"]) > 300
    assert capped.ok and capped.truncated and len(capped.text()) <= 1000
    kept = capped.data["truncated"]["fields"]["rows"]
    assert kept["of"] == everything.data["count"] and 0 < kept["kept"] == len(capped.data["rows"])
    assert capped.data["rows"] == everything.data["rows"][-kept["kept"]:]  # the newest rows
    assert capped.data["rows"][-1][0] == info["date"]
    assert "newest" in capped.data["truncated"]["note"]

    headlines = full.call("list_news", {"lookback_days": 3650, "limit": 200})
    short = small.call("list_news", {"lookback_days": 3650, "limit": 200})
    assert short.truncated and len(short.text()) <= 1000
    n = short.data["truncated"]["fields"]["items"]["kept"]
    assert 0 < n == len(short.data["items"]) and short.data["items"] == headlines.data["items"][:n]

    section = small.call("get_filing_section",
                         {"id": "AAPL-10-K-2024-11-01", "section": "item_1a_risk_factors", "max_chars": 6000})
    assert section.ok and len(section.text()) <= 1000
    page = section.data
    assert 0 < len(page["text"]) < 6000 and page["next_offset"] == len(page["text"]) < page["chars_total"]


@pytest.mark.parametrize(("section", "cap"), [("item_7_mdna", 1_000), ("item_7a_market_risk", 1_200)])
def test_filing_section_pages_reassemble_the_whole_section(aapl_frame, section, cap):
    env = _env(aapl_frame)
    env.reset(seed=0)
    tools = ToolBox(env, max_chars=cap)
    whole = tools.view().filing_section("AAPL-10-K-2024-11-01", section)["text"]
    pages, offset = [], 0
    while offset is not None:
        args = {"id": "AAPL-10-K-2024-11-01", "section": section, "offset": offset, "max_chars": 6000}
        result = tools.call("get_filing_section", args)
        assert result.ok and len(result.text()) <= cap
        page = result.data
        assert page["offset"] == offset and page["chars_total"] == len(whole) and page["text"]
        if page["next_offset"] is not None and len(page["text"]) < 6000:  # shortened to fit: says so
            assert result.truncated and page["truncated"]["fields"]["text"]["kept"] == len(page["text"])
        pages.append(page["text"])
        offset = page["next_offset"]
        assert offset is None or offset == page["offset"] + len(page["text"])
        assert len(pages) < 1000
    assert len(pages) > 2
    assert "".join(pages) == whole


def test_caps_too_small_for_any_result_are_refused(aapl_frame):
    env = _env(aapl_frame)
    with pytest.raises(ValueError, match="too small"):
        ToolBox(env, max_chars=400)


def test_cap_output_never_returns_more_than_the_cap():
    data = {f"k{i}": "v" * 30 for i in range(8)}
    with pytest.raises(ValueError, match="does not fit"):
        cap_output(data, 250)
    out, cut = cap_output({"text": "x" * 1000, "id": 1}, 300)
    assert cut and len(json.dumps(out, separators=(",", ":"))) <= 300 and out["id"] == 1
    assert out["truncated"]["fields"]["text"] == {"kept": len(out["text"]), "of": 1000}


@pytest.mark.parametrize("keep", ["head", "tail"])
@pytest.mark.parametrize("seed", range(20))
def test_cap_output_keeps_the_most_that_fits(keep, seed):
    """The cut keeps the longest part of the largest field that fits: one more item or character would not."""
    rng = np.random.default_rng(seed)
    rows = [[f"2025-01-{1 + i % 28:02d}", float(rng.normal()), int(rng.integers(0, 10**rng.integers(1, 9)))]
            for i in range(int(rng.integers(50, 400)))]
    data = {"symbol": "AAPL", "rows": rows, "note": "é中" * int(rng.integers(0, 50))}
    cap = int(rng.integers(1_000, 9_000))
    out, cut = cap_output(data, cap, keep)

    def size(d):
        return len(json.dumps(d, ensure_ascii=False, separators=(",", ":")))

    assert size(out) <= cap
    if cut:
        kept = out["truncated"]["fields"]["rows"]["kept"]
        assert out["rows"] == (rows[:kept] if keep == "head" else rows[len(rows) - kept:])
        if kept < len(rows):  # one more row, with the marker saying so, does not fit
            more = json.loads(json.dumps(out))
            more["rows"] = rows[: kept + 1] if keep == "head" else rows[len(rows) - kept - 1:]
            more["truncated"]["fields"]["rows"]["kept"] = kept + 1
            assert size(more) > cap


# ---------------------------------------------------------------- indicators against pandas
def _ta_ema(values: pd.Series, window: int) -> pd.Series:
    """TA-Lib's EMA: pandas' recursive EWM started from the SMA of the first ``window`` finite values."""
    first = int(np.flatnonzero(values.notna().to_numpy())[0])
    seeded = values.iloc[first + window - 1:].copy()
    seeded.iloc[0] = values.iloc[first:first + window].mean()
    return seeded.ewm(span=window, adjust=False).mean().reindex(values.index)


def _wilder(values: pd.Series, window: int, seed_at: int, seed: float) -> pd.Series:
    seeded = values.iloc[seed_at:].copy()
    seeded.iloc[0] = seed
    return seeded.ewm(alpha=1.0 / window, adjust=False).mean().reindex(values.index)


def _rsi_loop(close: list[float], window: int) -> list[float]:
    """Wilder's RSI, written out one bar at a time."""
    out = [math.nan] * len(close)
    gains = [max(b - a, 0.0) for a, b in zip(close[:-1], close[1:], strict=True)]
    losses = [max(a - b, 0.0) for a, b in zip(close[:-1], close[1:], strict=True)]
    up, down = sum(gains[:window]) / window, sum(losses[:window]) / window
    for i in range(window, len(close)):
        if i > window:
            up = (up * (window - 1) + gains[i - 1]) / window
            down = (down * (window - 1) + losses[i - 1]) / window
        out[i] = 100.0 if down == 0 else 100.0 - 100.0 / (1.0 + up / down)
    return out


def _close(actual, expected) -> None:
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                               rtol=1e-9, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("window", [5, 14, 20, 50])
def test_indicators_match_independent_pandas_computations(catalog, window):
    bars = catalog.series("AAPL")
    high, low, close = (pd.Series(np.asarray(a, dtype=float)) for a in (bars.high, bars.low, bars.close))
    c = close.to_numpy()
    _close(ind.sma(c, window), close.rolling(window).mean())
    _close(ind.ema(c, window), _ta_ema(close, window))
    _close(ind.rsi(c, window), _rsi_loop(c.tolist(), window))
    mid, std = close.rolling(window).mean(), close.rolling(window).std(ddof=0)
    bands = ind.bollinger(c, window, 2.5)
    _close(bands["middle"], mid)
    _close(bands["upper"], mid + 2.5 * std)
    _close(bands["lower"], mid - 2.5 * std)
    _close(bands["percent_b"], (close - (mid - 2.5 * std)) / (5.0 * std))
    prev = close.shift()
    true_range = pd.concat([high - low, (high - prev).abs(), (low - prev).abs()], axis=1).max(axis=1)
    _close(ind.atr(high.to_numpy(), low.to_numpy(), c, window),
           _wilder(true_range, window, window, true_range.iloc[1:window + 1].mean()))
    _close(ind.realized_vol(c, window), np.log(close).diff().rolling(window).std(ddof=1) * math.sqrt(252))
    fast, slow, signal = max(2, window // 2), window + 5, max(2, window // 3)
    line = _ta_ema(close, fast) - _ta_ema(close, slow)
    macd = ind.macd(c, fast, slow, signal)
    _close(macd["macd"], line)
    _close(macd["signal"], _ta_ema(line, signal))
    _close(macd["histogram"], line - _ta_ema(line, signal))
    assert np.isnan(ind.sma(c, window)[window - 2]) and np.isfinite(ind.sma(c, window)[window - 1])


def _per_bar_numpy(close: np.ndarray, high: np.ndarray, low: np.ndarray, window: int) -> dict[str, np.ndarray]:
    """EMA, RSI and ATR recursions stepped one numpy scalar at a time (the indicators' earlier code)."""
    n = close.size
    ema = np.full(n, np.nan)
    ema[window - 1] = prev = float(close[:window].mean())
    for i in range(window, n):
        prev = 2.0 / (window + 1.0) * close[i] + (1.0 - 2.0 / (window + 1.0)) * prev
        ema[i] = prev
    change = np.diff(close)
    gain, loss = np.where(change > 0, change, 0.0), np.where(change < 0, -change, 0.0)
    rsi = np.full(n, np.nan)
    up, down = float(gain[:window].mean()), float(loss[:window].mean())
    for i in range(window, n):
        if i > window:
            up = (up * (window - 1) + gain[i - 1]) / window
            down = (down * (window - 1) + loss[i - 1]) / window
        rsi[i] = 100.0 if down == 0.0 else 100.0 - 100.0 / (1.0 + up / down)
    tr = np.maximum.reduce([high[1:] - low[1:], np.abs(high[1:] - close[:-1]), np.abs(low[1:] - close[:-1])])
    atr = np.full(n, np.nan)
    atr[window] = value = float(tr[:window].mean())
    for i in range(window + 1, n):
        value = (value * (window - 1) + tr[i - 1]) / window
        atr[i] = value
    return {"ema": ema, "rsi": rsi, "atr": atr}


@pytest.mark.parametrize("window", [1, 2, 14, 50])
def test_recursive_indicators_equal_the_per_bar_loop_bit_for_bit(catalog, window):
    """The recursions run on Python floats give exactly the values of the numpy-scalar loop (the bench's scores
    and every trajectory depend on the bits), a flat stretch (no losses) included."""
    bars = catalog.series("AAPL")
    close, high, low = (np.asarray(a, dtype=np.float64).copy() for a in (bars.close, bars.high, bars.low))
    close[300:340] = close[300]
    expected = _per_bar_numpy(close, high, low, window)
    assert ind.ema(close, window).tobytes() == expected["ema"].tobytes()
    assert ind.rsi(close, window).tobytes() == expected["rsi"].tobytes()
    assert ind.atr(high, low, close, window).tobytes() == expected["atr"].tobytes()


def test_rsi_hand_cases():
    rising, falling = np.arange(1.0, 31.0), np.arange(30.0, 0.0, -1.0)
    assert ind.rsi(rising, 14)[-1] == 100.0 and ind.rsi(falling, 14)[-1] == 0.0
    assert np.isnan(ind.rsi(rising, 14)[13]) and ind.rsi(rising, 14)[14] == 100.0


def test_get_indicators_reports_the_functions_latest_values(aapl_frame):
    env = _env(aapl_frame)
    tools = ToolBox(env)
    bars = load_prices(aapl_frame)["AAPL"]  # the series the env trades, checked the same way
    _, info = env.reset(seed=0)
    for step in range(40):
        if step % 13 == 0:
            stop = int(np.searchsorted(bars.dates, np.datetime64(info["date"]), side="right"))
            h, lo, c = bars.high[:stop], bars.low[:stop], bars.close[:stop]
            for params in ({}, PARAMS):
                args = {"names": list(ind.INDICATORS), "history": 3, "params": params}
                result = tools.call("get_indicators", args)
                assert result.ok and result.data["bars_used"] == stop
                for name, block in result.data["indicators"].items():
                    defaults = {p: spec[1] for p, spec in ind.INDICATORS[name].items()}
                    chosen = {**defaults, **params.get(name, {})}
                    assert block["params"] == chosen
                    expected = ind.compute(name, h, lo, c, **chosen)
                    full = ind.compute(name, bars.high, bars.low, bars.close, **chosen)
                    assert result.data["dates"][-1] == info["date"] and len(result.data["dates"]) == 3
                    assert set(block) == {"params", *expected}  # one column per output, beside the shared dates
                    for key, values in expected.items():
                        got = block[key]
                        want = [None if not np.isfinite(v) else round(float(v), 6) for v in values[-3:]]
                        assert got == want, (name, key, info["date"])
                        # the value at a date does not depend on later bars
                        assert values[-1] == pytest.approx(full[key][stop - 1], rel=1e-12, abs=1e-12)
        _, _, _, _, info = env.step(step % 3)


def test_get_prices_columns_pick_the_same_values(live_tools):
    tools = live_tools
    full = tools.call("get_prices", {"lookback": 30}).data
    picked = tools.call("get_prices", {"lookback": 30, "columns": ["close", "date", "close"]}).data
    assert picked["columns"] == ["date", "close"]  # the bars' own order, each once
    assert picked["rows"] == [[r[0], r[4]] for r in full["rows"]]
    bad = tools.call("get_prices", {"columns": ["adj_close"]})
    assert not bad.ok and "columns[0] must be one of" in bad.error


def test_tool_specs_leave_out_what_only_bounds_hostile_input_and_calls_are_still_checked(live_tools):
    tools = live_tools
    specs = {s["function"]["name"]: s["function"]["parameters"] for s in tools.specs()}
    text = json.dumps(specs)
    assert not any(k in text for k in ('"maxLength"', '"minLength"', '"maxItems"', '"additionalProperties"'))
    indicators = specs["get_indicators"]["properties"]["params"]
    assert "properties" not in indicators and "macd fast 12, slow 26, signal 9" in indicators["description"]
    assert specs["get_indicators"]["required"] == ["names"]
    long_symbol = tools.call("get_prices", {"symbol": "X" * 21})
    assert not long_symbol.ok and "at most 20 characters" in long_symbol.error
    bad_window = tools.call("get_indicators", {"names": ["sma"], "params": {"sma": {"window": 0}}})
    assert not bad_window.ok and "params.sma.window must be >= 1" in bad_window.error
    extra = tools.call("get_indicators", {"names": ["sma"], "params": {"sma": {"span": 3}}})
    assert not extra.ok and "unknown field" in extra.error
