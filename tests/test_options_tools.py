"""The FinOptions-v0 pricing and risk tools against the engine, their date lock and hostile input, and the text
envs' two tool modes (``tools="fabpp"``: the full toolset; ``tools="none"``: closed book, the commit tool only)."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import finenvs  # noqa: F401  (registers the envs)
from finenvs.data.asof import AsOfView
from finenvs.evaluation.envpool import make_text_env
from finenvs.evaluation.replay import replay_episode
from finenvs.evaluation.session import EpisodeSession
from finenvs.pricing import bsm_greeks, bsm_price, implied_vol, parity_gap
from finenvs.tasks import EpisodeSpec, task_of
from finenvs.tasks.options.core import engine_numbers, parse_leg
from finenvs.tools import COMMIT_TOOL, TOOLSETS, ToolBox
from finenvs.tools.registry import MAX_ERROR_CHARS, MIN_MAX_CHARS
from finenvs.tools.risk import MAX_SCENARIOS, RISK_TOOLS
from finenvs.wrappers.text import TOOL_MODES

NEW_OPTIONS_TOOLS = ("bs_price_greeks", "implied_vol", "iv_surface", "portfolio_greeks", "value_at_risk",
                     "stress_test")


def _box(seed: int = 3, max_chars: int = 8_000, **kwargs: Any) -> ToolBox:
    env = gym.make("FinOptions-v0", split="eval", action_mode="text", **kwargs)
    env.reset(seed=seed)
    return ToolBox(env, max_chars=max_chars)


def _ok(box: ToolBox, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = box.call(name, args)
    assert result.ok, result.error
    assert len(result.text()) <= box.max_chars
    return result.data


def _atm(task: dict[str, Any], kind: str = "call", expiry_index: int = 0) -> dict[str, Any]:
    expiry = sorted({q["expiry"] for q in task["quotes"]})[expiry_index]
    quotes = [q for q in task["quotes"] if q["type"] == kind and q["expiry"] == expiry]
    return min(quotes, key=lambda q: abs(q["strike"] - task["market"]["spot"]))


def _leg(quote: dict[str, Any], side: str = "buy", quantity: float = 1.0) -> dict[str, Any]:
    return {"side": side, "type": quote["type"], "strike": quote["strike"], "expiry": quote["expiry"],
            "quantity": quantity}


@pytest.fixture(scope="module")
def box() -> ToolBox:
    return _box()


@pytest.fixture(scope="module")
def task(box: ToolBox) -> dict[str, Any]:
    return box.env.task


# ---------------------------------------------------------------------------- pricing tools vs the engine
@pytest.mark.parametrize("kind", ["call", "put"])
@pytest.mark.parametrize(("spot", "strike", "days", "rate", "q", "vol"),
                         [(100.0, 100.0, 30, 0.05, 0.0, 0.2), (250.0, 180.0, 400, 0.01, 0.03, 0.65),
                          (50.0, 75.0, 3, -0.005, 0.0, 0.05)])
def test_bs_price_greeks_is_the_engine(box, kind, spot, strike, days, rate, q, vol):
    data = _ok(box, "bs_price_greeks", {"type": kind, "spot": spot, "strike": strike, "days": days, "rate": rate,
                                        "dividend_yield": q, "vol": vol})
    truth = bsm_greeks(spot, strike, days / 365.0, rate, q, vol, kind)
    for name in ("price", "delta", "gamma", "vega", "theta", "rho"):
        assert data[name] == truth[name], name
    assert "vega per vol point" in data["units"] and "theta per calendar day" in data["units"]


def test_bs_price_greeks_defaults_to_the_task_market_and_prices_the_quotes(box, task):
    m, quote = task["market"], _atm(task)
    data = _ok(box, "bs_price_greeks", {"type": "call", "strike": quote["strike"], "days": quote["days"],
                                        "vol": quote["iv"]})
    assert data["inputs"]["spot"] == m["spot"] and data["inputs"]["rate"] == m["rate"]
    truth = bsm_greeks(m["spot"], quote["strike"], quote["days"] / 365.0, m["rate"], m["dividend_yield"],
                       quote["iv"], "call")
    assert data["price"] == truth["price"] and data["delta"] == truth["delta"]
    assert data["price"] == pytest.approx(quote["premium"], abs=0.01)  # the generated chain's premium, rounded


def test_put_call_parity_through_the_tool(box):
    args = {"spot": 123.4, "strike": 120.0, "days": 90, "rate": 0.04, "dividend_yield": 0.015, "vol": 0.33}
    call = _ok(box, "bs_price_greeks", {"type": "call", **args})
    put = _ok(box, "bs_price_greeks", {"type": "put", **args})
    gap = parity_gap(call["price"], put["price"], 123.4, 120.0, 90 / 365.0, 0.04, 0.015)
    assert abs(gap) < 1e-10
    assert call["delta"] - put["delta"] == pytest.approx(math.exp(-0.015 * 90 / 365.0), abs=1e-12)
    assert call["gamma"] == pytest.approx(put["gamma"]) and call["vega"] == pytest.approx(put["vega"])


@pytest.mark.parametrize("kind", ["call", "put"])
@pytest.mark.parametrize("vol", [0.08, 0.25, 0.9])
def test_implied_vol_round_trip(box, kind, vol):
    market = {"spot": 101.0, "strike": 95.0, "days": 45, "rate": 0.03, "dividend_yield": 0.01}
    price = _ok(box, "bs_price_greeks", {"type": kind, "vol": vol, **market})["price"]
    data = _ok(box, "implied_vol", {"type": kind, "premium": price, **market})
    assert data["iv"] == pytest.approx(vol, abs=1e-9)
    assert data["iv"] == implied_vol(price, 101.0, 95.0, 45 / 365.0, 0.03, 0.01, kind)
    assert data["repriced"] == pytest.approx(price, abs=1e-9)
    back = _ok(box, "bs_price_greeks", {"type": kind, "vol": data["iv"], **market})["price"]
    assert back == pytest.approx(price, abs=1e-9)


@pytest.mark.parametrize("premium", [0.0, 1e-9, 200.0, 5e8])
def test_implied_vol_outside_no_arbitrage_bounds_is_a_clear_error(box, premium):
    result = box.call("implied_vol", {"type": "call", "premium": premium, "spot": 100.0, "strike": 50.0, "days": 30,
                                      "rate": 0.02, "dividend_yield": 0.0})
    assert not result.ok and "no-arbitrage bounds" in result.error


def test_iv_surface_is_the_quotes_and_pages_through_all_of_them(task):
    small = _box(max_chars=MIN_MAX_CHARS)
    for kind in ("call", "put"):
        rows, offset, pages = [], 0, 0
        while offset is not None:
            data = _ok(small, "iv_surface", {"type": kind, "offset": offset})
            rows += data["rows"]
            offset, pages = data["next_offset"], pages + 1
            assert pages < 100
        assert pages > 1  # the 1,000-character cap pages the grid
        quotes = [q for q in task["quotes"] if q["type"] == kind]
        expiries = data["expiries"]
        assert expiries == sorted({q["expiry"] for q in quotes})
        assert len(rows) == len({q["strike"] for q in quotes}) == data["total"]
        grid = {row[0]: row[1:] for row in rows}
        for q in quotes:
            assert grid[q["strike"]][expiries.index(q["expiry"])] == q["iv"]


def test_iv_surface_solves_vols_a_task_does_not_quote(box):
    task = json.loads(json.dumps(box.env.task))
    m = task["market"]
    for q in task["quotes"]:
        q["premium"] = float(bsm_price(m["spot"], q["strike"], q["days"] / 365.0, m["rate"], m["dividend_yield"],
                                       q["iv"], q["type"]))
        q["iv_true"], q["iv"] = q["iv"], None
    env = gym.make("FinOptions-v0", action_mode="text")
    env.reset(seed=0, options={"task": task})
    data = _ok(ToolBox(env, max_chars=200_000), "iv_surface", {"type": "put"})
    grid = {row[0]: row[1:] for row in data["rows"]}
    assert data["solved_from_premium"] == sum(q["type"] == "put" for q in task["quotes"])
    for q in (q for q in task["quotes"] if q["type"] == "put"):
        assert grid[q["strike"]][data["expiries"].index(q["expiry"])] == pytest.approx(q["iv_true"], abs=1e-8)


# ---------------------------------------------------------------------------- risk tools vs the engine
def test_portfolio_greeks_sum_legs_and_equal_the_engine(box, task):
    m = task["market"]
    call, put = _atm(task, "call"), _atm(task, "put", 1)
    legs = [_leg(call), _leg(put, "sell", 2), {"side": "sell", "type": "stock", "quantity": 30}]
    data = _ok(box, "portfolio_greeks", {"legs": legs, "contracts": 3})
    engine = engine_numbers(task, [parse_leg(leg) for leg in legs], 3.0)
    by_hand = dict.fromkeys(("delta", "gamma", "vega", "theta", "rho"), 0.0)
    for leg, sign, qty in ((call, 1, 1), (put, -1, 2)):
        g = bsm_greeks(m["spot"], leg["strike"], leg["days"] / 365.0, m["rate"], m["dividend_yield"], leg["iv"],
                       leg["type"])
        for name in by_hand:
            by_hand[name] += sign * qty * 3 * m["multiplier"] * g[name]
    by_hand["delta"] -= 30 * 3
    for name in by_hand:
        assert data["total"][name] == pytest.approx(engine[name], rel=1e-12, abs=1e-9)
        assert data["total"][name] == pytest.approx(by_hand[name], rel=1e-12, abs=1e-9)
        assert sum(row[name] for row in data["legs"]) == pytest.approx(data["total"][name], rel=1e-12, abs=1e-9)
    assert data["legs"][2]["delta"] == -90.0 and data["delta_dollars"] == pytest.approx(engine["delta"] * m["spot"])


def test_parametric_var_is_the_closed_form_and_the_scorers_var_95(box, task):
    from scipy.stats import norm

    stock = [{"side": "buy", "type": "stock", "quantity": 40}]
    daily = task["daily_vol"]
    for confidence, horizon in ((0.95, 1), (0.99, 10), (0.9, 5)):
        data = _ok(box, "value_at_risk", {"legs": stock, "contracts": 2, "confidence": confidence,
                                          "horizon_days": horizon})
        closed = norm.ppf(confidence) * daily * math.sqrt(horizon) * 80 * task["market"]["spot"]
        assert data["var"] == pytest.approx(closed, rel=1e-12)
        es = norm.pdf(norm.ppf(confidence)) / (1 - confidence) * daily * math.sqrt(horizon) * 80 * task["market"]["spot"]
        assert data["expected_shortfall"] == pytest.approx(es, rel=1e-9)
    legs = [_leg(_atm(task)), _leg(_atm(task, "put"), "sell")]
    data = _ok(box, "value_at_risk", {"legs": legs, "contracts": 3})
    assert data["var"] == pytest.approx(engine_numbers(task, [parse_leg(x) for x in legs], 3.0)["var_95"], rel=1e-12)


def test_monte_carlo_var_is_seeded_and_near_parametric_for_stock(box):
    stock = {"legs": [{"side": "buy", "type": "stock", "quantity": 100}], "horizon_days": 1}
    a = _ok(box, "value_at_risk", {**stock, "method": "monte_carlo", "paths": 100_000, "seed": 7})
    b = _ok(box, "value_at_risk", {**stock, "method": "monte_carlo", "paths": 100_000, "seed": 7})
    c = _ok(box, "value_at_risk", {**stock, "method": "monte_carlo", "paths": 100_000, "seed": 8})
    parametric = _ok(box, "value_at_risk", stock)
    assert a == b and a["var"] != c["var"] and a["seed"] == 7 and a["paths"] == 100_000
    assert a["var"] == pytest.approx(parametric["var"], rel=0.03)
    assert a["expected_shortfall"] == pytest.approx(parametric["expected_shortfall"], rel=0.03)
    default = _ok(box, "value_at_risk", {**stock, "method": "monte_carlo"})
    assert default["seed"] == 0 and default == _ok(box, "value_at_risk", {**stock, "method": "monte_carlo", "seed": 0})


def test_monte_carlo_revalues_with_the_engine(box, task):
    """A long call's simulated P&L is bsm_price at the simulated spots, horizon later, minus its value now."""
    quote, m = _atm(task), task["market"]
    data = _ok(box, "value_at_risk", {"legs": [_leg(quote)], "method": "monte_carlo", "paths": 1000, "seed": 3,
                                      "horizon_days": 5})
    rng = np.random.default_rng(3)
    sd = task["daily_vol"] * math.sqrt(5)
    moves = (m["rate"] - m["dividend_yield"]) * 5 / 252 - 0.5 * sd**2 + sd * rng.standard_normal(1000)
    args = (quote["strike"], m["rate"], m["dividend_yield"], quote["iv"], "call")
    now = bsm_price(m["spot"], quote["strike"], quote["days"] / 365.0, *args[1:])
    pnl = m["multiplier"] * (bsm_price(m["spot"] * np.exp(moves), quote["strike"], quote["days"] / 365.0 - 5 / 252,
                                       *args[1:]) - now)
    assert data["var"] == pytest.approx(-np.quantile(pnl, 0.05), rel=1e-10)
    assert data["position_value"] == pytest.approx(m["multiplier"] * now, rel=1e-12)


