"""FinReport-v0: weekly metrics by hand, report weeks, date lock, conformance, determinism, accounting."""

from __future__ import annotations

import datetime as dt
import math
import pickle
import statistics
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import finenvs  # noqa: F401  (registers FinReport-v0)
from finenvs.baselines.registry import make_policy
from finenvs.data.schema import PriceSeries
from finenvs.evaluation.episodes import run_episode
from finenvs.tasks.report.baselines import REPORT_POLICIES, TemplateReportWriter
from finenvs.tasks.report.core import (
    BUY,
    HOLD,
    METRIC_NAMES,
    MIN_HISTORY,
    PEER_MAP,
    RATINGS,
    STRONG_BUY,
    STRONG_SELL,
    align_closes,
    basket_returns,
    position_map_of,
    price_levels,
    report_days,
    week_start_row,
    weekly_metrics,
)
from finenvs.tasks.report.env import FinReportEnv
from finenvs.tools import ToolBox
from finenvs.tools.indicators import macd, rsi, sma
from helpers import herculean_buy_and_hold, perturb_after

FEE = 0.0005
EVAL_FRIDAYS = [
    "2026-01-02", "2026-01-09", "2026-01-16", "2026-01-23", "2026-01-30", "2026-02-06", "2026-02-13",
    "2026-02-20", "2026-02-27", "2026-03-06", "2026-03-13", "2026-03-20", "2026-03-27",
]
RATING_MSG = r"0: 'STRONG_SELL', 1: 'SELL', 2: 'HOLD', 3: 'BUY', 4: 'STRONG_BUY'"


def _bits(metrics: dict[str, float]) -> bytes:
    """Bitwise fingerprint of a metric dict (nan positions included), in METRIC_NAMES order."""
    assert tuple(metrics) == METRIC_NAMES
    return np.array([metrics[name] for name in METRIC_NAMES], dtype=np.float64).tobytes()


def report_rollout(env, seed, actions=None):
    """(observations as bytes, rewards, infos) of one whole episode; seeded random ratings by default."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    observations, rewards, infos = [obs.tobytes()], [], [info]
    k = 0
    while True:
        a = actions[k] if actions is not None else int(rng.integers(len(RATINGS)))
        obs, r, term, trunc, info = env.step(a)
        observations.append(obs.tobytes())
        rewards.append(r)
        infos.append(info)
        k += 1
        if term or trunc:
            return observations, rewards, infos


# ---------------------------------------------------------------- synthetic market, by hand
WEEKDAYS = np.busday_offset("2023-01-02", np.arange(310), roll="forward")  # Monday .. Friday 2024-03-08
LAST_WEEK = {"mon": 305, "tue": 306, "wed": 307, "thu": 308, "fri": 309}
#: case -> (dropped weekday rows of the last week (holidays), row the history ends on)
HISTORY_CASES = {
    "full_week": ((), "fri"),
    "monday_holiday": (("mon",), "fri"),
    "wednesday_holiday": (("wed",), "fri"),
    "friday_holiday_thursday_report": (("fri",), "thu"),
    "midweek_report": ((), "wed"),
    "single_day_week": ((), "mon"),
}


def _synthetic_market(case: str, seed: int = 0):
    """Stock dates/closes/volumes ending on the case's day, and 2 peers with their own calendars."""
    rng = np.random.default_rng(seed)
    n = WEEKDAYS.size
    stock_lr = rng.normal(0.0004, 0.018, n)
    close = 100.0 * np.exp(np.cumsum(stock_lr))
    close[3] = 3.0 * close.max()  # an all-time high older than the 52-week (252-row) window
    volume = np.round(rng.uniform(1e6, 5e6, n))
    peer_a = 50.0 * np.exp(np.cumsum(0.7 * stock_lr + rng.normal(0.0, 0.01, n)))
    peer_b = 80.0 * np.exp(np.cumsum(-0.3 * stock_lr + rng.normal(0.0002, 0.015, n)))
    dropped, end = HISTORY_CASES[case]
    holidays = {LAST_WEEK[d] for d in dropped}
    keep = np.array([i for i in range(LAST_WEEK[end] + 1) if i not in holidays])
    # peer A trades every weekday (also the stock's holidays, and after the report day);
    # peer B misses the last week's Tuesday and an older day, and starts 2 days after the stock
    b_rows = np.array([i for i in range(2, n) if i not in (100, LAST_WEEK["tue"])])
    peers = [(WEEKDAYS, peer_a), (WEEKDAYS[b_rows], peer_b[b_rows])]
    return WEEKDAYS[keep], close[keep], volume[keep], peers


def _aligned_peers(dates, peers):
    return np.column_stack([align_closes(dates, pd_, pc) for pd_, pc in peers])


def _iso_week(day) -> tuple[int, int]:
    return dt.date.fromisoformat(str(day)).isocalendar()[:2]


def _hand_ema(xs: list[float], w: int) -> list[float | None]:
    """TA-Lib EMA in plain Python: SMA seed of the first w values, then a = 2 / (w + 1)."""
    out: list[float | None] = [None] * len(xs)
    if len(xs) < w:
        return out
    prev = sum(xs[:w]) / w
    out[w - 1] = prev
    a = 2.0 / (w + 1.0)
    for i in range(w, len(xs)):
        prev = a * xs[i] + (1.0 - a) * prev
        out[i] = prev
    return out


