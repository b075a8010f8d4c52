"""FinOptions-v0 core: task instances, the engine's reference answer, answer parsing and 4-dimension scoring.

Pure functions over JSON-able dicts (no gymnasium, no I/O), so the env, the
question bank, the bench and the tests all score with the same code.

**A task** (``dict``) holds: ``id``, ``kind`` (:data:`KINDS`), ``source``,
``prompt`` (what the agent reads), ``market`` (symbol, as_of, spot, rate,
dividend_yield, multiplier, pop_vol), ``quotes`` (the contracts on offer: type,
strike, expiry, days, premium, iv), ``given_legs`` (the position the task is
about, or None when the agent builds it), ``template``/``outlook`` (strategy
construction), ``budget`` (account, risk_pct), ``ask`` (the numbers and
checks scored in each dimension) and kind-specific inputs.

**An answer** is a JSON object (see ``options_answer.schema.json``)::

    {"legs": [{"side": "sell", "type": "put", "strike": 95, "expiry": "2025-04-17", "quantity": 1}, ...],
     "contracts": 3, "net_premium": -240.0, "max_profit": 240.0, "max_loss": 1260.0,
     "breakevens": [94.2, 106.1], "pop": 0.61, "delta": -4.1, "gamma": -0.9, "vega": -21.0, "theta": 4.4,
     "hedge": {"shares": 4}, "exit": {"take_profit": 120, "stop_loss": 630}}

Units: ``quantity`` per unit of the position (contracts for options, shares for
stock), ``contracts`` = units held; every money amount is for the whole position
(per share x ``multiplier`` x contracts); ``net_premium`` > 0 is a net debit,
< 0 a net credit; ``max_profit``/``max_loss`` are positive amounts (``"unlimited"``
when unbounded); Greeks in the units of :mod:`finenvs.pricing.bsm` (delta in
shares, vega per vol point, theta per calendar day) for the whole position.
``hedge.shares`` is the stock trade that makes the position delta-neutral
(negative = sell).

**Scoring** (0-100, 25 per dimension; inside a dimension each item weighs the same. A bank item
whose source question asks nothing in a dimension leaves it out (``None``) and the others share
its weight, as the section aggregate does):

* P&L: each number in ``ask["pnl"]`` against the engine's value for the answer's
  own position (or the task's given position): relative error <= 1% (breakevens
  0.1% of spot, PoP 0.02 absolute, an absolute floor of 0.01 per share for money).
* Greeks: each of ``ask["greeks"]`` within 5% relative error. Only a true Greek
  near zero, below its floor per share (x multiplier x contracts: delta 0.01,
  gamma 0.001, vega 0.01, theta 0.005; a hedged position's delta), is checked
  against that floor instead.
* Strategy: the legs parse and trade listed contracts; the structure is the
  requested template; its strikes are in the template's order; its outlook is the
  requested one; the stated net premium (debit/credit) is right.
* Risk: max loss within the budget; contracts = the largest count whose max loss
  fits ``account x risk_pct``; the hedge is the delta-neutral trade (5% or 1 share);
  an exit rule with 0 < take_profit <= max profit and 0 < stop_loss <= max loss.

**Near misses earn part of an item.** A money figure, a Greek or the hedge outside its tolerance
earns ``((zero - error) / (zero - tolerance)) ** 2`` of its item, down to nothing at
``zero`` = 25% relative error (5 x the floor where the floor is the tolerance): a Greek 10% off
earns 0.5625, 20% off 0.0625. Breakevens (a price level, against spot), PoP (a probability) and
contract counts are right or wrong (:func:`figure_credit`).

**Figures gate structure.** The items above that check a structure or a rule (legs valid, legs
match, template, strikes ordered, outlook, within budget, sizing, exit rule) earn their credit times
the mean credit of the task's figures (P&L and Greek numbers, net premium, hedge): the right legs
with no numbers, or with wrong ones, earn nothing, with figures a little off most of it; an answer
whose figures are all right is not affected. A task that asks no figure is not gated.

A missing number scores 0 for its item, never a default; an unparseable answer or
an invalid leg scores 0 on every item that depends on it, with the reason in the
item list. Nothing here raises on an agent's answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.pricing import PricingError, bsm_greeks, bsm_price
from finenvs.pricing.strategy import Leg, Position
from finenvs.text import safe_json

KINDS = ("pricing", "greeks", "strategy", "attribution", "sizing")
DIMENSIONS = ("pnl", "greeks", "strategy", "risk")
DIMENSION_WEIGHT = 25.0
GREEK_NAMES = ("delta", "gamma", "vega", "theta")
#: Near zero, per share (x multiplier x contracts for the position): a true Greek smaller than one unit of the
#: precision a per-share Greek is quoted to (delta 0.01, gamma 0.001, vega 0.01, theta 0.005, rho 0.01), as a
#: hedged position's delta is, has no meaningful relative error; only there does this absolute tolerance apply.
GREEK_FLOORS = {"delta": 0.01, "gamma": 0.001, "vega": 0.01, "theta": 0.005, "rho": 0.01}
GREEK_REL_TOL = 0.05
MONEY_REL_TOL = 0.01
MONEY_ABS_FLOOR = 0.01  # per share
BREAKEVEN_TOL = 0.001  # fraction of spot
POP_TOL = 0.02
HEDGE_REL_TOL = 0.05
#: Beyond its tolerance a figure's credit falls to none at this relative error (or at ``FLOOR_TO_ZERO`` x its
#: absolute floor, where the floor is the tolerance), as the square of the distance left to that bound: a Greek
#: 10% off earns 56% of its item, 15% off 25%, 20% off 6%, 25% off nothing (see :func:`figure_credit`).
ZERO_CREDIT_REL = 0.25
FLOOR_TO_ZERO = 5.0
Z_95 = 1.6448536269514722  # one-sided 95% normal quantile

#: template -> (outlook, one-line description)
TEMPLATES: dict[str, tuple[str, str]] = {
    "bull_call_spread": ("bullish", "buy a call, sell a higher-strike call (debit)"),
    "bear_put_spread": ("bearish", "buy a put, sell a lower-strike put (debit)"),
    "bull_put_spread": ("bullish", "sell a put, buy a lower-strike put (credit)"),
    "bear_call_spread": ("bearish", "sell a call, buy a higher-strike call (credit)"),
    "iron_condor": ("neutral", "buy put K1 < sell put K2 < sell call K3 < buy call K4 (credit)"),
    "long_straddle": ("volatile", "buy a call and a put at the same strike"),
    "long_strangle": ("volatile", "buy a put and a higher-strike call"),
    "long_butterfly": ("neutral", "buy K1, sell 2 x K2, buy K3 (same type, K2 - K1 = K3 - K2)"),
    "long_calendar": ("neutral", "sell a near-expiry option, buy the same strike and type further out"),
    "collar": ("bullish", "long stock, buy a put below, sell a call above"),
    "covered_call": ("bullish", "long stock, sell a call"),
    "protective_put": ("bullish", "long stock, buy a put"),
}
TEMPLATE_NAMES = tuple(TEMPLATES)
OUTLOOKS = ("bullish", "bearish", "neutral", "volatile")
SIDE_WORDS = {"buy": "long", "long": "long", "sell": "short", "short": "short", "write": "short"}
TYPE_WORDS = {"call": "call", "c": "call", "put": "put", "p": "put", "stock": "stock", "shares": "stock",
              "share": "stock", "underlying": "stock"}


# ----------------------------------------------------------------------------- legs
@dataclass(frozen=True)
class OptionLeg:
    """A parsed leg: ``side`` long/short, ``kind`` call/put/stock, ``quantity`` per unit, strike, expiry."""

    side: str
    kind: str
    quantity: float
    strike: float | None = None
    expiry: str | None = None

    @property
    def sign(self) -> float:
        return 1.0 if self.side == "long" else -1.0

    @property
    def option_strike(self) -> float:
        """The strike of a call or put (:func:`parse_leg` gives every option leg one); ValueError for stock."""
        if self.strike is None:
            raise ValueError(f"a {self.kind} leg has no strike")
        return self.strike

    @property
    def option_expiry(self) -> str:
        """The expiry of a call or put (:func:`parse_leg` gives every option leg one); ValueError for stock."""
        if self.expiry is None:
            raise ValueError(f"a {self.kind} leg has no expiry")
        return self.expiry

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"side": "buy" if self.side == "long" else "sell", "type": self.kind,
                               "quantity": self.quantity}
        if self.kind != "stock":
            out["strike"] = self.strike
            out["expiry"] = self.expiry
        return out


class AnswerError(ValueError):
    """An answer (or one leg of it) that cannot be read; the message is recorded as the item's reason."""


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or value is None:
        raise AnswerError(f"{name} must be a number; got {value!r}")
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("$", "")
        if text.lower() in ("unlimited", "infinite", "inf", "infinity", "unbounded"):
            return math.inf
        try:
            value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
        except ValueError as exc:
            raise AnswerError(f"{name} must be a number; got {value!r}") from exc
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise AnswerError(f"{name} must be a number; got {value!r}") from exc
    if math.isnan(out):
        raise AnswerError(f"{name} is NaN")
    return out


