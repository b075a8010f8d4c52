"""Rule baselines, the episode runner and the EpisodeMetrics wrapper."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import finenvs  # noqa: F401
from finenvs.baselines import applicable_policies, make_policy
from finenvs.evaluation.episodes import run_episode
from finenvs.scoring import herculean_metrics, standard_metrics
from finenvs.tasks.trading.baselines import cutler_rsi, relative_prices
from finenvs.tasks.trading.core import BUY, HOLD, SELL
from finenvs.wrappers import EpisodeMetrics

POLICIES = ["buy_and_hold", "always_flat", "random", "sma_crossover", "momentum", "rsi_mean_reversion"]


def test_every_trading_baseline_is_registered():
    assert applicable_policies("FinTrading-v0") == POLICIES
    with pytest.raises(KeyError, match="unknown env 'FinNope-v0'"):
        applicable_policies("FinNope-v0")
    with pytest.raises(KeyError, match="unknown policy 'oracle'.*valid policies"):
        make_policy("oracle", "FinTrading-v0")


def test_policy_needing_more_history_than_the_window_is_refused():
    env = gym.make("FinTrading-v0", symbol="AAPL", split="eval", window=10)
    with pytest.raises(ValueError, match="needs an observation window >= 20"):
        make_policy("sma_crossover", "FinTrading-v0", env)
    make_policy("buy_and_hold", "FinTrading-v0", env)


def _closes_up_to(catalog, symbol, date, n):
    s = catalog.series(symbol)
    stop = int(np.searchsorted(s.dates, np.datetime64(date), side="right"))
    return s.close[stop - n : stop]


def test_relative_prices_rebuild_the_window_close_path(catalog):
    env = gym.make("FinTrading-v0", symbol="NVDA", split="eval")
    obs, info = env.reset(seed=0)
    closes = _closes_up_to(catalog, "NVDA", info["date"], 30)
    np.testing.assert_allclose(relative_prices(obs), closes / closes[0], rtol=2e-6)


@pytest.mark.parametrize("symbol", ["AAPL", "TSLA", "QQQ"])
def test_rules_decide_as_computed_directly_from_prices(catalog, symbol):
    env = gym.make("FinTrading-v0", symbol=symbol, split="eval")
    sma = make_policy("sma_crossover", "FinTrading-v0", env)
    mom = make_policy("momentum", "FinTrading-v0", env)
    rsi = make_policy("rsi_mean_reversion", "FinTrading-v0", env)
    obs, info = env.reset(seed=0)
    decided = {"sma": set(), "mom": set(), "rsi": set()}
    position = 0
    while True:
        closes = _closes_up_to(catalog, symbol, info["date"], 21)
        up = closes[-5:].mean() > closes[-20:].mean()
        assert sma(obs, info) == (BUY if up else HOLD)
        assert mom(obs, info) == (BUY if closes[-1] > closes[-21] else HOLD)
        changes = np.diff(closes[-15:])
        gain, loss = np.clip(changes, 0, None).mean(), np.clip(-changes, 0, None).mean()
        value = 100.0 if loss == 0 else 100 - 100 / (1 + gain / loss)
        expected = BUY if value < 30 else SELL if value > 70 else {1: BUY, -1: SELL}.get(position, HOLD)
        action = rsi(obs, info)
        assert action == expected
        decided["sma"].add(sma(obs, info))
        decided["mom"].add(mom(obs, info))
        decided["rsi"].add(action)
        obs, _, term, trunc, info = env.step(action)
        position = {BUY: 1, SELL: -1, HOLD: 0}[action]
        if term or trunc:
            break
    assert any(len(v) > 1 for v in decided.values())  # the rules actually switch


def test_cutler_rsi_edges():
    assert cutler_rsi(np.array([1.0, 2.0, 3.0]), 2) == 100.0
    assert cutler_rsi(np.array([3.0, 2.0, 1.0]), 2) == 0.0
    assert cutler_rsi(np.array([1.0, 1.0, 1.0]), 2) == 50.0
    assert cutler_rsi(np.array([1.0, 2.0, 1.0]), 2) == pytest.approx(50.0)


def test_random_policy_is_reproducible_by_seed():
    env = gym.make("FinTrading-v0", symbol="AAPL", split="eval")
    a = run_episode(env, make_policy("random", "FinTrading-v0", seed=3), env_id="FinTrading-v0", policy_name="random", seed=3)
    b = run_episode(env, make_policy("random", "FinTrading-v0", seed=3), env_id="FinTrading-v0", policy_name="random", seed=3)
    c = run_episode(env, make_policy("random", "FinTrading-v0", seed=4), env_id="FinTrading-v0", policy_name="random", seed=4)
    assert a.wealth == b.wealth and a.positions == b.positions
    assert a.positions != c.positions


@pytest.mark.parametrize("policy", POLICIES)
def test_runner_scores_equal_scoring_of_the_curves(policy):
    env = gym.make("FinTrading-v0", symbol="META", split="eval")
    result = run_episode(env, make_policy(policy, "FinTrading-v0", env), env_id="FinTrading-v0", policy_name=policy, seed=0)
    assert result.steps == 60 and len(result.wealth) == 61 and len(result.herculean_equity) == 61
    assert result.standard == standard_metrics(result.wealth, result.positions)
    assert result.herculean == herculean_metrics(result.herculean_equity)
    assert result.final_equity == result.wealth[-1]
    assert set(result.positions) <= {-1.0, 0.0, 1.0}
    if policy == "always_flat":
        assert result.wealth == [1.0] * 61 and result.fees == 0.0
        assert np.isnan(result.standard["sharpe"])  # undefined, not 0


def test_episode_metrics_wrapper_requires_market_info():
    class NoInfo(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {"date": "2026-01-02", "equity": 1.0}

        def step(self, action):
            return np.zeros(1, np.float32), 0.0, True, False, {"date": "2026-01-05"}

    env = EpisodeMetrics(NoInfo())
    env.reset()
    with pytest.raises(KeyError, match="did not report"):
        env.step(0)


def test_episode_metrics_only_on_the_final_step():
    env = EpisodeMetrics(gym.make("FinTrading-v0", symbol="SPY", split="live"))
    env.reset(seed=0)
    seen = []
    while True:
        *_, term, trunc, info = env.step(BUY)
        seen.append("episode_metrics" in info)
        if term or trunc:
            break
    assert seen[-1] and not any(seen[:-1])
