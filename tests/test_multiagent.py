"""finenvs.multiagent: the market-impact and pairs markets (PettingZoo parallel envs) and their pure cores."""

from __future__ import annotations

import dataclasses
import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from helpers import SUBPROCESS_TIMEOUT

pytest.importorskip("pettingzoo")

from gymnasium.error import ResetNeeded  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pettingzoo.test import api_test, parallel_api_test  # noqa: E402

from finenvs.data.schema import PriceSeries  # noqa: E402
from finenvs.multiagent import (  # noqa: E402
    MarketImpactEnv,
    PairsMarketEnv,
    env,
    pairs_env,
    pairs_parallel_env,
    parallel_env,
)
from finenvs.multiagent.market_core import (  # noqa: E402
    MarketParams,
    impact_cost,
    initial_state,
    is_done,
    make_episode,
    observe,
    transition,
)

UNKNOWN_OPTION = "ignore:.*ignoring unknown reset option"

MARKET_CONFIGS = [
    {"steps": 60},
    {"n_agents": 4, "exogenous": "flat", "steps": 30, "fee_bps": 5.0},
    {"n_agents": 1, "exogenous": "synthetic", "steps": 20, "synthetic": {"model": "heston"}, "window": 3},
    {"n_agents": 3, "exogenous": "real", "steps": 40},
    {"n_agents": 2, "exogenous": "real", "split": "eval"},
    # impact large enough that agents get ruined and drop out mid-episode
    {"n_agents": 3, "exogenous": "flat", "steps": 40, "temporary_impact": 0.15, "permanent_impact": 0.02},
]
PAIRS_CONFIGS = [
    {"steps": 60},
    {"exogenous": "flat", "steps": 20, "fee_bps": 5.0},
    {"exogenous": "real", "split": "eval", "window": 5},
    {"exogenous": "flat", "steps": 50, "temporary_impact": 0.4},  # team ruin
]


def _actions(env_, rng: np.random.Generator) -> dict:
    return {a: int(rng.integers(3)) for a in env_.agents}


def _rollout(env_, seed: int, action_seed: int, options: dict | None = None) -> list[tuple]:
    """Reset with ``seed`` and play actions from ``action_seed`` to the end; every step's outputs."""
    obs, infos = env_.reset(seed=seed, options=options)
    out = [(obs, {}, {}, {}, infos)]
    rng = np.random.default_rng(action_seed)
    plan = [rng.integers(3, size=len(env_.possible_agents)) for _ in range(env_.steps)]
    for k in range(env_.steps):
        if not env_.agents:
            break
        acts = {a: int(plan[k][i]) for i, a in enumerate(env_.possible_agents) if a in env_.agents}
        out.append(env_.step(acts))
    return out


def _same(a: tuple, b: tuple) -> bool:
    """Two steps' outputs are identical (observations byte for byte)."""
    obs_a, obs_b = a[0], b[0]
    if obs_a.keys() != obs_b.keys() or any(obs_a[k].tobytes() != obs_b[k].tobytes() for k in obs_a):
        return False
    return a[1:] == b[1:]