def parse_leg(raw: Any, as_of: str | None = None) -> OptionLeg:
    """Read one leg dict; raises :class:`AnswerError` naming the problem."""
    if not isinstance(raw, dict):
        raise AnswerError(f"a leg must be an object; got {raw!r}")
    side = SIDE_WORDS.get(str(raw.get("side", raw.get("action", ""))).strip().lower())
    if side is None:
        raise AnswerError(f"leg side {raw.get('side', raw.get('action'))!r} is not buy/sell")
    kind = TYPE_WORDS.get(str(raw.get("type", raw.get("kind", ""))).strip().lower())
    if kind is None:
        raise AnswerError(f"leg type {raw.get('type', raw.get('kind'))!r} is unknown; use call, put or stock")
    quantity = _number(raw.get("quantity", 1), "leg quantity")
    if not (math.isfinite(quantity) and quantity > 0):
        raise AnswerError(f"leg quantity must be > 0 (use side sell to go short); got {raw.get('quantity')!r}")
    if kind == "stock":
        return OptionLeg(side, kind, quantity)
    strike = _number(raw.get("strike"), "leg strike")
    if not (math.isfinite(strike) and strike > 0):
        raise AnswerError(f"leg strike must be > 0; got {raw.get('strike')!r}")
    expiry = raw.get("expiry")
    if expiry is None:
        raise AnswerError("an option leg needs an expiry (YYYY-MM-DD)")
    expiry = str(expiry).strip()[:10]
    try:
        np.datetime64(expiry, "D")
    except ValueError as exc:
        raise AnswerError(f"leg expiry {raw.get('expiry')!r} is not a date (YYYY-MM-DD)") from exc
    if as_of is not None and expiry <= as_of:
        raise AnswerError(f"leg expiry {expiry} is not after the as-of date {as_of}")
    return OptionLeg(side, kind, quantity, strike, expiry)


def parse_answer(text: Any) -> dict[str, Any]:
    """A text or dict answer as a dict; raises :class:`AnswerError` for malformed JSON.

    Text may wrap the JSON object in prose or a code fence: the first ``{`` to the
    last ``}`` is parsed.
    """
    if isinstance(text, dict):
        problem = safe_json.check_value(text, allow_non_finite=True)
        if problem is not None:
            raise AnswerError(f"the answer breaks a limit: {problem}")
        answer = dict(text)
    else:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if not isinstance(text, str):
            raise AnswerError(f"an answer is a JSON object or its text; got {type(text).__name__}")
        start, end = text.find("{"), text.rfind("}")
        if start < 0:
            raise AnswerError("no JSON object found in the answer")
        if end <= start:
            raise AnswerError("malformed JSON: the object opened with '{' is never closed")
        answer, problem = safe_json.try_loads(text[start:end + 1], allow_non_finite=True)
        if problem is not None:
            raise AnswerError(f"malformed JSON: {problem}")
        if not isinstance(answer, dict):
            raise AnswerError("the answer must be a JSON object")
    nested = answer.pop("numbers", None)
    if isinstance(nested, dict):
        for key, value in nested.items():
            answer.setdefault(key, value)
    return answer