def _hand_rsi(cl: list[float], w: int = 14) -> float:
    """Wilder's RSI of the last close in plain Python."""
    changes = [cl[i] - cl[i - 1] for i in range(1, len(cl))]
    gains = [max(c, 0.0) for c in changes]
    losses = [max(-c, 0.0) for c in changes]
    avg_gain, avg_loss = sum(gains[:w]) / w, sum(losses[:w]) / w
    for j in range(w, len(changes)):
        avg_gain = (avg_gain * (w - 1) + gains[j]) / w
        avg_loss = (avg_loss * (w - 1) + losses[j]) / w
    return 100.0 if avg_loss == 0 else 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)


def _hand_metrics(dates, close, volume, peers) -> tuple[dict[str, float], list[float], list[float]]:
    """The module docstring's 16 definitions at the last row in plain Python (no finenvs code).

    Returns the metrics and the 60 daily returns of the stock and of the peer basket behind beta.
    """
    days = [dt.date.fromisoformat(str(d)) for d in dates]
    cl, vol = [float(x) for x in close], [float(x) for x in volume]
    t = len(cl) - 1
    c = cl[t]
    ws = t
    while ws > 0 and _iso_week(days[ws - 1]) == _iso_week(days[t]):
        ws -= 1
    prev = ws - 1
    m: dict[str, float] = {}
    m["weekly_return"] = c / cl[prev] - 1.0
    logr = [math.log(cl[i] / cl[i - 1]) for i in range(t - 19, t + 1)]
    m["volatility_20d"] = statistics.stdev(logr) * math.sqrt(252)
    moves = [cl[i] / cl[i - 1] - 1.0 for i in range(ws, t + 1)]
    m["max_daily_move"] = max(moves, key=abs)
    m["volume_change"] = statistics.fmean(vol[ws : t + 1]) / statistics.fmean(vol[ws - 20 : ws]) - 1.0
    year = cl[-252:]
    m["dist_52w_high"] = c / max(year) - 1.0
    m["dist_52w_low"] = c / min(year) - 1.0
    m["return_4w"] = c / cl[t - 20] - 1.0
    m["return_12w"] = c / cl[t - 60] - 1.0
    m["rsi_14"] = _hand_rsi(cl)
    fast, slow = _hand_ema(cl, 12), _hand_ema(cl, 26)
    line = [f - s for f, s in zip(fast[25:], slow[25:], strict=True)]
    m["macd_histogram"] = line[-1] - _hand_ema(line, 9)[-1]
    m["sma50_gap"] = c / statistics.fmean(cl[t - 49 : t + 1]) - 1.0
    # peers: the last close on or before each stock date
    aligned = []
    for pdates, pcloses in peers:
        pdays = [dt.date.fromisoformat(str(d)) for d in pdates]
        col = []
        for d in days:
            before = [float(pcloses[j]) for j, pd_ in enumerate(pdays) if pd_ <= d]
            col.append(before[-1] if before else math.nan)
        aligned.append(col)

    def basket(i: int) -> float:
        rets = [col[i] / col[i - 1] - 1.0 for col in aligned if math.isfinite(col[i] + col[i - 1])]
        return sum(rets) / len(rets)

    m["peer_weekly_return"] = math.prod(1.0 + basket(i) for i in range(ws, t + 1)) - 1.0
    m["excess_weekly_return"] = m["weekly_return"] - m["peer_weekly_return"]
    r = [cl[i] / cl[i - 1] - 1.0 for i in range(t - 59, t + 1)]
    rb = [basket(i) for i in range(t - 59, t + 1)]
    m["beta_60d"] = statistics.covariance(r, rb) / statistics.variance(rb)
    m["correlation_60d"] = statistics.correlation(r, rb)
    m["relative_strength_12w"] = (1.0 + m["return_12w"]) / math.prod(1.0 + x for x in rb) - 1.0
    return m, r, rb


@pytest.mark.parametrize("case", sorted(HISTORY_CASES))
def test_weekly_metrics_match_hand_computation(case):
    dates, close, volume, peers = _synthetic_market(case)
    got = weekly_metrics(dates, close, volume, _aligned_peers(dates, peers))
    want, r, rb = _hand_metrics(dates, close, volume, peers)
    assert tuple(got) == METRIC_NAMES and len(got) == 16
    for name in METRIC_NAMES:
        assert math.isfinite(got[name]), name
        assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-12), name
    # the 52-week window is the last 252 rows: the older spike is out of it
    assert got["dist_52w_high"] != pytest.approx(close[-1] / close.max() - 1.0)
    assert got["dist_52w_high"] <= 0.0 <= got["dist_52w_low"]
    # independent cross-checks of beta / correlation (least-squares slope and Pearson r)
    try:
        from scipy.stats import linregress
    except ImportError:  # pragma: no cover - scipy is optional
        slope, corr = np.polyfit(rb, r, 1)[0], np.corrcoef(r, rb)[0, 1]
    else:
        fit = linregress(rb, r)
        slope, corr = fit.slope, fit.rvalue
    assert got["beta_60d"] == pytest.approx(slope, rel=1e-9)
    assert got["correlation_60d"] == pytest.approx(corr, rel=1e-9)
    assert got["rsi_14"] == pytest.approx(float(rsi(close, 14)[-1]), rel=1e-12)


