"""Options tools (FinOptions-v0) and delta-hedging tools (FinDeltaHedge-v0).

Toolset ``"options"``: ``get_task`` (the public task, the env's
:meth:`~finenvs.envs.options.FinOptionsEnv.public_task`: market, template, outlook, budget,
contracts, what is asked, the given legs; never a bank item's published answer,
reference position, errata or notes), ``get_quotes`` (the contracts on offer,
filtered and paged to fit the size cap) and ``analyze_position`` (the pricing
engine's numbers for a position built from the contracts on offer, from the env's
:meth:`~finenvs.envs.options.FinOptionsEnv.position_numbers`: the scorer's own
engine, so for a bank item that states per-leg Greeks in its question it sums those).

Toolset ``"deltahedge"``: ``get_hedge_state`` (the named observation at the
current step, with spot, strike and the book) and ``bs_greeks`` (Black-Scholes
price and Greeks of the hedged option at a spot, vol and time of your choice).
Both read only the current grid point: nothing after it exists for them.

Numbers that are not finite come back as ``null`` (an unbounded max profit or
loss as ``"unlimited"``), so every result is strict JSON.
"""

from __future__ import annotations

import math
from typing import Any

from finenvs.tools.registry import Tool, ToolContext, json_size, register_tools

#: Quote columns of ``get_quotes`` rows.
QUOTE_COLUMNS = ("type", "strike", "expiry", "days", "premium", "iv")
#: Engine numbers ``analyze_position`` returns.
POSITION_NUMBERS = ("net_premium", "max_profit", "max_loss", "breakevens", "pop", "delta", "gamma", "vega", "theta",
                    "hedge_shares")
_ROOM = 400  # characters kept free for the paging fields and a truncation marker


def _finite(value: Any) -> Any:
    """JSON-safe: non-finite floats become None (lists element-wise)."""
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---------------------------------------------------------------------------- FinOptions-v0
def _task(ctx: ToolContext) -> dict[str, Any]:
    task = getattr(ctx.env, "task", None) if getattr(ctx.env, "task_family", None) == "options" else None
    if task is None:
        raise ValueError("the options tools need a FinOptions-v0 episode (reset the env first)")
    return task


def get_task(ctx: ToolContext) -> dict[str, Any]:
    task = _task(ctx)
    out = {k: v for k, v in ctx.env.public_task().items() if k not in ("prompt", "quotes")}
    out["expiries"] = sorted({q["expiry"] for q in task["quotes"]})
    out["n_quotes"] = len(task["quotes"])
    out["hint"] = "contracts on offer: get_quotes"
    return out


def get_quotes(ctx: ToolContext, expiry: str | None = None, type: str | None = None,  # the quote field's name
               min_strike: float | None = None, max_strike: float | None = None, offset: int = 0,
               limit: int = 200) -> dict[str, Any]:
    task = _task(ctx)
    rows = [[q.get(c) for c in QUOTE_COLUMNS] for q in task["quotes"]
            if (expiry is None or q["expiry"] == expiry) and (type is None or q["type"] == type)
            and (min_strike is None or q["strike"] >= min_strike) and (max_strike is None or q["strike"] <= max_strike)]
    out: dict[str, Any] = {"columns": list(QUOTE_COLUMNS), "total": len(rows), "offset": offset, "rows": [],
                           "next_offset": None,
                           "units": "premium per share; iv per year (null: the task states no vol); days to expiry"}
    budget = ctx.max_chars - json_size(out) - _ROOM
    page = rows[offset : offset + limit]
    for row in page:  # as many whole rows as fit the cap, so next_offset pages through all of them
        budget -= json_size(_finite(row)) + 1
        if budget < 0:
            break
        out["rows"].append(_finite(row))
    end = offset + len(out["rows"])
    out["next_offset"] = end if end < len(rows) else None
    return out


def analyze_position(ctx: ToolContext, legs: list[Any], contracts: float = 1.0) -> dict[str, Any]:
    _task(ctx)
    if not (math.isfinite(contracts) and contracts > 0):
        raise ValueError(f"contracts must be > 0; got {contracts!r}")
    parsed, numbers = ctx.env.position_numbers(legs, float(contracts))
    out: dict[str, Any] = {"legs": [leg.to_json() for leg in parsed], "contracts": float(contracts)}
    for name in POSITION_NUMBERS:
        value = numbers.get(name)
        out[name] = "unlimited" if isinstance(value, float) and math.isinf(value) and name.startswith("max_") \
            else _finite(value)
    out["units"] = ("money for the whole position (per share x multiplier x contracts); net_premium > 0 is a debit; "
                    "delta in shares, vega per vol point, theta per calendar day; hedge_shares < 0 sells stock")
    return out


_LEG = {"type": "object", "properties": {
    "side": {"type": "string", "enum": ["buy", "sell", "long", "short"]},
    "type": {"type": "string", "enum": ["call", "put", "stock"]},
    "strike": {"type": "number"}, "expiry": {"type": "string", "maxLength": 40},
    "quantity": {"type": "number", "description": "per unit: contracts for options, shares for stock"}},
    "required": ["side", "type"]}

