"""FinTrading-v0: Gymnasium conformance, determinism, accounting, date lock and bad input."""

from __future__ import annotations

import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env

from finenvs.errors import UnknownSymbolError, WindowError
from finenvs.scoring import herculean_metrics
from finenvs.tasks.trading.core import (
    BUY,
    DSR_MIN_VARIANCE,
    HOLD,
    RUIN_LOG_RETURN,
    SELL,
    StepOutcome,
    TradingState,
    initial_state,
    make_episode,
    observe,
    transition,
)
from finenvs.tasks.trading.env import FinTradingEnv
from finenvs.wrappers import EpisodeMetrics
from helpers import herculean_buy_and_hold, perturb_after

FEE = 0.0005
VARIANTS = {
    "default": {},
    "next_open": {"fill": "next_open"},
    "dsr": {"reward": "dsr"},
    "long_only": {"allow_short": False, "fee_bps": 0.0},
    "window5": {"window": 5},
    "synthetic_gbm": {"source": "synthetic", "synthetic": {"model": "gbm"}, "episode_length": 40},
    "synthetic_heston": {"source": "synthetic", "synthetic": {"model": "heston"}, "episode_length": 40},
    "synthetic_merton": {"source": "synthetic", "synthetic": {"model": "merton"}, "episode_length": 40},
}


