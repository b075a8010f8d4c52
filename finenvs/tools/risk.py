"""Risk tools for FinOptions-v0: portfolio Greeks, value at risk and stress tests of a position.

FAB++'s risk-metrics server as finenvs tools. They join the ``"options"`` toolset
(so ``FinOptions-text-v0`` and its MCP server offer them) and are also registered
alone as the ``"risk"`` toolset. A position is the legs ``analyze_position`` takes
(contracts on offer in the current task, plus stock), times ``contracts``.

Every number comes from the scorer's engine: Greeks from the env's
:meth:`~finenvs.tasks.options.env.FinOptionsEnv.position_numbers`
(:func:`~finenvs.tasks.options.core.engine_numbers`), revaluations from
:func:`finenvs.pricing.bsm_price` at each contract's quoted implied vol, days to
expiry and the task's rate and dividend yield, as the scorer prices them.

* ``portfolio_greeks``: per-leg and total delta, gamma, vega, theta, rho and value
  (x multiplier x contracts; stock: delta 1 per share).
* ``value_at_risk``: the loss not exceeded with probability ``confidence`` over
  ``horizon_days`` trading days, as a positive amount, and the expected shortfall
  (mean loss beyond it). ``parametric``: delta-normal,
  ``z x daily_vol x sqrt(horizon) x |delta x spot|`` with ``daily_vol`` the task's
  (else its PoP vol / sqrt(252)); at 95% over one day it is the scorer's ``var_95``.
  ``historical``: full revaluation under the underlying's past ``horizon``-day log
  returns (overlapping) of the last ``lookback_days`` closes dated on or before the
  task's date, read through the date-locked catalog view (real-data tasks only).
  ``monte_carlo``: ``paths`` lognormal spot scenarios (drift ``r - q``, the daily
  vol above) from ``np.random.default_rng(seed)``, fully revalued.
  The position ages ``horizon x 365/252`` calendar days; a leg expiring before
  the horizon is worth its payoff. Quantiles: numpy's linear interpolation.
* ``stress_test``: the P&L of every (spot shock, vol shock, days passed) scenario,
  spot shocks as fractions of spot, vol shocks in vol points added to every leg's
  implied vol (floored at :data:`MIN_VOL`), at most :data:`MAX_SCENARIOS` scenarios.

Tasks whose contracts state no implied vol (some bank items) cannot be revalued:
VaR and stress tests answer with an error; ``portfolio_greeks`` sums the Greeks
the task states. P&L is against the position's engine value now (not its premium).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from finenvs.tools.options import _LEG, LEGS_IN_WORDS, _finite, _task
from finenvs.tools.registry import Tool, ToolContext, register_tools

#: Greeks ``portfolio_greeks`` sums (engine units: vega per vol point, theta per calendar day, rho per rate point).
PORTFOLIO_GREEKS = ("delta", "gamma", "vega", "theta", "rho")
VAR_METHODS = ("historical", "parametric", "monte_carlo")
TRADING_DAYS_PER_YEAR = 252
DEFAULT_PATHS = 10_000
MAX_PATHS = 100_000
DEFAULT_LOOKBACK = 250
#: Fewest scenarios a historical VaR accepts.
MIN_HISTORY_SCENARIOS = 20
MAX_SCENARIOS = 500
#: Floor of a shocked implied vol (per year).
MIN_VOL = 1e-4
MONEY_UNITS = "money for the whole position (per share x multiplier x contracts)"


def _position(ctx: ToolContext, legs: list[Any], contracts: float) -> tuple[list[Any], dict[str, Any]]:
    _task(ctx)
    if not (math.isfinite(contracts) and contracts > 0):
        raise ValueError(f"contracts must be > 0; got {contracts!r}")
    return ctx.env.position_numbers(legs, float(contracts))


class _Book:
    """A position as arrays the engine revalues: units (shares), strikes, years to expiry, implied vols."""

    def __init__(self, task: dict[str, Any], parsed: list[Any], contracts: float) -> None:
        m = task["market"]
        self.spot, self.rate, self.q = float(m["spot"]), float(m["rate"]), float(m["dividend_yield"])
        mult = float(m["multiplier"])
        self.legs: list[tuple[float, str, float, float, float]] = []  # units, kind, strike, T years, iv
        for leg in parsed:
            if leg.kind == "stock":
                self.legs.append((leg.sign * leg.quantity * contracts, "stock", 0.0, 0.0, 0.0))
                continue
            quote = next((q for q in task["quotes"] if q["type"] == leg.kind and q["expiry"] == leg.expiry
                          and math.isclose(q["strike"], leg.strike, abs_tol=1e-9)), None)
            if quote is None or quote.get("iv") is None or quote.get("days") is None:
                raise ValueError("this task's contracts state no implied vol, so the engine cannot revalue the "
                                 "position (portfolio_greeks sums the Greeks the task states)")
            self.legs.append((leg.sign * leg.quantity * contracts * mult, leg.kind, float(leg.strike),
                              float(quote["days"]) / 365.0, float(quote["iv"])))

    def value(self, spots: Any, years_passed: float = 0.0, vol_shift: float = 0.0) -> np.ndarray:
        """The position's value at ``spots`` after ``years_passed``, every implied vol shifted by ``vol_shift``."""
        from finenvs.pricing import bsm_price

        s = np.asarray(spots, dtype=float)
        total = np.zeros(s.shape)
        for units, kind, strike, T, iv in self.legs:
            if kind == "stock":
                total = total + units * s
                continue
            left = T - years_passed
            if left <= 1e-12:
                payoff = np.maximum(s - strike, 0.0) if kind == "call" else np.maximum(strike - s, 0.0)
                total = total + units * payoff
            else:
                vol = max(iv + vol_shift, MIN_VOL)
                total = total + units * np.asarray(bsm_price(s, strike, left, self.rate, self.q, vol, kind))
        return total

    def floored(self, vol_shift: float) -> bool:
        return any(kind != "stock" and iv + vol_shift < MIN_VOL for _, kind, _, _, iv in self.legs)


