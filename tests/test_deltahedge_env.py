"""FinDeltaHedge-v0: Gymnasium contract, the book's accounting, hedging properties, date lock, baselines."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env

from finenvs.data.chains import realised_vol
from finenvs.data.synthetic import (
    TRADING_DAYS_PER_YEAR,
    GBMParams,
    HestonParams,
    MertonParams,
    SyntheticSpec,
)
from finenvs.errors import WindowError
from finenvs.pricing import bsm_greeks, bsm_price
from finenvs.tasks.deltahedge.baselines import (
    DELTAHEDGE_POLICIES,
    BSDeltaHedge,
    NoHedge,
    RandomHedge,
    run_hedge_episodes,
)
from finenvs.tasks.deltahedge.core import (
    DELTA,
    HEDGE,
    OBS_NAMES,
    HedgeState,
    hedge_action,
    hedge_ratio,
    hedging_error,
    initial_state,
    make_episode,
    observe,
    simulate_path,
    transition,
)
from finenvs.tasks.deltahedge.env import VOL_WINDOW, FinDeltaHedgeEnv
from helpers import perturb_after

T30 = 30 / TRADING_DAYS_PER_YEAR


def _check_env_warnings(env, skip_render_check=True):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=skip_render_check)
    return [str(w.message) for w in caught]


def _trajectory(env, seed, policy=None, options=None):
    """(obs bytes, reward, info repr) per step of one episode; random box/discrete actions by default."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed, options=options)
    out = [(obs.tobytes(), 0.0, repr(sorted(info.items())))]
    done = False
    while not done:
        if policy is not None:
            action = policy(obs, info)
        elif env.action_type == "discrete":
            action = int(rng.integers(env.n_bins))
        else:
            action = rng.uniform(-1.0, 1.0, 1).astype(np.float32)
        obs, reward, term, trunc, info = env.step(action)
        assert not trunc
        done = term
        out.append((obs.tobytes(), reward, repr(sorted(info.items()))))
    return out


def _final_info(env, seed, policy):
    obs, info = env.reset(seed=seed)
    done = False
    while not done:
        obs, _, done, _, info = env.step(policy(obs, info))
    return info


def _mse(env, policy_cls, n=200, seed=0):
    errors = run_hedge_episodes(env, policy_cls.from_env(env), n, seed)
    return float(np.mean(errors**2)), errors


# ---------------------------------------------------------------------------- Gymnasium contract
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"option": "put", "moneyness": 1.1, "r": 0.03, "q": 0.01, "cost_bps": 5.0},
        {"source": "heston", "steps_per_day": 2},
        {"source": "merton", "maturity_days": 5},
        {"source": "real"},
        {"source": "real", "split": "eval", "option": "put"},
    ],
)
@pytest.mark.parametrize("action_type", ["box", "discrete"])
def test_check_env_passes(kwargs, action_type):
    env = FinDeltaHedgeEnv(action_type=action_type, **kwargs)
    assert _check_env_warnings(env) == []  # the box space is the normalised [-1, 1]


def test_check_env_with_render_modes():
    # a spec lets check_env make the env in each render mode (import finenvs registers the id)
    kwargs = {"action_type": "discrete", "maturity_days": 3}
    spec = EnvSpec("FinDeltaHedge-v0", entry_point=FinDeltaHedgeEnv, kwargs=kwargs, order_enforce=False,
                   disable_env_checker=True)
    for mode in ("ansi", "rgb_array"):
        env = gym.make(spec, render_mode=mode)
        assert isinstance(env, FinDeltaHedgeEnv) and env.render_mode == mode
        assert _check_env_warnings(env, skip_render_check=False) == []


def test_spaces_and_reset_observation_match_black_scholes():
    env = FinDeltaHedgeEnv()
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)  # normalised: hedge ratio 1.5 * a
    assert env.observation_space.shape == (6,) and env.observation_space.dtype == np.float32
    assert np.all(np.isfinite(env.observation_space.low)) and np.all(np.isfinite(env.observation_space.high))
    assert env.obs_names() == OBS_NAMES and len(OBS_NAMES) == 6
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    greeks = bsm_greeks(100.0, 100.0, T30, 0.0, 0.0, 0.2, "call")
    assert info["premium"] == pytest.approx(greeks["price"], rel=1e-12)
    assert info["premium"] != pytest.approx(bsm_price(100.0, 100.0, 30 / 365, 0.0, 0.0, 0.2), rel=1e-3)
    assert (info["strike"], info["pricing_vol"], info["source"], info["n_steps"]) == (100.0, 0.2, "gbm", 30)
    assert info["maturity"] == pytest.approx(T30, rel=1e-15)
    for key in ("step", "spot", "hedge", "option_value", "pnl", "step_pnl", "costs"):
        assert key in info
    expected = [0.0, T30, 0.2 * math.sqrt(T30), 0.0, greeks["price"] / 100.0, greeks["delta"]]
    np.testing.assert_allclose(obs, np.float32(expected), rtol=1e-6, atol=0)
    assert obs[1] == env.observation_space.high[1]  # time to expiry starts at its bound