# ---------------------------------------------------------------------------------------------- API conformance
@pytest.mark.filterwarnings(UNKNOWN_OPTION)
@pytest.mark.parametrize("kwargs", MARKET_CONFIGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_market_parallel_api(kwargs):
    parallel_api_test(parallel_env(**kwargs), num_cycles=1000)


@pytest.mark.filterwarnings(UNKNOWN_OPTION)
@pytest.mark.parametrize("kwargs", PAIRS_CONFIGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_pairs_parallel_api(kwargs):
    parallel_api_test(pairs_parallel_env(**kwargs), num_cycles=1000)


@pytest.mark.filterwarnings(UNKNOWN_OPTION)
@pytest.mark.parametrize("factory", [env, pairs_env])
def test_aec_versions_pass_the_aec_api_test(factory):
    api_test(factory(steps=25, exogenous="flat"), num_cycles=60)


def test_metadata_agents_and_cached_spaces():
    e = parallel_env(n_agents=3, window=7)
    assert isinstance(e, MarketImpactEnv)
    assert e.metadata["name"] == "finenvs_market_impact_v0"
    assert e.metadata["is_parallelizable"] is True
    assert e.possible_agents == ["trader_0", "trader_1", "trader_2"]
    for a in e.possible_agents:
        assert e.observation_space(a) is e.observation_space(a)
        assert e.action_space(a) is e.action_space(a)
        assert e.observation_space(a).shape == (7 + 5,)
        assert e.observation_space(a).dtype == np.float32
        assert np.all(np.isfinite(e.observation_space(a).low)) and np.all(np.isfinite(e.observation_space(a).high))
        assert e.action_space(a).n == 3
    assert e.observation_space("trader_0") is not e.observation_space("trader_1")
    with pytest.raises(ValueError, match=r"unknown agent 'trader_9'.*trader_0"):
        e.observation_space("trader_9")
    p = pairs_parallel_env(window=4)
    assert isinstance(p, PairsMarketEnv)
    assert p.metadata["name"] == "finenvs_pairs_market_v0"
    assert p.possible_agents == ["leg_0", "leg_1"]
    assert p.observation_space("leg_1").shape == (2 * 4 + 5,)
    assert len(e.observation_names()) == 12 and len(p.observation_names()) == 13


# ---------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize(
    "make",
    [
        lambda: parallel_env(n_agents=3, steps=40),
        lambda: parallel_env(n_agents=2, exogenous="real", steps=25, fee_bps=5.0),
        lambda: pairs_parallel_env(steps=40),
        lambda: pairs_parallel_env(exogenous="real", steps=25),
    ],
    ids=["market-synthetic", "market-real", "pairs-synthetic", "pairs-real"],
)
def test_same_seed_same_episode_different_seed_different(make):
    a, b = make(), make()
    run_a, run_b = _rollout(a, seed=7, action_seed=1), _rollout(b, seed=7, action_seed=1)
    assert len(run_a) == len(run_b) > 2
    assert all(_same(x, y) for x, y in zip(run_a, run_b, strict=True))
    # the same env object, reseeded, replays it too
    assert all(_same(x, y) for x, y in zip(run_a, _rollout(a, seed=7, action_seed=1), strict=True))
    prices_7 = np.array(a.episode.legs[0].prices if isinstance(a, PairsMarketEnv) else a.episode.prices)
    run_c = _rollout(a, seed=8, action_seed=1)
    prices_8 = np.array(a.episode.legs[0].prices if isinstance(a, PairsMarketEnv) else a.episode.prices)
    assert not np.array_equal(prices_7, prices_8)
    assert not all(_same(x, y) for x, y in zip(run_a, run_c, strict=False))


def test_reset_without_seed_continues_the_generator():
    e = parallel_env(steps=10)
    e.reset(seed=3)
    first = np.array(e.episode.prices)
    e.reset()
    assert not np.array_equal(first, e.episode.prices)


# ---------------------------------------------------------------------------------------------- accounting
def _run_core(params: MarketParams, prices: np.ndarray, steps: int, rng: np.random.Generator):
    ep = make_episode(params, prices, steps)
    state = initial_state(ep)
    states, outcomes = [state], []
    while not is_done(ep, state):
        state, outcome = transition(ep, state, rng.integers(-1, 2, size=params.n_agents))
        states.append(state)
        outcomes.append(outcome)
    return ep, states, outcomes


def _check_identities(params: MarketParams, ep, states, outcomes) -> tuple[float, float]:
    """Check the step identity at every step; return (summed P&L, right side of the episode identity)."""
    gamma, lot = params.temporary_impact, params.lot
    for before, after, o in zip(states[:-1], states[1:], outcomes, strict=True):
        lhs = math.fsum(after.equity) - math.fsum(before.equity)
        rhs = (o.net_position * (after.mid - before.mid) - gamma * o.flow**2 - gamma * o.closeout_flow**2
               - math.fsum(o.fees))
        assert lhs == pytest.approx(rhs, abs=1e-12)
        assert math.fsum(o.pnl) == pytest.approx(lhs, abs=1e-12)
        assert math.fsum(o.impact_costs) == pytest.approx(gamma * (o.flow**2 + o.closeout_flow**2), abs=1e-12)
    w = params.window
    flows = [o.flow for o in outcomes] + [outcomes[-1].closeout_flow]
    net_end = lot * states[-1].net_position
    exogenous = math.fsum(o.net_position * (ep.path[w + t + 1] - ep.path[w + t]) for t, o in enumerate(outcomes))
    fees = math.fsum(states[-1].fees_paid)
    pnl = math.fsum(states[-1].equity) - params.n_agents * params.initial_cash
    if outcomes[-1].truncated:
        assert net_end == 0.0 and not states[-1].positions.any()
    return pnl, exogenous - impact_cost(params, flows, net_end) - fees


@settings(max_examples=80, deadline=None)
@given(
    k=st.integers(1, 6),
    steps=st.integers(1, 25),
    gamma=st.floats(0.0, 0.03),
    ratio=st.floats(0.0, 2.0),
    lot=st.sampled_from([0.5, 1.0, 1.25]),
    seed=st.integers(0, 2**32 - 1),
)
def test_conservation_flat_path_pnl_is_minus_impact_cost(k, steps, gamma, ratio, lot, seed):
    """Flat exogenous path, no fees: sum_i P&L_i = -C = -[(gamma - lambda/2) sum_s q_s^2 - (lambda/2) N_end^2]."""
    params = MarketParams(n_agents=k, lot=lot, temporary_impact=gamma, permanent_impact=ratio * gamma, fee=0.0, window=3)
    params.validate()
    ep, states, outcomes = _run_core(params, np.ones(3 + steps + 1), steps, np.random.default_rng(seed))
    pnl, rhs = _check_identities(params, ep, states, outcomes)
    flows = [o.flow for o in outcomes] + [outcomes[-1].closeout_flow]
    cost = impact_cost(params, flows, params.lot * states[-1].net_position)
    assert rhs == -cost
    assert pnl == pytest.approx(-cost, abs=1e-12)
    if outcomes[-1].truncated:  # after the close-out (N_end = 0) the cost is never negative
        assert cost >= 0.0


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 5),
    steps=st.integers(1, 25),
    gamma=st.floats(0.0, 0.02),
    ratio=st.floats(0.0, 2.0),
    fee_bps=st.floats(0.0, 50.0),
    vol=st.floats(0.0, 0.05),
    seed=st.integers(0, 2**32 - 1),
)
def test_conservation_any_path_with_fees(k, steps, gamma, ratio, fee_bps, vol, seed):
    """sum_i P&L_i = sum_t N_{t+1} (X_{t+1} - X_t) - C - F on any path, with fees."""
    rng = np.random.default_rng(seed)
    params = MarketParams(n_agents=k, temporary_impact=gamma, permanent_impact=ratio * gamma, fee=fee_bps / 1e4, window=4)
    prices = 50.0 * np.exp(np.cumsum(rng.normal(0.0, vol, 4 + steps + 1)))
    ep, states, outcomes = _run_core(params, prices, steps, rng)
    pnl, rhs = _check_identities(params, ep, states, outcomes)
    assert pnl == pytest.approx(rhs, abs=1e-12)