# ----------------------------------------------------------------------------- the engine's numbers
def _quote_for(task: dict[str, Any], leg: OptionLeg) -> dict[str, Any]:
    strike = leg.option_strike
    for q in task["quotes"]:
        if q["type"] == leg.kind and math.isclose(q["strike"], strike, abs_tol=1e-9) and q["expiry"] == leg.expiry:
            return q
    listed = sorted({q["strike"] for q in task["quotes"] if q["type"] == leg.kind and q["expiry"] == leg.expiry})
    expiries = sorted({q["expiry"] for q in task["quotes"]})
    if not listed:
        raise AnswerError(f"no {leg.kind} expiring {leg.expiry} is on offer; expiries: {expiries}")
    raise AnswerError(f"{leg.kind} strike {leg.strike} expiring {leg.expiry} is not on offer; "
                      f"listed strikes {listed[0]}..{listed[-1]}")


def analyse(task: dict[str, Any], legs: list[OptionLeg], contracts: float) -> dict[str, Any]:
    """The engine's numbers for ``legs`` x ``contracts`` in the task's market (see module doc for units).

    Premiums and implied vols come from the task's quotes (the contract on offer
    with that type, strike and expiry); stock trades at spot. Positions with one
    expiry are analysed exactly at expiry; a calendar at the near expiry with the
    far legs valued by BSM at their implied vol (numerically on a fine grid).

    Raises:
        AnswerError: A leg that is not on offer.
        PricingError: Invalid market inputs.
    """
    m = task["market"]
    spot, r, q, mult = float(m["spot"]), float(m["rate"]), float(m["dividend_yield"]), float(m["multiplier"])
    scale = mult * contracts
    if task.get("leg_greeks"):
        return _stated_greeks(task, legs, scale, spot, mult)
    priced: list[tuple[OptionLeg, float, float | None, float | None]] = []  # leg, premium, iv, years
    for leg in legs:
        if leg.kind == "stock":
            priced.append((leg, spot, None, None))
        else:
            quote = _quote_for(task, leg)
            iv = None if quote.get("iv") is None else float(quote["iv"])
            priced.append((leg, float(quote["premium"]), iv, float(quote["days"]) / 365.0))
    greeks = dict.fromkeys(("value", *GREEK_NAMES, "rho"), 0.0)
    for leg, _premium, iv, T in priced:
        units = leg.sign * leg.quantity * (1.0 / mult if leg.kind == "stock" else 1.0) * scale
        if leg.kind == "stock":
            greeks["value"] += units * spot
            greeks["delta"] += units
            continue
        if iv is None or T is None:  # a quote with a premium but no vol (bank items): no model Greeks
            for name in ("value", *GREEK_NAMES, "rho"):
                greeks[name] = math.nan
            continue
        g = bsm_greeks(spot, leg.strike, T, r, q, iv, leg.kind)
        greeks["value"] += units * g["price"]
        for name in (*GREEK_NAMES, "rho"):
            greeks[name] += units * g[name]
    net = sum(leg.sign * leg.quantity * (1.0 / mult if leg.kind == "stock" else 1.0) * p
              for leg, p, _, _ in priced) * scale
    expiries = sorted({leg.option_expiry for leg in legs if leg.kind != "stock"})
    pop_vol = float(m["pop_vol"])
    out: dict[str, Any] = {"net_premium": net, **{k: greeks[k] for k in (*GREEK_NAMES, "rho")},
                           "value": greeks["value"]}
    if len(expiries) <= 1:
        position = Position(
            [Leg(leg.kind, leg.side, leg.quantity * contracts / (mult if leg.kind == "stock" else 1.0),
                 leg.strike, premium) for leg, premium, _, _ in priced],
            multiplier=mult,
        )
        T = priced_T(priced)
        out["max_profit"] = position.max_profit()
        out["max_loss"] = position.max_loss()
        out["breakevens"] = position.breakevens()
        out["pop"] = position.probability_of_profit(spot, T, pop_vol, r - q) if T else float("nan")
    else:
        out.update(_horizon_analysis(priced, spot, r, q, scale, mult, pop_vol))
    return out


def _stated_greeks(task: dict[str, Any], legs: list[OptionLeg], scale: float, spot: float,
                   mult: float) -> dict[str, Any]:
    """Position Greeks from Greeks the task states per given leg (no model inputs given): sums only."""
    given = [parse_leg(leg) for leg in task["given_legs"]]
    out: dict[str, Any] = dict.fromkeys((*GREEK_NAMES, "rho"), 0.0)
    for leg in legs:
        if leg.kind == "stock":
            out["delta"] += leg.sign * leg.quantity * scale / mult
            continue
        if leg not in given:
            raise AnswerError(f"{leg.kind} {leg.strike} is not a leg of the task")
        stated = task["leg_greeks"][given.index(leg)]
        for name in out:
            out[name] += leg.sign * leg.quantity * scale * float(stated.get(name, 0.0))
    out.update({"net_premium": math.nan, "value": math.nan, "max_profit": math.nan, "max_loss": math.nan,
                "breakevens": [], "pop": math.nan})
    return out


def priced_T(priced: list[tuple[Any, ...]]) -> float | None:
    times = [T for _, _, _, T in priced if T is not None]
    return min(times) if times else None


