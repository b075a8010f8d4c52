"""Counts come from the exchange calendar: nothing an agent or a policy receives up to a date D depends on which
bars exist after D.

For every env whose episode length, decision count or time-remaining feature could be read off the bars
(FinTrading-v0, FinHedging-v0, FinReport-v0, the multi-agent market and pairs market on real data), several cut
dates D and every kind of change after D:

* ``prices``: every bar after D changed (:func:`helpers.perturb_after`);
* ``stops``: every row after D deleted (the series stops: a delisting, or the data's newest day);
* ``gap``: the first bar after D deleted (a missing day, as ``^GSPC`` lacks 2026-01-20);
* ``one_stops`` (the envs of several symbols): one symbol's rows after D deleted;

the RL observations (bytes), the text prompts, the info dicts and the rewards received up to D are identical to
the unchanged run's, and something after D differs (the change had teeth).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import finenvs  # noqa: F401  (registers the envs)
from finenvs.data.calendar import DEFAULT_CALENDAR, session_positions, sessions, window_sessions
from finenvs.data.schema import PriceSeries
from finenvs.data.splits import session_window
from finenvs.errors import WindowError
from finenvs.tasks.hedging.env import FinHedgingEnv
from finenvs.tasks.report.env import FinReportEnv
from finenvs.tasks.trading.env import FinTradingEnv
from finenvs.wrappers.text import TextInterface
from helpers import perturb_after

CHANGES = ("prices", "stops", "gap")
EVAL = {"split": None, "start": "2026-01-02", "end": "2026-03-31"}
TRADE_WORDS = ["BUY", "HOLD", "SELL", "BUY", "BUY", "SELL", "HOLD"]


# ---------------------------------------------------------------- changing the data after D
def change_after(frame: pd.DataFrame, cut: str, change: str, *, symbol: str | None = None, seed: int = 0
                 ) -> pd.DataFrame:
    """``frame`` (the finenvs schema, one or several symbols) changed after ``cut`` as ``change`` says;
    ``symbol`` limits the change to that symbol's rows."""
    mine = np.ones(len(frame), dtype=bool) if symbol is None else (frame["symbol"] == symbol).to_numpy()
    dates = pd.to_datetime(frame["date"]).to_numpy()
    after = mine & (dates > np.datetime64(cut))
    if change == "prices":
        assert symbol is None
        return perturb_after(frame, cut, np.random.default_rng(seed))
    if change in ("stops", "one_stops"):
        return frame[~after].reset_index(drop=True)
    if change == "gap":
        first_after = dates[after].min()
        return frame[~(mine & (dates == first_after))].reset_index(drop=True)
    raise ValueError(change)


def changed_series(series: PriceSeries, cut: str, change: str, seed: int = 0) -> PriceSeries:
    frame = change_after(series.to_frame(), cut, change, seed=seed)
    cols = (frame[c].to_numpy() for c in ("open", "high", "low", "close", "volume"))
    return PriceSeries.from_arrays(series.symbol, frame["date"].to_numpy(), *cols)


def plain(value: Any) -> Any:
    """Info values as comparable Python objects (arrays as lists, floats by their bits)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.tobytes())
    if isinstance(value, (float, np.floating)):
        return np.float64(value).tobytes()
    return value


# ---------------------------------------------------------------- playing an episode
def play(env: Any, actions: list[Any]) -> list[dict[str, Any]]:
    """One row per decision (the reset, then every step): its date, observation bytes, info and the reward
    that arrived with it; the last row is the episode's end."""
    obs, info = env.reset(seed=0)
    rows = [{"date": info["date"], "obs": obs.tobytes(), "info": plain(info), "reward": None}]
    for action in actions:
        obs, reward, term, trunc, info = env.step(action)
        rows.append({"date": info["date"], "obs": obs.tobytes(), "info": plain(info), "reward": reward,
                     "end": term or trunc})
        if term or trunc:
            return rows
    raise AssertionError("the episode did not end within the actions given")