@pytest.mark.parametrize("vol", [0.0, 0.01])
def test_conservation_holds_through_ruin_liquidation_and_early_end(vol):
    """Big impact: agents are ruined, liquidated in the next flow, or all ruined with books left open (N_end != 0)."""
    params = MarketParams(n_agents=3, temporary_impact=0.12, permanent_impact=0.02, fee=0.001, window=2)
    ends = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        prices = np.exp(np.cumsum(rng.normal(0.0, vol, 2 + 15 + 1)))
        ep, states, outcomes = _run_core(params, prices, 15, rng)
        pnl, rhs = _check_identities(params, ep, states, outcomes)
        assert pnl == pytest.approx(rhs, abs=1e-12)
        ruined = int((~states[-1].active).sum())
        ends.add((outcomes[-1].truncated, ruined > 0, states[-1].net_position != 0))
    # both ends were exercised: ruin then the close-out, and everyone ruined with books left open
    assert {(True, True, False), (False, True, True)} <= ends


def test_hand_computed_two_agent_episode():
    """gamma = 0.01, lambda = 0.004, flat path, two steps; every number worked out by hand."""
    params = MarketParams(n_agents=2, temporary_impact=0.01, permanent_impact=0.004, window=1)
    ep = make_episode(params, [1.0, 1.0, 1.0, 1.0], steps=2)
    s0 = initial_state(ep)
    # step 0: trader_0 buys one lot, trader_1 stays flat: q = 1, e = 1.01, mid -> 1.004
    s1, o1 = transition(ep, s0, [1, 0])
    assert o1.flow == 1.0 and o1.exec_price == pytest.approx(1.01) and s1.mid == pytest.approx(1.004)
    assert s1.cash.tolist() == pytest.approx([-0.01, 1.0])
    assert o1.pnl.tolist() == pytest.approx([-0.006, 0.0])  # 1 * (1.004 - 1.01)
    # step 1 (last): trader_0 holds, trader_1 sells one lot: q = -1, e = 1.004 - 0.01 = 0.994,
    # mid -> 1 + 0.004 * 0 = 1.0; close-out: q_T = 0 (net flat), both close at e_T = 1.0
    s2, o2 = transition(ep, s1, [1, -1])
    assert o2.flow == -1.0 and o2.exec_price == pytest.approx(0.994) and o2.mid == pytest.approx(1.0)
    assert o2.closeout_flow == 0.0 and o2.closeout_price == pytest.approx(1.0) and o2.truncated
    assert s2.equity.tolist() == pytest.approx([0.99, 0.994])  # -0.01 + 1.0 ; 1 + 0.994 - 1.0
    assert s2.positions.tolist() == [0, 0]
    # sum of P&L = -0.016 = -[(0.01 - 0.002) * (1 + 1 + 0) - 0]
    assert impact_cost(params, [1.0, -1.0, 0.0]) == pytest.approx(0.016)
    assert s2.equity.sum() - 2.0 == pytest.approx(-0.016, abs=1e-15)