def test_holiday_weeks_start_after_the_missing_day():
    dates, close, *_ = _synthetic_market("monday_holiday")
    t = dates.size - 1
    ws = week_start_row(dates, t)
    assert str(dates[ws]) == "2024-03-05" and str(dates[ws - 1]) == "2024-03-01"  # Tue, then the previous Fri
    got = weekly_metrics(dates, close, np.ones_like(close))
    assert got["weekly_return"] == pytest.approx(close[t] / close[ws - 1] - 1.0, rel=1e-14)
    dates, *_ = _synthetic_market("single_day_week")
    assert week_start_row(dates, dates.size - 1) == dates.size - 1


def test_align_closes_and_basket_returns_by_hand():
    dates = np.arange(np.datetime64("2024-01-01"), np.datetime64("2024-01-06"))
    pdates = np.array(["2024-01-02", "2024-01-04", "2024-01-06"], dtype="datetime64[D]")
    got = align_closes(dates, pdates, np.array([10.0, 12.0, 99.0]))
    np.testing.assert_array_equal(got, [np.nan, 10.0, 10.0, 12.0, 12.0])
    closes = np.column_stack([got, [20.0, 21.0, 22.0, 22.0, 11.0]])
    b = basket_returns(closes)
    assert math.isnan(b[0])
    assert b[1] == pytest.approx(0.05)  # only the second peer has both closes
    assert b[2] == pytest.approx((0.0 + 1.0 / 21.0) / 2)
    assert b[4] == pytest.approx((0.0 - 0.5) / 2)


def test_rsi_hand_values():
    rising = np.arange(1.0, 40.0)
    falling = rising[::-1].copy()
    zigzag = np.array([10.0, 11.0] * 7 + [10.0])  # 7 gains and 7 losses of 1
    dates = np.busday_offset("2024-01-01", np.arange(rising.size), roll="forward")
    assert weekly_metrics(dates, rising, np.ones(rising.size))["rsi_14"] == 100.0
    assert weekly_metrics(dates, falling, np.ones(falling.size))["rsi_14"] == 0.0
    assert rsi(zigzag, 14)[-1] == pytest.approx(50.0, abs=1e-12)
    assert _hand_rsi(list(zigzag)) == pytest.approx(50.0, abs=1e-12)


def _expected_nan(n: int, ws: int) -> set[str]:
    """Metrics the definitions leave undefined for a history of n rows whose last week starts at row ws."""
    nan = set()
    if ws < 1:
        nan |= {"weekly_return", "max_daily_move", "peer_weekly_return", "excess_weekly_return"}
    if ws < 20:
        nan.add("volume_change")
    if n <= 20:
        nan |= {"volatility_20d", "return_4w"}
    if n <= 60:
        nan |= {"return_12w", "beta_60d", "correlation_60d", "relative_strength_12w"}
    if n <= 14:
        nan.add("rsi_14")
    if n < 34:
        nan.add("macd_histogram")
    if n < 50:
        nan.add("sma50_gap")
    return nan


@pytest.mark.parametrize("n", [1, 3, 5, 6, 15, 20, 21, 25, 33, 34, 49, 50, 60, MIN_HISTORY, 62])
def test_too_short_history_gives_nan_exactly_where_undefined(n):
    dates, close, volume, peers = _synthetic_market("full_week")
    dates, close, volume = dates[:n], close[:n], volume[:n]
    got = weekly_metrics(dates, close, volume, _aligned_peers(dates, peers))
    nan = {k for k, v in got.items() if math.isnan(v)}
    assert nan == _expected_nan(n, week_start_row(dates, n - 1))
    if n >= MIN_HISTORY:
        assert not nan  # MIN_HISTORY rows are enough for every metric
    no_peers = weekly_metrics(dates, close, volume)
    assert all(math.isnan(no_peers[k]) for k in ("peer_weekly_return", "beta_60d", "relative_strength_12w"))


def test_empty_history_is_all_nan():
    got = weekly_metrics(np.array([], dtype="datetime64[D]"), np.array([]), np.array([]))
    assert tuple(got) == METRIC_NAMES and all(math.isnan(v) for v in got.values())


# ---------------------------------------------------------------- report days
def test_report_days_of_the_eval_split(catalog):
    env = FinReportEnv(symbol="AAPL", split="eval")
    _, info = env.reset(seed=0)
    dates = catalog.series("AAPL").dates
    first = int(np.searchsorted(dates, np.datetime64(info["window_start"])))
    last = int(np.searchsorted(dates, np.datetime64(info["window_end"])))
    assert (str(dates[first]), str(dates[last])) == ("2026-01-02", "2026-03-31")
    days = report_days(dates, first, last)
    assert days.size == 13 == info["n_reports"]
    shown = [str(dates[i]) for i in days]
    assert shown == EVAL_FRIDAYS and shown[-1] == "2026-03-27" and last not in days
    for i in days:  # each is its ISO week's last trading day (here all Fridays)
        assert dt.date.fromisoformat(str(dates[i])).weekday() == 4
        assert _iso_week(dates[i + 1]) != _iso_week(dates[i])
    # and the env steps exactly through them
    _, _, infos = report_rollout(env, seed=0, actions=[HOLD] * 13)
    assert [i["report_date"] for i in infos[1:]] == EVAL_FRIDAYS
    assert infos[-1]["date"] == "2026-03-31"


def test_live_split_reports_from_its_first_close():
    """HERCULEAN's live window opens on Wednesday 2026-04-01: the first report is due at that close (not at the
    week's end, Thursday 04-02 before Good Friday), then one per week."""
    env = gym.make("FinReport-v0", symbol="AAPL", split="live")
    _, _, infos = report_rollout(env, seed=0, actions=[BUY] * 4)
    assert [i["report_date"] for i in infos[1:]] == ["2026-04-01", "2026-04-10", "2026-04-17", "2026-04-24"]
    assert dt.date(2026, 4, 1).weekday() == 2 and infos[-1]["date"] == "2026-05-01"