def _daily_vol(task: dict[str, Any]) -> tuple[float, str]:
    if task.get("daily_vol") is not None:
        return float(task["daily_vol"]), "the task's daily_vol"
    return float(task["market"]["pop_vol"]) / math.sqrt(TRADING_DAYS_PER_YEAR), "the task's pop_vol / sqrt(252)"


def portfolio_greeks(ctx: ToolContext, legs: list[Any], contracts: float = 1.0) -> dict[str, Any]:
    parsed, total = _position(ctx, legs, contracts)
    rows = []
    for leg in parsed:  # each leg alone, by the same engine call: the rows sum to the total
        _, numbers = ctx.env.position_numbers([leg.to_json()], float(contracts))
        rows.append({"leg": leg.to_json(), **{k: _finite(numbers.get(k)) for k in ("value", *PORTFOLIO_GREEKS)}})
    spot = float(_task(ctx)["market"]["spot"])
    out: dict[str, Any] = {"contracts": float(contracts),
                           "total": {k: _finite(total.get(k)) for k in ("value", *PORTFOLIO_GREEKS)},
                           "delta_dollars": _finite(float(total["delta"]) * spot), "legs": rows}
    out["units"] = (f"{MONEY_UNITS}; delta in shares, gamma in shares per 1 of spot, vega per vol point, theta per "
                    "calendar day, rho per rate point; value at the engine's prices (null: the task gives no vols)")
    return out


def value_at_risk(ctx: ToolContext, legs: list[Any], contracts: float = 1.0, method: str = "parametric",
                  confidence: float = 0.95, horizon_days: int = 1, lookback_days: int = DEFAULT_LOOKBACK,
                  paths: int = DEFAULT_PATHS, seed: int = 0) -> dict[str, Any]:
    from scipy.special import ndtri

    task = _task(ctx)
    parsed, numbers = _position(ctx, legs, contracts)
    spot = float(task["market"]["spot"])
    out: dict[str, Any] = {"method": method, "confidence": confidence, "horizon_days": horizon_days}
    if method == "parametric":
        daily_vol, source = _daily_vol(task)
        delta = float(numbers["delta"])
        if not math.isfinite(delta):
            raise ValueError("the engine has no delta for this position")
        sd = abs(delta * spot) * daily_vol * math.sqrt(horizon_days)
        z = float(ndtri(confidence))
        out.update(var=z * sd, expected_shortfall=sd * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
                   / (1.0 - confidence), daily_vol=daily_vol, vol_source=source, delta_dollars=delta * spot, z=z,
                   model="delta-normal: z x daily_vol x sqrt(horizon) x |delta x spot| (gamma and vega ignored)")
    else:
        book = _Book(task, parsed, float(contracts))
        years = horizon_days / TRADING_DAYS_PER_YEAR  # horizon x 365/252 calendar days, in years
        if method == "historical":
            moves, history = _historical_moves(ctx, task, horizon_days, lookback_days)
            out["history"] = history
        else:
            daily_vol, source = _daily_vol(task)
            rng = np.random.default_rng(seed)
            shocks = rng.standard_normal(paths)
            drift = (book.rate - book.q) * horizon_days / TRADING_DAYS_PER_YEAR - 0.5 * daily_vol**2 * horizon_days
            moves = drift + daily_vol * math.sqrt(horizon_days) * shocks
            out.update(paths=paths, seed=seed, daily_vol=daily_vol, vol_source=source,
                       model="lognormal spot, drift r - q, full revaluation by Black-Scholes-Merton")
        base = float(book.value(spot))
        pnl = book.value(spot * np.exp(moves), years) - base
        var = -float(np.quantile(pnl, 1.0 - confidence))
        tail = pnl[pnl <= -var]
        out.update(var=var, expected_shortfall=-float(tail.mean()) if tail.size else var, scenarios=int(pnl.size),
                   position_value=base, worst_pnl=float(pnl.min()), best_pnl=float(pnl.max()))
    out["units"] = (f"{MONEY_UNITS}; var and expected_shortfall are losses as positive amounts (a negative var: "
                    "the quantile is a gain); horizon in trading days; vols per trading day")
    return {k: _finite(v) for k, v in out.items()}