def test_round_trip_arbitrage_and_oversized_impact_are_rejected():
    with pytest.raises(ValueError, match=r"temporary_impact=0.001 is below permanent_impact / 2.*round trip"):
        MarketImpactEnv(temporary_impact=0.001, permanent_impact=0.01)
    with pytest.raises(ValueError, match=r"impact too large.*n_agents"):
        MarketImpactEnv(n_agents=10, temporary_impact=0.1, permanent_impact=0.1)
    params = MarketParams(n_agents=2, temporary_impact=0.05, permanent_impact=0.05, window=1)
    with pytest.raises(ValueError, match=r"falls to 0.1 of its first decision's price"):
        make_episode(params, [1.0, 1.0, 0.1], steps=1)


@pytest.mark.filterwarnings(UNKNOWN_OPTION)
def test_env_rewards_on_a_flat_path_sum_to_minus_impact_cost():
    e = parallel_env(n_agents=4, exogenous="flat", steps=30, temporary_impact=0.004, permanent_impact=0.006)
    run = _rollout(e, seed=0, action_seed=5)
    flows = [next(iter(step[4].values()))["flow"] for step in run[1:]]
    flows.append(next(iter(run[-1][4].values()))["closeout_flow"])
    total = math.fsum(r for step in run[1:] for r in step[1].values())
    assert e.agents == [] and all(step[2] == dict.fromkeys(step[2], False) for step in run[1:])  # nobody ruined
    assert total == pytest.approx(-impact_cost(e.params, flows), abs=1e-12)
    finals = run[-1][4]
    assert all(info["position"] == 0 for info in finals.values())  # closed out at the end
    for agent, info in finals.items():  # each agent's rewards sum to its final equity - 1
        assert math.fsum(step[1][agent] for step in run[1:]) == pytest.approx(info["equity"] - 1.0, abs=1e-12)


def test_pairs_team_reward_is_shared_and_is_the_book_pnl():
    e = pairs_parallel_env(steps=30, fee_bps=3.0, temporary_impact=0.002, permanent_impact=0.002)
    run = _rollout(e, seed=4, action_seed=2)
    team = 1.0
    for step in run[1:]:
        rewards, infos = step[1], step[4]
        assert rewards["leg_0"] == rewards["leg_1"]
        assert infos["leg_0"]["team_equity"] == infos["leg_1"]["team_equity"]
        assert infos["leg_0"]["equity"] + infos["leg_1"]["equity"] == pytest.approx(infos["leg_0"]["team_equity"])
        assert rewards["leg_0"] == pytest.approx(infos["leg_0"]["team_equity"] - team, abs=1e-12)
        team = infos["leg_0"]["team_equity"]
    assert e.agents == []


def test_pairs_flat_path_team_pnl_is_minus_both_legs_impact_cost():
    e = pairs_parallel_env(exogenous="flat", steps=25, temporary_impact=0.01, permanent_impact=0.012)
    run = _rollout(e, seed=0, action_seed=9)
    total = math.fsum(step[1]["leg_0"] for step in run[1:])
    cost = 0.0
    for agent in e.possible_agents:
        trades = [step[4][agent]["trade"] for step in run[1:]] + [run[-1][4][agent]["closeout_flow"]]
        cost += impact_cost(e.episode.legs[0].params, trades)  # one agent per leg: its trades are the flows
    assert total == pytest.approx(-cost, abs=1e-12)