def _horizon_analysis(priced: list[tuple[Any, ...]], spot: float, r: float, q: float, scale: float, mult: float,
                      pop_vol: float) -> dict[str, Any]:
    """Max profit/loss, breakevens and PoP at the first expiry, far legs valued by BSM (calendar spreads)."""
    from scipy.optimize import brentq
    from scipy.special import ndtr

    t_near = priced_T(priced)
    assert t_near is not None

    def pnl(s: np.ndarray) -> np.ndarray:
        total = np.zeros_like(s)
        for leg, premium, iv, T in priced:
            units = leg.sign * leg.quantity * (1.0 / mult if leg.kind == "stock" else 1.0) * scale
            if leg.kind == "stock":
                value = s
            elif T <= t_near + 1e-12:
                value = np.maximum(s - leg.strike, 0.0) if leg.kind == "call" else np.maximum(leg.strike - s, 0.0)
            else:
                value = bsm_price(s, leg.strike, T - t_near, r, q, iv, leg.kind)
            total = total + units * (value - premium)
        return total

    grid = np.concatenate([np.linspace(spot * 0.01, spot * 3.0, 6001), [spot * 10.0]])
    values = pnl(grid)
    best = int(np.argmax(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    from scipy.optimize import minimize_scalar

    refined = minimize_scalar(lambda s: -float(pnl(np.array([s]))[0]), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-9})
    max_profit = max(float(values.max()), -float(refined.fun))
    max_loss = max(0.0, -float(values.min()))
    roots = []
    for i in np.flatnonzero(np.sign(values[:-1]) * np.sign(values[1:]) < 0):
        roots.append(brentq(lambda s: float(pnl(np.array([s]))[0]), grid[i], grid[i + 1], xtol=1e-10))
    m = math.log(spot) + (r - q - 0.5 * pop_vol ** 2) * t_near
    sd = pop_vol * math.sqrt(t_near)
    edges = [0.0, *roots, math.inf]
    pop = 0.0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        probe = np.array([a * 1.5 + 1.0 if math.isinf(b) else 0.5 * (a + b)])
        if float(pnl(probe)[0]) > 0:
            ca = float(ndtr((math.log(a) - m) / sd)) if a > 0 else 0.0
            cb = 1.0 if math.isinf(b) else float(ndtr((math.log(b) - m) / sd))
            pop += cb - ca
    return {"max_profit": max_profit, "max_loss": max_loss, "breakevens": [round(x, 9) for x in roots], "pop": pop}


# ----------------------------------------------------------------------------- structure
def classify(legs: list[OptionLeg], multiplier: float) -> tuple[str | None, str]:
    """The template a set of legs forms, and why (or why none)."""
    options = [leg for leg in legs if leg.kind != "stock"]
    stock = [leg for leg in legs if leg.kind == "stock"]
    if not options:
        return None, "no option legs"
    qty = {leg.quantity for leg in options}
    expiries = sorted({leg.option_expiry for leg in options})
    if stock:
        if len(stock) != 1 or stock[0].side != "long":
            return None, "stock templates hold one long stock leg"
        if len(qty) != 1 or not math.isclose(stock[0].quantity, options[0].quantity * multiplier):
            return None, f"the stock leg must be {multiplier:g} shares per option contract"
        if len(expiries) != 1:
            return None, "stock templates use one expiry"
        shape = sorted((leg.kind, leg.side) for leg in options)
        if shape == [("call", "short")]:
            return "covered_call", "long stock + short call"
        if shape == [("put", "long")]:
            return "protective_put", "long stock + long put"
        if shape == [("call", "short"), ("put", "long")]:
            call = next(leg for leg in options if leg.kind == "call")
            put = next(leg for leg in options if leg.kind == "put")
            if put.option_strike < call.option_strike:
                return "collar", "long stock + long put below + short call above"
            return None, "a collar's put strike must be below its call strike"
        return None, f"long stock with {shape} is not a listed template"
    if len(expiries) == 2:
        if len(options) == 2 and len(qty) == 1 and options[0].kind == options[1].kind \
                and options[0].strike == options[1].strike:
            near = next(leg for leg in options if leg.expiry == expiries[0])
            far = next(leg for leg in options if leg.expiry == expiries[1])
            if near.side == "short" and far.side == "long":
                return "long_calendar", "short near + long far, same strike"
        return None, "two expiries form only a long calendar (short near, long far, same strike and type)"
    if len(expiries) > 2:
        return None, "more than two expiries"
    if len(qty) != 1 and not (len(options) == 3):
        return None, "legs of unequal quantity"
    if len(options) == 2:
        a, b = sorted(options, key=lambda leg: (leg.option_strike, leg.kind))
        if a.kind == b.kind and a.side != b.side and a.option_strike < b.option_strike:
            kind = a.kind
            if kind == "call":
                return ("bull_call_spread", "long lower call, short higher call") if a.side == "long" else \
                    ("bear_call_spread", "short lower call, long higher call")
            return ("bull_put_spread", "short higher put, long lower put") if b.side == "short" else \
                ("bear_put_spread", "long higher put, short lower put")
        if a.kind != b.kind and a.side == b.side == "long":
            put = a if a.kind == "put" else b
            call = b if put is a else a
            if put.strike == call.strike:
                return "long_straddle", "long call + long put, same strike"
            if put.option_strike < call.option_strike:
                return "long_strangle", "long put below + long call above"
            return None, "a strangle's put strike must be below its call strike"
        return None, "two legs that form no listed spread (check sides and strike order)"
    if len(options) == 3:
        ordered = sorted(options, key=lambda leg: leg.option_strike)
        k1, k2, k3 = (leg.option_strike for leg in ordered)
        same_type = len({leg.kind for leg in options}) == 1
        sides = [leg.side for leg in ordered]
        if same_type and sides == ["long", "short", "long"] and k1 < k2 < k3 \
                and math.isclose(k2 - k1, k3 - k2) and math.isclose(ordered[1].quantity, 2 * ordered[0].quantity) \
                and math.isclose(ordered[0].quantity, ordered[2].quantity):
            return "long_butterfly", "long K1, short 2 x K2, long K3, equal wings"
        return None, "three legs form only a long butterfly (long K1, short 2 x K2, long K3, equal wings)"
    if len(options) == 4:
        puts = sorted((leg for leg in options if leg.kind == "put"), key=lambda leg: leg.option_strike)
        calls = sorted((leg for leg in options if leg.kind == "call"), key=lambda leg: leg.option_strike)
        if len(puts) == 2 and len(calls) == 2 \
                and [p.side for p in puts] == ["long", "short"] and [c.side for c in calls] == ["short", "long"]:
            if puts[0].option_strike < puts[1].option_strike < calls[0].option_strike < calls[1].option_strike:
                return "iron_condor", "long put < short put < short call < long call"
            return None, "iron condor strikes must be long put < short put < short call < long call"
        return None, "four legs form only an iron condor"
    return None, f"{len(options)} option legs form no listed template"


def strikes_ordered(template: str, legs: list[OptionLeg]) -> bool:
    """Whether the strikes follow the requested template's order, whatever the other details."""
    calls = sorted(leg.option_strike for leg in legs if leg.kind == "call")
    puts = sorted(leg.option_strike for leg in legs if leg.kind == "put")
    by_side = {(leg.kind, leg.side): leg.option_strike for leg in legs if leg.kind != "stock"}
    if template == "iron_condor":
        lp, sp = by_side.get(("put", "long")), by_side.get(("put", "short"))
        sc, lc = by_side.get(("call", "short")), by_side.get(("call", "long"))
        if lp is None or sp is None or sc is None or lc is None:
            return False
        return lp < sp < sc < lc
    if template in ("bull_call_spread", "bear_call_spread"):
        lo_side = "long" if template == "bull_call_spread" else "short"
        hi_side = "short" if lo_side == "long" else "long"
        return len(calls) == 2 and by_side.get(("call", lo_side), math.inf) < by_side.get(("call", hi_side), -math.inf)
    if template in ("bull_put_spread", "bear_put_spread"):
        hi_side = "short" if template == "bull_put_spread" else "long"
        lo_side = "long" if hi_side == "short" else "short"
        return len(puts) == 2 and by_side.get(("put", lo_side), math.inf) < by_side.get(("put", hi_side), -math.inf)
    if template in ("long_strangle", "collar"):
        return bool(puts and calls) and puts[0] < calls[-1]
    if template == "long_straddle":
        return bool(puts and calls) and puts[0] == calls[0]
    if template == "long_butterfly":
        ks = sorted(leg.option_strike for leg in legs if leg.kind != "stock")
        return len(ks) == 3 and ks[0] < ks[1] < ks[2] and math.isclose(ks[1] - ks[0], ks[2] - ks[1])
    if template == "long_calendar":
        return len({leg.option_strike for leg in legs if leg.kind != "stock"}) == 1
    return bool(calls or puts)  # covered call, protective put: any strike


# ----------------------------------------------------------------------------- the reference answer
def engine_numbers(task: dict[str, Any], legs: list[OptionLeg], contracts: float) -> dict[str, Any]:
    """Every number the task can ask for, for a position, computed by the engine."""
    out = analyse(task, legs, contracts)
    mult = float(task["market"]["multiplier"])
    kind = task["kind"]
    if kind == "pricing":
        out["price"] = float(task["quotes"][0]["premium"])
    if kind == "attribution":
        out.update(attribution_numbers(task))
    if "daily_vol" in task:
        dollar_delta = out["delta"] * float(task["market"]["spot"])
        out["delta_dollars"] = dollar_delta
        out["var_95"] = abs(dollar_delta) * float(task["daily_vol"]) * Z_95
    per_unit_loss = out["max_loss"] / contracts if contracts else math.inf
    out["max_loss_per_unit"] = per_unit_loss
    out["buying_power"] = out["max_loss"]
    out["hedge_shares"] = -out["delta"]
    budget = task.get("budget")
    if budget:
        allowed = float(budget["account"]) * float(budget["risk_pct"])
        out["risk_budget"] = allowed
        out["max_contracts"] = math.floor(allowed / per_unit_loss + 1e-9) if 0 < per_unit_loss < math.inf else 0
    out["multiplier"] = mult
    return out


def attribution_numbers(task: dict[str, Any]) -> dict[str, float]:
    """Taylor attribution of a long option's P&L between two marks (task["attribution"])."""
    a = task["attribution"]
    m = task["market"]
    mult = float(m["multiplier"])
    units = float(a["quantity"]) * mult
    if "greeks" in a:  # Greeks and both prices stated by the task
        g = a["greeks"]
        ds, dvol_pts = a["spot1"] - a["spot0"], a["vol_change_points"]
        total = (a["price1"] - a["price0"]) * units
        parts = {"delta_pnl": g["delta"] * ds * units, "gamma_pnl": 0.5 * g["gamma"] * ds * ds * units,
                 "theta_pnl": g["theta"] * a["days_passed"] * units, "vega_pnl": g["vega"] * dvol_pts * units}
        return {"total_pnl": total, **parts, "unexplained": total - sum(parts.values())}
    g = bsm_greeks(a["spot0"], a["strike"], a["days0"] / 365.0, m["rate"], m["dividend_yield"], a["vol0"], a["type"])
    v1 = bsm_price(a["spot1"], a["strike"], (a["days0"] - a["days_passed"]) / 365.0, m["rate"], m["dividend_yield"],
                   a["vol1"], a["type"])
    ds, dvol_pts = a["spot1"] - a["spot0"], (a["vol1"] - a["vol0"]) * 100.0
    total = (v1 - g["price"]) * units
    parts = {"delta_pnl": g["delta"] * ds * units, "gamma_pnl": 0.5 * g["gamma"] * ds * ds * units,
             "theta_pnl": g["theta"] * a["days_passed"] * units, "vega_pnl": g["vega"] * dvol_pts * units}
    return {"total_pnl": total, **parts, "unexplained": total - sum(parts.values()), "entry_value": g["price"] * units,
            "exit_value": v1 * units}


def reference_legs(task: dict[str, Any]) -> list[OptionLeg]:
    """The position the reference answer takes: the given legs, or the template built around the money."""
    if task.get("given_legs"):
        return [parse_leg(leg) for leg in task["given_legs"]]
    if task.get("reference_legs"):  # a bank item's published position
        return [parse_leg(leg) for leg in task["reference_legs"]]
    return build_template(task, task["template"], center=0, width=1, expiry_index=0)


def reference_answer(task: dict[str, Any]) -> dict[str, Any]:
    """The engine's exact answer to a task (the FinOptions-v0 oracle); it scores 100."""
    legs = reference_legs(task)
    probe = engine_numbers(task, legs, 1.0)
    contracts = float(task.get("contracts") or (probe.get("max_contracts") or 1))
    contracts = max(contracts, 1.0)
    names = sorted({*task["ask"]["pnl"], *task["ask"]["greeks"], "net_premium", "max_profit", "max_loss"}
                   - {"contracts_allowed"})  # stated as "contracts"
    return stated_answer(legs, contracts, engine_numbers(task, legs, contracts), names)


def stated_answer(legs: list[OptionLeg], contracts: float, numbers: dict[str, Any],
                  names: Any = None) -> dict[str, Any]:
    """An answer stating ``numbers`` (engine numbers of the position) for ``names`` (default: all of them).

    Adds the delta-neutral hedge and an exit at half the max profit / half the max
    loss (half the net premium where one is unbounded); drops values that are NaN.
    """
    answer: dict[str, Any] = {"legs": [leg.to_json() for leg in legs], "contracts": contracts}
    for name in (names if names is not None else numbers):
        value = numbers[name]
        answer[name] = "unlimited" if isinstance(value, float) and math.isinf(value) else value
    answer["hedge"] = {"shares": numbers["hedge_shares"]}
    take = numbers["max_profit"] if math.isfinite(numbers["max_profit"]) else abs(numbers["net_premium"])
    stop = numbers["max_loss"] if math.isfinite(numbers["max_loss"]) else abs(numbers["net_premium"])
    if math.isfinite(take) and math.isfinite(stop):
        answer["exit"] = {"take_profit": max(round(0.5 * take, 2), 0.01), "stop_loss": max(round(0.5 * stop, 2), 0.01),
                          "rule": "close at half the max profit or half the max loss, or 7 days before expiry"}
    return {k: v for k, v in answer.items() if not (isinstance(v, float) and math.isnan(v))}


def strike_grid(task: dict[str, Any], expiry: str, kind: str | None = None) -> list[float]:
    return sorted({q["strike"] for q in task["quotes"] if q["expiry"] == expiry and (kind is None or q["type"] == kind)})


def build_template(task: dict[str, Any], template: str, *, center: int, width: int, expiry_index: int) -> list[OptionLeg]:
    """Legs of ``template`` on the task's quotes: ``center`` strikes from the money, wings ``width`` strikes out.

    Indices are clipped to the listed strikes, so an extreme action can collapse a
    structure (which then scores as whatever it is).
    """
    expiries = sorted({q["expiry"] for q in task["quotes"]})
    e = expiries[min(max(expiry_index, 0), len(expiries) - 1)]
    far = expiries[min(max(expiry_index, 0) + 1, len(expiries) - 1)]
    grid = strike_grid(task, e)
    spot = float(task["market"]["spot"])
    atm = int(np.argmin(np.abs(np.asarray(grid) - spot)))
    c = atm + int(center)
    w = max(int(width), 1)
    mult = float(task["market"]["multiplier"])

    def k(i: int) -> float:
        return float(grid[min(max(i, 0), len(grid) - 1)])

    def leg(side: str, kind: str, i: int, qty: float = 1.0, expiry: str | None = None) -> OptionLeg:
        return OptionLeg(side, kind, qty, k(i), expiry or e)

    stock = OptionLeg("long", "stock", mult)
    table = {
        "bull_call_spread": [leg("long", "call", c), leg("short", "call", c + w)],
        "bear_put_spread": [leg("long", "put", c), leg("short", "put", c - w)],
        "bull_put_spread": [leg("short", "put", c), leg("long", "put", c - w)],
        "bear_call_spread": [leg("short", "call", c), leg("long", "call", c + w)],
        "iron_condor": [leg("long", "put", c - 2 * w), leg("short", "put", c - w), leg("short", "call", c + w),
                        leg("long", "call", c + 2 * w)],
        "long_straddle": [leg("long", "call", c), leg("long", "put", c)],
        "long_strangle": [leg("long", "put", c - w), leg("long", "call", c + w)],
        "long_butterfly": [leg("long", "call", c - w), leg("short", "call", c, 2.0), leg("long", "call", c + w)],
        "long_calendar": [leg("short", "call", c), OptionLeg("long", "call", 1.0, k(c), far)],
        "collar": [stock, leg("long", "put", c - w), leg("short", "call", c + w)],
        "covered_call": [stock, leg("short", "call", c + w)],
        "protective_put": [stock, leg("long", "put", c - w)],
    }
    if template not in table:
        raise AnswerError(f"unknown template {template!r}; valid: {list(TEMPLATE_NAMES)}")
    if template == "long_calendar" and far == e:
        return table[template][:1]
    return table[template]


# ----------------------------------------------------------------------------- scoring
@dataclass
class ItemScore:
    dimension: str
    name: str
    credit: float
    reason: str = ""


@dataclass
class ScoreCard:
    """A scored answer: 0-100 total, 0-25 per dimension, one line per item."""

    total: float
    dimensions: dict[str, float | None]
    items: list[ItemScore] = field(default_factory=list)
    parse_error: str | None = None
    engine: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.total, "dimensions": self.dimensions, "parse_error": self.parse_error,
                "items": [{"dimension": i.dimension, "name": i.name, "credit": i.credit, "reason": i.reason}
                          for i in self.items]}