def test_observation_and_info_along_an_episode():
    env = FinDeltaHedgeEnv(option="put", moneyness=0.9, steps_per_day=2, r=0.02)
    obs, info = env.reset(seed=5)
    strike = info["strike"]
    assert strike == pytest.approx(90.0)
    for t in range(1, 61):
        obs, reward, term, trunc, info = env.step(hedge_action(-0.25))
        assert env.observation_space.contains(obs) and not trunc
        tau = (60 - t) / (2 * TRADING_DAYS_PER_YEAR)
        assert info["step"] == t and info["hedge"] == -0.25 and obs[HEDGE] == np.float32(-0.25)
        assert obs[0] == pytest.approx(math.log(info["spot"] / strike), abs=1e-6)
        assert obs[1] == pytest.approx(tau, abs=1e-7)
        if t < 60:
            greeks = bsm_greeks(info["spot"], strike, tau, 0.02, 0.0, 0.2, "put")
            assert info["option_value"] == pytest.approx(greeks["price"], rel=1e-12, abs=1e-12)
            assert obs[DELTA] == pytest.approx(greeks["delta"], abs=1e-6)
            assert not term and "hedging_error" not in info
    assert term
    payoff = max(strike - info["spot"], 0.0)
    assert info["payoff"] == info["option_value"] == payoff
    assert obs[DELTA] == (-1.0 if info["spot"] < strike else 0.0) and obs[1] == 0.0
    assert info["hedging_error_pct"] == pytest.approx(info["hedging_error"] * 100 / 100.0, rel=1e-12)


def test_step_before_reset_and_after_expiry():
    env = FinDeltaHedgeEnv(maturity_days=2)
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(np.zeros(1, np.float32))
    env.reset(seed=0)
    env.step(np.zeros(1, np.float32))
    _, _, term, trunc, _ = env.step(np.zeros(1, np.float32))
    assert term and not trunc
    with pytest.raises(gym.error.ResetNeeded, match="expired"):
        env.step(np.zeros(1, np.float32))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"option": "straddle"}, "option"),
        ({"moneyness": 0.0}, "moneyness"),
        ({"moneyness": -1.0}, "moneyness"),
        ({"moneyness": float("nan")}, "moneyness"),
        ({"maturity_days": 0}, "maturity_days"),
        ({"maturity_days": 2.5}, "maturity_days"),
        ({"steps_per_day": 0}, "steps_per_day"),
        ({"steps_per_day": True}, "steps_per_day"),
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -0.2}, "sigma"),
        ({"cost_bps": -1.0}, "cost_bps"),
        ({"cost_bps": float("inf")}, "cost_bps"),
        ({"reward_scale": 0.0}, "reward_scale"),
        ({"r": float("nan")}, "r="),
        ({"spot": 0.0}, "spot"),
        ({"n_bins": 1}, "n_bins"),
        ({"source": "bitcoin"}, "source"),
        ({"action_type": "multi"}, "action_type"),
        ({"render_mode": "human"}, "render_mode"),
        ({"source": "real", "steps_per_day": 4}, "steps_per_day must be 1"),
        ({"source": "heston", "model_params": {"sigma": 0.3}}, "pass mu= and sigma="),
        ({"source": "merton", "model_params": {"kappa": 1.0}}, "valid keys"),
        ({"source": "heston", "model_params": {"rho": 2.0}}, "rho"),
        ({"source": "heston", "model_params": {"theta": 0.0}}, "nominal vol"),
        ({"model_params": {"v0": 0.04}}, "source='gbm'"),
        ({"source": "gbm", "symbol": "AAPL"}, "symbol= is for source='real'"),
        ({"source": "real", "model_params": {"xi": 1.0}}, "model_params="),
        ({"source": "real", "split": "nope"}, "unknown split"),
        ({"source": "real", "split": "live"}, "holds no window"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FinDeltaHedgeEnv(**kwargs)


@pytest.mark.parametrize(
    "action",
    [1.6, -1.01, 1.5, float("nan"), float("inf"), np.array([np.nan], np.float32), np.array([2.0], np.float32),
     np.array([0.1, 0.2], np.float32), np.array([[0.1]], np.float32), "0.5", None, True, [0.5]],
)
def test_invalid_box_actions_raise_naming_the_range(action):
    env = FinDeltaHedgeEnv(maturity_days=3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"normalised action in \[-1, 1\].*hedge ratio 1.5 \* a"):
        env.step(action)


@pytest.mark.parametrize("action", [31, -1, 0.5, True, np.array([1.0]), np.array([1, 2]), "3", None])
def test_invalid_discrete_actions_raise_naming_the_range(action):
    env = FinDeltaHedgeEnv(maturity_days=3, action_type="discrete")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"integer in \[0, 30\]"):
        env.step(action)