def rollout(env, seed, actions=None, n=None, options=None):
    """(observations, rewards, infos) of one episode, actions from a seeded generator by default."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed, options=options)
    observations, rewards, infos = [obs.tobytes()], [], [info]
    k = 0
    while True:
        a = actions[k] if actions is not None else int(rng.integers(3))
        obs, r, term, trunc, info = env.step(a)
        observations.append(obs.tobytes())
        rewards.append(r)
        infos.append(info)
        k += 1
        if term or trunc or (n is not None and k >= n):
            return observations, rewards, infos


# ---------------------------------------------------------------- conformance (every registered env: test_conformance.py)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_pass_check_env_without_warnings(variant):
    env = gym.make("FinTrading-v0", **VARIANTS[variant])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize("render_mode", ["ansi", "rgb_array"])
def test_check_env_with_render_modes(render_mode):
    if render_mode == "rgb_array":
        pytest.importorskip("matplotlib", reason="rgb_array rendering needs finenvs[plot]")
    env = gym.make("FinTrading-v0", symbol="MSFT", split="eval", render_mode=render_mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=False)


def test_held_positions_are_shaded_as_one_span_per_run_of_days():
    """The price panel shades day i (x[i - 1]..x[i]) green when long, red when short: a run of days on one side is one
    patch from its first day's start to its last day's end, exactly the days the per-day patches covered."""
    from finenvs.tasks.rendering import held_spans

    positions = [0, 1, 1, 0, -1, -1, 1, 0, 0, 1]
    spans = held_spans(positions)
    assert spans == [(1, 2, 1), (4, 5, -1), (6, 6, 1), (9, 9, 1)]
    covered = {(day, side) for first, last, side in spans for day in range(first, last + 1)}
    assert covered == {(i, positions[i]) for i in range(1, len(positions)) if positions[i] in (1, -1)}
    assert held_spans([]) == held_spans([0]) == held_spans([0, 0, 0]) == []


def test_spaces_and_observation_contract():
    env = gym.make("FinTrading-v0", symbol="AAPL", split="eval")
    assert env.action_space == gym.spaces.Discrete(3)
    space = env.observation_space
    assert space.dtype == np.float32 and space.shape == (30 * 6 + 3,)
    assert np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
    obs, _ = env.reset(seed=0)
    seen = [obs]
    while True:
        obs, _, term, trunc, _ = env.step(BUY)
        assert obs.dtype == np.float32 and space.contains(obs)
        assert all(obs is not o and not np.shares_memory(obs, o) for o in seen[-1:])
        seen.append(obs)
        if term or trunc:
            break


def test_spec_json_round_trip_and_make_from_it():
    spec = gym.spec("FinTrading-v0")
    text = spec.to_json()
    back = EnvSpec.from_json(text)
    assert back == spec
    env = gym.make(back, symbol="NVDA", split="eval")
    obs, info = env.reset(seed=1)
    assert info["symbol"] == "NVDA" and env.observation_space.contains(obs)


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("variant", ["default", "next_open", "dsr", "synthetic_heston"])
def test_same_seed_gives_identical_rollout(variant):
    kwargs = dict(VARIANTS[variant])
    kwargs.setdefault("episode_length", 60)
    a = rollout(gym.make("FinTrading-v0", **kwargs), seed=7)
    b = rollout(gym.make("FinTrading-v0", **kwargs), seed=7)
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert a[2] == b[2]


@pytest.mark.parametrize("variant", ["default", "synthetic_merton"])
def test_different_seeds_give_different_rollouts(variant):
    kwargs = dict(VARIANTS[variant])
    kwargs.setdefault("episode_length", 60)
    first_obs = {rollout(gym.make("FinTrading-v0", **kwargs), seed=s, n=3)[0][0] for s in range(5)}
    assert len(first_obs) == 5


def test_random_symbol_and_subwindow_come_from_np_random():
    env = gym.make("FinTrading-v0", episode_length=20)
    starts = set()
    symbols = set()
    for seed in range(20):
        _, info = env.reset(seed=seed)
        starts.add(info["window_start"])
        symbols.add(info["symbol"])
        assert info["n_decisions"] == 20
        assert "2024-03-12" <= info["window_start"] and info["window_end"] <= "2025-12-31"
    assert len(symbols) > 3 and len(starts) > 10


def test_pickle_round_trip_mid_episode_continues_identically():
    env = gym.make("FinTrading-v0", symbol="TSLA", split="eval", fill="next_open")
    env.reset(seed=3)
    for a in (BUY, BUY, SELL, HOLD, SELL):
        env.step(a)
    clone = pickle.loads(pickle.dumps(env))
    actions = [BUY, SELL, SELL, HOLD, BUY] * 4
    for a in actions:
        o1, r1, t1, u1, i1 = env.step(a)
        o2, r2, t2, u2, i2 = clone.step(a)
        assert o1.tobytes() == o2.tobytes() and r1 == r2 and (t1, u1) == (t2, u2) and i1 == i2


def test_pickle_fresh_env_and_synthetic_env():
    for kwargs in ({"symbol": "AAPL"}, VARIANTS["synthetic_gbm"]):
        env = gym.make("FinTrading-v0", **kwargs)
        clone = pickle.loads(pickle.dumps(env))
        assert rollout(env, seed=5, n=10) == rollout(clone, seed=5, n=10)


# ---------------------------------------------------------------- accounting
def _episode_prices(symbol="MSFT", split="eval"):
    env = FinTradingEnv(symbol=symbol, split=split)
    env.reset(seed=0)
    m, s = env.market, env.state
    return env, m.close[s.start : s.end + 1], m.open[s.start : s.end + 1]


@pytest.mark.parametrize("symbol", ["MSFT", "TSLA", "SPY"])
def test_buy_and_hold_closed_form_close_fill(symbol):
    env, close, _ = _episode_prices(symbol)
    env.reset(seed=0)
    total = 0.0
    first = True
    while True:
        _, r, term, trunc, info = env.step(BUY)
        total += r
        if first:
            assert info["equity_at_decision"] == pytest.approx(1 - FEE, abs=1e-15)
            first = False
        if term or trunc:
            break
    expected = (1 - FEE) ** 2 * close[-1] / close[0]
    assert info["equity"] == pytest.approx(expected, rel=1e-12)
    assert math.exp(total) == pytest.approx(expected, rel=1e-12)
    assert info["closed_out"] is True


def test_buy_and_hold_closed_form_next_open_fill():
    env = FinTradingEnv(symbol="NVDA", split="eval", fill="next_open")
    env.reset(seed=0)
    s = env.state
    close, opens = env.market.close, env.market.open
    infos = []
    while True:
        _, _, term, trunc, info = env.step(BUY)
        infos.append(info)
        if term or trunc:
            break
    # the first decision trades at the next day's open; day 1 earns open -> close
    assert infos[0]["equity"] == pytest.approx((1 - FEE) * close[s.start + 1] / opens[s.start + 1], rel=1e-12)
    expected = (1 - FEE) ** 2 * close[s.end] / opens[s.start + 1]
    assert infos[-1]["equity"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("symbol", "published"),
    [
        ("MSFT", (-21.59, -2.92, 26.04)),
        ("TSLA", (-15.18, -1.72, 21.34)),
        ("AAPL", (-6.31, -0.96, 11.24)),
        ("NVDA", (-7.69, -0.72, 15.54)),
    ],
)
def test_herculean_preset_reproduces_published_buy_and_hold(symbol, published):
    """HERCULEAN paper, Table 2, Trading baseline (BL) on 2026-01-02..2026-03-31."""
    env = EpisodeMetrics(gym.make("FinTrading-v0", symbol=symbol, split="eval"))
    env.reset(seed=0)
    while True:
        _, _, term, trunc, info = env.step(BUY)
        if term or trunc:
            break
    h = info["episode_metrics"]["herculean"]
    ours = (round(100 * h["cumulative_return"], 2), round(h["sharpe"], 2), round(100 * h["max_drawdown"], 2))
    assert ours == published


@pytest.mark.parametrize("symbol", ["MSFT", "TSLA", "AAPL", "NVDA"])
def test_herculean_preset_reproduces_published_live_buy_and_hold(symbol):
    """HERCULEAN paper, Table 3 (live window 2026-04-01..2026-05-01), Trading baseline (BL)."""
    from finenvs.tasks.trading.spec import HERCULEAN_PUBLISHED_LIVE_BUY_AND_HOLD

    ours = herculean_buy_and_hold("FinTrading-v0", symbol, "live", BUY)
    assert ours == HERCULEAN_PUBLISHED_LIVE_BUY_AND_HOLD[symbol]


def test_sharpe_conventions_are_named_and_mean_what_they_say():
    """SR (all days) is the Sharpe of every day's return of the wealth path; SR (H, non-zero days) drops the
    zero-return days of HERCULEAN's equity series — for a rarely-invested strategy the two differ by about
    1 / sqrt(time in market)."""
    from finenvs.scoring import SHARPE_CONVENTIONS, SHARPE_LABELS
    from finenvs.tasks.trading.baselines import Momentum

    env = EpisodeMetrics(gym.make("FinTrading-v0", symbol="MSFT", split="eval"))
    obs, info = env.reset(seed=0)
    policy = Momentum()
    while True:
        obs, _, term, trunc, info = env.step(policy(obs, info))
        if term or trunc:
            break
    m = info["episode_metrics"]
    assert m["sharpe_conventions"] == SHARPE_CONVENTIONS and set(SHARPE_LABELS) == set(SHARPE_CONVENTIONS)

    def sharpe(r):
        return float(np.mean(r) / np.std(r, ddof=1) * np.sqrt(252))

    wealth = np.asarray(m["wealth"])
    every_day = wealth[1:] / wealth[:-1] - 1.0
    assert m["standard"]["sharpe"] == pytest.approx(sharpe(every_day), rel=1e-9)
    h = np.asarray(m["herculean_equity"])
    h_returns = h[1:] / h[:-1] - 1.0
    assert m["herculean"]["sharpe"] == pytest.approx(sharpe(h_returns[h_returns != 0.0]), rel=1e-9)
    in_market = float(np.mean(np.asarray(m["positions"]) != 0))
    assert in_market < 0.2  # sparse: the conventions disagree by far
    assert abs(m["herculean"]["sharpe"]) > 2 * abs(m["standard"]["sharpe"])


def _hand_market(closes, opens=None):
    """A tiny market for hand-computed accounting: 48 flat warm-up days, then ``closes``."""
    warm = [100.0] * 48
    close = np.array(warm + list(closes), dtype=float)
    open_ = np.array(warm + list(opens if opens is not None else closes), dtype=float)
    frame = pd.DataFrame(
        {
            "date": pd.bdate_range("2020-01-01", periods=len(close)),
            "open": open_,
            "high": np.maximum(open_, close) * 1.01,
            "low": np.minimum(open_, close) * 0.99,
            "close": close,
            "volume": 1e6,
        }
    )
    return frame


def _play(frame, actions, **kwargs):
    env = FinTradingEnv(symbol="X", data=frame, split=None, **kwargs)
    obs, info = env.reset(seed=0)
    out = []
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((r, term, trunc, info))
        if term or trunc:
            break
    return out


def test_short_position_keeps_fixed_shares_and_pays_exit_fee_on_market_value():
    # 100 -> 110 -> 121, short the whole time
    out = _play(_hand_market([100.0, 110.0, 121.0]), [SELL, SELL])
    e0 = 1 - FEE  # after entry: 0.9995 equity, shares = -0.009995, cash = 1.999
    shares = -e0 / 100.0
    cash = e0 - shares * 100.0
    e1 = cash + shares * 110.0
    assert out[0][3]["equity"] == pytest.approx(e1, rel=1e-14)
    e2 = cash + shares * 121.0 - FEE * abs(shares) * 121.0
    assert out[1][3]["equity"] == pytest.approx(e2, rel=1e-14)
    assert out[1][3]["fee"] == pytest.approx(FEE * abs(shares) * 121.0, rel=1e-14)


@pytest.mark.parametrize("fill", ["close", "next_open"])
def test_short_exit_fee_on_equity_is_the_reference_scorers_rule(fill):
    """short_exit_fee="equity" charges a short's exit on its equity, as HERCULEAN's reference scorer does
    (capital x (1 + (entry - exit) / entry) x fee); the default charges it on the shares bought back. Short at 100,
    bought back at 90 (a 10% gain): 1.098900275 beside finenvs' 1.099000225, i.e. 2 x fee x 0.9995 x 0.10 apart."""
    closes = [100.0, 90.0, 90.0, 90.0]
    opens = [100.0, 100.0, 90.0, 90.0] if fill == "next_open" else None  # next_open: enter at 100, exit at 90
    market = _hand_market(closes, opens)
    e0 = 1 - FEE
    gain = 1 + (100.0 - 90.0) / 100.0
    reference = e0 * gain * (1 - FEE)  # the reference scorer: capital *= (1 + return) * (1 - fee)
    ours = e0 * gain - FEE * (e0 / 100.0) * 90.0  # fee on the shares bought back
    assert (round(reference, 12), round(ours, 12)) == (1.098900275, 1.099000225)
    actions = [SELL, SELL, HOLD] if fill == "close" else [SELL, HOLD, HOLD]
    for option, expected in (("shares", ours), ("equity", reference)):
        out = _play(market, actions, fill=fill, short_exit_fee=option)
        exit_step = out[-1] if fill == "close" else out[1]
        assert exit_step[3]["position"] == 0 and exit_step[3]["equity"] == pytest.approx(expected, rel=1e-13), option
    # closed out at the window's last close: the same rule
    out = _play(_hand_market([100.0, 90.0]), [SELL], short_exit_fee="equity")
    assert out[0][2] and out[0][3]["equity"] == pytest.approx(reference, rel=1e-13)
    # a long pays the same either way, a reversal short -> long pays the short's exit on equity then the entry
    for option in ("shares", "equity"):
        assert _play(market, [BUY, BUY, HOLD], short_exit_fee=option)[-1][3]["equity"] == pytest.approx(
            e0 * 0.9 * (1 - FEE), rel=1e-13)
    flip = _play(_hand_market([100.0, 90.0, 90.0]), [SELL, BUY], short_exit_fee="equity")
    assert flip[0][3]["equity"] == pytest.approx(e0 * gain, rel=1e-13)
    assert flip[1][3]["equity"] == pytest.approx(reference * (1 - FEE) ** 2, rel=1e-13)  # entry, then the close-out
    with pytest.raises(ValueError, match="short_exit_fee='cash'; valid short_exit_fees"):
        FinTradingEnv(symbol="X", data=market, split=None, short_exit_fee="cash")