class _ShiftedCatalog:
    """The shipped catalog with every bar dated after ``cut`` (or, with ``before``, on or before it) scaled."""

    def __init__(self, catalog: Any, cut: str, factor: float, *, before: bool = False) -> None:
        self.catalog, self.cut, self.factor, self.before = catalog, np.datetime64(cut, "D"), factor, before

    def _series(self, symbol: str, dataset: str) -> Any:
        s = self.catalog.series(symbol, dataset)
        hit = (s.dates <= self.cut) if self.before else (s.dates > self.cut)
        if self.before:
            hit &= s.dates >= self.cut - np.timedelta64(30, "D")
        scale = np.where(hit, self.factor * (1.0 + 0.1 * np.sin(np.arange(len(s)))), 1.0)
        return dataclasses.replace(s, open=s.open * scale, high=s.high * scale, low=s.low * scale,
                                   close=s.close * scale)

    def as_of(self, date: Any, counter: Any = None, dataset: str = "core") -> AsOfView:
        return AsOfView(lambda sym: self._series(sym, dataset), date, counter=counter)


def test_historical_var_reads_only_returns_up_to_the_task_date(catalog):
    box = _box(seed=3)
    env, task = box.env, box.env.task
    legs = [_leg(_atm(task)), {"side": "sell", "type": "stock", "quantity": 50}]
    args = {"legs": legs, "method": "historical", "horizon_days": 2, "lookback_days": 120}
    before = _ok(box, "value_at_risk", args)
    assert before["history"]["to"] <= task["market"]["as_of"] and before["scenarios"] == 119
    later = catalog.series(task["market"]["symbol"]).dates
    assert later[-1] > np.datetime64(task["market"]["as_of"])  # there is a future to perturb
    env._catalog = _ShiftedCatalog(catalog, task["market"]["as_of"], 3.0)
    assert _ok(box, "value_at_risk", args) == before  # every price after the task date changed: same answer
    env._catalog = _ShiftedCatalog(catalog, task["market"]["as_of"], 3.0, before=True)
    assert _ok(box, "value_at_risk", args)["var"] != before["var"]  # the tool does read the past it may see
    env._catalog = catalog