def play_text(env: Any, words: list[str]) -> list[dict[str, Any]]:
    """The same through the text interface: each decision's date and the whole prompt the agent reads."""
    text = TextInterface(env, tools="none")
    prompt, info = text.reset(seed=0)
    rows = [{"date": info["date"], "prompt": prompt}]
    for word in words:
        prompt, reward, term, trunc, info = text.step(word)
        rows.append({"date": info["date"], "prompt": prompt, "reward": reward})
        if term or trunc:
            return rows
    raise AssertionError("the episode did not end within the actions given")


def assert_same_up_to(base: list[dict], other: list[dict], cut: str, what: str) -> int:
    """Rows decided on or before ``cut`` are identical (with the rewards received then); returns how many."""
    upto = [k for k, row in enumerate(base) if row["date"] <= cut and not row.get("end")]
    assert upto, f"{what}: no decision on or before {cut}"
    assert len(other) > upto[-1], f"{what}: the changed run ended before {cut}"
    for k in upto:
        assert base[k] == other[k], f"{what}: decision {k} ({base[k]['date']}) changed (cut {cut})"
    return len(upto)


def cuts_of(rows: list[dict]) -> list[str]:
    """Three cut dates among an episode's decisions: the first decision, one in the middle, one near the end."""
    dates = [r["date"] for r in rows if not r.get("end")]
    return [dates[0], dates[len(dates) // 2], dates[-4]]


# ---------------------------------------------------------------- FinTrading-v0
@pytest.fixture(scope="module")
def trading_frame(catalog) -> pd.DataFrame:
    return catalog.series("AAPL").to_frame()


def _trading(frame: pd.DataFrame) -> FinTradingEnv:
    return FinTradingEnv(symbol="AAPL", data=frame, **EVAL)


TRADING_ACTIONS = [2, 1, 0, 2, 2, 0, 1] * 40


@pytest.fixture(scope="module")
def trading_base(trading_frame):
    return play(_trading(trading_frame), TRADING_ACTIONS), play_text(_trading(trading_frame), TRADE_WORDS * 40)


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("which", [0, 1, 2])
def test_trading_up_to_d_ignores_later_bars(trading_frame, trading_base, which, change):
    base, base_text = trading_base
    cut = cuts_of(base)[which]
    frame = change_after(trading_frame, cut, change)
    rows = play(_trading(frame), TRADING_ACTIONS)
    n = assert_same_up_to(base, rows, cut, f"FinTrading-v0 {change}")
    assert_same_up_to(base_text, play_text(_trading(frame), TRADE_WORDS * 40), cut, f"FinTrading-v0 text {change}")
    assert rows != base and n >= 1
    if change == "stops":  # the decision at D found no next bar: the episode ended there
        assert rows[-1]["date"] == cut and len(rows) == n + 1


def test_trading_counts_come_from_the_calendar(trading_frame):
    """The prompt and the reset info count the window's XNYS sessions, with or without later bars."""
    for frame in (trading_frame, change_after(trading_frame, "2026-01-09", "stops")):
        env = _trading(frame)
        _, info = env.reset(seed=0)
        assert (info["window_start"], info["window_end"], info["n_decisions"]) == ("2026-01-02", "2026-03-31", 60)
        assert env.text_state()["Date"] == "2026-01-02 (decision 1 of 60; window 2026-01-02..2026-03-31)"


def test_a_gap_keeps_the_session_number_and_the_series_on_after_it(trading_frame):
    """^GSPC's missing 2026-01-20: the decision after the gap is numbered by its session, and the position is
    held across the missing day."""
    frame = trading_frame[trading_frame["date"] != "2026-01-20"]
    env = _trading(frame)
    env.reset(seed=0)
    for _ in range(10):  # 2026-01-02 .. 2026-01-16: decisions 1..11 (2026-01-19 is a holiday)
        env.step(2)
    assert env.text_state()["Date"].startswith("2026-01-16 (decision 11 of 60")
    obs, _, _, _, info = env.step(2)  # over the missing 2026-01-20 (decision 12)
    assert info["date"] == "2026-01-21" and env.text_state()["Date"].startswith("2026-01-21 (decision 13 of 60")
    assert obs[-2] == np.float32((60 - 12) / 60)  # time remaining of session index 12 of 60


def test_random_training_windows_are_sessions_long(trading_frame):
    """episode_length counts sessions: on data with a gap an episode has fewer steps, the same span."""
    frame = trading_frame[trading_frame["date"] != "2026-01-20"]
    env = FinTradingEnv(symbol="AAPL", data=frame, episode_length=20, **EVAL)
    spans = set()
    for seed in range(30):
        _, info = env.reset(seed=seed)
        assert info["n_decisions"] == 20
        window = sessions(DEFAULT_CALENDAR, info["window_start"], info["window_end"])
        spans.add(len(window))
    assert spans == {21}


# ---------------------------------------------------------------- FinHedging-v0
HEDGE = {"symbols": ["AAPL", "MSFT", "NVDA"], "split": None, "start": "2025-03-03", "end": "2025-06-30"}
HEDGE_ACTIONS = [1, 0, 2, 2, 3, 1, 2] * 20
HEDGE_WORDS = ["AAPL/NVDA", "LONG_SHORT", "HOLD", "HOLD", "CLOSE", "SHORT_LONG", "HOLD"] * 20


@pytest.fixture(scope="module")
def hedge_frame(catalog) -> pd.DataFrame:
    return pd.concat([catalog.series(s).to_frame() for s in HEDGE["symbols"]], ignore_index=True)


def _hedging(frame: pd.DataFrame) -> FinHedgingEnv:
    return FinHedgingEnv(data=frame, **HEDGE)


@pytest.fixture(scope="module")
def hedging_base(hedge_frame):
    return play(_hedging(hedge_frame), HEDGE_ACTIONS), play_text(_hedging(hedge_frame), HEDGE_WORDS)


@pytest.mark.parametrize("change", [*CHANGES, "one_stops"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_hedging_up_to_d_ignores_later_bars(hedge_frame, hedging_base, which, change):
    base, base_text = hedging_base
    cut = cuts_of(base)[which]
    # a gap or a stop of one symbol (MSFT: not in the traded pair) changes the universe's common calendar
    frame = change_after(hedge_frame, cut, change, symbol="MSFT" if change in ("gap", "one_stops") else None)
    rows = play(_hedging(frame), HEDGE_ACTIONS)
    assert_same_up_to(base, rows, cut, f"FinHedging-v0 {change}")
    assert_same_up_to(base_text, play_text(_hedging(frame), HEDGE_WORDS), cut, f"FinHedging-v0 text {change}")
    assert rows != base
    if change in ("stops", "one_stops"):
        assert rows[-1]["date"] == cut


# ---------------------------------------------------------------- FinReport-v0
REPORT = {"symbol": "AAPL", "split": "eval", "peers": {"AAPL": ["MSFT", "GOOGL"]}}
RATING_WORDS = ["BUY", "HOLD", "SELL", "STRONG_BUY", "STRONG_SELL"] * 4


class _ChangedReportEnv(FinReportEnv):
    """FinReport-v0 reading catalog series changed after ``cut`` (the symbol and its peers)."""

    def __init__(self, *args: Any, cut: str, change: str, **kwargs: Any) -> None:
        self._cut, self._change, self._changed = cut, change, {}
        super().__init__(*args, **kwargs)

    def _series(self, symbol: str) -> PriceSeries:
        if symbol not in self._changed:
            self._changed[symbol] = changed_series(super()._series(symbol), self._cut, self._change,
                                                   seed=sum(symbol.encode()))
        return self._changed[symbol]


@pytest.fixture(scope="module")
def report_base():
    return (play(FinReportEnv(**REPORT), [3, 2, 1, 4, 0] * 4),
            play_text(FinReportEnv(**REPORT), RATING_WORDS))


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("which", [0, 1, 2])
def test_report_up_to_d_ignores_later_bars(report_base, which, change):
    base, base_text = report_base
    # a report is decided at its day's close; cut on report days and on the day after one
    cut = [base[0]["date"], base[5]["date"], str(np.datetime64(base[9]["date"]) + 1)][which]
    rows = play(_ChangedReportEnv(cut=cut, change=change, **REPORT), [3, 2, 1, 4, 0] * 4)
    assert_same_up_to(base, rows, cut, f"FinReport-v0 {change}")
    text = play_text(_ChangedReportEnv(cut=cut, change=change, **REPORT), RATING_WORDS)
    assert_same_up_to(base_text, text, cut, f"FinReport-v0 text {change}")
    assert rows != base


def test_report_counts_and_days_come_from_the_calendar():
    env = _ChangedReportEnv(cut="2026-01-16", change="stops", **REPORT)
    _, info = env.reset(seed=0)
    assert (info["n_reports"], info["window_end"]) == (13, "2026-03-31")
    assert env.text_state()["Report date"] == "2026-01-02 (report 1 of 13)"
    _, _, _, _, info = env.step(3)
    assert info["report_date"] == "2026-01-02" and env.text_state()["Report date"].endswith("(report 2 of 13)")
    _, reward, term, trunc, info = env.step(3)  # the week of 2026-01-16: the data stops at its report day
    assert info["date"] == "2026-01-16" and not trunc
    _, reward, term, trunc, info = env.step(3)  # the report at the last bar finds no next bar
    assert trunc and not term and info["date"] == "2026-01-16" and info["days"] == []


# ---------------------------------------------------------------- the multi-agent market and pairs market
def _ma_play(env: Any, seed: int = 3) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=0)
    first = next(iter(infos.values()))
    rows = [{"date": first["date"], "obs": {a: o.tobytes() for a, o in obs.items()}, "info": plain(infos),
             "reward": None}]
    while env.agents:
        actions = {a: int(rng.integers(3)) for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        first = next(iter(infos.values()))
        rows.append({"date": first["date"], "obs": {a: o.tobytes() for a, o in obs.items()},
                     "info": plain(infos), "reward": plain(rewards), "end": not env.agents})
    return rows


MA_SYMBOLS = ("QQQ", "SPY")


def _ma_env(kind: str, monkeypatch, catalog, cut: str | None = None, change: str | None = None) -> Any:
    import finenvs.data.catalog as catalog_module
    from finenvs.multiagent import pairs_parallel_env, parallel_env

    class _Changed:
        def series(self, symbol: str, dataset: str = "core") -> PriceSeries:
            s = catalog.series(symbol, dataset)
            if cut is None or (change == "one_stops" and symbol != "SPY"):
                return s
            return changed_series(s, cut, "stops" if change == "one_stops" else change, seed=len(symbol))

    monkeypatch.setattr(catalog_module, "default_catalog", lambda: _Changed())
    common = {"exogenous": "real", "window": 5, "fee_bps": 2.0, **EVAL}
    if kind == "market":
        return parallel_env(n_agents=2, symbol="SPY", **common)
    return pairs_parallel_env(symbols=MA_SYMBOLS, **common)


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize(("kind", "change"), [*(("market", c) for c in CHANGES),
                                              *(("pairs", c) for c in (*CHANGES, "one_stops"))])
def test_multiagent_up_to_d_ignores_later_bars(monkeypatch, catalog, kind, which, change):
    pytest.importorskip("pettingzoo")
    base = _ma_play(_ma_env(kind, monkeypatch, catalog))
    cut = cuts_of(base)[which]
    rows = _ma_play(_ma_env(kind, monkeypatch, catalog, cut, change))
    assert_same_up_to(base, rows, cut, f"{kind} {change}")
    assert rows != base
    if change in ("stops", "one_stops"):
        assert rows[-1]["date"] == cut


# ---------------------------------------------------------------- the calendar module
def test_sessions_are_the_exchange_rules_not_the_data():
    days = sessions("XNYS", "2026-01-01", "2026-01-31")
    assert str(days[0]) == "2026-01-02" and np.datetime64("2026-01-19") not in days  # MLK day
    assert np.datetime64("2026-01-20") in days  # ^GSPC's missing bar is a session
    assert len(sessions("XNYS", "2026-01-02", "2026-02-13")) == 30
    assert not days.flags.writeable
    lon = sessions("XLON", "2025-12-24", "2025-12-31")
    assert [str(d) for d in lon] == ["2025-12-24", "2025-12-29", "2025-12-30", "2025-12-31"]


def test_window_sessions_lead_with_the_first_decision_and_count_off_calendar_bars_back():
    window = window_sessions("XNYS", "2026-01-03", "2026-01-09")  # a Saturday bar leads
    assert str(window[0]) == "2026-01-03" and len(window) == 6
    pos = session_positions(window, np.array(["2026-01-03", "2026-01-05", "2026-01-10"], dtype="datetime64[D]"))
    assert pos.tolist() == [0, 1, 5]


@pytest.mark.parametrize(("name", "first", "match"), [
    ("NOPE", "2026-01-01", "unknown calendar 'NOPE'"),
    (7, "2026-01-01", "must be an exchange calendar name"),
    ("XNYS", "2300-01-01", "calendar 'XNYS' has no sessions for 2300"),
])
def test_bad_calendars_and_dates_outside_the_calendar_are_clear_errors(name, first, match):
    with pytest.raises(WindowError, match=match):
        sessions(name, first, np.datetime64(first) + 30)


def test_envs_refuse_an_unknown_calendar():
    with pytest.raises(WindowError, match="unknown calendar"):
        FinTradingEnv(symbol="AAPL", split="eval", calendar="XXXX")


def test_session_window_counts_the_calendar_past_the_data():
    dates = sessions("XNYS", "2025-10-01", "2026-01-09")
    window = session_window(dates, np.datetime64("2026-01-02"), np.datetime64("2026-03-31"), calendar="XNYS",
                            history=30, label="X", explicit_start=True, min_decisions=1, episode_length=None,
                            history_note="")
    assert window.n_decisions == 60 and not window.complete and window.end_day == "2026-03-31"
    assert window.time_remaining()[:2].tolist() == [1.0, 59 / 60]


@pytest.mark.parametrize("change", ["stops", "gap"])
def test_the_vector_env_steps_a_stopping_or_gapped_series_as_the_single_env(trading_frame, change):
    """FinTradingVectorEnv follows the same definition: time remaining by session, the step over a gap, and the
    decision at the last bar of a series that stops closes the position and truncates."""
    from finenvs.tasks.trading.vector import FinTradingVectorEnv

    frame = change_after(trading_frame, "2026-02-10", change)
    vec = FinTradingVectorEnv(2, symbol="AAPL", data=frame, **EVAL)
    singles = [FinTradingEnv(symbol="AAPL", data=frame, **EVAL) for _ in range(2)]
    obs_v, _ = vec.reset(seed=5)
    obs_s = [env.reset(seed=5 + i)[0] for i, env in enumerate(singles)]
    assert all(obs_v[i].tobytes() == obs_s[i].tobytes() for i in range(2))
    rng = np.random.default_rng(0)
    for _ in range(200):
        actions = rng.integers(0, 3, 2)
        obs_v, reward_v, term_v, trunc_v, info_v = vec.step(actions)
        for i, env in enumerate(singles):
            obs, reward, term, trunc, info = env.step(int(actions[i]))
            assert obs_v[i].tobytes() == obs.tobytes() and (term_v[i], trunc_v[i]) == (term, trunc)
            assert info_v["equity"][i] == info["equity"] and info_v["position"][i] == info["position"]
            assert reward_v[i] == pytest.approx(reward, rel=1e-12, abs=1e-15)
        if trunc_v.any() or term_v.any():
            break
    assert trunc_v.all() and (change == "gap" or info["date"] == "2026-02-10")


def test_calendar_none_counts_the_bars_themselves(trading_frame):
    """For data no exchange calendar covers: the bars are the sessions (a gap then shortens the count)."""
    frame = trading_frame[trading_frame["date"] != "2026-01-20"]
    _, info = FinTradingEnv(symbol="AAPL", data=frame, calendar=None, **EVAL).reset(seed=0)
    assert (info["n_decisions"], info["window_end"]) == (59, "2026-03-31")