def _historical_moves(ctx: ToolContext, task: dict[str, Any], horizon: int,
                      lookback: int) -> tuple[np.ndarray, dict[str, Any]]:
    """Overlapping ``horizon``-day log returns of the underlying's last ``lookback`` daily returns dated on or
    before the task's date, read through the catalog's as-of view (the episode's look-ahead counter)."""
    env, m = ctx.env, task["market"]
    data = getattr(env, "_data", None)
    if getattr(env, "source", None) != "real" or getattr(env, "bank_name", None) is not None or data is None \
            or m.get("symbol") in (None, "SYN"):
        raise ValueError("this task has no price history of its underlying (a synthetic or bank task): use "
                         "method parametric or monte_carlo")
    view = data().as_of(m["as_of"], counter=env.as_of_view().counter, dataset=getattr(env, "dataset", "core"))
    bars = view.prices(str(m["symbol"]), lookback=lookback + 1)
    closes = np.asarray(bars.close, dtype=float)
    daily = np.diff(np.log(closes)) if closes.size > 1 else np.zeros(0)
    if daily.size - horizon + 1 < MIN_HISTORY_SCENARIOS:
        raise ValueError(f"{daily.size} daily returns of {m['symbol']} up to {m['as_of']} give fewer than "
                         f"{MIN_HISTORY_SCENARIOS} {horizon}-day scenarios: shorten horizon_days or lengthen "
                         "lookback_days")
    sums = np.concatenate([[0.0], np.cumsum(daily)])
    moves = sums[horizon:] - sums[:-horizon]
    history = {"symbol": m["symbol"], "from": str(bars.dates[0]), "to": str(bars.dates[-1]),
               "daily_returns": int(daily.size), "daily_vol": float(daily.std(ddof=1))}
    return moves, history


def stress_test(ctx: ToolContext, legs: list[Any], contracts: float = 1.0, spot_shocks: list[float] | None = None,
                vol_shocks: list[float] | None = None, days_passed: list[int] | None = None) -> dict[str, Any]:
    task = _task(ctx)
    parsed, _ = _position(ctx, legs, contracts)
    spot_shocks = [-0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2] if spot_shocks is None else spot_shocks
    vol_shocks = [0.0] if vol_shocks is None else vol_shocks
    days_passed = [0] if days_passed is None else days_passed
    count = len(spot_shocks) * len(vol_shocks) * len(days_passed)
    if count > MAX_SCENARIOS:
        raise ValueError(f"{count} scenarios (spot x vol x days); the limit is {MAX_SCENARIOS}")
    book = _Book(task, parsed, float(contracts))
    base = float(book.value(book.spot))
    rows, floored = [], False
    for days, dvol in itertools.product(days_passed, vol_shocks):
        shift = float(dvol) / 100.0
        floored = floored or book.floored(shift)
        spots = book.spot * (1.0 + np.asarray(spot_shocks, dtype=float))
        pnl = book.value(spots, float(days) / 365.0, shift) - base
        rows += [[float(ds), float(dvol), int(days), float(s), _finite(float(p))]
                 for ds, s, p in zip(spot_shocks, spots, pnl, strict=True)]
    return {"columns": ["spot_shock", "vol_shock_points", "days_passed", "spot", "pnl"], "position_value": base,
            "scenarios": len(rows), "vol_floored": floored, "rows": rows,
            "units": f"{MONEY_UNITS}; pnl against the engine value now; spot_shock a fraction of spot; vol shocks in "
                     f"vol points added to each leg's implied vol (floored at {MIN_VOL}); calendar days"}