def test_historical_var_is_refused_without_a_price_history():
    box = _box(source="synthetic")
    result = box.call("value_at_risk", {"legs": [{"side": "buy", "type": "stock"}], "method": "historical"})
    assert not result.ok and "parametric or monte_carlo" in result.error


@pytest.mark.parametrize("kind", ["call", "put"])
def test_stress_test_is_the_engine_and_monotone(box, task, kind):
    quote, m = _atm(task, kind), task["market"]
    shocks = [-0.3, -0.1, -0.02, 0.0, 0.02, 0.1, 0.3]
    data = _ok(box, "stress_test", {"legs": [_leg(quote)], "spot_shocks": shocks, "vol_shocks": [-5, 0, 5],
                                    "days_passed": [0, 10, 30]})
    assert data["scenarios"] == len(shocks) * 9
    pnl = {(r[0], r[1], r[2]): r[4] for r in data["rows"]}
    assert pnl[(0.0, 0.0, 0)] == 0.0
    spot_path = [pnl[(s, 0.0, 0)] for s in shocks]
    assert np.all(np.diff(spot_path) > 0) if kind == "call" else np.all(np.diff(spot_path) < 0)
    for s in shocks:
        assert pnl[(s, -5.0, 0)] < pnl[(s, 0.0, 0)] < pnl[(s, 5.0, 0)]  # long vega
    assert pnl[(0.0, 0.0, 0)] > pnl[(0.0, 0.0, 10)] > pnl[(0.0, 0.0, 30)]  # an at-the-money option decays
    value = lambda s, days, vol: m["multiplier"] * bsm_price(  # noqa: E731
        s, quote["strike"], (quote["days"] - days) / 365.0, m["rate"], m["dividend_yield"], vol, kind)
    expected = value(m["spot"] * 1.1, 10, quote["iv"] + 0.05) - value(m["spot"], 0, quote["iv"])
    assert pnl[(0.1, 5.0, 10)] == pytest.approx(expected, rel=1e-12)
    short = _ok(box, "stress_test", {"legs": [_leg(quote, "sell")], "spot_shocks": shocks})
    assert [r[4] for r in short["rows"]] == pytest.approx([-x for x in spot_path])