# ---------------------------------------------------------------------------------------------- date lock
def _perturb_after(prices: np.ndarray, row: int, seed: int) -> np.ndarray:
    out = np.array(prices, dtype=np.float64)
    rng = np.random.default_rng(seed)
    out[..., row + 1 :] *= np.exp(rng.normal(0.0, 0.05, out[..., row + 1 :].shape))
    return out


def _check_future_invariance(run_a: list, run_b: list, t: int) -> None:
    """Observations and infos at decisions <= t, and rewards of steps ending at <= t, are identical; t+1 differs."""
    for k in range(t + 1):  # run[k] holds what decision k sees (k = 0: reset)
        assert _same(run_a[k], run_b[k]), f"decision {k} <= {t} changed when only rows after it did"
    assert not _same(run_a[t + 1], run_b[t + 1])


@pytest.mark.parametrize("t", [0, 5, 17])
@pytest.mark.parametrize("kind", ["market", "pairs"])
def test_counterfactual_future_invariance_synthetic(kind, t):
    make = (lambda: parallel_env(n_agents=3, steps=25, window=6)) if kind == "market" else (
        lambda: pairs_parallel_env(steps=25, window=6))
    e = make()
    base = _rollout(e, seed=11, action_seed=3)
    prices = e.episode.prices if kind == "market" else np.stack([leg.prices for leg in e.episode.legs])
    replay = _rollout(make(), seed=11, action_seed=3, options={"path": prices})
    assert all(_same(x, y) for x, y in zip(base, replay, strict=True))  # the path option replays exactly
    changed = _rollout(make(), seed=11, action_seed=3, options={"path": _perturb_after(prices, 6 + t, seed=t)})
    _check_future_invariance(base, changed, t)


def test_counterfactual_future_invariance_real_data(monkeypatch, catalog):
    """Perturb every shipped close after a date: nothing the agents saw or earned up to it changes."""
    import finenvs.data.catalog as catalog_module

    spy = catalog.series("SPY")
    env_a = parallel_env(n_agents=2, exogenous="real", steps=20, window=5, fee_bps=2.0)
    base = _rollout(env_a, seed=2, action_seed=8)
    t = 9
    cut = np.datetime64(base[t][4]["trader_0"]["date"])
    assert env_a.episode.prices[5] == spy.close[np.searchsorted(spy.dates, np.datetime64(base[0][4]["trader_0"]["date"]))]
    after = spy.dates > cut
    close = np.array(spy.close)
    close[after] *= np.exp(np.random.default_rng(0).normal(0.0, 0.1, int(after.sum())))
    perturbed = PriceSeries.from_arrays(
        "SPY", spy.dates, close, np.maximum(spy.high, close), np.minimum(spy.low, close), close, spy.volume,
        validate=False,
    )

    class _Perturbed:
        def series(self, symbol: str, dataset: str = "core") -> PriceSeries:
            assert symbol == "SPY" and dataset == "core"
            return perturbed

    monkeypatch.setattr(catalog_module, "default_catalog", lambda: _Perturbed())
    env_b = parallel_env(n_agents=2, exogenous="real", steps=20, window=5, fee_bps=2.0)
    _check_future_invariance(base, _rollout(env_b, seed=2, action_seed=8), t)


def test_observation_holds_only_the_agents_own_book():
    """Other agents' positions, cash and equity never reach an agent's observation."""
    params = MarketParams(n_agents=3, window=4)
    ep = make_episode(params, np.linspace(1.0, 1.2, 4 + 10 + 1), steps=10)
    state, _ = transition(ep, initial_state(ep), [1, -1, 0])
    other = dataclasses.replace(
        state,
        positions=np.array([1, 1, -1]),
        cash=np.array([state.cash[0], 7.0, -3.0]),
        equity=np.array([state.equity[0], 2.0, 0.5]),
    )
    assert observe(ep, state, 0).tobytes() == observe(ep, other, 0).tobytes()
    assert observe(ep, state, 1).tobytes() != observe(ep, other, 1).tobytes()
    obs = observe(ep, state, 1)
    assert obs[-3:].tolist() == pytest.approx([-1.0, state.cash[1], state.equity[1]])