def _close(stated: float, truth: float, rel: float, floor: float) -> bool:
    return figure_credit(stated, truth, rel, floor, graded=False) == 1.0


def figure_credit(stated: float, truth: float, rel: float, floor: float, *, graded: bool = True,
                  floor_near_zero_only: bool = False) -> float:
    """The credit of a stated figure against the engine's.

    1 within ``full = max(rel x |truth|, floor)`` of the truth; when ``graded``, beyond it
    ``((zero - error) / (zero - full)) ** 2`` down to 0 at ``zero = max(ZERO_CREDIT_REL x |truth|,
    FLOOR_TO_ZERO x floor)``; not graded, 0. The square (not a straight line) keeps a figure 20% off near
    nothing: the figure gate passes a figure's credit on to the position's structure items, and on a straight
    line every figure 20% off would still carry a quarter of the structure.

    With ``floor_near_zero_only`` (Greeks) the absolute floor applies only where the truth is below it (near
    zero: a hedged position's delta); elsewhere both bounds are relative alone.
    """
    if math.isinf(truth) or math.isinf(stated):
        return float(math.isinf(truth) and math.isinf(stated) and (truth > 0) == (stated > 0))
    size = abs(truth)
    if floor_near_zero_only and size >= floor:
        full, zero = rel * size, ZERO_CREDIT_REL * size
    else:
        full, zero = max(rel * size, floor), max(ZERO_CREDIT_REL * size, FLOOR_TO_ZERO * floor)
    error = abs(stated - truth)
    if error <= full * (1.0 + 1e-9):  # a figure exactly at the tolerance (5.0% off) is within it, rounding aside
        return 1.0
    if not graded or error >= zero or zero <= full:
        return 0.0
    return ((zero - error) / (zero - full)) ** 2