def test_stress_test_past_expiry_is_the_payoff_and_vol_is_floored(box, task):
    quote, m = _atm(task), task["market"]
    data = _ok(box, "stress_test", {"legs": [_leg(quote)], "spot_shocks": [0.2], "vol_shocks": [-100],
                                    "days_passed": [quote["days"] + 5]})
    now = bsm_price(m["spot"], quote["strike"], quote["days"] / 365.0, m["rate"], m["dividend_yield"], quote["iv"])
    payoff = max(m["spot"] * 1.2 - quote["strike"], 0.0)
    assert data["rows"][0][4] == pytest.approx(m["multiplier"] * (payoff - now), rel=1e-12)
    assert data["vol_floored"] is True


# ---------------------------------------------------------------------------- hostile input, the size cap
_LEG_OK = {"side": "buy", "type": "stock"}
HOSTILE = [
    ("bs_price_greeks", {"type": "call", "strike": float("nan"), "days": 30, "vol": 0.2}),
    ("bs_price_greeks", {"type": "call", "strike": 100, "days": 30, "vol": -0.2}),
    ("bs_price_greeks", {"type": "call", "strike": 1e308, "days": 30, "vol": 0.2}),
    ("bs_price_greeks", {"type": "call", "strike": 100, "days": 0, "vol": 0.2}),
    ("bs_price_greeks", {"type": "call", "strike": 100, "days": 30, "vol": 0}),
    ("bs_price_greeks", {"type": "call", "strike": 100, "days": 30, "vol": float("inf")}),
    ("bs_price_greeks", {"type": "straddle" * 1000, "strike": 100, "days": 30, "vol": 0.2}),
    ("bs_price_greeks", {"type": "call", "strike": 10**400, "days": 30, "vol": 0.2}),
    ("implied_vol", {"type": "put", "premium": -1, "strike": 100, "days": 30}),
    ("implied_vol", {"type": "put", "premium": 1e308, "strike": 100, "days": 30}),
    ("implied_vol", {"type": "put", "premium": 1.0, "strike": 100, "days": 30, "spot": 0}),
    ("iv_surface", {"min_strike": float("nan")}),
    ("portfolio_greeks", {"legs": [_LEG_OK] * 10_000}),
    ("portfolio_greeks", {"legs": [{"side": "buy", "type": "call", "strike": 1e308, "expiry": "2099-01-01"}]}),
    ("portfolio_greeks", {"legs": [{"side": "buy", "type": "call", "strike": 100, "expiry": "x" * 40}]}),
    ("portfolio_greeks", {"legs": [_LEG_OK], "contracts": float("nan")}),
    ("portfolio_greeks", {"legs": [_LEG_OK], "contracts": 0}),
    ("portfolio_greeks", {"legs": [{"side": "buy", "type": "stock", "quantity": -5}]}),
    ("value_at_risk", {"legs": [_LEG_OK], "paths": 10**12, "method": "monte_carlo"}),
    ("value_at_risk", {"legs": [_LEG_OK], "paths": 1e308, "method": "monte_carlo"}),
    ("value_at_risk", {"legs": [_LEG_OK], "confidence": 1.0}),
    ("value_at_risk", {"legs": [_LEG_OK], "confidence": float("nan")}),
    ("value_at_risk", {"legs": [_LEG_OK], "method": "garch"}),
    ("value_at_risk", {"legs": [_LEG_OK], "horizon_days": 10**9}),
    ("value_at_risk", {"legs": [_LEG_OK], "seed": -1, "method": "monte_carlo"}),
    ("value_at_risk", {"legs": [_LEG_OK], "lookback_days": 10**9, "method": "historical"}),
    ("stress_test", {"legs": [_LEG_OK], "spot_shocks": [0.1] * 41, "vol_shocks": [1.0] * 21, "days_passed": [1] * 21}),
    ("stress_test", {"legs": [_LEG_OK], "spot_shocks": [-1.5]}),
    ("stress_test", {"legs": [_LEG_OK], "vol_shocks": [float("nan")]}),
    ("stress_test", {"legs": [_LEG_OK], "spot_shocks": list(range(10_000))}),
    ("stress_test", {"legs": "[" * 60_000}),
]