def test_valid_action_forms_and_discrete_bins_map_to_hedge_ratios():
    env = FinDeltaHedgeEnv(maturity_days=4)
    env.reset(seed=0)
    for action, hedge in ((1.0, 1.5), (np.float32(-1.0), -1.5), (0, 0.0), (np.array(0.5), 0.75)):
        obs, _, _, _, info = env.step(action)
        assert info["hedge"] == hedge and obs[HEDGE] == np.float32(hedge)
    bins = np.linspace(-1.5, 1.5, 31)
    denv = FinDeltaHedgeEnv(maturity_days=5, action_type="discrete")
    np.testing.assert_array_equal(denv.hedge_bins, bins)
    assert denv.hedge_bins[15] == 0.0 and denv.hedge_bins[20] == pytest.approx(0.5)
    denv.reset(seed=0)
    for k in (0, 15, 30, np.int64(20), np.array([7])):
        obs, _, _, _, info = denv.step(k)
        assert info["hedge"] == bins[int(np.asarray(k).reshape(-1)[0])]
        assert obs[HEDGE] == np.float32(info["hedge"])
    # the delta baseline picks the nearest bin of the observed delta; no_hedge the bin at 0
    policy = BSDeltaHedge.from_env(denv)
    obs = np.zeros(6, np.float32)
    for delta, k in ((0.53, 20), (0.56, 21), (-0.97, 5), (1.0, 25), (0.0, 15)):
        obs[DELTA] = delta
        assert policy(obs, {}) == k
    assert NoHedge.from_env(denv)(obs, {}) == 15
    assert isinstance(BSDeltaHedge.from_env(env)(obs, {}), np.ndarray)


def test_box_action_scales_linearly_to_the_hedge_and_back():
    actions = np.random.default_rng(0).uniform(-1.0, 1.0, 10_000).astype(np.float32)
    hedges = np.array([hedge_ratio(float(a)) for a in actions])
    np.testing.assert_allclose(hedges, 1.5 * actions.astype(np.float64), rtol=1e-7, atol=0)
    assert hedge_ratio(1.0) == 1.5 and hedge_ratio(-1.0) == -1.5 and hedge_ratio(0.0) == 0.0
    # a hedge the env set maps back to an action setting it exactly: holding the hedge never trades
    assert all(hedge_ratio(float(hedge_action(h)[0])) == h for h in hedges)
    for h in (0.25, 0.5, -0.25, 0.53, 0.75, 1.5, -1.5):  # ratios with a float32 mantissa below 1.5 round-trip too
        assert hedge_ratio(float(hedge_action(h)[0])) == float(np.float32(h))
    env = FinDeltaHedgeEnv()
    assert env.action_space.contains(hedge_action(1.5)) and env.action_space.contains(hedge_action(-1.5))
    assert env.text_protocol.action_of(0.6).tolist() == hedge_action(0.6).tolist() == [np.float32(0.4)]


# ---------------------------------------------------------------------------- accounting
def test_hand_computed_two_steps_with_costs_rate_and_yield():
    """Path 100 -> 102 -> 99, K = 100, daily steps, r = 5%, q = 2%, 10 bp costs; hedges 0.5 then 0.3."""
    dt, r, q, vol, fee = 1 / 252, 0.05, 0.02, 0.2, 0.001
    ep = make_episode(np.array([100.0, 102.0, 99.0]), option="call", strike=100.0, dt=dt, r=r, q=q,
                      pricing_vol=vol, fee=fee, reward_scale=2.0)
    v0 = bsm_price(100.0, 100.0, 2 * dt, r, q, vol)
    v1 = bsm_price(102.0, 100.0, dt, r, q, vol)
    assert ep.values == pytest.approx((v0, v1, 0.0), rel=1e-14) and ep.payoff == 0.0
    state = initial_state(ep)
    assert HedgeState(*state) == HedgeState(t=0, hedge=0.0, cash=v0, pnl=0.0, costs=0.0)
    # step 0: buy 0.5 at 100, cost 0.05; cash earns r, the shares pay q, then 100 -> 102
    cash = v0 - 50.0 - 0.05
    interest, dividend = cash * math.expm1(r * dt), 0.5 * 100.0 * math.expm1(q * dt)
    cash += interest + dividend
    pnl0 = 0.5 * 2.0 + interest + dividend - (v1 - v0) - 0.05
    state, (reward, step_pnl, cost) = transition(ep, state, 0.5)
    assert cost == pytest.approx(0.05, rel=1e-14) and step_pnl == pytest.approx(pnl0, rel=1e-12)
    assert reward == pytest.approx(-2.0 * (pnl0 * 100 / 100.0) ** 2, rel=1e-12)
    assert state[2] == pytest.approx(cash, rel=1e-14)
    assert hedging_error(ep, state) == pytest.approx(pnl0, abs=1e-12)  # the book's value is the P&L so far
    # step 1: sell 0.2 at 102, cost 0.0204; 102 -> 99, the call expires worthless
    cash = cash + 0.2 * 102.0 - 0.0204
    interest, dividend = cash * math.expm1(r * dt), 0.3 * 102.0 * math.expm1(q * dt)
    pnl1 = 0.3 * (99.0 - 102.0) + interest + dividend - (0.0 - v1) - 0.0204
    state, (reward, step_pnl, cost) = transition(ep, state, 0.3)
    assert step_pnl == pytest.approx(pnl1, rel=1e-12) and cost == pytest.approx(0.0204, rel=1e-14)
    final = cash + interest + dividend + 0.3 * 99.0 - 0.0
    assert hedging_error(ep, state) == pytest.approx(final, abs=1e-12)
    assert state[3] == pytest.approx(pnl0 + pnl1, abs=1e-12) and state[4] == pytest.approx(0.0704, abs=1e-15)
    obs = observe(ep, state)
    assert obs[HEDGE] == np.float32(0.3) and obs[DELTA] == 0.0 and obs[4] == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cost_bps": 5.0, "r": 0.04, "q": 0.01},
        {"option": "put", "source": "heston", "cost_bps": 2.0, "reward_scale": 3.0},
        {"source": "merton", "steps_per_day": 3, "r": -0.01},
        {"source": "real", "cost_bps": 1.0, "option": "put", "moneyness": 1.05},
    ],
)
def test_step_pnls_sum_to_the_final_hedging_error_and_rewards_are_their_squares(kwargs):
    env = FinDeltaHedgeEnv(**kwargs)
    scale = kwargs.get("reward_scale", 1.0)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        _, info = env.reset(seed=seed)
        s0 = info["spot"]
        pnls, costs, rewards = [], [], []
        done = False
        while not done:
            _, reward, done, _, info = env.step(rng.uniform(-1.0, 1.0, 1).astype(np.float32))
            pnls.append(info["step_pnl"])
            costs.append(info["cost"])
            rewards.append(reward)
            assert reward == pytest.approx(-scale * (info["step_pnl"] / s0 * 100) ** 2, rel=1e-12, abs=1e-300)
        assert info["hedging_error"] == pytest.approx(math.fsum(pnls), abs=1e-9)
        assert info["pnl"] == pytest.approx(info["hedging_error"], abs=1e-9)
        assert info["costs"] == pytest.approx(math.fsum(costs), abs=1e-12)
        assert (kwargs.get("cost_bps", 0) > 0) == (info["costs"] > 0)
        assert info["hedging_error_pct"] == pytest.approx(info["hedging_error"] * 100 / s0, rel=1e-12)