def test_short_exit_fee_on_equity_on_the_shipped_data_is_the_reference_formula():
    """Always-SELL MSFT over the eval quarter (HERCULEAN preset): the reference scorer's CR is
    (1 + (first - last) / first) x (1 - fee) - 1 and finenvs' default (1 - r) - fee x r, r = last / first:
    21.49% beside 21.51% (0.0216 pp: 2 x fee x (1 - r))."""
    from finenvs.data.catalog import default_catalog

    series = default_catalog().series("MSFT", "core")
    a, b = (int(np.searchsorted(series.dates, np.datetime64(d))) for d in ("2026-01-02", "2026-03-31"))
    r = float(series.close[b] / series.close[a])
    cr = {}
    for option in ("shares", "equity"):
        env = EpisodeMetrics(gym.make("FinTrading-v0", symbol="MSFT", split="eval", short_exit_fee=option))
        env.reset(seed=0)
        while True:
            *_, term, trunc, info = env.step(SELL)
            if term or trunc:
                break
        cr[option] = info["episode_metrics"]["herculean"]["cumulative_return"]
    assert cr["equity"] == pytest.approx((2 - r) * (1 - FEE) - 1, abs=1e-12)
    assert cr["shares"] == pytest.approx((1 - r) - FEE * r, abs=1e-12)
    assert (round(100 * cr["shares"], 2), round(100 * cr["equity"], 2)) == (21.51, 21.49)