def _score_number(answer: dict[str, Any], name: str, truth: Any, rel: float, floor: float, *,
                  graded: bool = True, floor_near_zero_only: bool = False) -> tuple[float, str]:
    """The credit of ``answer[name]`` against ``truth`` (see :func:`figure_credit`); a list (breakevens) is all or nothing."""
    if name not in answer or answer[name] is None:
        return 0.0, "missing"
    try:
        if isinstance(truth, list):
            raw = answer[name]
            stated = [_number(x, name) for x in (raw if isinstance(raw, list) else [raw])]
            if len(stated) != len(truth):
                return 0.0, f"stated {len(stated)} values, the engine finds {len(truth)}: {[round(t, 4) for t in truth]}"
            ok = all(_close(s, t, 0.0, floor) for s, t in zip(sorted(stated), truth, strict=True))
            return (1.0, "ok") if ok else (0.0, f"stated {sorted(stated)}, engine {[round(t, 4) for t in truth]}")
        stated_value = _number(answer[name], name)
    except AnswerError as exc:
        return 0.0, str(exc)
    credit = figure_credit(stated_value, float(truth), rel, floor, graded=graded, floor_near_zero_only=floor_near_zero_only)
    if credit == 1.0:
        return 1.0, "ok"
    why = f"stated {stated_value:.6g}, engine {float(truth):.6g}"
    return credit, (f"{why}: a near miss, {credit:.0%} of the item" if credit > 0 else why)