# ---------------------------------------------------------------------------------------------- episode end
def test_truncation_removes_every_agent_and_closes_out():
    e = parallel_env(n_agents=3, steps=5)
    e.reset(seed=0)
    for _ in range(5):
        assert e.agents == e.possible_agents
        obs, rewards, terms, truncs, infos = e.step({a: 2 for a in e.agents})
    assert truncs == dict.fromkeys(e.possible_agents, True) and not any(terms.values())
    assert e.agents == [] and set(obs) == set(e.possible_agents)
    assert all(info["position"] == 0 and "closeout_price" in info for info in infos.values())
    assert infos["trader_0"]["closeout_flow"] == -3.0
    with pytest.raises(ResetNeeded, match="episode has ended"):
        e.step({})


def test_ruined_agent_is_removed_and_liquidated_next_step():
    e = parallel_env(n_agents=3, exogenous="flat", steps=20, temporary_impact=0.15, permanent_impact=0.02)
    e.reset(seed=0)
    # everyone buys: q = 3, e = 1.45, mid 1.06: equity 1 - 1.45 + 1.06 = 0.61
    e.step({a: 2 for a in e.agents})
    # trader_0 flips short, the others go flat: q = -4, e = 1.06 - 0.6 = 0.46, mid 1 - 0.02 = 0.98;
    # trader_0: cash -0.45 + 2 * 0.46 = 0.47, equity 0.47 - 0.98 = -0.51 (ruined); the others 0.01
    obs, rewards, terms, truncs, infos = e.step({"trader_0": 0, "trader_1": 1, "trader_2": 1})
    assert terms == {"trader_0": True, "trader_1": False, "trader_2": False}
    assert infos["trader_0"]["ruined"] is True and infos["trader_0"]["equity"] <= 0.0
    assert e.agents == ["trader_1", "trader_2"]
    assert e.market_state.positions[0] == -1
    with pytest.raises(ValueError, match=r"agent 'trader_0' is done \(ruined at step 2\).*\['trader_1', 'trader_2'\]"):
        e.step({"trader_0": 1, "trader_1": 1, "trader_2": 1})
    obs, rewards, terms, truncs, infos = e.step({"trader_1": 1, "trader_2": 1})
    assert set(obs) == set(rewards) == set(infos) == {"trader_1", "trader_2"}
    assert e.market_state.positions[0] == 0  # its short was bought back in this step's flow
    assert infos["trader_1"]["flow"] == 1.0 and infos["trader_1"]["exec_price"] == pytest.approx(0.98 + 0.15)
    assert rewards == {"trader_1": 0.0, "trader_2": 0.0}
    assert e.market_state.equity[0] == pytest.approx(-0.51 - 0.15)  # the liquidation paid impact too


def test_pairs_team_ruin_ends_the_episode_for_both():
    e = pairs_parallel_env(exogenous="flat", steps=50, temporary_impact=0.4)
    e.reset(seed=0)
    for k in range(50):
        obs, rewards, terms, truncs, infos = e.step({"leg_0": 2 * (k % 2), "leg_1": 2 * ((k + 1) % 2)})
        if not e.agents:
            break
    assert terms == {"leg_0": True, "leg_1": True} and truncs == {"leg_0": False, "leg_1": False}
    assert infos["leg_0"]["team_equity"] <= 0.0 and infos["leg_1"]["ruined"] is True
    assert e.market_state.t < 50
    with pytest.raises(ResetNeeded):
        e.step({"leg_0": 1, "leg_1": 1})


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("actions", "pattern"),
    [
        ({"trader_0": 1}, r"missing action\(s\) for live agent\(s\) \['trader_1'\].*\['trader_0', 'trader_1'\]"),
        ({"trader_0": 1, "trader_1": 1, "trader_7": 1}, r"unknown agent 'trader_7'; live agents: \['trader_0', 'trader_1'\]"),
        ({"trader_0": 1, "trader_1": 3}, r"invalid action 3 for agent 'trader_1'.*0: SELL.*1: HOLD.*2: BUY"),
        ({"trader_0": -1, "trader_1": 1}, r"invalid action -1 for agent 'trader_0'.*0: SELL"),
        ({"trader_0": 1.0, "trader_1": 1}, r"invalid action 1.0 of type float for agent 'trader_0'.*integer in"),
        ({"trader_0": float("nan"), "trader_1": 1}, r"invalid action nan of type float for agent 'trader_0'"),
        ({"trader_0": True, "trader_1": 1}, r"invalid action True of type bool for agent 'trader_0'"),
        ({"trader_0": None, "trader_1": 1}, r"invalid action None of type NoneType for agent 'trader_0'"),
        ({"trader_0": np.array([1.5]), "trader_1": 1}, r"of type ndarray for agent 'trader_0'"),
        ({"trader_0": np.array([1, 2]), "trader_1": 1}, r"of type ndarray for agent 'trader_0'"),
        ({"trader_0": "BUY", "trader_1": 1}, r"invalid action 'BUY' of type str for agent 'trader_0'"),
        ([1, 1], r"actions must be a dict \{agent: action\}.*\['trader_0', 'trader_1'\]; got list"),
    ],
)
def test_bad_actions_raise_naming_the_agent_and_valid_set(actions, pattern):
    e = parallel_env(n_agents=2, steps=10)
    e.reset(seed=0)
    with pytest.raises(ValueError, match=pattern):
        e.step(actions)
    assert e.market_state.t == 0  # nothing happened
    e.step({"trader_0": np.int64(2), "trader_1": np.array([0])})  # numpy integers are fine
    assert e.market_state.positions.tolist() == [1, -1]