def test_reversal_pays_exit_then_entry_and_hold_goes_flat():
    out = _play(_hand_market([100.0, 100.0, 100.0, 100.0]), [BUY, SELL, HOLD])
    assert out[0][3]["equity"] == pytest.approx(1 - FEE)
    assert out[1][3]["equity"] == pytest.approx((1 - FEE) ** 3)
    assert out[1][3]["fee"] == pytest.approx((1 - FEE) * FEE + (1 - FEE) ** 2 * FEE)
    assert out[2][3]["equity"] == pytest.approx((1 - FEE) ** 4)
    assert out[2][3]["position"] == 0


def test_same_target_trades_nothing_and_long_only_sell_is_flat():
    out = _play(_hand_market([100.0, 105.0, 110.0, 120.0]), [BUY, BUY, SELL], allow_short=False)
    assert [o[3]["fee"] for o in out[:2]] == [pytest.approx(FEE), 0.0]
    assert out[2][3]["position"] == 0
    assert out[2][3]["equity"] == pytest.approx((1 - FEE) ** 2 * 110.0 / 100.0)


def test_zero_fee_long_equity_is_the_price_ratio():
    closes = [100.0, 101.5, 99.0, 104.25]
    out = _play(_hand_market(closes), [BUY] * 3, fee_bps=0.0)
    assert [o[3]["equity"] for o in out] == pytest.approx([c / 100.0 for c in closes[1:]], rel=1e-15)