def score_answer(task: dict[str, Any], raw_answer: Any) -> ScoreCard:
    """Score an answer (text or dict) against the engine. Never raises on the answer's content."""
    items: list[ItemScore] = []
    ask = task["ask"]
    try:
        answer = parse_answer(raw_answer)
    except AnswerError as exc:
        for dim in DIMENSIONS:
            for name in ask[dim]:
                items.append(ItemScore(dim, name, 0.0, f"answer unreadable: {exc}"))
        return _card(items, parse_error=str(exc))
    as_of = task["market"]["as_of"]
    legs: list[OptionLeg] = []
    leg_error = None
    raw_legs = answer.get("legs")
    if not isinstance(raw_legs, list) or not raw_legs:
        leg_error = "no legs given"
    else:
        try:
            legs = [parse_leg(leg, as_of) for leg in raw_legs]
        except AnswerError as exc:
            leg_error = str(exc)
    contracts_stated = answer.get("contracts")
    try:
        contracts = _number(contracts_stated, "contracts") if contracts_stated is not None else None
        if contracts is not None and not (math.isfinite(contracts) and contracts > 0):
            raise AnswerError(f"contracts must be > 0; got {contracts_stated!r}")
    except AnswerError as exc:
        contracts, leg_error = None, leg_error or str(exc)
    given = task.get("given_legs")
    eval_contracts = float(task["contracts"]) if task.get("contracts") else (contracts or 1.0)
    engine: dict[str, Any] | None = None
    engine_error = leg_error
    eval_legs = [parse_leg(leg) for leg in given] if given else legs
    if not engine_error or given:
        try:
            engine = engine_numbers(task, eval_legs, eval_contracts)
            engine_error = None
        except (AnswerError, PricingError) as exc:
            engine_error = str(exc)
    mult = float(task["market"]["multiplier"])
    money_floor = MONEY_ABS_FLOOR * mult * eval_contracts
    spot = float(task["market"]["spot"])
    # P&L and Greeks: stated numbers against the engine
    for name in ask["pnl"]:
        if engine is None:
            items.append(ItemScore("pnl", name, 0.0, f"no position to check against: {engine_error}"))
            continue
        if name == "breakevens":
            credit, why = _score_number(answer, name, engine[name], 0.0, BREAKEVEN_TOL * spot)
        elif name == "pop":
            credit, why = _score_number(answer, name, engine[name], 0.0, POP_TOL, graded=False)
        elif name == "contracts_allowed":
            credit, why = _score_number(answer, "contracts", engine["max_contracts"], 0.0, 1e-9, graded=False)
        else:
            credit, why = _score_number(answer, name, engine[name], MONEY_REL_TOL, money_floor)
        items.append(ItemScore("pnl", name, credit, why))
    for name in ask["greeks"]:
        if engine is None:
            items.append(ItemScore("greeks", name, 0.0, f"no position to check against: {engine_error}"))
            continue
        credit, why = _score_number(answer, name, engine[name], GREEK_REL_TOL, GREEK_FLOORS[name] * mult * eval_contracts,
                                    floor_near_zero_only=True)
        items.append(ItemScore("greeks", name, credit, why))
    items += _strategy_items(task, answer, legs, leg_error, engine, engine_error, money_floor)
    items += _risk_items(task, answer, contracts, engine, engine_error, mult)
    return _card(_gate_structure(items), engine=engine or {})


#: Items that state a figure the engine computes (everything else checks structure or a rule).
FIGURE_DIMENSIONS = ("pnl", "greeks")
FIGURE_ITEMS = ("net_premium", "hedge")


def _gate_structure(items: list[ItemScore]) -> list[ItemScore]:
    """Structure and rule items earn credit only in proportion to the figures stated right.

    The mean credit of the task's figure items (every P&L and Greek number, the net premium, the hedge;
    a near miss counts with its partial credit) multiplies every other item's credit, so restating a
    task's legs, or the right legs with wrong or no numbers, earns nothing by itself, and the right legs
    with figures a little off keep most of their credit. A task that asks no figure is not gated.
    """
    figures = [i for i in items if i.dimension in FIGURE_DIMENSIONS or i.name in FIGURE_ITEMS]
    if not figures:
        return items
    share = sum(i.credit for i in figures) / len(figures)
    if share >= 1.0:
        return items
    figure_ids = {id(i) for i in figures}
    out = []
    for item in items:
        if id(item) in figure_ids or item.credit == 0.0:
            out.append(item)
            continue
        near = sum(0.0 < i.credit < 1.0 for i in figures)
        note = (f"counted at {share:.0%}: {sum(i.credit == 1.0 for i in figures)} of {len(figures)} figures right"
                + (f", {near} near misses" if near else ""))
        out.append(ItemScore(item.dimension, item.name, item.credit * share,
                             note if item.reason == "ok" else f"{item.reason}; {note}"))
    return out