def _core_episode(kwargs, seed, catalog):
    """The episode ``FinDeltaHedgeEnv(**kwargs).reset(seed=seed)`` plays, built from the core and the data alone."""
    option, cost_bps, r, q = kwargs.get("option", "call"), kwargs.get("cost_bps", 0.0), kwargs.get("r", 0.0), \
        kwargs.get("q", 0.0)
    steps_per_day, maturity_days, source = kwargs.get("steps_per_day", 1), kwargs.get("maturity_days", 30), \
        kwargs.get("source", "gbm")
    dt, fee = 1.0 / (TRADING_DAYS_PER_YEAR * steps_per_day), cost_bps / 10_000.0
    rng = np.random.default_rng(seed)  # what gymnasium seeds env.np_random with
    if source == "real":
        sym, start = kwargs["symbol"], kwargs["start"]
        series = catalog.series(sym)
        row = int(np.searchsorted(series.dates, np.datetime64(start)))
        closes = series.close[row : row + maturity_days + 1]
        vol = realised_vol(series.close[row - VOL_WINDOW - 1 : row], days=VOL_WINDOW)
        dates = tuple(str(d) for d in series.dates[row : row + maturity_days + 1].astype("datetime64[D]"))
        return make_episode(closes, option=option, strike=float(closes[0]), dt=dt, r=r, q=q, pricing_vol=vol,
                            fee=fee, dates=dates)
    sigma, n = kwargs.get("sigma", 0.2), maturity_days * steps_per_day
    model = {"gbm": GBMParams(mu=0.0, sigma=sigma), "heston": HestonParams(mu=0.0, v0=sigma**2, theta=sigma**2),
             "merton": MertonParams(mu=0.0, sigma=sigma)}[source]
    vol = SyntheticSpec(model=source, params=model).nominal_daily_vol() * math.sqrt(TRADING_DAYS_PER_YEAR)
    path = simulate_path(source, model, 100.0, n, dt, rng)
    return make_episode(path, option=option, strike=100.0, dt=dt, r=r, q=q, pricing_vol=vol, fee=fee,
                        reward_scale=kwargs.get("reward_scale", 1.0))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"option": "put", "source": "heston", "steps_per_day": 2, "cost_bps": 3.0, "r": 0.03, "q": 0.01,
         "reward_scale": 2.0, "action_type": "discrete"},
        {"source": "merton", "maturity_days": 10, "cost_bps": 1.0},
        {"source": "real", "symbol": "MSFT", "start": "2025-03-03", "split": None, "cost_bps": 1.0},
    ],
)
def test_core_replays_the_env_step_by_step(kwargs, catalog):
    """A seeded episode played through the pure core alone (path, pricing, transition, observe) gives the env's
    observations, rewards and infos bit for bit: the env adds validation and bookkeeping, no dynamics."""
    seed = 11
    env_kwargs = {k: v for k, v in kwargs.items() if k != "start"}
    env = FinDeltaHedgeEnv(**env_kwargs)
    obs, info = env.reset(seed=seed, options={"start": kwargs["start"]} if "start" in kwargs else None)
    ep = _core_episode(kwargs, seed, catalog)
    assert (ep.spots, ep.values, ep.deltas, ep.pricing_vol) == (env.episode.spots, env.episode.values,
                                                                env.episode.deltas, env.episode.pricing_vol)
    state = initial_state(ep)
    assert obs.tobytes() == observe(ep, state).tobytes()
    assert (info["spot"], info["premium"], info["strike"], info["option_value"]) == (ep.spots[0], ep.premium,
                                                                                      ep.strike, ep.values[0])
    rng = np.random.default_rng(seed)
    bins = np.linspace(-1.5, 1.5, env.n_bins)
    steps = 0
    done = False
    while not done:
        if env.action_type == "discrete":
            action = int(rng.integers(env.n_bins))
            hedge = float(bins[action])
        else:
            action = rng.uniform(-1.0, 1.0, 1).astype(np.float32)
            hedge = hedge_ratio(float(action[0]))
        obs, reward, done, truncated, info = env.step(action)
        state, (core_reward, step_pnl, cost) = transition(ep, state, hedge)
        t = state[0]
        expected = {"step": t, "spot": ep.spots[t], "hedge": hedge, "option_value": ep.values[t], "pnl": state[3],
                    "step_pnl": step_pnl, "cost": cost, "costs": state[4]}
        if ep.dates is not None:
            expected["date"] = ep.dates[t]
        if t == ep.n_steps:
            error = hedging_error(ep, state)
            expected.update(hedging_error=error, hedging_error_pct=error * ep.pnl_scale, payoff=ep.payoff)
        assert obs.tobytes() == observe(ep, state).tobytes(), t
        assert reward == core_reward and info == expected and done == (t == ep.n_steps) and not truncated
        steps += 1
    assert steps == ep.n_steps == env.n_steps and HedgeState(*state) == env.state