@pytest.mark.parametrize("split", ["eval", "live"])
def test_buy_and_hold_reproduces_herculeans_published_market_insights_rows(split):
    """HERCULEAN Table 2 (eval) and Table 3 (live): the Market Insights Buy&Hold baseline per stock, under the
    paper's convention (the herculean preset)."""
    from finenvs.tasks.report.spec import HERCULEAN_PUBLISHED_BUY_AND_HOLD

    published = HERCULEAN_PUBLISHED_BUY_AND_HOLD[split]
    assert set(published) == {"MSFT", "TSLA", "AAPL", "NVDA"}
    for symbol, row in published.items():
        ours = herculean_buy_and_hold("FinReport-v0", symbol, split, BUY)
        assert {k: ours[k] for k in row} == row, symbol


@pytest.mark.parametrize("split", ["eval", "live"])
def test_published_buy_and_hold_is_the_closes_ratio_less_the_exit_fee_and_finenvs_standard_cr_adds_the_entry_fee(
        catalog, split):
    """Why Buy&Hold on the live window reads 12.09 beside the paper's 12.15 (MSFT; TSLA 2.40 beside 2.46): the
    paper's CR is last / first of the equity measured after the entry fee, so only the exit fee is in it:
    (1 - f) x close(last day) / close(first day) - 1, f = 5 bp, closes of the shipped data. finenvs' standard CR
    (the headline column) starts the wealth path at 1.0 before the entry fee: (1 - f)^2 x the same ratio - 1.
    The data, first day, fill at the close and fee all agree with the paper; only the convention differs."""
    from finenvs.tasks.report.spec import HERCULEAN_PUBLISHED_BUY_AND_HOLD
    from finenvs.wrappers import EpisodeMetrics

    fee = 0.0005
    first_day, last_day = {"eval": ("2026-01-02", "2026-03-31"), "live": ("2026-04-01", "2026-05-01")}[split]
    standard = {}
    for symbol, row in HERCULEAN_PUBLISHED_BUY_AND_HOLD[split].items():
        series = catalog.series(symbol)
        a, b = (int(np.searchsorted(series.dates, np.datetime64(d))) for d in (first_day, last_day))
        assert (str(series.dates[a]), str(series.dates[b])) == (first_day, last_day)
        ratio = float(series.close[b] / series.close[a])
        assert round(100 * ((1 - fee) * ratio - 1), 2) == row["CR"], symbol  # the paper's figure, from the closes
        env = EpisodeMetrics(gym.make("FinReport-v0", symbol=symbol, split=split))
        env.reset(seed=0)
        while True:
            *_, term, trunc, info = env.step(BUY)
            if term or trunc:
                break
        m = info["episode_metrics"]
        assert m["herculean"]["cumulative_return"] == pytest.approx((1 - fee) * ratio - 1, abs=1e-12)
        assert m["standard"]["cumulative_return"] == pytest.approx((1 - fee) ** 2 * ratio - 1, abs=1e-12)
        standard[symbol] = round(100 * m["standard"]["cumulative_return"], 2)
    if split == "live":  # the figures the difference was noticed on
        assert (standard["MSFT"], standard["TSLA"]) == (12.09, 2.40)
        assert (HERCULEAN_PUBLISHED_BUY_AND_HOLD["live"]["MSFT"]["CR"],
                HERCULEAN_PUBLISHED_BUY_AND_HOLD["live"]["TSLA"]["CR"]) == (12.15, 2.46)


def test_report_days_with_holidays_and_window_edges():
    dates, *_ = _synthetic_market("friday_holiday_thursday_report")  # the last week ends on a Thursday
    dates = np.append(dates, np.datetime64("2024-03-11"))  # and the next Monday is the window's last day
    last = dates.size - 1
    days = report_days(dates, 290, last)
    assert str(dates[days[-1]]) == "2024-03-07"  # Thursday: its week's last trading day
    assert days[0] == 290  # the window's first day, then Fridays
    assert all(dates[i].astype(dt.date).weekday() == 4 for i in days[1:-1])
    # the window's last row is never a report day, even on a Friday
    assert report_days(WEEKDAYS, 0, 309)[-1] == 304
    # a window starting midweek: its first report is its first day, the next one the next week's Friday
    assert report_days(WEEKDAYS, 2, 20).tolist()[:2] == [2, 9]
    # a window of one row has no report day; of two rows, the first
    assert report_days(WEEKDAYS, 5, 5).size == 0 and report_days(WEEKDAYS, 5, 6).tolist() == [5]


def test_price_levels_by_hand_and_on_a_short_history():
    dates = np.array(["2025-03-05", "2025-03-06", "2025-03-07", "2025-03-10", "2025-03-11"], dtype="datetime64[D]")
    high, low, close = np.array([11.0, 14, 12, 9, 10]), np.array([8.0, 9, 10, 7, 8]), np.array([10.0, 13, 11, 8, 9])
    # the week of Monday 10 March holds the last two rows; every level from five closes, no 50-day SMA yet
    levels = price_levels(dates, high, low, close)
    assert (levels["week_high"], levels["week_low"], levels["high_52w"], levels["low_52w"]) == (10.0, 7.0, 13.0, 8.0)
    assert math.isnan(levels["sma50"])
    n = 300  # a longer history: the 52-week levels read only the last 252 closes, the SMA the last 50
    days = np.arange(np.datetime64("2024-01-01"), np.datetime64("2024-01-01") + n).astype("datetime64[D]")
    rising = np.arange(n, dtype=float)
    rising[10] = 1e6  # older than a year of rows: not the 52-week high
    levels = price_levels(days, rising + 1, rising - 1, rising)
    assert (levels["high_52w"], levels["low_52w"], levels["sma50"]) == (n - 1, n - 252, (n - 1 + n - 50) / 2)