@pytest.mark.parametrize(("name", "args"), HOSTILE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(HOSTILE)])
def test_hostile_arguments_get_a_bounded_error(box, name, args):
    result = box.call(name, args)
    assert not result.ok, result.data
    assert result.error and len(result.error) <= MAX_ERROR_CHARS and "internal error" not in result.error
    assert len(result.text()) <= box.max_chars


def test_a_page_past_the_end_is_empty(box):
    data = _ok(box, "iv_surface", {"offset": 10**12})
    assert data["rows"] == [] and data["next_offset"] is None and data["total"] > 0


@pytest.mark.parametrize("text", ["{", "[]", "null", '{"legs": ' + "[" * 5000 + "]" * 5000 + "}", "x" * 70_000])
def test_hostile_argument_text_never_raises(box, text):
    for name in NEW_OPTIONS_TOOLS:
        result = box.call(name, text)
        assert not result.ok and len(result.error) <= MAX_ERROR_CHARS


def test_every_new_tool_fits_the_smallest_cap(task):
    small = _box(max_chars=MIN_MAX_CHARS)
    legs = [_leg(_atm(task, "call", i)) for i in range(3)] + [_leg(_atm(task, "put", i), "sell") for i in range(3)]
    calls = [("bs_price_greeks", {"type": "put", "strike": 100, "days": 30, "vol": 0.3}),
             ("implied_vol", {"type": "put", "premium": 5.0, "strike": task["market"]["spot"], "days": 30}),
             ("iv_surface", {}), ("portfolio_greeks", {"legs": legs}),
             ("value_at_risk", {"legs": legs, "method": "monte_carlo"}), ("value_at_risk", {"legs": legs}),
             ("stress_test", {"legs": legs, "spot_shocks": [x / 100 for x in range(-20, 21)],
                              "vol_shocks": [-5, 0, 5], "days_passed": [0, 1, 2, 3]})]
    for name, args in calls:
        result = small.call(name, args)
        assert result.ok, (name, result.error)
        assert len(result.text()) <= MIN_MAX_CHARS, name
    stressed = small.call(*calls[-1])
    assert stressed.truncated and stressed.data["truncated"]["fields"]["rows"]["of"] == 41 * 3 * 4 <= MAX_SCENARIOS