def test_core_and_protocol_import_no_shell():
    """The core is pure (no gymnasium, no duckdb, no protocol or env); the protocol reads the core only."""
    import ast
    from pathlib import Path

    import finenvs.tasks.deltahedge.core as core_module
    import finenvs.tasks.deltahedge.protocol as protocol_module

    def imported(module):
        tree = ast.parse(Path(module.__file__).read_text())
        return {alias.name.split(".")[0] if isinstance(node, ast.Import) else node.module
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}

    core_imports, protocol_imports = imported(core_module), imported(protocol_module)
    assert "numpy" in core_imports and "finenvs.pricing" in core_imports
    assert not {"gymnasium", "duckdb", "finenvs.tasks.deltahedge.protocol",
                "finenvs.tasks.deltahedge.env"} & core_imports
    assert "finenvs.tasks.deltahedge.core" in protocol_imports
    assert not {"gymnasium", "finenvs.tasks.deltahedge.env"} & protocol_imports


def test_costs_lower_the_error_by_exactly_what_was_paid():
    """Same paths, same delta hedges: with r = 0 the error with costs is the free error minus the costs."""
    free = FinDeltaHedgeEnv(steps_per_day=4)
    costly = FinDeltaHedgeEnv(steps_per_day=4, cost_bps=10.0)
    policy = BSDeltaHedge.from_env(free)
    for seed in range(5):
        info_a, info_b = _final_info(free, seed, policy), _final_info(costly, seed, policy)
        assert info_b["costs"] > 0 and info_a["costs"] == 0.0
        assert info_b["hedging_error"] == pytest.approx(info_a["hedging_error"] - info_b["costs"], abs=1e-10)


# ---------------------------------------------------------------------------- hedging properties
def test_fine_zero_cost_delta_hedge_nearly_replicates_the_option():
    env = FinDeltaHedgeEnv(steps_per_day=64)
    policy = BSDeltaHedge.from_env(env)
    errors = run_hedge_episodes(env, policy, 20, seed=0)
    _, info = env.reset(seed=0)
    premium = info["premium"]
    rms = float(np.sqrt(np.mean(errors**2)))
    assert rms < 0.04 * premium  # ~0.013 x premium measured; no hedge is ~1.5 x premium
    assert abs(errors.mean()) < 0.02 * premium


def test_delta_hedge_error_falls_with_rebalancing_frequency_on_gbm():
    """MSE of the final error ~ 1/(steps): each 4x more steps should cut it ~4x (asserted > 2.5x)."""
    mse_none, _ = _mse(FinDeltaHedgeEnv(), NoHedge)
    mses = {spd: _mse(FinDeltaHedgeEnv(steps_per_day=spd), BSDeltaHedge)[0] for spd in (1, 4, 16)}
    assert mses[1] < 0.1 * mse_none  # ~0.012 x measured
    assert mses[1] > 2.5 * mses[4] > 2.5 * 2.5 * mses[16]
    assert mses[16] < 0.002 * mse_none


def test_costs_penalise_frequent_rebalancing():
    """At 10 bp the delta hedge's turnover costs outgrow the discretisation error: 16 steps/day loses to 4."""
    free = {spd: _mse(FinDeltaHedgeEnv(steps_per_day=spd), BSDeltaHedge, n=100) for spd in (4, 16)}
    paid = {
        spd: _mse(FinDeltaHedgeEnv(steps_per_day=spd, cost_bps=10.0), BSDeltaHedge, n=100) for spd in (4, 16)
    }
    assert free[16][0] < free[4][0]
    assert paid[16][0] > paid[4][0]
    for spd in (4, 16):
        assert paid[spd][0] > free[spd][0] and paid[spd][1].mean() < free[spd][1].mean() - 0.1
    # costs grow with frequency (turnover ~ sqrt(steps)): the mean error drops further at 16/day
    assert paid[16][1].mean() - free[16][1].mean() < 1.5 * (paid[4][1].mean() - free[4][1].mean())