def test_ruin_terminates_with_zero_equity_and_floor_reward():
    out = _play(_hand_market([100.0, 150.0, 210.0, 220.0]), [SELL, SELL, SELL])
    r, term, trunc, info = out[-1]
    assert len(out) == 2 and term and not trunc
    assert info["equity"] == 0.0 and r == RUIN_LOG_RETURN


def test_log_rewards_sum_to_log_final_equity_for_any_policy():
    obs, rewards, infos = rollout(gym.make("FinTrading-v0", symbol="AMZN", split="eval"), seed=11)
    assert math.fsum(rewards) == pytest.approx(math.log(infos[-1]["equity"]), abs=1e-12)


def test_dsr_reward_matches_moody_saffell_recursion():
    env = gym.make("FinTrading-v0", symbol="META", split="eval", reward="dsr", dsr_eta=0.05)
    _, rewards, infos = rollout(env, seed=2)
    equity = [info["equity"] for info in infos]
    a = b = 0.0
    for k, reward in enumerate(rewards):
        r = equity[k + 1] / equity[k] - 1.0
        da, db = r - a, r * r - b
        var = b - a * a
        expected = (b * da - 0.5 * a * db) / var**1.5 if var > DSR_MIN_VARIANCE else 0.0
        assert reward == pytest.approx(expected, rel=1e-12, abs=1e-12)
        a, b = a + 0.05 * da, b + 0.05 * db
    assert any(r != 0.0 for r in rewards)


def test_core_is_pure_and_accepts_named_states():
    env = FinTradingEnv(symbol="AAPL", split="eval")
    env.reset(seed=0)
    ep = make_episode(env.market, env.params, env.state.start, env.state.end)
    s0 = initial_state(env.state.start, env.state.end)
    named = TradingState(*s0)
    first = transition(ep, s0, BUY)
    again = transition(ep, named, BUY)
    assert first == again  # same inputs, same outputs; the input state is untouched
    assert TradingState(*s0) == named
    out = StepOutcome(*first[1])
    assert out.fee == pytest.approx(FEE) and out.held == 1
    assert observe(ep, s0).tobytes() == observe(ep, named).tobytes()



@pytest.mark.parametrize("fill", ["close", "next_open"])
@pytest.mark.parametrize("allow_short", [True, False])
def test_the_steps_written_out_observation_is_the_cores(fill, allow_short):
    """FinTradingEnv.step writes trading_core.observe out for speed: every step's observation must equal it."""
    env = FinTradingEnv(symbol="AAPL", split="train", fill=fill, allow_short=allow_short)
    rng = np.random.default_rng(7)
    episodes = held_steps = 0
    env.reset(seed=0)
    for _ in range(1_500):
        action = int(rng.integers(0, 3))
        obs, _, terminated, truncated, info = env.step(action)
        expected = observe(env._episode, env.state)
        assert obs.tobytes() == expected.tobytes()
        assert obs.flags.writeable and obs.dtype == np.float32
        held_steps += info["position"] != 0 and not (terminated or truncated)
        if terminated or truncated:
            assert obs[-3] == 0.0 and obs[-1] == 0.0  # the window's end closed the book
            episodes += 1
            env.reset()
    assert episodes >= 2 and held_steps > 300



def _tsla_bars(until: str) -> pd.DataFrame:
    from finenvs.data.catalog import default_catalog

    s = default_catalog().series("TSLA")
    bars = pd.DataFrame({"date": s.dates.astype(str), "open": s.open, "high": s.high, "low": s.low,
                         "close": s.close, "volume": s.volume})
    return bars[bars.date <= until]