_POSITION_ARGS = {
    "legs": {"type": "array", "minItems": 1, "maxItems": 12, "items": _LEG},
    "contracts": {"type": "number", "minimum": 0, "maximum": 1e6, "default": 1.0},
}

#: ``legs`` and ``contracts`` as the risk tools advertise them (checked against :data:`_POSITION_ARGS`).
_POSITION_WORDS = {"legs": LEGS_IN_WORDS, "contracts": {"type": "number", "default": 1.0}}

RISK_TOOLS: tuple[Tool, ...] = (
    Tool("portfolio_greeks",
         "The engine's per-leg and total delta, gamma, vega, theta, rho and value of a position (x multiplier x "
         "contracts), and its dollar delta.",
         {"type": "object", "properties": dict(_POSITION_ARGS), "required": ["legs"], "additionalProperties": False},
         portfolio_greeks, summary="per-leg and total Greeks of a position",
         advertised={"type": "object", "properties": _POSITION_WORDS, "required": ["legs"]}),
    Tool("value_at_risk",
         "VaR and expected shortfall of a position over horizon_days: parametric (delta-normal, the task's daily "
         "vol), historical (past returns, lookback_days) or monte_carlo (seeded lognormal paths).",
         {"type": "object", "properties": {
             **_POSITION_ARGS,
             "method": {"type": "string", "enum": list(VAR_METHODS), "default": "parametric"},
             "confidence": {"type": "number", "minimum": 0.5, "maximum": 0.9999, "default": 0.95},
             "horizon_days": {"type": "integer", "minimum": 1, "maximum": 63, "default": 1},
             "lookback_days": {"type": "integer", "minimum": MIN_HISTORY_SCENARIOS, "maximum": 2520,
                               "default": DEFAULT_LOOKBACK, "description": "historical: daily returns used"},
             "paths": {"type": "integer", "minimum": 100, "maximum": MAX_PATHS, "default": DEFAULT_PATHS,
                       "description": "monte_carlo: simulated paths"},
             "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1, "default": 0,
                      "description": "monte_carlo: seed of numpy's default_rng (same seed, same answer)"}},
          "required": ["legs"], "additionalProperties": False},
         value_at_risk, summary="VaR and expected shortfall (historical, parametric, monte_carlo)",
         advertised={"type": "object", "properties": {
             **_POSITION_WORDS, "method": {"enum": list(VAR_METHODS), "default": "parametric"},
             "confidence": {"type": "number", "default": 0.95}, "horizon_days": {"type": "integer", "default": 1},
             "lookback_days": {"type": "integer", "default": DEFAULT_LOOKBACK},
             "paths": {"type": "integer", "default": DEFAULT_PATHS}, "seed": {"type": "integer", "default": 0}},
             "required": ["legs"]}),
    Tool("stress_test",
         "A position's P&L, fully revalued, for each combination of spot_shocks (fractions; default 0, +-0.05, "
         "+-0.1, +-0.2), vol_shocks (vol points; default 0) and days_passed (default 0); at most 500.",
         {"type": "object", "properties": {
             **_POSITION_ARGS,
             "spot_shocks": {"type": "array", "minItems": 1, "maxItems": 41,
                             "items": {"type": "number", "minimum": -0.99, "maximum": 10.0},
                             "description": "default [-0.2, -0.1, -0.05, 0, 0.05, 0.1, 0.2]"},
             "vol_shocks": {"type": "array", "minItems": 1, "maxItems": 21,
                            "items": {"type": "number", "minimum": -100, "maximum": 500},
                            "description": "vol points added to every implied vol; default [0]"},
             "days_passed": {"type": "array", "minItems": 1, "maxItems": 21,
                             "items": {"type": "integer", "minimum": 0, "maximum": 3650},
                             "description": "calendar days; default [0]"}},
          "required": ["legs"], "additionalProperties": False},
         stress_test, summary="P&L under spot, vol and time shocks",
         advertised={"type": "object", "properties": {
             **_POSITION_WORDS, **{name: {"type": "array", "items": {"type": kind}} for name, kind in
                                   (("spot_shocks", "number"), ("vol_shocks", "number"), ("days_passed", "integer"))}},
             "required": ["legs"]}),
)

register_tools("risk", RISK_TOOLS)

__all__ = ["MAX_PATHS", "MAX_SCENARIOS", "RISK_TOOLS", "VAR_METHODS", "portfolio_greeks", "stress_test",
           "value_at_risk"]