def _strategy_items(task: dict[str, Any], answer: dict[str, Any], legs: list[OptionLeg], leg_error: str | None,
                    engine: dict[str, Any] | None, engine_error: str | None, money_floor: float) -> list[ItemScore]:
    out = []
    mult = float(task["market"]["multiplier"])
    if not leg_error and not task.get("given_legs"):  # a position built from contracts not on offer is no position
        for leg in legs:
            if leg.kind != "stock":
                try:
                    _quote_for(task, leg)
                except AnswerError as exc:
                    leg_error = str(exc)
                    break
    for name in task["ask"]["strategy"]:
        if name == "legs_valid":
            out.append(ItemScore("strategy", name, 0.0 if leg_error else 1.0, leg_error or "ok"))
        elif name == "legs_match":
            if leg_error:
                out.append(ItemScore("strategy", name, 0.0, leg_error))
                continue
            want = sorted(_leg_key(parse_leg(leg)) for leg in task["given_legs"])
            have = sorted(_leg_key(leg) for leg in legs)
            ok = want == have
            out.append(ItemScore("strategy", name, float(ok), "ok" if ok else f"legs {have} differ from the task's {want}"))
        elif name == "template":
            if leg_error:
                out.append(ItemScore("strategy", name, 0.0, leg_error))
                continue
            found, why = classify(legs, mult)
            ok = found == task["template"]
            out.append(ItemScore("strategy", name, float(ok),
                                 "ok" if ok else f"asked for {task['template']}, the legs form {found or 'none'} ({why})"))
        elif name == "strikes_ordered":
            ok = not leg_error and strikes_ordered(task["template"], legs)
            out.append(ItemScore("strategy", name, float(ok), "ok" if ok else leg_error or
                                 f"strikes not in {task['template']} order ({TEMPLATES[task['template']][1]})"))
        elif name == "outlook":
            found = classify(legs, mult)[0] if not leg_error else None
            ok = found is not None and TEMPLATES[found][0] == task["outlook"]
            out.append(ItemScore("strategy", name, float(ok), "ok" if ok else
                                 f"asked for a {task['outlook']} position; the legs form {found or 'no template'}"))
        elif name == "net_premium":
            if engine is None:
                out.append(ItemScore("strategy", name, 0.0, f"no position to check against: {engine_error}"))
                continue
            credit, why = _score_number(answer, "net_premium", engine["net_premium"], MONEY_REL_TOL, money_floor)
            out.append(ItemScore("strategy", name, credit, why))
    return out


def _leg_key(leg: OptionLeg) -> tuple[Any, ...]:
    return (leg.side, leg.kind, round(leg.quantity, 9), leg.strike, leg.expiry)


def _risk_items(task: dict[str, Any], answer: dict[str, Any], contracts: float | None,
                engine: dict[str, Any] | None, engine_error: str | None, mult: float) -> list[ItemScore]:
    out = []
    for name in task["ask"]["risk"]:
        if name == "exit_rule":
            out.append(_exit_item(answer, engine))
            continue
        if engine is None:
            out.append(ItemScore("risk", name, 0.0, f"no position to check against: {engine_error}"))
            continue
        if name == "within_budget":
            ok = contracts is not None and engine["max_loss"] <= engine["risk_budget"] + 1e-6
            why = "contracts missing" if contracts is None else (
                "ok" if ok else f"max loss {engine['max_loss']:.2f} exceeds the budget {engine['risk_budget']:.2f}")
            out.append(ItemScore("risk", name, float(ok), why))
        elif name == "sizing":
            want = engine["max_contracts"]
            ok = contracts is not None and want >= 1 and math.isclose(contracts, want)
            out.append(ItemScore("risk", name, float(ok), "ok" if ok else
                                 f"contracts {contracts}, the largest count within the budget is {want}"))
        elif name == "hedge":
            hedge = answer.get("hedge")
            shares = hedge.get("shares") if isinstance(hedge, dict) else hedge
            if shares is None:
                out.append(ItemScore("risk", name, 0.0, "missing"))
                continue
            try:
                stated = _number(shares, "hedge shares")
            except AnswerError as exc:
                out.append(ItemScore("risk", name, 0.0, str(exc)))
                continue
            truth = engine["hedge_shares"]
            credit = figure_credit(stated, truth, HEDGE_REL_TOL, 1.0 if mult > 1 else 0.01)
            why = f"hedge {stated:.4g} shares; delta-neutral is {truth:.4g}"
            out.append(ItemScore("risk", name, credit, "ok" if credit == 1.0 else
                                 f"{why}: a near miss, {credit:.0%} of the item" if credit > 0 else why))
    return out


def _exit_item(answer: dict[str, Any], engine: dict[str, Any] | None) -> ItemScore:
    rule = answer.get("exit")
    if not isinstance(rule, dict):
        return ItemScore("risk", "exit_rule", 0.0, "missing (an object with take_profit and stop_loss)")
    try:
        take = _number(rule.get("take_profit"), "take_profit")
        stop = _number(rule.get("stop_loss"), "stop_loss")
    except AnswerError as exc:
        return ItemScore("risk", "exit_rule", 0.0, str(exc))
    if engine is None:
        return ItemScore("risk", "exit_rule", 0.0, "no position to check the levels against")
    cap_profit = engine["max_profit"] if math.isfinite(engine["max_profit"]) else math.inf
    cap_loss = engine["max_loss"] if math.isfinite(engine["max_loss"]) else math.inf
    if not (0 < take <= cap_profit + 1e-6):
        return ItemScore("risk", "exit_rule", 0.0, f"take_profit {take} must be in (0, max profit {cap_profit:.2f}]")
    if not (0 < stop <= cap_loss + 1e-6):
        return ItemScore("risk", "exit_rule", 0.0, f"stop_loss {stop} must be in (0, max loss {cap_loss:.2f}]")
    return ItemScore("risk", "exit_rule", 1.0, "ok")


def _card(items: list[ItemScore], parse_error: str | None = None, engine: dict[str, Any] | None = None) -> ScoreCard:
    applicable = [dim for dim in DIMENSIONS if any(i.dimension == dim for i in items)] or list(DIMENSIONS)
    weight = 100.0 / len(applicable)
    dims: dict[str, float | None] = {}
    for dim in DIMENSIONS:
        mine = [i.credit for i in items if i.dimension == dim]
        dims[dim] = weight * (sum(mine) / len(mine)) if mine else (None if dim not in applicable else 0.0)
    return ScoreCard(total=sum(v for v in dims.values() if v is not None), dimensions=dims, items=items, parse_error=parse_error,
                     engine=engine or {})