def _play_tsla(bars: pd.DataFrame, actions: list[int], **kwargs) -> tuple[dict, list[tuple]]:
    env = gym.make("FinTrading-v0", data=bars, symbol="TSLA", split=None, start="2026-04-01",
                   **{"end": "latest", **kwargs})
    _, info = env.reset(seed=0)
    out = []
    for a in actions:
        obs, reward, terminated, truncated, step_info = env.step(a)
        assert obs.tobytes() == observe(env.unwrapped._episode, env.unwrapped.state).tobytes()
        out.append((reward, truncated, step_info.get("closed_out", False), step_info["position"], float(obs[-3])))
        if terminated or truncated:
            break
    return info, out


def test_an_open_end_keeps_the_position_at_the_newest_bar_and_more_data_steps_on_the_same():
    """open_end=True (what finenvs llm --live sets): the data's newest bar of an open window truncates without a
    close-out, so the same actions over more data give the same rewards up to there; without it, the last step
    pays the exit fee and goes flat."""
    actions = [2, 2, 1, 0, 0, 2, 1, 2, 2, 0, 1, 2] * 3
    info, open_ = _play_tsla(_tsla_bars("2026-04-15"), actions, open_end=True)
    _, longer = _play_tsla(_tsla_bars("2026-04-22"), actions, open_end=True)
    plain_info, closed = _play_tsla(_tsla_bars("2026-04-15"), actions)
    assert info["open_end"] is True and "open_end" not in plain_info
    assert len(open_) == len(closed) and len(longer) > len(open_)
    assert open_[-1][1] and not open_[-1][2] and open_[-1][3] == 1 and open_[-1][4] == 1.0  # truncated, still long
    assert closed[-1][1] and closed[-1][2] and closed[-1][4] == 0.0  # closed out: flat
    assert [r[0] for r in open_] == [r[0] for r in longer[: len(open_)]]
    assert [r[0] for r in open_[:-1]] == [r[0] for r in closed[:-1]] and open_[-1][0] > closed[-1][0]  # no exit fee
    _, reached = _play_tsla(_tsla_bars("2026-04-22"), actions, open_end=True, end="2026-04-15")
    assert reached[-1][2]  # an end inside the data is not open: the position closes as usual
    with pytest.raises(ValueError, match="open_end"):
        gym.make("FinTrading-v0", open_end="yes")


# ---------------------------------------------------------------- date lock
@pytest.mark.parametrize("fill", ["close", "next_open"])
@pytest.mark.parametrize("reward", ["log_return", "dsr"])
def test_counterfactual_future_invariance(aapl_frame, fill, reward):
    """Perturb every bar after a random cut t: nothing observed up to t may change."""
    rng = np.random.default_rng(hash((fill, reward)) % 2**32)
    dates = pd.to_datetime(aapl_frame["date"])
    for _ in range(4):
        base = FinTradingEnv(symbol="AAPL", data=aapl_frame, split=None, fill=fill, reward=reward)
        _, info0 = base.reset(seed=0)
        candidates = dates[(dates > pd.Timestamp(info0["window_start"])) & (dates < pd.Timestamp("2026-09-01"))]
        cut = candidates.iloc[int(rng.integers(len(candidates)))]
        changed = perturb_after(aapl_frame, str(cut.date()), rng)
        alt = FinTradingEnv(symbol="AAPL", data=changed, split=None, fill=fill, reward=reward)
        actions = rng.integers(0, 3, 2000).tolist()
        o1, r1, i1 = rollout(base, seed=0, actions=actions)
        o2, r2, i2 = rollout(alt, seed=0, actions=actions)
        upto = [k for k, info in enumerate(i1) if pd.Timestamp(info["date"]) <= cut]
        assert len(upto) > 1
        for k in upto:
            assert o1[k] == o2[k], f"observation at {i1[k]['date']} changed (cut {cut.date()})"
            assert i1[k] == i2[k], f"info at {i1[k]['date']} changed (cut {cut.date()})"
            if k > 0:
                assert r1[k - 1] == r2[k - 1], f"reward up to {i1[k]['date']} changed"
        # and the perturbation is real: something after the cut differs
        assert any(o1[k] != o2[k] for k in range(upto[-1] + 1, len(o1)))


def test_as_of_view_counts_look_ahead_and_hides_the_future():
    env = gym.make("FinTrading-v0", symbol="GOOGL", split="eval")
    _, info = env.reset(seed=0)
    view = env.unwrapped.as_of_view()
    assert str(view.as_of) == info["date"]
    bars = view.prices("GOOGL", lookback=5)
    assert len(bars) == 5 and str(bars.dates[-1]) == info["date"]
    peek = view.prices("GOOGL", end="2026-12-31")
    assert str(peek.dates[-1]) == info["date"]
    _, _, _, _, info = env.step(BUY)
    assert info["look_ahead_attempts"] == 1
    env.reset(seed=0)
    _, _, _, _, info = env.step(BUY)
    assert info["look_ahead_attempts"] == 0  # counted per episode


