"""Options tools (FinOptions-v0) and delta-hedging tools (FinDeltaHedge-v0).

Toolset ``"options"``: ``get_task`` (the public task, the env's
:meth:`~finenvs.tasks.options.env.FinOptionsEnv.public_task`: market, template, outlook, budget,
contracts, what is asked, the given legs; never a bank item's published answer,
reference position, errata or notes), ``get_quotes`` (the contracts on offer,
filtered and paged to fit the size cap) and ``analyze_position`` (the pricing
engine's numbers for a position built from the contracts on offer, from the env's
:meth:`~finenvs.tasks.options.env.FinOptionsEnv.position_numbers`: the scorer's own
engine, so for a bank item that states per-leg Greeks in its question it sums those).

It also has ``bs_price_greeks`` (Black-Scholes-Merton price and Greeks of any call or put,
spot, rate and dividend yield defaulting to the task's market), ``implied_vol`` (the
engine's solver, :func:`finenvs.pricing.implied_vol`; a premium outside the no-arbitrage
bounds is an error naming them) and ``iv_surface`` (the implied vols of the contracts on
offer, strikes x expiries, paged to the size cap), and the risk tools of
:mod:`finenvs.tools.risk`. Multi-leg strategy analysis (premium, breakevens, max P&L,
Greeks) is ``analyze_position``. Every tool reads only the current task: no other date.

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

from finenvs.tools.registry import Tool, ToolContext, json_size

#: The tool that lists the contracts on offer (a prompt beside it points to it instead of listing them).
QUOTES_TOOL = "get_quotes"
#: The fields of a quote.
QUOTE_COLUMNS = ("type", "strike", "expiry", "days", "premium", "iv")
#: Columns of a ``get_quotes`` row: one strike's call and put (their expiry and days are its expiry block's).
QUOTE_ROW = ("strike", "call_premium", "call_iv", "put_premium", "put_iv")
#: Engine numbers ``analyze_position`` returns.
POSITION_NUMBERS = ("net_premium", "max_profit", "max_loss", "breakevens", "pop", "delta", "gamma", "vega", "theta",
                    "hedge_shares")
_ROOM = 400  # characters kept free for the paging fields and a truncation marker
#: Outputs of ``bs_price_greeks`` (the engine's :func:`~finenvs.pricing.bsm_greeks` keys).
GREEK_OUTPUTS = ("price", "delta", "gamma", "vega", "theta", "rho")
GREEK_UNITS = ("price per share; delta per 1 of spot; gamma per 1 of spot squared; vega per vol point (sigma + 0.01); "
               "theta per calendar day; rho per rate point (r + 0.01)")


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
    out["n_quotes"] = len(task["quotes"])  # get_quotes lists them
    return out


#: Decimals of a ``get_quotes`` iv unless ``full=true`` (0.0001 = 0.01 vol point, as the question lists them).
IV_DECIMALS = 4


def _premium_iv(q: dict[str, Any], full: bool) -> list[Any]:
    """A quote's ``[premium, iv]`` for a ``get_quotes`` row (iv rounded unless ``full``)."""
    premium, iv = _finite([q.get("premium"), q.get("iv")])
    if not full and isinstance(iv, float):
        iv = round(iv, IV_DECIMALS)
    return [premium, iv]