def test_pairs_bad_actions():
    e = pairs_parallel_env(steps=10)
    e.reset(seed=0)
    with pytest.raises(ValueError, match=r"missing action\(s\) for live agent\(s\) \['leg_1'\]"):
        e.step({"leg_0": 1})
    with pytest.raises(ValueError, match=r"unknown agent 'trader_0'.*\['leg_0', 'leg_1'\]"):
        e.step({"leg_0": 1, "leg_1": 1, "trader_0": 1})
    with pytest.raises(ValueError, match=r"invalid action 2.5 of type float for agent 'leg_1'"):
        e.step({"leg_0": 1, "leg_1": 2.5})


@pytest.mark.parametrize("make", [lambda: parallel_env(steps=5), lambda: pairs_parallel_env(steps=5)])
def test_step_and_state_before_reset_raise(make):
    e = make()
    with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
        e.step(dict.fromkeys(e.possible_agents, 1))
    with pytest.raises(ResetNeeded, match=r"call reset\(\) before state\(\)"):
        e.state()


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"n_agents": 0}, r"n_agents=0 must be an integer >= 1"),
        ({"n_agents": 2.0}, r"n_agents=2.0 must be an integer"),
        ({"steps": 0}, r"steps=0 must be None or an integer >= 1"),
        ({"window": 0}, r"window=0 must be an integer >= 1"),
        ({"lot": -1.0}, r"lot=-1.0 must be a finite number > 0"),
        ({"temporary_impact": float("nan")}, r"temporary_impact=nan must be a finite number >= 0"),
        ({"permanent_impact": -0.1}, r"permanent_impact=-0.1 must be a finite number >= 0"),
        ({"fee_bps": -1.0}, r"fee_bps=-1.0 must be a finite number"),
        ({"exogenous": "gbm"}, r"exogenous='gbm'; valid: \['flat', 'synthetic', 'real'\]"),
        ({"exogenous": "flat", "synthetic": {"model": "gbm"}}, r"synthetic= is for exogenous='synthetic'"),
        ({"exogenous": "flat", "start": "2024-02-01"}, r"start/end choose a window of real data"),
        ({"render_mode": "human"}, r"render_mode='human'; valid: None or \['ansi'\]"),
        ({"exogenous": "real", "split": "live", "steps": 500}, r"episode_length=500 decisions does not fit"),
    ],
)
def test_bad_constructor_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        MarketImpactEnv(**kwargs)


def test_bad_real_symbols_and_pairs_arguments():
    with pytest.raises(KeyError, match=r"unknown symbol 'XXX'.*valid symbols"):
        MarketImpactEnv(exogenous="real", symbol="XXX")
    with pytest.raises(ValueError, match=r"must name exactly 2 symbols"):
        PairsMarketEnv(exogenous="real", symbols=("SPY", "QQQ", "AAPL"))
    with pytest.raises(ValueError, match=r"n_assets=3; the pairs market has exactly 2 legs"):
        PairsMarketEnv(synthetic={"n_assets": 3})