# ---------------------------------------------------------------- windows and splits
def test_named_splits_cover_the_documented_windows():
    for split, (lo, hi, n) in {
        "eval": ("2026-01-02", "2026-03-31", 60),
        "live": ("2026-04-01", "2026-05-01", 21),
        "train": ("2024-03-12", "2025-12-31", 453),
    }.items():
        _, info = gym.make("FinTrading-v0", symbol="AAPL", split=split).reset(seed=0)
        assert (info["window_start"], info["window_end"], info["n_decisions"]) == (lo, hi, n)


def test_explicit_window_and_reset_options():
    env = gym.make("FinTrading-v0", symbol="AAPL", start="2025-06-02", end="2025-06-30")
    _, info = env.reset(seed=0)
    assert (info["window_start"], info["window_end"]) == ("2025-06-02", "2025-06-30")
    _, info = env.reset(options={"symbol": "QQQ", "start": "2026-02-02", "end": "2026-02-27"})
    assert (info["symbol"], info["window_start"], info["window_end"]) == ("QQQ", "2026-02-02", "2026-02-27")


def test_synthetic_source_draws_a_fresh_path_each_reset():
    env = gym.make("FinTrading-v0", source="synthetic", synthetic={"model": "heston"}, episode_length=30)
    o1, i1 = env.reset(seed=1)
    o2, i2 = env.reset()
    assert i1["n_decisions"] == 30 and o1.tobytes() != o2.tobytes()
    assert i1["symbol"] == "SYN-HESTON"


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "action", [3, -1, 1.0, np.float64(2.0), float("nan"), True, "BUY", None, np.array([0, 1]), np.array([1.0])]
)
def test_invalid_actions_raise_value_error_naming_the_valid_set(action):
    env = gym.make("FinTrading-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"0: SELL, 1: HOLD, 2: BUY"):
        env.step(action)


@pytest.mark.parametrize("action", [np.int64(2), np.array(2), np.array([2]), np.uint8(1)])
def test_numpy_integer_actions_are_accepted(action):
    env = gym.make("FinTrading-v0", symbol="AAPL", split="eval")
    env.reset(seed=0)
    env.step(action)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"symbol": "ZZZZ"}, UnknownSymbolError, "unknown symbol 'ZZZZ'.*valid symbols"),
        ({"symbol": "AAPL", "split": "test"}, WindowError, "unknown split 'test'"),
        ({"symbol": "AAPL", "start": "2025-06-07", "end": "2025-06-08"}, WindowError, "empty window"),
        ({"symbol": "AAPL", "start": "2024-01-05", "end": "2024-06-28"}, WindowError, "Earliest valid start: 2024-03-12"),
        ({"symbol": "AAPL", "start": "2025-13-01"}, WindowError, "not a date"),
        ({"symbol": "AAPL", "start": "2025-06-30", "end": "2025-06-01"}, WindowError, "after end"),
        ({"symbol": "AAPL", "split": "eval", "episode_length": 500}, WindowError, "does not fit"),
        ({"fee_bps": -1}, ValueError, "fee_bps"),
        ({"fee_bps": float("nan")}, ValueError, "fee_bps"),
        ({"window": 0}, ValueError, "window"),
        ({"fill": "vwap"}, ValueError, "valid fills"),
        ({"reward": "pnl"}, ValueError, "valid rewards"),
        ({"source": "live"}, ValueError, "valid sources"),
        ({"dataset": "nope"}, ValueError, "unknown dataset 'nope'"),
        ({"source": "synthetic", "synthetic": {"model": "sabr"}}, ValueError, "unknown synthetic model"),
    ],
)
def test_bad_arguments_raise_one_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        env = gym.make("FinTrading-v0", **kwargs)
        env.reset(seed=0)


def test_user_data_never_falls_back_to_the_shipped_catalog(aapl_frame):
    frame = aapl_frame.assign(symbol="MINE")
    env = FinTradingEnv(data=frame, split="eval")
    _, info = env.reset(seed=0)
    assert info["symbol"] == "MINE" and env.universe == ("MINE",)
    with pytest.raises(UnknownSymbolError, match="unknown symbol 'AAPL' in the data passed with data=.*MINE"):
        env.reset(options={"symbol": "AAPL"})
    with pytest.raises(UnknownSymbolError, match="'MSFT'"):
        FinTradingEnv(data=frame, symbol="MSFT", split="eval")


def test_unsupported_render_mode_is_rejected():
    with pytest.raises(ValueError, match="render_mode='human'"):
        FinTradingEnv(symbol="AAPL", render_mode="human")