def get_quotes(ctx: ToolContext, expiry: str | None = None, type: str | None = None,  # the quote field's name
               min_strike: float | None = None, max_strike: float | None = None, offset: int = 0,
               limit: int = 200, full: bool = False) -> dict[str, Any]:
    task = _task(ctx)
    quotes = [q for q in task["quotes"]
              if (expiry is None or q["expiry"] == expiry) and (type is None or q["type"] == type)
              and (min_strike is None or q["strike"] >= min_strike) and (max_strike is None or q["strike"] <= max_strike)]
    out: dict[str, Any] = {"columns": list(QUOTE_ROW), "total": len(quotes), "offset": offset, "expiries": [],
                           "next_offset": None}  # units: the tool's description
    budget = ctx.max_chars - json_size(out) - _ROOM
    taken = 0
    for q in quotes[offset : offset + limit]:  # as many whole quotes as fit the cap, so next_offset pages all
        blocks = out["expiries"]
        new_block = not blocks or blocks[-1]["expiry"] != q["expiry"]
        rows = [] if new_block else blocks[-1]["rows"]
        # a put joins its strike's call row (the order call, put is kept); any other quote opens a row
        joins = (q.get("type") == "put" and bool(rows) and rows[-1][0] == q.get("strike")
                 and rows[-1][3] is None and rows[-1][4] is None)
        cells = _premium_iv(q, full)
        if joins:
            row = [*rows[-1][:3], *cells]
            cost = json_size(row) - json_size(rows[-1])
        else:
            row = [q.get("strike"), *(cells if q.get("type") == "call" else [None, None]),
                   *(cells if q.get("type") == "put" else [None, None])]
            cost = json_size(row) + 1 + (json_size({"expiry": q["expiry"], "days": q.get("days"), "rows": []}) + 1
                                         if new_block else 0)
        budget -= cost
        if budget < 0:
            break
        if new_block:  # quotes of one expiry (in the task's order) share its date and days
            blocks.append({"expiry": q["expiry"], "days": q.get("days"), "rows": rows})
        if joins:
            rows[-1] = row
        else:
            rows.append(row)
        taken += 1
    end = offset + taken
    out["next_offset"] = end if end < len(quotes) else None
    return out