# ---------------------------------------------------------------- date lock
def test_weekly_metrics_are_invariant_to_every_row_after_t():
    dates, close, volume, peers = _synthetic_market("full_week", seed=3)
    rng = np.random.default_rng(11)
    n = dates.size
    checked_nan = False
    for t in [0, 2, 7, 30, 59, 60, *rng.integers(61, n - 1, 12).tolist()]:
        k = n - t - 1
        close2 = close.copy()
        close2[t + 1 :] *= np.exp(rng.normal(0.0, 0.3, k))
        volume2 = volume.copy()
        volume2[t + 1 :] *= rng.uniform(0.1, 10.0, k)
        peers2 = []
        for pd_, pc in peers:
            pc2 = pc.copy()
            after = pd_ > dates[t]
            pc2[after] *= np.exp(rng.normal(0.0, 0.3, int(after.sum())))
            keep = ~after | (rng.random(pd_.size) < 0.7)  # and drop some of the peer's later days
            peers2.append((pd_[keep], pc2[keep]))
        # the peers are aligned from their full (perturbed) calendars: align_closes reads only days <= each
        d = dates[: t + 1]
        base = weekly_metrics(d, close[: t + 1], volume[: t + 1], _aligned_peers(d, peers))
        alt = weekly_metrics(d, close2[: t + 1], volume2[: t + 1], _aligned_peers(d, peers2))
        assert _bits(base) == _bits(alt), f"metrics at row {t} changed"
        checked_nan |= any(math.isnan(v) for v in base.values())
        # the indicators behind the metrics are causal too: the full perturbed series gives the value at t
        assert rsi(close2)[t].tobytes() == rsi(close[: t + 1])[t].tobytes()
        assert macd(close2)["histogram"][t].tobytes() == macd(close[: t + 1])["histogram"][t].tobytes()
        assert sma(close2, 50)[t].tobytes() == sma(close[: t + 1], 50)[t].tobytes()
        # and the perturbation is real: the last row's metrics differ
        if t < n - 2:
            assert _bits(weekly_metrics(dates, close, volume, _aligned_peers(dates, peers))) != _bits(
                weekly_metrics(dates, close2, volume2, _aligned_peers(dates, peers2))
            )
    assert checked_nan


def test_env_metrics_at_uses_only_rows_up_to_row(catalog):
    env = FinReportEnv(symbol="AAPL", split="eval")
    series = catalog.series("AAPL")
    peer_series = [catalog.series(p) for p in PEER_MAP["AAPL"]]
    rng = np.random.default_rng(5)
    for row in [10, 60, 61, *rng.integers(62, len(series), 6).tolist()]:
        dates = series.dates[: row + 1]
        peers = np.column_stack([align_closes(dates, p.dates, p.close) for p in peer_series])
        want = weekly_metrics(dates, series.close[: row + 1], series.volume[: row + 1], peers)
        assert _bits(env.metrics_at("AAPL", row)) == _bits(want), row


class _PerturbedReportEnv(FinReportEnv):
    """FinReport-v0 reading catalog series whose bars after ``cut`` are replaced (every symbol, peers too)."""

    def __init__(self, *args, cut: str, seed: int, **kwargs):
        self._cut, self._seed, self._perturbed = cut, seed, {}
        super().__init__(*args, **kwargs)

    def _series(self, symbol):
        if symbol not in self._perturbed:
            frame = perturb_after(super()._series(symbol).to_frame(), self._cut,
                                  np.random.default_rng([self._seed, *symbol.encode()]))
            cols = (frame[c].to_numpy() for c in ("open", "high", "low", "close", "volume"))
            self._perturbed[symbol] = PriceSeries.from_arrays(symbol, frame["date"].to_numpy(), *cols)
        return self._perturbed[symbol]


@pytest.mark.parametrize("cut", ["2026-01-14", "2026-02-13", "2026-03-04"])
def test_counterfactual_future_invariance_through_the_env(cut):
    """Perturb every bar after the cut (stock and peers): nothing observed up to the cut may change."""
    actions = np.random.default_rng(1).integers(0, 5, 13).tolist()
    base = FinReportEnv(symbol="AAPL", split="eval")
    alt = _PerturbedReportEnv(symbol="AAPL", split="eval", cut=cut, seed=2)
    o1, r1, i1 = report_rollout(base, seed=0, actions=actions)
    o2, r2, i2 = report_rollout(alt, seed=0, actions=actions)
    upto = [k for k, info in enumerate(i1) if info["date"] <= cut]
    assert len(upto) >= 2
    for k in upto:
        assert o1[k] == o2[k] and i1[k] == i2[k], f"step {k} ({i1[k]['date']}) changed (cut {cut})"
        if k > 0:
            assert r1[k - 1] == r2[k - 1]
    assert any(o1[k] != o2[k] for k in range(upto[-1] + 1, len(o1)))
    market = base.market
    cut_row = int(np.searchsorted(market.dates, np.datetime64(cut), side="right")) - 1
    for sym in ("AAPL", "MSFT"):
        for row in range(cut_row - 70, cut_row + 1):
            assert _bits(base.metrics_at(sym, row)) == _bits(alt.metrics_at(sym, row)), (sym, row)
    assert _bits(base.metrics_at("AAPL", cut_row + 5)) != _bits(alt.metrics_at("AAPL", cut_row + 5))