def test_risk_tools_refuse_a_bank_item_without_vols_but_sum_its_stated_greeks():
    env = gym.make("FinOptions-v0", bank="fabpp", action_mode="text")
    env.reset(seed=0, options={"task_id": "greeks_002"})
    task, box = env.unwrapped.task, ToolBox(env)
    assert task.get("leg_greeks") and all(q.get("iv") is None for q in task["quotes"])
    legs = task["given_legs"]
    data = _ok(box, "portfolio_greeks", {"legs": legs})
    engine = engine_numbers(task, [parse_leg(x) for x in legs], 1.0)
    assert data["total"]["delta"] == pytest.approx(engine["delta"])
    result = box.call("stress_test", {"legs": legs})
    assert not result.ok and "no implied vol" in result.error


def test_tools_see_only_the_current_task(box, task):
    """No tool takes a date, a symbol or a task id: the market is the current task's, nothing else."""
    for tool in (*RISK_TOOLS, *(box.tools[n] for n in ("bs_price_greeks", "implied_vol", "iv_surface"))):
        assert not {"date", "as_of", "symbol", "task_id", "expiry_date"} & set(tool.parameters["properties"])
    data = _ok(box, "iv_surface", {})
    assert data["as_of"] == task["market"]["as_of"] and box.env.as_of_view().counter.attempts == 0