def test_window_longer_than_history_is_an_error_naming_the_argument():
    with pytest.raises(WindowError, match="window=600"):
        FinTradingEnv(symbol="AAPL", split="eval", window=600)


def test_reset_option_and_order_errors():
    env = FinTradingEnv(symbol="AAPL", split="eval")
    with pytest.raises(gym.error.ResetNeeded):
        env.step(BUY)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"sym": "AAPL"})
    env.reset(options={"start": "2026-03-20"})
    while True:
        *_, term, trunc, _ = env.step(HOLD)
        if term or trunc:
            break
    with pytest.raises(gym.error.ResetNeeded, match="episode has ended"):
        env.step(HOLD)


def test_mutating_an_observation_does_not_change_the_env():
    env_a = FinTradingEnv(symbol="ADBE", split="eval")
    env_b = FinTradingEnv(symbol="ADBE", split="eval")
    obs_a, _ = env_a.reset(seed=0)
    obs_b, _ = env_b.reset(seed=0)
    obs_a[:] = 123.0
    for a in (BUY, SELL, HOLD, BUY):
        obs_a, r_a, *_ = env_a.step(a)
        obs_b, r_b, *_ = env_b.step(a)
        obs_a *= -1.0
        assert (-obs_a).tobytes() == obs_b.tobytes() and r_a == r_b
    market = env_a.market
    for arr in (market.close, market.open, market.features, market.flat_features, market.dates):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[...] = arr


def test_render_text_and_chart():
    env = gym.make("FinTrading-v0", symbol="MSFT", split="eval", render_mode="ansi")
    env.reset(seed=0)
    env.step(BUY)
    text = env.render()
    assert "MSFT" in text and "position LONG" in text and "equity" in text
    pytest.importorskip("matplotlib", reason="rgb_array rendering needs finenvs[plot]")
    env = gym.make("FinTrading-v0", symbol="MSFT", split="eval", render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(10):
        env.step(SELL)
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert img.std() > 10  # a drawn chart, not a blank canvas


def test_herculean_metrics_of_env_curve_match_wrapper():
    env = EpisodeMetrics(gym.make("FinTrading-v0", symbol="TSLA", split="live"))
    _, _, infos = rollout(env, seed=4)
    m = infos[-1]["episode_metrics"]
    equity = [i["equity_at_decision"] for i in infos[1:]] + [infos[-1]["equity"]]
    assert m["herculean"] == herculean_metrics(equity)
    assert m["wealth"] == [i["equity"] for i in infos]


def test_stable_baselines3_trains_and_predicts_on_the_registered_env():
    """The README's training example, shrunk: make_vec_env -> PPO -> deterministic eval."""
    pytest.importorskip("stable_baselines3", reason="needs finenvs[rl]")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    train = make_vec_env("FinTrading-v0", n_envs=2, seed=0, env_kwargs={"split": "train", "episode_length": 63})
    model = PPO("MlpPolicy", train, n_steps=64, batch_size=64, n_epochs=1, seed=0).learn(total_timesteps=128)
    env = EpisodeMetrics(gym.make("FinTrading-v0", symbol="MSFT", split="eval"))
    obs, info = env.reset(seed=0)
    while True:
        action, _ = model.predict(obs, deterministic=True)
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    assert info["episode_metrics"]["standard"]["n_periods"] == 60


@pytest.mark.parametrize("split", ["eval", "train"])
def test_lean_info_plays_the_same_episode_with_info_only_at_its_end(split):
    """``info="lean"`` (the RL loops' option): the same observations, rewards and ends as the default; every step's
    info empty but the last, which is the default's in full."""
    full, lean = FinTradingEnv(symbol="AAPL", split=split), FinTradingEnv(symbol="AAPL", split=split, info="lean")
    (obs_f, info_f), (obs_l, info_l) = full.reset(seed=3), lean.reset(seed=3)
    assert np.array_equal(obs_f, obs_l) and info_f == info_l
    actions = np.random.default_rng(0).integers(0, 3, 10_000).tolist()
    steps = 0
    for a in actions:
        out_f, out_l = full.step(a), lean.step(a)
        steps += 1
        assert np.array_equal(out_f[0], out_l[0]) and out_f[1:4] == out_l[1:4]
        if out_f[2] or out_f[3]:
            assert out_l[4] == out_f[4] and "equity" in out_l[4]
            break
        assert out_l[4] == {}
    assert steps > 50
    with pytest.raises(ValueError, match="info"):
        FinTradingEnv(symbol="AAPL", split=split, info="none")