def _facts_bits(facts) -> tuple:
    """Every field of a ReportFacts as comparable bytes (levels, peers' returns and the value pools included)."""
    def bits(mapping):
        return tuple(sorted((k, np.float64(v).tobytes()) for k, v in mapping.items()))
    return (facts.symbol, facts.report_date, np.float64(facts.close).tobytes(), bits(facts.metrics),
            bits(facts.levels), tuple((p, bits(r)) for p, r in sorted(facts.peer_returns.items())),
            np.asarray(facts.week_closes).tobytes(), facts.plain_values.tobytes(), facts.percent_values.tobytes(),
            facts.filings)


@pytest.mark.parametrize("cut", ["2026-01-14", "2026-02-13"])
def test_report_facts_and_template_reports_are_future_invariant(cut):
    """What a report is checked against (levels, moving averages, indicator lines, peers' returns, value pools),
    the template writer's report and its quality card: unchanged by any change to bars after the cut."""
    from finenvs.tasks.report.baselines import TemplateReportWriter

    runs = []
    for env in (FinReportEnv(symbol="AAPL", split="eval", action_mode="report"),
                _PerturbedReportEnv(symbol="AAPL", split="eval", action_mode="report", cut=cut, seed=3)):
        env.reset(seed=0)
        writer, rows, done = TemplateReportWriter(env), [], False
        while not done:
            report, facts = writer.write(), env.facts()
            _, _, terminated, truncated, info = env.step(report)
            rows.append((str(facts.report_date), report, _facts_bits(facts), info["quality"]))
            done = terminated or truncated
        runs.append(rows)
    base, alt = runs
    upto = [k for k, row in enumerate(base) if row[0] <= cut]
    assert len(upto) >= 2
    for k in upto:
        assert base[k] == alt[k], f"report {base[k][0]} changed (cut {cut})"
    assert any(base[k][2] != alt[k][2] for k in range(upto[-1] + 1, len(base)))  # the perturbation is real


def test_weekly_metrics_tool_counts_look_ahead_and_answers_as_of_the_report():
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    env.step(BUY)  # now at the 2026-01-09 report
    tools = ToolBox(env)
    now = tools.call("get_weekly_metrics", {})
    assert now.ok and now.look_ahead == 0 and now.data["date"] == "2026-01-09"
    peek = tools.call("get_weekly_metrics", {"date": "2026-12-31"})
    assert peek.ok and peek.look_ahead >= 1
    assert peek.data["date"] == now.data["as_of"] == "2026-01-09"
    assert peek.data["metrics"] == now.data["metrics"]
    want = env.unwrapped.weekly_metrics()
    assert now.data["metrics"]["single_stock"]["weekly_return"] == "-4.30%"  # as a report writes it
    full = tools.call("get_weekly_metrics", {"full": True})
    assert full.ok and full.data["metrics"]["single_stock"]["weekly_return"] == [round(want["weekly_return"], 6),
                                                                                  "-4.30%"]
    assert {k: v for k, v in full.data.items() if k != "metrics"} == {k: v for k, v in now.data.items()
                                                                       if k != "metrics"}
    assert not tools.call("get_weekly_metrics", {"full": "yes"}).ok  # not a boolean: an error naming it
    closes = env.unwrapped.as_of_view().prices("AAPL", lookback=400)
    week = closes.dates.astype("datetime64[D]") >= np.datetime64("2026-01-05")  # the week of Monday 5 January
    assert now.data["levels"] == {
        "week_high": round(float(closes.high[week].max()), 4), "week_low": round(float(closes.low[week].min()), 4),
        "high_52w": round(float(closes.close[-252:].max()), 4), "low_52w": round(float(closes.close[-252:].min()), 4),
        "sma50": round(float(closes.close[-50:].mean()), 4)}
    earlier = tools.call("get_weekly_metrics", {"date": "2026-01-02"})
    assert earlier.ok and earlier.look_ahead == 0 and earlier.data["date"] == "2026-01-02"
    _, _, _, _, info = env.step(BUY)
    assert info["look_ahead_attempts"] >= 1


# ---------------------------------------------------------------- conformance
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"split": "eval", "symbol": "MSFT"}, {"split": "eval", "symbol": "MSFT", "render_mode": "ansi"},
     {"episode_weeks": 4}, {"split": "eval", "symbol": "AAPL", "action_mode": "report"}],
    ids=["default", "eval_msft", "eval_msft_ansi", "episode_weeks", "report_mode"],
)
def test_check_env_without_warnings(kwargs):
    env = gym.make("FinReport-v0", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check="render_mode" not in kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"split": "eval", "symbol": "MSFT"}], ids=["default", "eval_msft"])
