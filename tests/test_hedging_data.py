"""FinHedging-v0 data: synthetic cointegrated universes, calendar alignment, pair indexing, pair statistics."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.tsa.stattools import adfuller, coint

import finenvs  # noqa: F401  (registers the envs)
from finenvs.data.schema import PriceSeries, check_ohlcv
from finenvs.data.synthetic_pairs import PairsSpec, simulate_pairs
from finenvs.data.universe import MAX_CALENDAR_GAP, Universe, check_calendars
from finenvs.errors import DataError, UnknownSymbolError, WindowError
from finenvs.tasks.hedging.core import (
    OBS_BOUND,
    df_tstat,
    pair_index,
    pair_list,
    pair_statistics,
    unordered_pairs,
)
from finenvs.tasks.hedging.env import DEFAULT_UNIVERSE, FinHedgingEnv


def _ar1(x: np.ndarray) -> float:
    """OLS slope of ``x_t`` on ``[1, x_{t-1}]``."""
    design = np.column_stack([np.ones(x.size - 1), x[:-1]])
    coef, *_ = np.linalg.lstsq(design, x[1:], rcond=None)
    return float(coef[1])


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """OLS slope of ``y`` on ``[1, x]``."""
    design = np.column_stack([np.ones(x.size), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(coef[1])


# ---------------------------------------------------------------------------- synthetic universes
def test_same_seed_same_universe_and_different_seed_differs():
    spec = {"n_assets": 3, "break_rate": 20.0, "decouple_days": 3}
    a = simulate_pairs(spec, 400, np.random.default_rng(7))
    b = simulate_pairs(spec, 400, np.random.default_rng(7))
    c = simulate_pairs(spec, 400, np.random.default_rng(8))
    for x, y in zip(a.series, b.series, strict=True):
        assert x.symbol == y.symbol
        for name in ("dates", "open", "high", "low", "close", "volume"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
    np.testing.assert_array_equal(a.spread, b.spread)
    np.testing.assert_array_equal(a.spread_mean, b.spread_mean)
    np.testing.assert_array_equal(a.breaks, b.breaks)
    assert a.breaks.size > 0  # the break path is exercised too
    for x, z in zip(a.series, c.series, strict=True):
        assert not np.allclose(x.close, z.close)
    assert not np.allclose(a.spread, c.spread)


@pytest.mark.parametrize("n_assets", [2, 3, 5])
def test_series_follow_the_schema_on_consecutive_business_days(n_assets):
    spec = PairsSpec(n_assets=n_assets, start_date="2021-01-02", start_price=50.0, volume=2.5e5)  # a Saturday
    sim = simulate_pairs(spec, 300, np.random.default_rng(n_assets))
    assert [s.symbol for s in sim.series] == [f"SYN-{chr(65 + k)}" for k in range(n_assets)]
    assert spec.symbols() == tuple(s.symbol for s in sim.series)
    for s in sim.series:
        check_ohlcv(s, source="test")
        assert len(s) == 300
        assert s.dates[0] == np.datetime64("2021-01-04")  # rolled forward to the Monday
        assert np.is_busday(s.dates).all()
        assert (np.busday_count(s.dates[:-1], s.dates[1:]) == 1).all()  # no business day skipped
        assert (s.high >= np.maximum(s.open, s.close)).all()
        assert (s.low <= np.minimum(s.open, s.close)).all()
        np.testing.assert_array_equal(s.high, np.maximum(s.open, s.close))  # documented: no intraday range
        np.testing.assert_array_equal(s.low, np.minimum(s.open, s.close))
        assert (s.low > 0).all()
        assert s.open[0] == 50.0
        np.testing.assert_array_equal(s.open[1:], s.close[:-1])  # open is the previous close
        assert (s.volume == 2.5e5).all()
    assert [s.dates.tolist() for s in sim.series].count(sim.series[0].dates.tolist()) == n_assets
    # the common factor starts at 0, so the pair's geometric mean starts at the start price
    a, b = sim.series[0], sim.series[1]
    assert math.sqrt(a.close[0] * b.close[0]) == pytest.approx(50.0, rel=1e-12)


def test_symbols_continue_past_z():
    syms = PairsSpec(n_assets=28).symbols()
    assert syms[:3] == ("SYN-A", "SYN-B", "SYN-C")
    assert syms[25:] == ("SYN-Z", "SYN-AA", "SYN-AB")
    assert len(set(syms)) == 28


def test_pair_is_cointegrated_and_distractor_is_not():
    half_life, sd, n_days, seeds = 10.0, 0.05, 1000, range(20)
    phi = 2.0 ** (-1.0 / half_life)
    sd_ratio, ar_pair, ar_distractor, p_pair, p_distractor, df_pair, df_distractor = ([] for _ in range(7))
    for seed in seeds:
        sim = simulate_pairs({"n_assets": 3, "half_life": half_life, "spread_sd": sd}, n_days,
                             np.random.default_rng(seed))
        log_a, log_b, log_c = (np.log(s.close) for s in sim.series)
        ratio = log_a - log_b
        np.testing.assert_allclose(ratio, sim.spread, rtol=0, atol=1e-9)
        distractor = log_a - log_c
        sd_ratio.append(ratio.std(ddof=1) / sd)
        ar_pair.append(_ar1(ratio))
        ar_distractor.append(_ar1(distractor))
        p_pair.append(coint(log_a, log_b)[1])
        p_distractor.append(coint(log_a, log_c)[1])
        df_pair.append(df_tstat(ratio))
        df_distractor.append(df_tstat(distractor))
    # spread_sd is the stationary sd (one path of 1000 days has ~35 effective samples: average over seeds)
    assert 0.85 < np.mean(sd_ratio) < 1.15
    assert all(0.5 < r < 1.6 for r in sd_ratio)
    # AR(1) coefficient of the log ratio is 2^(-1/half_life) (OLS bias at n=1000 is about -0.004)
    assert abs(np.mean(ar_pair) - phi) < 0.015
    # the distractor's ratio is a random walk plus noise
    assert np.mean(ar_distractor) > 0.97
    assert min(ar_distractor) > max(ar_pair)
    # Engle-Granger: the pair is cointegrated in most seeds, the distractor rarely
    assert sum(p < 0.05 for p in p_pair) >= 18
    assert sum(p < 0.05 for p in p_distractor) <= 4
    assert np.mean(df_pair) < -4.0 < np.mean(df_distractor)


def test_spread_sd_and_half_life_scale_the_spread():
    def stats(spec):
        sims = [simulate_pairs(spec, 2000, np.random.default_rng(s)) for s in range(5)]
        return np.mean([x.spread.std(ddof=1) for x in sims]), np.mean([_ar1(x.spread) for x in sims])

    sd_small, ar_fast = stats({"spread_sd": 0.02, "half_life": 3.0})
    sd_big, ar_slow = stats({"spread_sd": 0.08, "half_life": 3.0})
    assert sd_big / sd_small == pytest.approx(4.0, rel=1e-9)  # same shocks, scaled
    assert ar_fast == pytest.approx(2.0 ** (-1.0 / 3.0), abs=0.01)
    assert ar_slow == pytest.approx(ar_fast, abs=1e-9)
    _, ar_hl30 = stats({"spread_sd": 0.02, "half_life": 30.0})
    assert ar_hl30 == pytest.approx(2.0 ** (-1.0 / 30.0), abs=0.015)
    flat = simulate_pairs({"spread_sd": 0.0}, 100, np.random.default_rng(0))
    np.testing.assert_allclose(flat.series[0].close, flat.series[1].close, rtol=1e-12)


def test_break_rate_zero_gives_no_breaks():
    sim = simulate_pairs({"break_rate": 0.0, "decouple_days": 5}, 5000, np.random.default_rng(1))
    assert sim.breaks.size == 0
    assert sim.breaks.dtype == np.int64
    assert (sim.spread_mean == 0.0).all()


def test_breaks_jump_the_mean_by_break_size_spread_sds():
    spec = {"break_rate": 5.0, "break_size": 2.5, "spread_sd": 0.04}
    n_days = 20_000
    sim = simulate_pairs(spec, n_days, np.random.default_rng(3))
    breaks, mean = sim.breaks, sim.spread_mean
    expected = 5.0 * n_days / 252
    assert abs(breaks.size - expected) < 4 * math.sqrt(expected)
    assert (np.diff(breaks) > 0).all() and breaks[0] >= 1 and breaks[-1] < n_days
    assert mean[0] == 0.0
    steps = np.diff(mean)
    jump_days = np.flatnonzero(steps != 0.0) + 1
    np.testing.assert_array_equal(jump_days, breaks)  # constant between breaks, moves at every break
    np.testing.assert_allclose(np.abs(steps[breaks - 1]), 2.5 * 0.04, rtol=1e-9)
    signs = np.sign(steps[breaks - 1])
    assert 0.35 < (signs > 0).mean() < 0.65  # random sign
    np.testing.assert_allclose(mean[breaks], np.cumsum(signs * 0.1), atol=1e-9)


def test_decoupled_days_do_not_mean_revert():
    """After a break the spread is a random walk for ``decouple_days`` days, then reverts to the new mean.

    Over ``d`` days of the OU recursion ``s_{b+d-1} - s_{b-1} = (1 - phi^d) (m - s_{b-1}) + noise``;
    while decoupled the move is pure noise (slope 0 on the gap to the new mean), and each daily
    increment is ``N(0, spread_sd^2 (1 - phi^2))``.
    """
    half_life, sd, d, n_days = 10.0, 0.05, 5, 20_000
    phi = 2.0 ** (-1.0 / half_life)
    innov_sd = sd * math.sqrt(1.0 - phi * phi)
    base = {"half_life": half_life, "spread_sd": sd, "break_rate": 10.0, "break_size": 3.0}

    def moves(decouple_days):
        sim = simulate_pairs({**base, "decouple_days": decouple_days}, n_days, np.random.default_rng(11))
        s, m, b = sim.spread, sim.spread_mean, sim.breaks
        prev_gap = np.diff(np.concatenate(([-10 * d], b)))
        next_gap = np.diff(np.concatenate((b, [n_days + 10 * d])))
        iso = b[(prev_gap >= d) & (next_gap >= d) & (b + d - 1 < n_days)]
        gap = m[iso] - s[iso - 1]
        move = s[iso + d - 1] - s[iso - 1]
        decoupled = np.zeros(n_days, dtype=bool)
        for k in b:
            decoupled[k : k + decouple_days] = True
        return sim, gap, move, decoupled

    sim, gap, move, decoupled = moves(d)
    assert gap.size > 400
    assert abs(_slope(gap, move)) < 0.05  # no pull towards the new mean
    assert abs((move * np.sign(gap)).mean()) < 0.01
    s, m = sim.spread, sim.spread_mean
    steps = np.diff(s)
    in_walk = decoupled[1:]
    assert in_walk.sum() > 2000
    # increments while decoupled: mean 0, the OU innovation's sd, no dependence on the gap
    assert steps[in_walk].std() == pytest.approx(innov_sd, rel=0.05)
    assert abs(steps[in_walk].mean()) < 4 * innov_sd / math.sqrt(in_walk.sum())
    gaps = m[1:] - s[:-1]
    assert abs(_slope(gaps[in_walk], steps[in_walk])) < 0.02
    # every other day follows the OU recursion: slope 1 - phi on the gap, residual sd innov_sd
    assert _slope(gaps[~in_walk], steps[~in_walk]) == pytest.approx(1.0 - phi, abs=0.015)
    resid = steps[~in_walk] - (1.0 - phi) * gaps[~in_walk]
    assert resid.std() == pytest.approx(innov_sd, rel=0.03)

    # without decoupling the same post-break windows revert as the formula says
    _, gap0, move0, _ = moves(0)
    assert _slope(gap0, move0) == pytest.approx(1.0 - phi**d, abs=0.05)
    assert abs((move0 - (1.0 - phi**d) * gap0).mean()) < 0.01
    assert (move0 * np.sign(gap0)).mean() > 0.03  # about (1 - phi^d) * break_size * spread_sd = 0.044


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"n_assets": 1}, "n_assets"),
        ({"n_assets": 2.0}, "n_assets"),
        ({"half_life": 0}, "half_life"),
        ({"half_life": float("nan")}, "half_life"),
        ({"spread_sd": -1}, "spread_sd"),
        ({"break_rate": 300}, "break_rate"),
        ({"decouple_days": -1}, "decouple_days"),
        ({"half_lyfe": 10}, "half_lyfe"),
        ({"start_date": "nope"}, "start_date"),
    ],
)
def test_bad_specs_raise_data_error_naming_the_field(spec, field):
    with pytest.raises(DataError, match=field):
        simulate_pairs(spec, 100, np.random.default_rng(0))
    with pytest.raises(DataError, match=field):
        PairsSpec.from_dict(spec)


def test_bad_spec_objects_and_lengths_are_rejected():
    with pytest.raises(DataError, match="valid keys") as info:
        PairsSpec.from_dict({"bogus": 1})
    assert "half_life" in str(info.value)  # lists the valid keys
    with pytest.raises(DataError, match="half_life"):
        simulate_pairs(PairsSpec(half_life=0), 100, np.random.default_rng(0))
    with pytest.raises(DataError, match="n_days"):
        simulate_pairs(None, 1, np.random.default_rng(0))
    with pytest.raises(DataError, match="spread_sd"):
        FinHedgingEnv(source="synthetic", synthetic={"spread_sd": -1})


def test_synthetic_env_episode_uses_the_simulated_universe():
    env = FinHedgingEnv(source="synthetic", synthetic={"n_assets": 3}, episode_length=30)
    env.reset(seed=5)
    u = env.episode.universe
    assert u.symbols == ("SYN-A", "SYN-B", "SYN-C")
    sim = simulate_pairs({"n_assets": 3}, len(u), np.random.default_rng(5))
    assert len(u) == env.episode.end + 1
    np.testing.assert_allclose(u.log_close[0] - u.log_close[1], sim.spread, atol=1e-9)


# ---------------------------------------------------------------------------- calendar alignment
WINDOW = {"split": None, "start": "2025-06-02", "end": "2025-08-29"}


@pytest.fixture(scope="module")
def pair_frame(catalog) -> pd.DataFrame:
    return pd.concat([catalog.series(s).to_frame() for s in ("AAPL", "MSFT")], ignore_index=True)


def _drop(frame: pd.DataFrame, symbol: str, days) -> pd.DataFrame:
    days = pd.to_datetime(list(days))
    hit = (frame["symbol"] == symbol) & frame["date"].isin(days)
    assert int(hit.sum()) == len(days), "every dropped day must be a trading day of the symbol"
    return frame[~hit].reset_index(drop=True)


def _env(frame: pd.DataFrame, **kwargs) -> FinHedgingEnv:
    return FinHedgingEnv(symbols=["AAPL", "MSFT"], data=frame, **{**WINDOW, **kwargs})


def _dates(frame: pd.DataFrame, symbol: str) -> np.ndarray:
    return frame.loc[frame["symbol"] == symbol, "date"].to_numpy().astype("datetime64[D]")


@pytest.fixture(scope="module")
def history_start(pair_frame) -> np.datetime64:
    """First row the clean window reads (its first decision minus 60 common days)."""
    env = _env(pair_frame)
    env.reset(seed=0)
    ep = env.episode
    assert ep.universe.date_strings[ep.start] == "2025-06-02"
    assert ep.universe.date_strings[ep.end] == "2025-08-29"
    return ep.universe.dates[ep.start - env.params.history]


def test_single_day_gaps_are_aligned_on_common_days(pair_frame, history_start):
    aapl_gone = ["2025-06-20", "2025-07-07", "2025-08-11"]
    msft_gone = ["2025-04-15", "2025-07-09", "2025-08-13"]
    frame = _drop(_drop(pair_frame, "AAPL", aapl_gone), "MSFT", msft_gone)
    assert history_start < np.datetime64("2025-04-15")
    env = _env(frame)
    _, info = env.reset(seed=0)
    assert (info["window_start"], info["window_end"]) == ("2025-06-02", "2025-08-29")
    u = env.episode.universe
    a_dates, m_dates = _dates(frame, "AAPL"), _dates(frame, "MSFT")
    np.testing.assert_array_equal(u.dates, np.intersect1d(a_dates, m_dates))
    assert not np.isin(np.array(aapl_gone + msft_gone, dtype="datetime64[D]"), u.dates).any()
    assert len(u) == len(_dates(pair_frame, "AAPL")) - 6
    # closes are each symbol's own close on the kept days, returns span the dropped days
    for k, sym in enumerate(u.symbols):
        own = frame[frame["symbol"] == sym].set_index("date")["close"]
        np.testing.assert_array_equal(u.close[k], own.loc[pd.to_datetime(u.dates)].to_numpy())
    k = int(np.searchsorted(u.dates, np.datetime64("2025-07-10")))
    prev = int(np.searchsorted(u.dates, np.datetime64("2025-07-08")))
    assert k == prev + 1
    assert u.returns[1, k] == pytest.approx(math.log(u.close[1, k] / u.close[1, prev]), abs=1e-15)
    # the episode steps to the end on the aligned calendar
    env.step(env.pair_index("AAPL", "MSFT"))
    n_steps, truncated = 1, False
    while not truncated:
        _, _, terminated, truncated, info = env.step(2)
        assert not terminated
        n_steps += 1
    assert info["date"] == "2025-08-29"
    assert n_steps == env.episode.end - env.episode.start


def test_single_day_gaps_of_different_symbols_that_add_up_are_missing_data(pair_frame):
    """AAPL lacks 08-11 and MSFT 08-12: each is within the one-day limit, but the aligned calendar
    would have a two-day hole (one 'daily' return over three sessions), so it is an error."""
    frame = _drop(_drop(pair_frame, "AAPL", ["2025-08-11"]), "MSFT", ["2025-08-12"])
    with pytest.raises(WindowError, match=r"common calendar is missing 2 consecutive trading day\(s\) "
                                          r"2025-08-11..2025-08-12"):
        _env(frame)


@pytest.mark.parametrize(
    ("days", "n_missing"),
    [
        (["2025-07-08", "2025-07-09"], 2),  # inside the window
        (["2025-04-01", "2025-04-02", "2025-04-03"], 3),  # inside the first decision's history
        (["2025-08-28", "2025-08-29"], 2),  # the window's last days
    ],
)
def test_consecutive_missing_days_inside_the_used_rows_name_the_symbol(pair_frame, days, n_missing):
    frame = _drop(pair_frame, "MSFT", days)
    with pytest.raises(WindowError, match=rf"MSFT is missing {n_missing} consecutive") as info:
        _env(frame)
    assert days[0] in str(info.value) and days[-1] in str(info.value)
    assert "AAPL" not in str(info.value)


def test_gaps_outside_the_used_rows_are_fine(pair_frame, history_start):
    before = np.busday_offset(history_start, [-2, -1], roll="forward")  # the two days before the history
    assert all(d in set(_dates(pair_frame, "MSFT")) for d in before)
    frame = _drop(pair_frame, "MSFT", [str(d) for d in before])
    frame = _drop(frame, "AAPL", ["2024-06-03", "2024-06-04", "2024-06-05"])
    frame = _drop(frame, "MSFT", ["2025-09-10", "2025-09-11"])  # after the window's end
    env = _env(frame)
    env.reset(seed=0)
    assert env.episode.universe.dates[env.episode.start - env.params.history] == history_start
    # the same two days at the history's start are inside: the history moves back over the gap
    inside = np.busday_offset(history_start, [0, 1], roll="forward")
    with pytest.raises(WindowError, match="MSFT is missing 2 consecutive"):
        _env(_drop(pair_frame, "MSFT", [str(d) for d in inside]))


def test_a_symbol_that_stops_before_the_window_end_ends_the_episode_at_its_last_bar(pair_frame):
    """A delisting inside the window: the window keeps its calendar length (nothing shown before the stop
    changes) and the episode ends at the decision that finds no next common bar, closing the position there."""
    frame = pair_frame[~((pair_frame["symbol"] == "MSFT") & (pair_frame["date"] > "2025-08-15"))]
    full, cut = _env(pair_frame), _env(frame)

    def plain(info):
        return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in info.items()}

    obs_full, info_full = full.reset(seed=0)
    obs, info = cut.reset(seed=0)
    assert plain(info) == plain(info_full) and info["window_end"] == "2025-08-29"
    assert obs.tobytes() == obs_full.tobytes()
    for action in [0, 0, 2, 2, 1, 2] * 40:  # select, LONG_SHORT, HOLD, HOLD, SHORT_LONG, HOLD, ...
        obs_full, reward_full, _, trunc_full, info_full = full.step(action)
        obs, reward, term, trunc, info = cut.step(action)
        if trunc:
            break
        assert (obs.tobytes(), reward, plain(info)) == (obs_full.tobytes(), reward_full, plain(info_full))
    assert not term and trunc and info["date"] == "2025-08-15" and not trunc_full
    assert info.get("closed_out") is True and reward < 0 and info["position"] == 0  # the exit fee at that close


def test_symbol_starting_after_the_history_start(pair_frame, history_start):
    late = pair_frame[~((pair_frame["symbol"] == "MSFT") & (pair_frame["date"] < "2025-05-01"))]
    # through the env: the common history is too short for an explicit start
    with pytest.raises(WindowError, match="Earliest valid start") as info:
        _env(late)
    assert "common calendar starts 2025-05-01, the first day of MSFT" in str(info.value)
    # check_calendars names the symbol whose data starts late
    series = [PriceSeries.from_arrays(sym, _dates(late, sym), *(late.loc[late["symbol"] == sym, c].to_numpy()
                                      for c in ("open", "high", "low", "close", "volume")))
              for sym in ("AAPL", "MSFT")]
    with pytest.raises(WindowError, match="MSFT has no data for part of") as info:
        check_calendars(series, history_start, np.datetime64("2025-08-29"))
    assert "AAPL" not in str(info.value).split(" has no data")[0]
    check_calendars(series, np.datetime64("2025-05-01"), np.datetime64("2025-08-29"))


def test_check_calendars_allows_exactly_max_calendar_gap(catalog):
    assert MAX_CALENDAR_GAP == 1
    aapl, msft = catalog.series("AAPL"), catalog.series("MSFT")
    first, last = np.datetime64("2025-03-03"), np.datetime64("2025-08-29")

    def without(series: PriceSeries, days) -> PriceSeries:
        keep = ~np.isin(series.dates, np.array(days, dtype="datetime64[D]"))
        return PriceSeries.from_arrays(series.symbol, series.dates[keep], series.open[keep], series.high[keep],
                                       series.low[keep], series.close[keep], series.volume[keep])

    check_calendars([aapl, without(msft, ["2025-05-05", "2025-05-07", "2025-05-09"])], first, last)
    with pytest.raises(WindowError, match=r"MSFT is missing 2 consecutive trading day\(s\) 2025-05-06..2025-05-07"):
        check_calendars([aapl, without(msft, ["2025-05-06", "2025-05-07"])], first, last)
    with pytest.raises(WindowError, match="AAPL is missing 4 consecutive"):
        check_calendars([without(aapl, ["2025-05-06", "2025-05-07", "2025-05-08", "2025-05-09"]), msft],
                        first, last)


def test_universe_align_rejects_bad_universes(catalog):
    aapl, msft = catalog.series("AAPL"), catalog.series("MSFT")
    with pytest.raises(DataError, match="at least 2 symbols"):
        Universe.align([aapl])
    with pytest.raises(DataError, match=r"\['AAPL'\] appear more than once"):
        Universe.align([aapl, msft, aapl])
    early, late = aapl.slice(0, 10), msft.slice(20, 40)
    with pytest.raises(DataError, match="share 0 trading day"):
        Universe.align([early, late])
    u = Universe.align([aapl, msft])
    assert u.symbols == ("AAPL", "MSFT") and u.n == 2
    assert not u.close.flags.writeable and not u.returns.flags.writeable
    np.testing.assert_array_equal(u.returns[:, 0], 0.0)
    np.testing.assert_allclose(u.returns[:, 1:], np.diff(np.log(u.close), axis=1), atol=1e-15)


@pytest.mark.parametrize(
    ("symbols", "error", "match"),
    [
        (["AAPL"], ValueError, "at least 2 symbols"),
        ([], ValueError, "at least 2 symbols"),
        (["AAPL", "MSFT", "AAPL"], ValueError, "more than once"),
        (["AAPL", "ZZZZ"], UnknownSymbolError, r"unknown symbol 'ZZZZ'.*\['AAPL', 'MSFT'\]"),
        ("AAPL", ValueError, "not one string"),
    ],
)
def test_bad_symbol_lists_name_the_problem(pair_frame, symbols, error, match):
    with pytest.raises(error, match=match):
        FinHedgingEnv(symbols=symbols, data=pair_frame, **WINDOW)


# ---------------------------------------------------------------------------- pair indexing
@pytest.mark.parametrize("n", range(2, 10))
def test_pair_list_and_pair_index_round_trip(n):
    pairs = pair_list(n)
    assert len(pairs) == n * (n - 1) == len(set(pairs))
    assert list(pairs) == sorted(pairs)  # (0,1), (0,2), .., (1,0), ..
    for i in range(n):
        for j in range(n):
            if i != j:
                k = pair_index(i, j, n)
                assert pairs[k] == (i, j)
                assert k == i * (n - 1) + (j if j < i else j - 1)
    assert [pair_index(i, j, n) for i, j in pairs] == list(range(n * (n - 1)))
    assert unordered_pairs(n) == tuple(p for p in pairs if p[0] < p[1])
    for i, j, bad in ((0, 0, "i == j"), (n - 1, n - 1, "i == j"), (-1, 0, "negative"), (0, n, "j >= n"),
                      (n, 0, "i >= n")):
        with pytest.raises(ValueError, match="not an ordered pair"):
            pair_index(i, j, n)
        assert bad


def test_env_pair_index_and_pair_symbols_round_trip():
    env = FinHedgingEnv(split="eval")
    assert env.universe == DEFAULT_UNIVERSE
    n = len(DEFAULT_UNIVERSE)
    assert env.n_pairs == n * (n - 1) == 56
    seen = set()
    for k in range(env.n_pairs):
        a, b = env.pair_symbols(k)
        assert a != b
        assert env.pair_index(a, b) == k
        seen.add((a, b))
    assert len(seen) == 56
    k = env.pair_index("AAPL", "MSFT")
    assert k == 4 and env.pair_symbols(k) == ("AAPL", "MSFT")
    assert env.pair_index("MSFT", "AAPL") == 35
    env.reset(seed=0)
    _, _, _, _, info = env.step(k)
    assert info["pair"] == "AAPL/MSFT" and env.pair == ("AAPL", "MSFT")
    with pytest.raises(ValueError, match="two different symbols"):
        env.pair_index("AAPL", "AAPL")
    with pytest.raises(UnknownSymbolError, match="ZZZZ"):
        env.pair_index("AAPL", "ZZZZ")
    with pytest.raises(UnknownSymbolError, match="ZZZZ"):
        env.pair_index("ZZZZ", "ZZZZ")
    for bad in (-1, 56, 1.0, True):
        with pytest.raises(ValueError, match="pair index"):
            env.pair_symbols(bad)


# ---------------------------------------------------------------------------- pair statistics
def _ols_tstat(spread: np.ndarray) -> float:
    y = np.diff(spread)
    design = np.column_stack([np.ones(y.size), spread[:-1]])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    s2 = resid @ resid / (y.size - 2)
    cov = s2 * np.linalg.inv(design.T @ design)
    return float(coef[1] / math.sqrt(cov[1, 1]))


@pytest.mark.parametrize("seed", range(6))
def test_df_tstat_matches_ols_and_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 400))
    phi = rng.uniform(0.0, 1.0)
    x = np.empty(n)
    x[0] = rng.normal()
    for t in range(1, n):
        x[t] = 0.3 + phi * x[t - 1] + rng.normal()
    for series in (x, np.cumsum(rng.normal(size=n)) * 0.01):
        t_ols = _ols_tstat(series)
        assert df_tstat(series) == pytest.approx(t_ols, rel=0, abs=1e-8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # statsmodels 0.15 announces a new return type
            t_sm = adfuller(series, maxlag=0, regression="c", autolag=None)[0]
        assert df_tstat(series) == pytest.approx(t_sm, abs=1e-8)


def test_df_tstat_degenerate_cases():
    assert df_tstat(np.ones(50)) == 0.0
    assert df_tstat(np.array([1.0, 2.0, 0.5])) == 0.0  # fewer than 3 differences
    assert df_tstat(np.arange(50.0)) == 0.0  # perfect fit: no residual variance
    assert df_tstat(np.array([1.0, 2.0, 0.5, 3.0])) == pytest.approx(_ols_tstat(np.array([1.0, 2.0, 0.5, 3.0])))


@pytest.mark.parametrize(("t", "lookback"), [(60, 60), (200, 60), (150, 3), (300, 120)])
def test_pair_statistics_match_independent_computations(catalog, t, lookback):
    series = [catalog.series(s) for s in ("AAPL", "MSFT", "NVDA", "TSLA")]
    u = Universe.align(series)
    stats = pair_statistics(u, t, lookback)
    assert stats.shape == (6, 4)
    logs = np.log(u.close)
    for k, (i, j) in enumerate(unordered_pairs(4)):
        ri = np.diff(logs[i, t - lookback : t + 1])
        rj = np.diff(logs[j, t - lookback : t + 1])
        assert stats[k, 0] == pytest.approx(np.corrcoef(ri, rj)[0, 1], abs=1e-12)
        spread = logs[i, t - lookback : t + 1] - logs[j, t - lookback : t + 1]
        window = spread[1:]
        assert stats[k, 1] == pytest.approx((window[-1] - window.mean()) / window.std(ddof=1), abs=1e-9)
        assert stats[k, 2] == pytest.approx(_ols_tstat(spread), abs=1e-8)
        assert stats[k, 3] == pytest.approx(np.std(ri - rj, ddof=1) * math.sqrt(252), rel=1e-9)
    # nothing after t is read
    cut = [s.slice(0, int(np.searchsorted(s.dates, u.dates[t], side="right"))) for s in series]
    np.testing.assert_array_equal(pair_statistics(Universe.align(cut), t, lookback), stats)


def test_selection_observation_holds_the_pair_statistics(pair_frame):
    env = _env(pair_frame)
    obs, _ = env.reset(seed=0)
    ep = env.episode
    expected = np.clip(pair_statistics(ep.universe, ep.start, env.params.pair_lookback), -OBS_BOUND, OBS_BOUND)
    np.testing.assert_array_equal(obs[env.layout.pair_stats], expected.reshape(-1).astype(np.float32))
    returns = obs[env.layout.asset_returns].reshape(2, env.params.window)
    np.testing.assert_allclose(returns, ep.universe.returns[:, ep.start - env.params.window + 1 : ep.start + 1],
                               rtol=1e-6)