def test_bad_path_option():
    e = parallel_env(steps=5, window=2)
    with pytest.raises(ValueError, match=r"has 3 rows; window=2 \+ steps=5 \+ 1 = 8 needed"):
        e.reset(seed=0, options={"path": [1.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match=r"exogenous price -1.0 at row 4: prices must be finite and > 0"):
        e.reset(seed=0, options={"path": [1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0]})
    with pytest.warns(UserWarning, match=r"ignoring unknown reset option\(s\) \['pth'\]; valid options: \['path'\]"):
        e.reset(seed=0, options={"pth": 1})


# ---------------------------------------------------------------------------------------------- spaces, state, pickling
@pytest.mark.filterwarnings(UNKNOWN_OPTION)
@pytest.mark.parametrize("make", [
    lambda: parallel_env(n_agents=3, steps=60, temporary_impact=0.01, permanent_impact=0.01),
    lambda: parallel_env(n_agents=2, exogenous="real", split="eval"),
    lambda: pairs_parallel_env(steps=60, synthetic={"spread_sd": 0.2, "factor_vol": 0.6}),
])
def test_observations_and_state_inside_their_spaces(make):
    e = make()
    for step in _rollout(e, seed=1, action_seed=1):
        for agent, obs in step[0].items():
            space = e.observation_space(agent)
            assert obs.dtype == np.float32 and space.contains(obs), (agent, obs)
        if len(step[0]) > 1:  # fresh arrays: writing one observation leaves the others alone
            first, second = list(step[0].values())[:2]
            before = second.copy()
            first[:] = 99.0
            assert np.array_equal(second, before)
    assert e.state_space.contains(e.state())


def test_pickle_after_reset_continues_identically():
    for make, agents in ((lambda: parallel_env(n_agents=3, steps=20), 3), (lambda: pairs_parallel_env(steps=20), 2)):
        e = make()
        e.reset(seed=5)
        e.step(dict.fromkeys(e.agents, 2))
        clone = pickle.loads(pickle.dumps(e))
        assert clone.agents == e.agents and len(clone.possible_agents) == agents
        assert clone.observation_space(clone.agents[0]) is clone.observation_space(clone.agents[0])
        rng = np.random.default_rng(0)
        while e.agents:
            acts = _actions(e, rng)
            assert _same(e.step(acts), clone.step(acts))
        assert clone.agents == []
        # the generator travelled with it
        e.reset()
        clone.reset()
        assert np.array_equal(np.asarray(e.state()), np.asarray(clone.state()))


def test_render_ansi_and_without_mode():
    e = parallel_env(n_agents=2, steps=5, render_mode="ansi")
    e.reset(seed=0)
    e.step({"trader_0": 2, "trader_1": 0})
    frame = e.render()
    assert "trader_0: LONG" in frame and "trader_1: SHORT" in frame and "step 1/5" in frame
    p = pairs_parallel_env(steps=5, render_mode="ansi")
    p.reset(seed=0)
    assert "leg_0 SYN-A" in p.render() and "team equity 1.0000" in p.render()
    quiet = parallel_env(steps=5)
    quiet.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert quiet.render() is None


# ---------------------------------------------------------------------------------------------- packaging
def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                          env=dict(os.environ))


def test_import_finenvs_and_the_cores_never_import_pettingzoo():
    proc = _python(
        "import sys\n"
        "import finenvs, finenvs.multiagent\n"
        "import finenvs.multiagent.market_core, finenvs.multiagent.pairs_core\n"
        "assert 'pettingzoo' not in sys.modules, 'pettingzoo imported'\n"
        "from finenvs.multiagent import MarketImpactEnv\n"
        "assert 'pettingzoo' in sys.modules\n"
    )
    assert proc.returncode == 0, proc.stderr


def test_missing_pettingzoo_names_the_extra():
    proc = _python(
        "import sys\n"
        "sys.modules['pettingzoo'] = None  # as if it were not installed\n"
        "import finenvs.multiagent as m\n"
        "for get in (lambda: m.MarketImpactEnv, lambda: m.parallel_env(), lambda: m.pairs_parallel_env()):\n"
        "    try:\n"
        "        get()\n"
        "    except ImportError as exc:\n"
        "        assert \"pip install 'finenvs[marl]'\" in str(exc), exc\n"
        "    else:\n"
        "        raise SystemExit('no ImportError')\n"
    )
    assert proc.returncode == 0, proc.stderr