def quote_rows(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The quotes of a ``get_quotes`` page as dicts with every quote field (:data:`QUOTE_COLUMNS`), in order (a
    side whose premium and iv are both null is not on the page)."""
    return [{"type": kind, "strike": row[0], "expiry": block["expiry"], "days": block["days"],
             "premium": row[at], "iv": row[at + 1]}
            for block in page["expiries"] for row in block["rows"]
            for kind, at in (("call", 1), ("put", 3)) if row[at] is not None or row[at + 1] is not None]


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


#: A position's ``legs`` as the tools that take one (besides ``analyze_position``) advertise it: the leg's fields in
#: words; calls are checked against the full leg schema.
LEGS_IN_WORDS = {"type": "array", "items": {"type": "object"},
                 "description": "as in analyze_position"}
_LEG = {"type": "object", "properties": {
    "side": {"type": "string", "enum": ["buy", "sell", "long", "short"]},
    "type": {"type": "string", "enum": ["call", "put", "stock"]},
    "strike": {"type": "number"}, "expiry": {"type": "string", "maxLength": 40},
    "quantity": {"type": "number", "description": "per unit: contracts for options, shares for stock"}},
    "required": ["side", "type"]}

OPTIONS_TOOLS: tuple[Tool, ...] = (
    Tool("get_task",
         "The task as data: market (spot, rate, dividend yield, multiplier, PoP vol), template, outlook, budget, "
         "contracts, items asked, given legs, attribution inputs, daily vol, expiries on offer.",
         {"type": "object", "properties": {}, "additionalProperties": False},
         get_task, summary="the task as data (market, what is asked, given legs)"),
    Tool(QUOTES_TOOL,
         "The contracts on offer: per expiry (date, days) rows [strike, call premium, call iv, put premium, put iv] "
         "(premium per share, iv per year; null: not on this page or not quoted); paged (offset=next_offset until "
         "null).",
         {"type": "object", "properties": {
             "expiry": {"type": "string", "maxLength": 10, "description": "YYYY-MM-DD"},
             "type": {"type": "string", "enum": ["call", "put"]},
             "min_strike": {"type": "number"}, "max_strike": {"type": "number"},
             "offset": {"type": "integer", "minimum": 0, "default": 0},
             "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 200},
             "full": {"type": "boolean", "default": False, "description": "iv unrounded (default: 4 decimals)"}},
          "additionalProperties": False},
         get_quotes, summary="the contracts on offer (filter by expiry, type, strikes; paged)",
         advertised={"type": "object", "properties": {
             "expiry": {"type": "string"}, "type": {"enum": ["call", "put"]}, "min_strike": {"type": "number"},
             "max_strike": {"type": "number"}, "offset": {"type": "integer", "default": 0},
             "limit": {"type": "integer", "default": 200},
             "full": {"type": "boolean", "default": False, "description": "iv unrounded (default: 4 decimals)"}}}),
    Tool("analyze_position",
         "The engine's net premium, max profit and loss, breakevens, probability of profit, Greeks and "
         "delta-neutral hedge (shares) of `contracts` units of the legs (contracts on offer, or stock).",
         {"type": "object", "properties": {
             "legs": {"type": "array", "minItems": 1, "maxItems": 12, "items": _LEG},
             "contracts": {"type": "number", "minimum": 0, "default": 1.0}},
          "required": ["legs"], "additionalProperties": False},
         analyze_position, summary="the engine's numbers for a position",
         advertised={"type": "object", "properties": {
             "legs": {"type": "array", "items": {"type": "object", "properties": {
                 "side": {"enum": ["buy", "sell"]}, "type": {"enum": ["call", "put", "stock"]},
                 "strike": {"type": "number"}, "expiry": {"type": "string"},
                 "quantity": {"type": "number"}},
                 "required": ["side", "type"]}},
             "contracts": {"type": "number", "default": 1.0}}, "required": ["legs"]}),
)


def _market(ctx: ToolContext) -> dict[str, Any]:
    """The current task's market (spot, rate, dividend yield, multiplier, as_of): the tools' default inputs."""
    return _task(ctx)["market"]


def _or(value: Any, default: Any) -> float:
    return float(default if value is None else value)


def bs_price_greeks(ctx: ToolContext, type: str, strike: float, days: float, vol: float,  # the quote field's name
                    spot: float | None = None, rate: float | None = None,
                    dividend_yield: float | None = None) -> dict[str, Any]:
    from finenvs.pricing import bsm_greeks, year_fraction

    m = _market(ctx)
    inputs = {"type": type, "spot": _or(spot, m["spot"]), "strike": float(strike), "days": float(days),
              "rate": _or(rate, m["rate"]), "dividend_yield": _or(dividend_yield, m["dividend_yield"]),
              "vol": float(vol)}
    g = bsm_greeks(inputs["spot"], inputs["strike"], float(year_fraction(inputs["days"])), inputs["rate"],
                   inputs["dividend_yield"], inputs["vol"], type)
    return {"inputs": inputs, **{k: _finite(g[k]) for k in GREEK_OUTPUTS},
            "units": GREEK_UNITS + "; per share of one option (x multiplier for a contract)"}


def implied_vol(ctx: ToolContext, type: str, premium: float, strike: float, days: float,  # the quote field's name
                spot: float | None = None, rate: float | None = None,
                dividend_yield: float | None = None) -> dict[str, Any]:
    from finenvs.pricing import bsm_price, no_arbitrage_bounds, year_fraction
    from finenvs.pricing import implied_vol as engine_implied_vol

    m = _market(ctx)
    S, r, q = _or(spot, m["spot"]), _or(rate, m["rate"]), _or(dividend_yield, m["dividend_yield"])
    T = float(year_fraction(float(days)))
    iv = engine_implied_vol(float(premium), S, float(strike), T, r, q, type)
    lower, upper = no_arbitrage_bounds(S, float(strike), T, r, q, type)
    return {"inputs": {"type": type, "premium": float(premium), "spot": S, "strike": float(strike),
                       "days": float(days), "rate": r, "dividend_yield": q},
            "iv": iv, "repriced": bsm_price(S, float(strike), T, r, q, iv, type),
            "no_arbitrage_bounds": [lower, upper],
            "units": "iv per year as a decimal (0.2 = 20%); premium per share; days are calendar days (T = days/365)"}


def _quote_iv(quote: dict[str, Any], m: dict[str, Any]) -> tuple[float | None, str]:
    """A contract's implied vol: the quoted one (the scorer's input), else solved from its premium, else None."""
    if quote.get("iv") is not None:
        return float(quote["iv"]), "quoted"
    from finenvs.pricing import PricingError
    from finenvs.pricing import implied_vol as engine_implied_vol

    try:
        return float(engine_implied_vol(float(quote["premium"]), float(m["spot"]), float(quote["strike"]),
                                        float(quote["days"]) / 365.0, float(m["rate"]), float(m["dividend_yield"]),
                                        quote["type"])), "solved"
    except (PricingError, KeyError, TypeError, ValueError):
        return None, "none"


def iv_surface(ctx: ToolContext, type: str = "call", min_strike: float | None = None,  # the quote field's name
               max_strike: float | None = None, offset: int = 0, limit: int = 200) -> dict[str, Any]:
    task = _task(ctx)
    m = task["market"]
    quotes = [q for q in task["quotes"] if q["type"] == type and (min_strike is None or q["strike"] >= min_strike)
              and (max_strike is None or q["strike"] <= max_strike)]
    expiries = sorted({q["expiry"] for q in quotes})
    days = {q["expiry"]: q.get("days") for q in quotes}
    grid: dict[float, list[Any]] = {}
    solved = 0
    for q in quotes:
        iv, how = _quote_iv(q, m)
        solved += how == "solved"
        grid.setdefault(float(q["strike"]), [None] * len(expiries))[expiries.index(q["expiry"])] = iv
    rows = [[k, *grid[k]] for k in sorted(grid)]
    out: dict[str, Any] = {"type": type, "as_of": m["as_of"], "spot": m["spot"], "expiries": expiries,
                           "days": [days[e] for e in expiries], "columns": ["strike", *expiries],
                           "total": len(rows), "offset": offset, "rows": [], "next_offset": None,
                           "solved_from_premium": solved,
                           "units": "iv per year as a decimal; null: that strike is not listed at that expiry (or "
                                    "its premium implies no vol); quoted vols are the scorer's inputs, others are "
                                    "solved from the premium by the engine"}
    budget = ctx.max_chars - json_size(out) - _ROOM
    for row in rows[offset : offset + limit]:  # whole rows that fit the cap; next_offset pages through the rest
        budget -= json_size(_finite(row)) + 1
        if budget < 0:
            break
        out["rows"].append(_finite(row))
    end = offset + len(out["rows"])
    out["next_offset"] = end if end < len(rows) else None
    return out


_MARKET_ARGS = {
    "spot": {"type": "number", "minimum": 0, "maximum": 1e9, "description": "default: the task's spot"},
    "rate": {"type": "number", "minimum": -1, "maximum": 1,
             "description": "continuously compounded, per year, decimal; default: the task's rate"},
    "dividend_yield": {"type": "number", "minimum": -1, "maximum": 1,
                       "description": "continuous, per year, decimal; default: the task's"},
}
_CONTRACT_ARGS = {
    "type": {"type": "string", "enum": ["call", "put"]},
    "strike": {"type": "number", "minimum": 0, "maximum": 1e9},
    "days": {"type": "number", "minimum": 0, "maximum": 36500, "description": "calendar days to expiry (T = days/365)"},
}

_MARKET_DEFAULTS = "days: calendar days to expiry; spot, rate and dividend_yield (continuous, decimal) default to the task's."


def _pricing_advertised(name: str, unit: str) -> dict[str, Any]:
    """A pricing tool's schema as the model reads it: the contract and ``name``, then the market inputs (bounds and
    their words are in the checked schema and the description)."""
    return {"type": "object", "properties": {
        "type": {"enum": ["call", "put"]}, "strike": {"type": "number"}, "days": {"type": "number"},
        name: {"type": "number", "description": unit}, "spot": {"type": "number"}, "rate": {"type": "number"},
        "dividend_yield": {"type": "number"}}, "required": ["type", "strike", "days", name]}


PRICING_TOOLS: tuple[Tool, ...] = (
    Tool("bs_price_greeks",
         "The engine's Black-Scholes-Merton price and Greeks (vega per vol point, theta per calendar day, rho per "
         "rate point) of one European option, per share. " + _MARKET_DEFAULTS,
         {"type": "object", "properties": {
             **_CONTRACT_ARGS, "vol": {"type": "number", "minimum": 0, "maximum": 10,
                                       "description": "per year, decimal (0.2 = 20%)"}, **_MARKET_ARGS},
          "required": ["type", "strike", "days", "vol"], "additionalProperties": False},
         bs_price_greeks, summary="Black-Scholes-Merton price and Greeks of any call or put",
         advertised=_pricing_advertised("vol", "per year, 0.2 = 20%")),
    Tool("implied_vol",
         "The vol at which the engine's Black-Scholes-Merton price equals a premium (per share; outside the "
         "no-arbitrage bounds: an error naming them). " + _MARKET_DEFAULTS,
         {"type": "object", "properties": {
             **_CONTRACT_ARGS, "premium": {"type": "number", "minimum": 0, "maximum": 1e9,
                                           "description": "per share"}, **_MARKET_ARGS},
          "required": ["type", "premium", "strike", "days"], "additionalProperties": False},
         implied_vol, summary="implied vol of a premium (engine's solver)",
         advertised=_pricing_advertised("premium", "per share")),
    Tool("iv_surface",
         "Implied vols of the contracts on offer of one type, rows [strike, iv per expiry]; paged "
         "(offset=next_offset until it is null).",
         {"type": "object", "properties": {
             "type": {"type": "string", "enum": ["call", "put"], "default": "call"},
             "min_strike": {"type": "number"}, "max_strike": {"type": "number"},
             "offset": {"type": "integer", "minimum": 0, "default": 0},
             "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 200}},
          "additionalProperties": False},
         iv_surface, summary="implied-vol surface of the contracts on offer (paged)",
         advertised={"type": "object", "properties": {
             "type": {"enum": ["call", "put"], "default": "call"}, "min_strike": {"type": "number"},
             "max_strike": {"type": "number"}, "offset": {"type": "integer", "default": 0},
             "limit": {"type": "integer", "default": 200}}}),
)


# ---------------------------------------------------------------------------- FinDeltaHedge-v0
def _hedge_env(ctx: ToolContext) -> Any:
    env = ctx.env
    if getattr(env, "task_family", None) != "deltahedge" or env.episode is None or env.state is None:
        raise ValueError("the hedging tools need a FinDeltaHedge-v0 episode (reset the env first)")
    return env


def get_hedge_state(ctx: ToolContext, observation: bool = False) -> dict[str, Any]:
    env = _hedge_env(ctx)
    ep, state = env.episode, env.state
    t = state.t
    out = {"step": t, "n_steps": ep.n_steps, "option": env.option, "position": "short one option",
           "spot": ep.spots[t], "strike": ep.strike, "time_to_expiry_years": (ep.n_steps - t) * ep.dt,
           "pricing_vol": ep.pricing_vol, "option_value": ep.values[t], "bs_delta": ep.deltas[t],
           "hedge": state.hedge, "pnl": state.pnl, "costs": state.costs, "cost_bps": env.cost_bps,
           "hedge_range": [-1.5, 1.5]}
    if observation:  # the RL agents' view of the same step (float32, scaled): on request only
        out["observation"] = env.named_observation()
    if ep.dates is not None:
        out["date"] = ep.dates[t]
    out["units"] = ("hedge and bs_delta in shares per option; time in trading days / 252; option_value per option"
                    + ("; observation.option_value = option value / initial spot" if observation else ""))
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
         "delta, the hedge held, P&L and costs so far (observation=true: also the RL agents' named observation).",
         {"type": "object", "properties": {"observation": {"type": "boolean", "default": False}},
          "additionalProperties": False},
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

OPTIONS_TOOLS = (*OPTIONS_TOOLS, *PRICING_TOOLS)

__all__ = ["DELTAHEDGE_TOOLS", "GREEK_OUTPUTS", "OPTIONS_TOOLS", "PRICING_TOOLS", "QUOTES_TOOL", "analyze_position", "bs_greeks",
           "bs_price_greeks", "get_hedge_state", "get_quotes", "get_task", "implied_vol", "iv_surface"]