def test_put_is_hedged_short_and_put_call_parity_holds_for_the_hedged_books():
    """With r = q = 0 delta-hedged calls and puts on one path end with the same error (C - P is a forward)."""
    call = FinDeltaHedgeEnv(option="call", moneyness=1.05)
    put = FinDeltaHedgeEnv(option="put", moneyness=1.05)
    obs, info_c = call.reset(seed=1)
    obs_p, info_p = put.reset(seed=1)
    assert info_c["premium"] - info_p["premium"] == pytest.approx(100.0 - 105.0, abs=1e-10)
    assert obs[DELTA] - obs_p[DELTA] == pytest.approx(1.0, abs=1e-6) and obs_p[DELTA] < 0
    errors_c = run_hedge_episodes(call, BSDeltaHedge.from_env(call), 10, seed=0)
    errors_p = run_hedge_episodes(put, BSDeltaHedge.from_env(put), 10, seed=0)
    np.testing.assert_allclose(errors_c, errors_p, atol=1e-4)
    mse_put, _ = _mse(put, BSDeltaHedge, n=100)
    mse_none, _ = _mse(put, NoHedge, n=100)
    assert mse_put < 0.1 * mse_none


@pytest.mark.parametrize(
    ("source", "model_params", "vol"),
    [
        ("heston", None, 0.2),
        ("heston", {"theta": 0.09, "v0": 0.04}, 0.3),
        ("merton", None, math.sqrt(0.04 + 1.0 * (0.05**2 + 0.08**2))),
        ("merton", {"jump_intensity": 3.0}, math.sqrt(0.04 + 3.0 * (0.05**2 + 0.08**2))),
    ],
)
def test_heston_and_merton_run_at_their_nominal_vol(source, model_params, vol):
    env = FinDeltaHedgeEnv(source=source, model_params=model_params)
    _, info = env.reset(seed=0)
    assert info["pricing_vol"] == pytest.approx(vol, rel=1e-12) and env.pricing_vol == info["pricing_vol"]
    assert info["premium"] == pytest.approx(bsm_price(100.0, 100.0, T30, 0.0, 0.0, vol), rel=1e-12)
    mse_delta, errors = _mse(env, BSDeltaHedge, n=60)
    mse_none, _ = _mse(env, NoHedge, n=60)
    assert np.all(np.isfinite(errors)) and mse_delta < 0.3 * mse_none


def test_synthetic_paths_have_the_model_volatility():
    env = FinDeltaHedgeEnv(sigma=0.3, steps_per_day=4, mu=0.5)
    logs = []
    for seed in range(100):
        env.reset(seed=seed)
        logs.append(np.diff(np.log(env.episode.spots)))
    rets = np.concatenate(logs)
    assert np.std(rets, ddof=1) * math.sqrt(4 * TRADING_DAYS_PER_YEAR) == pytest.approx(0.3, rel=0.02)
    assert rets.mean() * 4 * TRADING_DAYS_PER_YEAR == pytest.approx(0.5 - 0.045, abs=0.25)


# ---------------------------------------------------------------------------- determinism and pickle
@pytest.mark.parametrize(
    "kwargs", [{}, {"action_type": "discrete", "source": "heston"}, {"source": "merton"}, {"source": "real"}]
)
def test_same_seed_same_rollout_different_seed_different(kwargs):
    a = _trajectory(FinDeltaHedgeEnv(**kwargs), 3)
    b = _trajectory(FinDeltaHedgeEnv(**kwargs), 3)
    c = _trajectory(FinDeltaHedgeEnv(**kwargs), 4)
    assert a == b and a != c


def test_unseeded_resets_continue_the_seeded_stream():
    env, other = FinDeltaHedgeEnv(), FinDeltaHedgeEnv()
    env.reset(seed=9)
    other.reset(seed=9)
    seeded = env.episode.spots
    env.reset()
    other.reset()
    assert env.episode.spots == other.episode.spots and env.episode.spots != seeded


@pytest.mark.parametrize(
    "kwargs", [{"cost_bps": 3.0, "render_mode": "ansi"}, {"source": "real", "action_type": "discrete"}]
)
@pytest.mark.parametrize("clone", [lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy])
def test_pickle_and_deepcopy_mid_episode_continue_identically(kwargs, clone):
    env = FinDeltaHedgeEnv(**kwargs)
    env.reset(seed=2)
    policy = RandomHedge.from_env(env, seed=0)
    for _ in range(7):
        obs, *_ = env.step(policy(None, {}))
    twin = clone(env)
    for _ in range(10):
        action = policy(None, {})
        o1, r1, t1, _, i1 = env.step(action)
        o2, r2, t2, _, i2 = twin.step(action)
        assert o1.tobytes() == o2.tobytes() and r1 == r2 and t1 == t2 and i1 == i2
    if env.render_mode:
        assert env.render() == twin.render()
    # and the RNG stream continues identically after the next reset
    assert env.reset()[0].tobytes() == twin.reset()[0].tobytes()