def test_stable_baselines3_check_env(kwargs):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker", reason="needs finenvs[rl]")
    env = gym.make("FinReport-v0", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_checker.check_env(env.unwrapped, warn=True)


def test_spaces_and_observation_contract():
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval")
    assert env.action_space == gym.spaces.Discrete(5)
    assert env.observation_space.shape == (18,) and env.observation_space.dtype == np.float32
    obs, _ = env.reset(seed=0)
    assert obs[-2] == 0.0 and obs[-1] == 1.0  # flat, all the time remaining
    obs, *_ = env.step(STRONG_BUY)
    assert obs[-2] == 1.0 and obs[-1] == pytest.approx(1.0 - 1.0 / 13.0)
    assert env.observation_space.contains(obs)


# ---------------------------------------------------------------- determinism
def test_same_seed_gives_identical_rollout():
    a = report_rollout(gym.make("FinReport-v0", symbol="AAPL", split="eval"), seed=7)
    b = report_rollout(gym.make("FinReport-v0", symbol="AAPL", split="eval"), seed=7)
    assert len(a[0]) == 14
    assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
    assert a[2][-1]["ratings"] == b[2][-1]["ratings"] and len(set(a[2][-1]["ratings"])) > 1
    c = report_rollout(gym.make("FinReport-v0", episode_weeks=4), seed=7)
    d = report_rollout(gym.make("FinReport-v0", episode_weeks=4), seed=7)
    assert c == d


def test_different_seeds_choose_different_symbols_and_windows():
    env = gym.make("FinReport-v0", episode_weeks=4)
    symbols, starts = set(), set()
    for seed in range(20):
        _, info = env.reset(seed=seed)
        symbols.add(info["symbol"])
        starts.add(info["window_start"])
        assert info["n_reports"] == 4 and info["symbol"] in PEER_MAP
        assert "2024-03-12" <= info["window_start"] and info["window_end"] <= "2025-12-31"
    assert len(symbols) > 3 and len(starts) > 10
    # a sub-window ends at its next report's close
    _, _, infos = report_rollout(env, seed=3, actions=[BUY] * 4)
    assert len(infos) == 5 and infos[-1]["date"] == infos[0]["window_end"]


def test_pickle_round_trip_after_reset_and_mid_episode():
    actions = np.random.default_rng(4).integers(0, 5, 13).tolist()
    env = gym.make("FinReport-v0", symbol="NVDA", split="eval").unwrapped
    env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    for k in range(13):
        if k == 5:  # and again mid-episode
            clone = pickle.loads(pickle.dumps(env))
        o1, r1, t1, u1, i1 = env.step(actions[k])
        o2, r2, t2, u2, i2 = clone.step(actions[k])
        assert o1.tobytes() == o2.tobytes() and r1 == r2 and (t1, u1) == (t2, u2) and i1 == i2
    assert u1 and clone.history == env.history


# ---------------------------------------------------------------- accounting
def test_always_buy_matches_fintrading_buy_and_hold():
    report = run_episode(gym.make("FinReport-v0", symbol="MSFT", split="eval"), lambda o, i: BUY,
                         env_id="FinReport-v0", policy_name="always_buy", seed=0)
    trading = run_episode(gym.make("FinTrading-v0", symbol="MSFT", split="eval"), lambda o, i: 2,
                          env_id="FinTrading-v0", policy_name="buy_and_hold", seed=0)
    assert report.steps == 13 and trading.steps == 60
    assert report.dates == trading.dates and len(report.wealth) == 61
    assert report.wealth == trading.wealth
    assert report.positions == trading.positions
    assert report.herculean == trading.herculean
    assert report.standard == trading.standard
    assert round(100 * report.herculean["cumulative_return"], 2) == -21.59  # HERCULEAN Table 2, MSFT BL
    assert report.total_reward == pytest.approx(math.log(report.final_equity), abs=1e-12)


def test_short_exit_fee_on_equity_reaches_the_report_book():
    """short_exit_fee="equity" (the reference scorer's short exit) is FinTrading-v0's book here too: always
    STRONG_SELL equals always-SELL in FinTrading-v0 under the same option, and differs from the default."""
    def wealth(env_id, action, option):
        return run_episode(gym.make(env_id, symbol="MSFT", split="eval", short_exit_fee=option),
                           lambda o, i: action, env_id=env_id, policy_name="short", seed=0).wealth

    report = wealth("FinReport-v0", STRONG_SELL, "equity")
    assert report == wealth("FinTrading-v0", 0, "equity")
    default = wealth("FinReport-v0", STRONG_SELL, "shares")
    assert report[:-1] == default[:-1] and report[-1] < default[-1]  # only the exit differs: a gain costs more
    with pytest.raises(ValueError, match="valid short_exit_fees"):
        FinReportEnv(symbol="MSFT", split="eval", short_exit_fee="Equity")


def test_rewards_sum_to_log_final_equity_and_days_are_listed():
    _, rewards, infos = report_rollout(gym.make("FinReport-v0", symbol="TSLA", split="eval"), seed=11)
    assert math.fsum(rewards) == pytest.approx(math.log(infos[-1]["equity"]), abs=1e-12)
    days = [d for info in infos[1:] for d in info["days"]]
    assert len(days) == 60 and days[-1]["date"] == "2026-03-31"
    for k, info in enumerate(infos[1:], start=1):
        assert info["days"][-1]["equity"] == info["equity"]
        assert rewards[k - 1] == pytest.approx(math.log(info["equity"] / infos[k - 1]["equity"]), abs=1e-14)


def test_scaled_position_map_holds_half_positions():
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval", position_map="scaled")
    env.reset(seed=0)
    c0 = env.unwrapped.market.close_values
    start = env.unwrapped.state[0]
    _, _, _, _, info = env.step(BUY)
    assert info["target_position"] == 0.5 and info["days"][0]["position"] == 0.5
    traded = 1.0 - FEE  # entry fee on the whole equity, half of the rest invested
    day1 = 0.5 * traded + 0.5 * traded * c0[start + 1] / c0[start]
    assert info["days"][0]["equity"] == pytest.approx(day1, rel=1e-13)
    _, _, _, _, info = env.step(STRONG_BUY)
    assert info["target_position"] == 1.0
    _, _, _, _, info = env.step(1)
    assert info["target_position"] == -0.5
    assert position_map_of("scaled")["STRONG_SELL"] == -1.0


@pytest.mark.parametrize(
    ("position_map", "match"),
    [
        ({"STRONG_SELL": -1.0, "SELL": -1.0, "BUY": 1.0, "STRONG_BUY": 1.0}, "HOLD"),
        ({"STRONG_SELL": -1.0, "SELL": -1.0, "HOLD": 0.0, "BUY": 2.0, "STRONG_BUY": 1.0}, r"'BUY'\] = 2\.0"),
        ({"STRONG_SELL": -1.0, "SELL": -1.0, "HOLD": 0.0, "BUY": 1.0, "STRONG_BUY": 1.0, "MEH": 0.0}, "MEH"),
        ("bogus", "bogus"),
    ],
    ids=["missing_rating", "out_of_range", "unknown_rating", "unknown_name"],
)
def test_bad_position_map_raises_naming_it(position_map, match):
    with pytest.raises(ValueError, match=match):
        gym.make("FinReport-v0", symbol="AAPL", split="eval", position_map=position_map)


def test_hold_every_week_pays_nothing_and_stays_at_one():
    _, rewards, infos = report_rollout(gym.make("FinReport-v0", symbol="META", split="eval"), seed=0,
                                       actions=[HOLD] * 13)
    assert all(r == 0.0 for r in rewards)
    assert infos[-1]["equity"] == 1.0 and infos[-1]["fees"] == 0.0
    assert all(i["fee"] == 0.0 and i["target_position"] == 0.0 for i in infos[1:])


# ---------------------------------------------------------------- bad actions and order
@pytest.mark.parametrize("action", [7, -1, 1.0, np.float64(3.0), None, True, np.array([1, 2])])
def test_invalid_actions_raise_value_error_naming_the_ratings(action):
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=RATING_MSG):
        env.step(action)