OPTIONS_TOOLS: tuple[Tool, ...] = (
    Tool("get_task",
         "The task as data: id, kind, market (spot, rate, dividend yield, multiplier, PoP vol), template, outlook, "
         "budget, contracts, the items asked per dimension, the given legs, attribution inputs, daily vol, and "
         "the expiries on offer.",
         {"type": "object", "properties": {}, "additionalProperties": False},
         get_task, summary="the task as data (market, what is asked, given legs)"),
    Tool("get_quotes",
         "The contracts on offer as rows of [type, strike, expiry, days, premium, iv], filtered by expiry, type "
         "and strike range, paged: call again with offset=next_offset until next_offset is null.",
         {"type": "object", "properties": {
             "expiry": {"type": "string", "maxLength": 10, "description": "YYYY-MM-DD"},
             "type": {"type": "string", "enum": ["call", "put"]},
             "min_strike": {"type": "number"}, "max_strike": {"type": "number"},
             "offset": {"type": "integer", "minimum": 0, "default": 0},
             "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 200}},
          "additionalProperties": False},
         get_quotes, summary="the contracts on offer (filter by expiry, type, strikes; paged)"),
    Tool("analyze_position",
         "The pricing engine's numbers for a position built from the contracts on offer: net premium, max "
         "profit and loss, breakevens, probability of profit, delta, gamma, vega, theta and the delta-neutral "
         "hedge in shares, for `contracts` units of the legs.",
         {"type": "object", "properties": {
             "legs": {"type": "array", "minItems": 1, "maxItems": 12, "items": _LEG},
             "contracts": {"type": "number", "minimum": 0, "default": 1.0}},
          "required": ["legs"], "additionalProperties": False},
         analyze_position, summary="the engine's numbers for a position"),
)


# ---------------------------------------------------------------------------- FinDeltaHedge-v0
def _hedge_env(ctx: ToolContext) -> Any:
    env = ctx.env
    if getattr(env, "task_family", None) != "deltahedge" or env.episode is None or env.state is None:
        raise ValueError("the hedging tools need a FinDeltaHedge-v0 episode (reset the env first)")
    return env


def get_hedge_state(ctx: ToolContext) -> dict[str, Any]:
    env = _hedge_env(ctx)
    ep, state = env.episode, env.state
    t = state.t
    out = {"step": t, "n_steps": ep.n_steps, "option": env.option, "position": "short one option",
           "spot": ep.spots[t], "strike": ep.strike, "time_to_expiry_years": (ep.n_steps - t) * ep.dt,
           "pricing_vol": ep.pricing_vol, "option_value": ep.values[t], "bs_delta": ep.deltas[t],
           "hedge": state.hedge, "pnl": state.pnl, "costs": state.costs, "cost_bps": env.cost_bps,
           "hedge_range": [-1.5, 1.5], "observation": env.named_observation()}
    if ep.dates is not None:
        out["date"] = ep.dates[t]
    out["units"] = ("hedge and bs_delta in shares per option; time in trading days / 252; option_value per option; "
                    "observation.option_value = option value / initial spot")
    return {k: _finite(v) for k, v in out.items()}


def bs_greeks(ctx: ToolContext, spot: float | None = None, vol: float | None = None,
              tau_years: float | None = None) -> dict[str, Any]:
    from finenvs.pricing import bsm_greeks

    env = _hedge_env(ctx)
    ep, t = env.episode, env.state.t
    spot = ep.spots[t] if spot is None else spot
    vol = ep.pricing_vol if vol is None else vol
    tau = (ep.n_steps - t) * ep.dt if tau_years is None else tau_years
    out: dict[str, Any] = {"option": env.option, "strike": ep.strike, "spot": spot, "vol": vol, "tau_years": tau}
    if tau == 0:  # at expiry: the payoff and its delta
        sign = 1.0 if env.option == "call" else -1.0
        itm = sign * (spot - ep.strike) > 0
        out.update(price=max(sign * (spot - ep.strike), 0.0), delta=sign if itm else 0.0, gamma=0.0, vega=0.0,
                   theta_per_trading_day=0.0)
    else:
        g = bsm_greeks(spot, ep.strike, tau, env.r, env.q, vol, env.option)
        out.update(price=g["price"], delta=g["delta"], gamma=g["gamma"], vega=g["vega"],
                   theta_per_trading_day=g["theta"] * 365.0 / 252.0)
    out["units"] = "price per option; vega per vol point; time in trading days / 252 (the env's convention)"
    return {k: _finite(v) for k, v in out.items()}


DELTAHEDGE_TOOLS: tuple[Tool, ...] = (
    Tool("get_hedge_state",
         "The state at this step: spot, strike, time to expiry, pricing vol, option value, the Black-Scholes "
         "delta, the hedge held, P&L and costs so far, and the named observation the RL agents see.",
         {"type": "object", "properties": {}, "additionalProperties": False},
         get_hedge_state, summary="spot, time, vol, option value, BS delta and the hedge held"),
    Tool("bs_greeks",
         "Black-Scholes price, delta, gamma, vega and theta of the hedged option at a spot, vol and time to "
         "expiry (defaults: now, at the pricing vol).",
         {"type": "object", "properties": {
             "spot": {"type": "number", "minimum": 0}, "vol": {"type": "number", "minimum": 0, "maximum": 10},
             "tau_years": {"type": "number", "minimum": 0, "maximum": 10}},
          "additionalProperties": False},
         bs_greeks, summary="Black-Scholes price and Greeks of the option"),
)

register_tools("options", OPTIONS_TOOLS)
register_tools("deltahedge", DELTAHEDGE_TOOLS)

__all__ = ["DELTAHEDGE_TOOLS", "OPTIONS_TOOLS", "analyze_position", "bs_greeks", "get_hedge_state", "get_quotes",
           "get_task"]
