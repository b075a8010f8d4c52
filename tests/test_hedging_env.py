"""FinHedging-v0: Gymnasium contract, the pair book's accounting, the date lock and the baselines."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

import finenvs  # noqa: F401  (registers the envs)
from finenvs.baselines.registry import make_policy
from finenvs.evaluation.episodes import run_episode
from finenvs.tasks.hedging.baselines import OracleBestPair, RandomPairs, ZScorePairs, replay_rule
from finenvs.tasks.hedging.core import CLOSE, HOLD, LONG_SHORT, SHORT_LONG
from finenvs.tasks.hedging.env import DEFAULT_UNIVERSE, FinHedgingEnv
from helpers import SUBPROCESS_TIMEOUT, perturb_after

SMALL = {"window": 1, "pair_lookback": 3, "lookbacks": (2,), "leg_days": 1}  # history of 3 days


def _frame(closes: dict[str, list[float]], start: str = "2025-01-06") -> pd.DataFrame:
    """Flat bars (open = high = low = close) on business days."""
    n = len(next(iter(closes.values())))
    dates = pd.bdate_range(start, periods=n)
    rows = []
    for sym, values in closes.items():
        for d, c in zip(dates, values, strict=True):
            rows.append({"symbol": sym, "date": d.date().isoformat(), "open": c, "high": c, "low": c, "close": c,
                         "volume": 1e6})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def three_frame(catalog) -> pd.DataFrame:
    return pd.concat([catalog.series(s).to_frame() for s in ("AAPL", "MSFT", "NVDA")], ignore_index=True)


# ---------------------------------------------------------------------------- Gymnasium contract
@pytest.mark.parametrize(
    "kwargs",
    [
        {"split": "eval"},
        {"split": "live", "symbols": ["AAPL", "MSFT"]},
        {"split": "train", "episode_length": 30},
        {"source": "synthetic", "synthetic": {"n_assets": 3}, "episode_length": 40},
        {"split": "eval", "render_mode": "rgb_array"},
    ],
)
def test_check_env_passes_with_zero_warnings(kwargs):
    env = gym.make("FinHedging-v0", **kwargs).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=False)
    assert [str(w.message) for w in caught] == []


def test_spaces_stage_flag_and_masks():
    env = gym.make("FinHedging-v0", split="eval")
    assert env.action_space == gym.spaces.Discrete(56)
    obs, info = env.reset(seed=0)
    u = env.unwrapped
    assert obs[0] == 1.0 and info["stage"] == "select" and info["action_mask"].sum() == 56
    assert env.observation_space.contains(obs)
    assert len(u.layout.names()) == obs.size == env.observation_space.shape[0]
    # selection block filled, trading block empty
    assert np.any(obs[u.layout.asset_returns] != 0) and np.any(obs[u.layout.pair_stats] != 0)
    assert not np.any(obs[u.layout.spread_z]) and not np.any(obs[u.layout.leg_returns])
    obs, reward, term, trunc, info = env.step(u.pair_index("MSFT", "AAPL"))
    assert reward == 0.0 and info["equity"] == 1.0 and info["pair"] == "MSFT/AAPL" and info["position"] == 0
    assert obs[0] == 0.0 and info["stage"] == "trade" and list(np.flatnonzero(info["action_mask"])) == [0, 1, 2, 3]
    assert list(np.flatnonzero(u.action_masks())) == [0, 1, 2, 3]
    assert not np.any(obs[u.layout.asset_returns]) and not np.any(obs[u.layout.pair_stats])
    assert np.any(obs[u.layout.spread_z] != 0)
    while not (term or trunc):
        obs, reward, term, trunc, info = env.step(HOLD)
        assert env.observation_space.contains(obs)
    assert trunc and not term and info["date"] == "2026-03-31"


def test_invalid_actions_error_or_hold_with_reason():
    strict = gym.make("FinHedging-v0", split="eval", symbols=["AAPL", "MSFT"], invalid_action="error")
    strict.reset(seed=0)
    assert strict.action_space.n == 4
    with pytest.raises(ValueError, match="selection step"):
        strict.step(3)  # only pairs 0 and 1 exist
    strict.step(1)
    wide_strict = gym.make("FinHedging-v0", split="eval", invalid_action="error")
    wide_strict.reset(seed=0)
    wide_strict.step(0)
    with pytest.raises(ValueError, match="after the pair is chosen"):
        wide_strict.step(4)
    for bad in (4, -1, 2.0, True, "0", np.array([0.5]), np.array([[1]]), None):
        with pytest.raises(ValueError, match="invalid action"):
            strict.step(bad)
    lenient = gym.make("FinHedging-v0", split="eval", symbols=["AAPL", "MSFT"])
    lenient.reset(seed=0)
    _, _, _, _, info = lenient.step(3)
    assert info["pair"] == "MSFT/AAPL" and "mapped to pair 1" in info["invalid_action"]
    assert info["invalid_actions"] == 1
    with pytest.raises(ValueError, match="outside Discrete"):
        lenient.step(7)
    wide = gym.make("FinHedging-v0", split="eval")
    wide.reset(seed=0)
    wide.step(0)
    _, _, _, _, info = wide.step(LONG_SHORT)
    assert info["position"] == 1
    _, _, _, _, info = wide.step(30)
    assert info["position"] == 1 and "mapped to HOLD" in info["invalid_action"]


def test_step_before_reset_and_after_end():
    env = FinHedgingEnv(split="live", symbols=["AAPL", "MSFT"])
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    env.reset(seed=0)
    env.step(0)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(HOLD)
        done = term or trunc
    with pytest.raises(gym.error.ResetNeeded, match="ended"):
        env.step(HOLD)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"symbols": ["AAPL"]}, "at least 2 symbols"),
        ({"symbols": []}, "at least 2 symbols"),
        ({"symbols": "AAPL"}, "not one string"),
        ({"symbols": ["AAPL", "AAPL"]}, "more than once"),
        ({"fee_bps": -1}, "fee_bps"),
        ({"fee_bps": float("nan")}, "fee_bps"),
        ({"invalid_action": "ignore"}, "invalid_action"),
        ({"lookbacks": []}, "lookbacks"),
        ({"lookbacks": [1]}, "lookbacks"),
        ({"window": 0}, "window"),
        ({"pair_lookback": 2}, "pair_lookback"),
        ({"episode_length": 1}, "episode_length"),
        ({"source": "fake"}, "source"),
        ({"source": "synthetic", "symbols": ["AAPL", "MSFT"]}, "symbols="),
        ({"synthetic": {"n_assets": 3}}, "synthetic="),
        ({"split": "nope"}, "unknown split"),
        ({"split": None, "start": "2024-01-05", "end": "2024-06-01"}, "Earliest valid start"),
        ({"split": "live", "episode_length": 500}, "does not fit"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FinHedgingEnv(**kwargs)


def test_unknown_symbol_names_it():
    with pytest.raises(KeyError, match="ZZZZ"):
        FinHedgingEnv(symbols=["AAPL", "ZZZZ"], split="eval")


def test_reset_options_are_validated_and_choose_the_window():
    env = FinHedgingEnv(split="eval", symbols=["AAPL", "MSFT"])
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"pair": 0})
    _, info = env.reset(options={"start": "2026-02-02", "end": "2026-02-27"})
    assert (info["window_start"], info["window_end"]) == ("2026-02-02", "2026-02-27")
    _, info = env.reset()
    assert info["window_start"] == "2026-01-02"


# ---------------------------------------------------------------------------- accounting
def test_hand_computed_five_days_with_close_and_reentry():
    """Select, enter LONG_SHORT, hold, CLOSE, re-enter SHORT_LONG, closed out at the window's last close.

    fee 10 bps per leg. Closes on the episode's days d0..d5: A 100 100 110 99 100 90, B 50 50 52 51 50 55.
      d0  select (A, B); flat.                                              equity 1
      d1  LONG_SHORT at A=100, B=50: N = 0.5 per leg, fee 0.001 * 1 = 0.001; shares A +0.005, B -0.01;
          cash 0.999.                                                       equity after entry 0.999
      d2  marked: 0.999 + 0.005*110 - 0.01*52 = 1.029; HOLD
      d3  marked: 0.999 + 0.005*99 - 0.01*51 = 0.984; CLOSE: fee 0.001*(0.495 + 0.51) = 0.001005 -> 0.982995
      d4  flat: 0.982995; SHORT_LONG at A=100, B=50: fee 0.000982995 -> 0.982012005,
          shares A -0.004914975, B +0.00982995
      d5  marked: 0.982012005 - 0.004914975*90 + 0.00982995*55 = 1.080311505;
          closed out: fee 0.001*(0.44234775 + 0.54064725) = 0.000982995    -> 1.07932851
    """
    hist = [100.0, 101.0, 99.0]  # three days of history the observation needs (SMALL params)
    frame = _frame({"A": hist + [100, 100, 110, 99, 100, 90], "B": [50.0, 50.5, 49.0] + [50, 50, 52, 51, 50, 55]})
    env = FinHedgingEnv(symbols=["A", "B"], data=frame, split=None, fee_bps=10.0, **SMALL)
    _, info = env.reset()
    assert info["n_decisions"] == 5
    expected_equity = [1.0, 1.029, 0.984, 0.982995, 1.07932851]
    expected_at_decision = [1.0, 0.999, 1.029, 0.982995, 0.982012005]
    expected_position = [0, 1, 1, 0, -1]
    rewards, infos = [], []
    for action in (env.pair_index("A", "B"), LONG_SHORT, HOLD, CLOSE, SHORT_LONG):
        _, reward, term, trunc, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
    assert trunc and not term and infos[-1]["closed_out"]
    np.testing.assert_allclose([i["equity"] for i in infos], expected_equity, rtol=0, atol=1e-12)
    np.testing.assert_allclose([i["equity_at_decision"] for i in infos], expected_at_decision, rtol=0, atol=1e-12)
    assert [i["position"] for i in infos] == expected_position
    np.testing.assert_allclose(infos[-1]["fees"], 0.001 + 0.001005 + 2 * 0.000982995, rtol=0, atol=1e-12)
    assert infos[-1]["entries"] == 2
    np.testing.assert_allclose(sum(rewards), math.log(1.07932851), rtol=0, atol=1e-12)
    np.testing.assert_allclose(rewards[1], math.log(1.029), rtol=0, atol=1e-12)


def test_same_direction_keeps_and_opposite_reverses():
    """LONG_SHORT while long keeps the book untouched; SHORT_LONG closes and re-opens in one close."""
    frame = _frame({"A": [100.0] * 6 + [120.0] * 3, "B": [50.0] * 6 + [40.0] * 3})
    env = FinHedgingEnv(symbols=["A", "B"], data=frame, split=None, fee_bps=0.0, **SMALL)
    env.reset()
    env.step(0)
    _, _, _, _, info = env.step(LONG_SHORT)  # enter at d1 (A 100, B 50)
    before = env.state
    _, _, _, _, info = env.step(LONG_SHORT)  # already long: nothing trades
    after = env.state
    assert (after.shares_i, after.shares_j, after.cash) == (before.shares_i, before.shares_j, before.cash)
    assert info["fee"] == 0.0 and after.entries == 1 and after.days_held == 2
    # d3: A 120, B 40; reversal at d3's close, no fees: equity = 1 + 0.005*20 - 0.01*(40 - 50) = 1.2
    _, _, _, trunc, info = env.step(SHORT_LONG)
    state = env.state
    assert info["equity_at_decision"] == pytest.approx(1.2, abs=1e-12)
    assert state.position == -1 and state.entries == 2 and state.days_held == 1
    assert state.shares_i == pytest.approx(-0.6 / 120) and state.shares_j == pytest.approx(0.6 / 40)
    assert not trunc and info["position"] == -1


def test_book_is_dollar_neutral_at_every_entry():
    env = FinHedgingEnv(split="train", symbols=list(DEFAULT_UNIVERSE))
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(3):
        env.reset(seed=seed)
        env.step(int(rng.integers(env.n_pairs)))
        done = False
        while not done:
            before = env.state
            action = int(rng.choice([LONG_SHORT, SHORT_LONG, HOLD, HOLD, CLOSE]))
            _, _, term, trunc, info = env.step(action)
            done = term or trunc
            after = env.state
            if after.entries > before.entries and not done:
                t = before.t  # the entry executed at this close
                book = env.book
                long_value = after.shares_i * book.close_i[t]
                short_value = after.shares_j * book.close_j[t]
                assert long_value + short_value == pytest.approx(0.0, abs=1e-12)
                # half of the equity before fees on each leg (after any exit fee of a reversal)
                exit_fee = info["fee"] - env.params.fee * 2 * abs(long_value)
                assert abs(long_value) == pytest.approx(0.5 * (before.equity - exit_fee), rel=1e-12)
                assert np.sign(after.shares_i) == after.position
                checked += 1
    assert checked > 50


def test_ruin_terminates_with_zero_equity():
    # short leg B explodes: long A / short B with B x 4 wipes out the book
    frame = _frame({"A": [100.0] * 7, "B": [50.0] * 5 + [200.0] * 2})
    env = FinHedgingEnv(symbols=["A", "B"], data=frame, split=None, **SMALL)
    env.reset()
    env.step(0)
    _, reward, term, trunc, info = env.step(LONG_SHORT)
    assert term and not trunc and info["equity"] == 0.0 and reward < -10


# ---------------------------------------------------------------------------- determinism, pickle, date lock
def _trajectory(env, actions, seed=0):
    obs, info = env.reset(seed=seed)
    out = [(obs.tobytes(), 0.0, repr(sorted((k, str(v)) for k, v in info.items())))]
    for a in actions:
        obs, reward, term, trunc, info = env.step(a)
        out.append((obs.tobytes(), reward, repr(sorted((k, str(v)) for k, v in info.items()))))
        if term or trunc:
            break
    return out


def test_determinism_per_seed_and_synthetic_paths_differ():
    actions = [5] + [int(a) for a in np.random.default_rng(0).integers(0, 4, 300)]
    a = _trajectory(gym.make("FinHedging-v0", split="train", episode_length=50), actions, seed=3)
    b = _trajectory(gym.make("FinHedging-v0", split="train", episode_length=50), actions, seed=3)
    assert a == b
    syn = {"source": "synthetic", "synthetic": {"n_assets": 3}, "episode_length": 30}
    s1 = _trajectory(gym.make("FinHedging-v0", **syn), actions, seed=1)
    s2 = _trajectory(gym.make("FinHedging-v0", **syn), actions, seed=1)
    s3 = _trajectory(gym.make("FinHedging-v0", **syn), actions, seed=2)
    assert s1 == s2 and s1 != s3


def test_pickle_mid_episode_continues_identically():
    env = gym.make("FinHedging-v0", split="eval")
    env.reset(seed=0)
    for a in (7, LONG_SHORT, HOLD):
        env.step(a)
    clone = pickle.loads(pickle.dumps(env))
    for a in (HOLD, CLOSE, SHORT_LONG, HOLD, HOLD):
        o1, r1, *_ , i1 = env.step(a)
        o2, r2, *_ , i2 = clone.step(a)
        assert o1.tobytes() == o2.tobytes() and r1 == r2 and i1["equity"] == i2["equity"]


@pytest.mark.parametrize("cut_offset", [0, 1, 9, 30])
def test_counterfactual_future_invariance(three_frame, cut_offset):
    """Perturb every bar of every asset after day t: observations, rewards and info up to t are unchanged.

    ``cut_offset=0`` cuts at the selection day itself: the selection observation (every asset's returns
    and every pair's statistics) and the baseline's date-locked pair choice must not move.
    """
    kwargs = {"symbols": ["AAPL", "MSFT", "NVDA"], "split": None, "start": "2025-03-03", "end": "2025-06-30"}
    base_env = FinHedgingEnv(data=three_frame, **kwargs)
    _, info = base_env.reset()
    cut = base_env.episode.universe.date_strings[base_env.episode.start + cut_offset]
    rng = np.random.default_rng(cut_offset)
    perturbed = perturb_after(three_frame, cut, rng)
    other_env = FinHedgingEnv(data=perturbed, **kwargs)

    def run(env):
        policy = ZScorePairs(env=env, history=120, lookback=5, entry=1.0, exit=0.25, stop=3.0)
        policy.reset(0)
        obs, info = env.reset(seed=0)
        trace = [(info["date"], obs.tobytes(), 0.0, info["equity"], info["position"])]
        done = False
        while not done:
            obs, reward, term, trunc, info = env.step(policy(obs, info))
            done = term or trunc
            trace.append((info["date"], obs.tobytes(), reward, info["equity"], info["position"]))
        return trace

    a, b = run(base_env), run(other_env)
    upto = [k for k, row in enumerate(a) if row[0] <= cut]
    assert upto and len(upto) == cut_offset + 1
    for k in upto:
        assert a[k] == b[k], f"step {k} ({a[k][0]}) changed when only bars after {cut} changed"
    assert a != b  # the perturbation did change the future, so the comparison had teeth
    assert base_env._lookahead.attempts == 0 and other_env._lookahead.attempts == 0


def test_as_of_view_is_date_locked():
    env = FinHedgingEnv(split="eval", symbols=["AAPL", "MSFT"])
    env.reset(seed=0)
    env.step(0)
    view = env.as_of_view()
    assert str(view.as_of) == "2026-01-05"
    assert str(view.prices("MSFT").dates[-1]) == "2026-01-05"
    view.prices("MSFT", end="2026-02-01")
    assert env._lookahead.attempts == 1
    _, _, _, _, info = env.step(HOLD)
    assert info["look_ahead_attempts"] == 1


# ---------------------------------------------------------------------------- baselines
def test_zscore_baseline_earns_positive_mean_sharpe_on_synthetic_cointegrated_pairs():
    env = gym.make("FinHedging-v0", source="synthetic")
    policy = make_policy("zscore_coint", "FinHedging-v0", env)
    sharpes, crs = [], []
    for seed in range(50):
        result = run_episode(env, policy, env_id="FinHedging-v0", policy_name="zscore_coint", seed=seed)
        sharpes.append(result.standard["sharpe"])
        crs.append(result.standard["cumulative_return"])
        assert result.extra.pair in ("SYN-A/SYN-B", "SYN-B/SYN-A")
    assert np.mean(sharpes) > 0.5 and np.mean(crs) > 0
    rnd = make_policy("random", "FinHedging-v0", env, seed=0)
    random_sharpe = np.mean(
        [run_episode(env, rnd, env_id="FinHedging-v0", policy_name="random", seed=s).standard["sharpe"]
         for s in range(50)]
    )
    assert np.mean(sharpes) > random_sharpe


@pytest.mark.parametrize("window", [("2026-01-02", "2026-03-31"), ("2025-06-02", "2025-09-30")])
def test_oracle_pair_cr_is_at_least_every_pairs_cr(window):
    kwargs = {"split": None, "start": window[0], "end": window[1]}
    env = gym.make("FinHedging-v0", **kwargs)
    oracle = make_policy("oracle_best_pair", "FinHedging-v0", env)
    best = run_episode(env, oracle, env_id="FinHedging-v0", policy_name="oracle_best_pair", seed=0)
    assert best.oracle and best.row()["oracle"] is True
    u = env.unwrapped
    crs = {}
    for k in range(u.n_pairs):
        fixed = ZScorePairs(env=env, select=u.pair_symbols(k))
        r = run_episode(env, fixed, env_id="FinHedging-v0", policy_name="fixed", seed=0)
        crs[r.extra.pair] = r.standard["cumulative_return"]
        # the oracle's replay of the rule through the pure core matches the env run exactly
        assert oracle.equities[k] == pytest.approx(r.final_equity, abs=1e-12)
    assert len(crs) == 56
    assert best.standard["cumulative_return"] >= max(crs.values()) - 1e-12
    assert crs[best.extra.pair] == pytest.approx(best.standard["cumulative_return"], abs=1e-12)


def test_live_baselines_never_read_the_future():
    env = gym.make("FinHedging-v0", split="eval")
    for name in ("zscore_coint", "zscore_corr", "random"):
        r = run_episode(env, make_policy(name, "FinHedging-v0", env), env_id="FinHedging-v0", policy_name=name, seed=0)
        assert r.look_ahead_attempts == 0 and not r.oracle and r.extra.pair is not None


def test_zscore_rule_thresholds():
    env = FinHedgingEnv(split="eval", symbols=["AAPL", "MSFT"])
    policy = ZScorePairs(env=env, select=("AAPL", "MSFT"))
    rule = policy.rule
    obs = np.zeros(env.observation_space.shape, dtype=np.float32)

    def act(z, position):
        obs[rule.z_index], obs[rule.position_index] = z, position
        return rule(obs)

    assert act(2.5, 0) == SHORT_LONG and act(-2.5, 0) == LONG_SHORT and act(1.5, 0) == HOLD
    assert act(4.5, 0) == HOLD  # beyond the stop: no entry
    assert act(-1.0, 1) == HOLD and act(-0.4, 1) == CLOSE and act(0.9, 1) == CLOSE
    assert act(1.0, -1) == HOLD and act(0.3, -1) == CLOSE
    assert act(-4.5, 1) == CLOSE and rule.stopped
    assert act(-2.5, 0) == HOLD  # stopped out: no re-entry until |z| < exit
    assert act(0.2, 0) == HOLD and not rule.stopped
    assert act(-2.5, 0) == LONG_SHORT
    with pytest.raises(ValueError, match="thresholds"):
        ZScorePairs(env=env, entry=0.4, exit=0.5)
    with pytest.raises(ValueError, match="lookback"):
        ZScorePairs(env=env, lookback=7)
    with pytest.raises(ValueError, match="FinHedging-v0 env"):
        ZScorePairs(env=None)
    with pytest.raises(ValueError, match="needs the env"):
        make_policy("zscore_coint", "FinHedging-v0")


def test_replay_rule_leaves_the_rule_ready_and_random_is_seeded():
    env = FinHedgingEnv(split="eval")
    env.reset(seed=0)
    policy = OracleBestPair(env=env)
    equity = replay_rule(env.episode, 3, policy.rule)
    assert equity > 0 and not policy.rule.stopped
    a = RandomPairs(env=env, seed=5)
    b = RandomPairs(env=env, seed=5)
    obs, _ = env.reset(seed=0)
    assert [a(obs) for _ in range(20)] == [b(obs) for _ in range(20)]


# ---------------------------------------------------------------------------- agents: stage defaults are replayable
class _TextAgent:
    """Answers a fixed sequence of text replies, one per decision (no tools)."""

    name = "fixed-text"

    def __init__(self, replies):
        self.replies = list(replies)

    def describe(self):
        return {"kind": "scripted", "name": self.name}

    async def complete(self, messages, tools):
        from finenvs.text.chat import ChatReply

        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return ChatReply(reply, usage={"prompt_tokens": 0, "completion_tokens": 0})


def test_stage_defaults_are_recorded_counted_and_reproduced_offline(tmp_path):
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.runlog import read_trajectories
    from finenvs.evaluation.score import score_run

    replies = ["Action: LONG_SHORT", "Action: AAPL/MSFT", "Action: SHORT_LONG", "Action: HOLD", "Action: CLOSE",
               "no idea", "Action: HOLD"]
    config = RunConfig(env_id="FinHedging-v0", split="live", env_kwargs={"symbols": ["AAPL", "MSFT", "NVDA"]},
                       max_decisions=None)
    summary = run_llm(config, _TextAgent(replies), out=tmp_path, name="r", progress=False)
    records, dropped = read_trajectories(summary.run_dir / "trajectories.jsonl")
    steps = sorted((r for r in records if r["type"] == "step"), key=lambda r: r["step"])
    assert dropped == 0 and len(steps) == 21  # the live split: 21 decisions
    first = steps[0]
    # a LONG_SHORT before any pair: the default pair (the universe's first two symbols), with the reason
    assert first["action"] == "AAPL/MSFT" and "needs a pair" in first["invalid"]
    assert first["reply_action"] == "LONG_SHORT" and first["reply_valid"] is True
    assert steps[1]["action"] == "HOLD" and "already chosen" in steps[1]["invalid"]
    assert [s["position"] for s in steps[2:5]] == [-1, -1, 0]
    assert steps[5]["action"] == "HOLD" and "no action found" in steps[5]["invalid"]
    score = score_run(summary.run_dir)
    assert score.reproduced and score.efficiency()["format_errors"] == 3
    assert all(e.reparse_mismatches == 0 for e in score.episodes)


def test_a_missing_statsmodels_names_the_stats_extra(monkeypatch):
    from finenvs.tasks.hedging.baselines import coint_pvalues

    monkeypatch.setitem(sys.modules, "statsmodels.tsa.stattools", None)
    with pytest.raises(ImportError, match=r"pip install 'finenvs\[stats\]'"):
        coint_pvalues(np.log(np.arange(1.0, 41.0).reshape(2, 20)))


def test_statsmodels_loads_only_for_zscore_coint():
    code = ("import sys, gymnasium as gym, finenvs\n"
            "from finenvs.tasks.hedging.baselines import ZScorePairs\n"
            "env = gym.make('FinHedging-v0', split='eval'); env.reset(seed=0)\n"
            "ZScorePairs(env=env, select='correlation', history=120).choose_pair()\n"
            "print('statsmodels' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