def test_observation_is_a_fresh_array():
    env = FinDeltaHedgeEnv()
    obs, _ = env.reset(seed=0)
    obs[:] = 99.0
    obs2, *_ = env.step(np.zeros(1, np.float32))
    assert env.observation_space.contains(obs2)


# ---------------------------------------------------------------------------- real paths and the date lock
@pytest.fixture(scope="module")
def aapl_frame_dh(catalog):
    return catalog.series("AAPL").to_frame()


def test_real_window_prices_at_the_pre_window_realised_vol(catalog):
    env = FinDeltaHedgeEnv(source="real", symbol="MSFT", split=None)
    _, info = env.reset(options={"start": "2025-03-01"})  # a Saturday: the window starts Monday 2025-03-03
    series = catalog.series("MSFT")
    row = int(np.searchsorted(series.dates, np.datetime64("2025-03-03")))
    assert (info["symbol"], info["start"], info["date"]) == ("MSFT", "2025-03-03", "2025-03-03")
    assert info["expiry"] == str(series.dates[row + 30])
    assert info["spot"] == series.close[row] and info["strike"] == series.close[row]
    rets = np.diff(np.log(series.close[row - VOL_WINDOW - 1 : row]))
    assert rets.size == VOL_WINDOW
    assert info["pricing_vol"] == pytest.approx(np.std(rets, ddof=1) * math.sqrt(252), rel=1e-12)
    assert env.episode.spots == tuple(series.close[row : row + 31].tolist())
    assert info["premium"] == pytest.approx(
        bsm_price(series.close[row], series.close[row], T30, 0.0, 0.0, info["pricing_vol"]), rel=1e-12
    )


def test_real_windows_are_drawn_inside_the_split():
    env = FinDeltaHedgeEnv(source="real", split="eval")
    symbols, starts = set(), set()
    for seed in range(40):
        _, info = env.reset(seed=seed)
        assert "2026-01-02" <= info["start"] and info["expiry"] <= "2026-03-31"
        symbols.add(info["symbol"])
        starts.add(info["start"])
    assert len(symbols) >= 5 and len(starts) >= 10
    assert len(env.universe) == 10


def test_real_reset_options_and_window_errors():
    env = FinDeltaHedgeEnv(source="real", symbol="AAPL")
    with pytest.raises(WindowError, match="Valid starts"):
        env.reset(options={"start": "2024-02-01"})  # fewer than 61 closes of history
    with pytest.raises(WindowError, match="Valid starts"):
        env.reset(options={"start": "2026-09-01"})  # fewer than 30 closes after it
    with pytest.raises(WindowError, match="not a date"):
        env.reset(options={"start": "soon"})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"end": "2025-01-01"})
    with pytest.raises(KeyError, match="ZZZZ"):
        env.reset(options={"symbol": "ZZZZ"})
    with pytest.raises(KeyError, match="ZZZZ"):
        FinDeltaHedgeEnv(source="real", symbol="ZZZZ")
    with pytest.raises(ValueError, match="source='real' only"):
        FinDeltaHedgeEnv().reset(options={"start": "2025-01-02"})
    with pytest.raises(ValueError, match="data= is for source='real'"):
        FinDeltaHedgeEnv(data="prices.csv")


@pytest.mark.parametrize("cut_offset", [0, 1, 14, 29])
def test_counterfactual_future_invariance(aapl_frame_dh, cut_offset):
    """Replace every bar after step t's date: observations, rewards and info up to step t are unchanged."""
    kwargs = {"source": "real", "symbol": "AAPL", "split": None, "cost_bps": 2.0}
    options = {"start": "2025-06-02"}
    base = FinDeltaHedgeEnv(data=aapl_frame_dh, **kwargs)
    base.reset(options=options)
    cut = base.episode.dates[cut_offset]
    perturbed = perturb_after(aapl_frame_dh, cut, np.random.default_rng(cut_offset))
    other = FinDeltaHedgeEnv(data=perturbed, **kwargs)

    def run(env):
        policy = BSDeltaHedge.from_env(env)
        obs, info = env.reset(seed=0, options=options)
        trace = [(info["date"], obs.tobytes(), 0.0, repr(sorted(info.items())))]
        done = False
        while not done:
            obs, reward, done, _, info = env.step(policy(obs, info))
            trace.append((info["date"], obs.tobytes(), reward, repr(sorted(info.items()))))
        return trace

    a, b = run(base), run(other)
    upto = [k for k, row in enumerate(a) if row[0] <= cut]
    assert len(upto) == cut_offset + 1
    for k in upto:
        assert a[k] == b[k], f"step {k} ({a[k][0]}) changed when only bars after {cut} changed"
    assert a[cut_offset + 1] != b[cut_offset + 1]  # the change reaches the next step: the test has teeth