@pytest.mark.parametrize("action", [np.int64(3), np.array(3), np.array([3]), np.uint8(3)])
def test_numpy_integer_ratings_are_accepted(action):
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    assert env.step(action)[4]["rating"] == "BUY"


def test_report_string_in_rating_mode_is_refused_and_report_mode_trades_and_scores_it():
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    report = TemplateReportWriter(env).write()
    with pytest.raises(ValueError, match="action_mode='report'"):  # base envs take only their declared space
        env.step(report)
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval", action_mode="report")
    env.reset(seed=0)
    rating = report.split("Rating: ")[1].split()[0]
    assert env.action_space.contains(report)
    _, _, _, _, info = env.step(report)
    assert "quality" in info and 0.0 <= info["quality"]["score"] <= 10.0
    assert info["rating"] == rating and info["target_position"] == env.unwrapped.position_map[rating]
    assert "invalid_action" not in info
    with pytest.raises(ValueError, match="takes the report"):
        env.step(3)


def test_report_without_rating_trades_hold_and_is_flagged():
    env = gym.make("FinReport-v0", symbol="AAPL", split="eval", action_mode="report")
    env.reset(seed=0)
    env.step(TemplateReportWriter(env).write())
    _, _, _, _, info = env.step("A thoughtful report that never states what to do.")
    assert info["rating"] == "HOLD" and info["target_position"] == 0.0 and info["position"] == 0.0
    assert info["invalid_action"] and "quality" in info


def test_step_before_reset_and_after_the_end_needs_reset():
    env = FinReportEnv(symbol="AAPL", split="eval")
    with pytest.raises(gym.error.ResetNeeded):
        env.step(HOLD)
    report_rollout(env, seed=0, actions=[HOLD] * 13)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(HOLD)


# ---------------------------------------------------------------- baselines
class _LastInfo(gym.Wrapper):
    def step(self, action):
        out = self.env.step(action)
        self.last_info = out[4]
        return out


@pytest.mark.parametrize("name", sorted(REPORT_POLICIES))
def test_every_report_baseline_runs_an_eval_episode(name):
    kwargs = dict(getattr(REPORT_POLICIES[name][0], "env_kwargs", {}))
    env = _LastInfo(gym.make("FinReport-v0", symbol="AAPL", split="eval", **kwargs))
    policy = make_policy(name, "FinReport-v0", env)
    result = run_episode(env, policy, env_id="FinReport-v0", policy_name=name, seed=0)
    assert result.steps == 13 and len(result.wealth) == 61 and result.look_ahead_attempts == 0
    assert result.window_start == "2026-01-02" and result.window_end == "2026-03-31"
    assert result.final_equity > 0 and math.isfinite(result.total_reward)
    assert result.total_reward == pytest.approx(math.log(result.final_equity), abs=1e-12)
    final = env.last_info
    assert len(final["ratings"]) == 13
    if name == "always_hold":
        assert result.final_equity == 1.0 and set(final["ratings"]) == {"HOLD"}
    if name == "buy_and_hold":
        assert set(final["ratings"]) == {"BUY"}
    if name == "template_writer":
        summary = final["quality_summary"]
        assert summary["reports"] == 13 and summary["score"] >= 9.0 and summary["invalid_ratings"] == 0
    else:
        assert "quality_summary" not in final