# ---------------------------------------------------------------------------- tool modes
@pytest.mark.parametrize("env_id", ["FinOptions-text-v0", "FinDeltaHedge-text-v0"])
def test_tool_modes_of_the_text_envs(env_id):
    family = task_of(env_id).toolset
    full = gym.make(env_id)
    _, info = full.reset(seed=0)
    assert info["tools_mode"] == "fabpp" == full.tools_mode
    assert full.toolbox.names == [t.name for t in TOOLSETS[family]] + [COMMIT_TOOL]
    closed = gym.make(env_id, tools="none")
    prompt, info = closed.reset(seed=0)
    assert info["tools_mode"] == "none" and closed.toolbox.names == [COMMIT_TOOL]
    assert [s["function"]["name"] for s in closed.tool_specs()] == [COMMIT_TOOL]
    assert closed.spec.kwargs["tools"] == "none"  # recorded with the env's arguments
    refused = closed.call_tool(TOOLSETS[family][0].name, {})
    assert not refused.ok and "unknown tool" in refused.error
    assert TOOLSETS[family][0].name not in prompt
    with pytest.raises(ValueError, match="tool mode"):
        gym.make(env_id, tools="all")
    assert TOOL_MODES == ("fabpp", "none")


def test_options_toolset_has_the_new_tools():
    names = [t.name for t in TOOLSETS["options"]]
    assert set(NEW_OPTIONS_TOOLS) <= set(names) and [t.name for t in TOOLSETS["risk"]] == [
        "portfolio_greeks", "value_at_risk", "stress_test"]


@pytest.mark.parametrize("mode", TOOL_MODES)
def test_a_session_records_the_tool_mode_and_replays(mode):
    spec = EpisodeSpec(0, "FinOptions-v0", {"split": "eval", "tools": mode}, 0, None)
    env = make_text_env(spec)
    assert env.tools_mode == mode
    session = EpisodeSession(spec, env=env)
    assert session.reset_info["tools_mode"] == mode
    answer = '{"legs": []}'
    session.commit(session.protocol.parse_text(answer), raw_text=answer)
    assert session.episode_record["tools_mode"] == mode and session.episode_record["spec"]["env_kwargs"]["tools"] == mode
    rewards, _, _ = replay_episode(spec, [session.records[0]["env_action"]])
    assert rewards == [session.records[0]["reward"]]


@pytest.mark.parametrize("mode", TOOL_MODES)
def test_scripted_options_agent_in_each_mode(tmp_path, mode):
    """The scripted agent reads the task through get_task/get_quotes: with the tools it answers the generated
    tasks exactly (100); closed book it gives no answer (0), as its docstring says."""
    from finenvs.evaluation.llm import RunConfig, run_llm

    task = task_of("FinOptions-v0")
    config = RunConfig(env_id="FinOptions-v0", split="eval", env_kwargs={"tools": mode}, limit=3, concurrency=1)
    summary = run_llm(config, task.make_scripted_agent(), out=tmp_path, name=mode)
    records = summary.episode_records()
    assert len(records) == 3 and {r["tools_mode"] for r in records} == {mode}
    scores = [r["metrics"]["score"] for r in records]
    assert scores == ([100.0] * 3 if mode == "fabpp" else [0.0] * 3)
    run = json.loads((summary.run_dir / "run.json").read_text())
    assert run["config"]["env_kwargs"]["tools"] == mode