def test_pricing_vol_reads_the_61_closes_before_the_window_and_nothing_else(aapl_frame_dh):
    kwargs = {"source": "real", "symbol": "AAPL", "split": None}
    options = {"start": "2025-06-02"}
    _, info = FinDeltaHedgeEnv(data=aapl_frame_dh, **kwargs).reset(options=options)
    dates = aapl_frame_dh["date"].astype(str).str[:10].tolist()
    row = dates.index("2025-06-02")
    # every close from the window's first day on changed: same vol, different spot
    window_changed = perturb_after(aapl_frame_dh, dates[row - 1], np.random.default_rng(0))
    _, moved = FinDeltaHedgeEnv(data=window_changed, **kwargs).reset(options=options)
    assert moved["pricing_vol"] == info["pricing_vol"] and moved["spot"] != info["spot"]
    # the earliest close the vol reads, and the last one before the window, each move it
    for k in (row - VOL_WINDOW - 1, row - 1):
        frame = aapl_frame_dh.copy()
        frame.loc[k, ["open", "high", "low", "close"]] *= 1.05
        _, changed = FinDeltaHedgeEnv(data=frame, **kwargs).reset(options=options)
        assert changed["pricing_vol"] != info["pricing_vol"] and changed["spot"] == info["spot"]
    # a close before those is not read
    frame = aapl_frame_dh.copy()
    frame.loc[row - VOL_WINDOW - 2, ["open", "high", "low", "close"]] *= 1.05
    _, same = FinDeltaHedgeEnv(data=frame, **kwargs).reset(options=options)
    assert same["pricing_vol"] == info["pricing_vol"]


# ---------------------------------------------------------------------------- render and baselines
def test_render_text_and_chart():
    env = FinDeltaHedgeEnv(render_mode="ansi", maturity_days=5)
    with pytest.raises(gym.error.ResetNeeded):
        env.render()
    env.reset(seed=0)
    env.step(hedge_action(0.5))
    text = env.render()
    assert "step 1/5" in text and "hedge +0.500" in text and "BS delta" in text
    real = FinDeltaHedgeEnv(source="real", symbol="SPY", render_mode="rgb_array")
    _, info = real.reset(seed=0)
    frame0 = real.render()
    for _ in range(3):
        real.step(hedge_action(0.4))
    frame = real.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.shape == frame0.shape
    assert not np.array_equal(frame, frame0)
    silent = FinDeltaHedgeEnv()
    silent.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert silent.render() is None


def test_baseline_table_and_seeded_random_policy():
    assert set(DELTAHEDGE_POLICIES) == {"bs_delta", "no_hedge", "random"}
    env = FinDeltaHedgeEnv()
    for name, (cls, description) in DELTAHEDGE_POLICIES.items():
        policy = cls.from_env(env, 0)
        assert policy.name == name and description and not policy.oracle
    a = run_hedge_episodes(env, RandomHedge.from_env(env, 5), 3, seed=1)
    b = run_hedge_episodes(env, RandomHedge.from_env(env, 7), 3, seed=1)
    np.testing.assert_array_equal(a, b)  # run_hedge_episodes reseeds the policy per episode
    denv = FinDeltaHedgeEnv(action_type="discrete", n_bins=4)
    random_bins = RandomHedge.from_env(denv, 0)
    actions = {random_bins(None, {}) for _ in range(50)}
    assert actions <= {0, 1, 2, 3} and len(actions) == 4
    assert NoHedge.from_env(denv)(None, {}) == 1  # bins -1.5, -0.5, 0.5, 1.5: nearest 0, the lower on a tie
    mse_random = float(np.mean(run_hedge_episodes(env, RandomHedge.from_env(env), 50, seed=0) ** 2))
    mse_delta = float(np.mean(run_hedge_episodes(env, BSDeltaHedge.from_env(env), 50, seed=0) ** 2))
    assert mse_delta < 0.05 * mse_random
    with pytest.raises(ValueError, match="FinDeltaHedge-v0 env"):
        BSDeltaHedge.from_env(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="n=0"):
        run_hedge_episodes(env, NoHedge.from_env(env), 0)


# ---------------------------------------------------------------------------- the text interface of the base env
def test_text_interface_methods_need_a_reset_and_an_invalid_reply_keeps_the_hedge():
    env = FinDeltaHedgeEnv(cost_bps=5.0)
    for method in (env.text_state, env.as_of_view, lambda: env.text_action(env.text_protocol.invalid("x"))):
        with pytest.raises(gym.error.ResetNeeded):
            method()
    env.reset(seed=0)
    assert env.as_of_view().step == 0 and env.as_of_view().date is None
    valid = env.text_protocol.parse_text("Hedge: 0.25")
    assert env.text_action(valid) is valid and env.action_space.contains(valid.action)
    env.step(valid.action)
    kept = env.text_action(env.text_protocol.parse_text("Hedge: 7"))
    assert kept.name == "KEEP +0.2500" and "outside" in kept.invalid and kept.via == "default"
    _, _, _, _, info = env.step(kept.action)
    assert info["hedge"] == 0.25 and info["cost"] == 0.0
    assert env.as_of_view().step == 2 and env.as_of_view().counter is env.as_of_view().counter
    discrete = FinDeltaHedgeEnv(action_type="discrete", n_bins=31)
    discrete.reset(seed=0)
    default = discrete.text_action(discrete.text_protocol.invalid("x"))
    assert discrete.hedge_bins[default.action] == 0.0  # the bin of the hedge held (none at the start)
    assert discrete.text_protocol.commit_schema()["properties"]["hedge"]["maximum"] == 1.5
