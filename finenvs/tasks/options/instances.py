"""FinOptions-v0 task instances generated from a chain and a seed.

A generated task starts from an :class:`~finenvs.data.chains.OptionChain` (a
generated snapshot for any shipped date, or the real SPY chain) and picks, with
the caller's ``numpy.random.Generator``, what to ask. The contracts on offer are
up to three expiries (nearest 30, 60 and 90 days, at least 7) and up to 15
strikes around the money within 12% of spot; a quote's premium is the chain's
mid rounded to the cent, its vol the chain's implied vol. PoP uses the ATM
implied vol of the first expiry on offer (stated in the prompt).

Kinds (what the agent is asked, see :mod:`finenvs.tasks.options.core` for scoring):

| kind | position | P&L items | Strategy items | Risk items |
|---|---|---|---|---|
| ``strategy`` | the agent builds the requested template | max profit, max loss, breakevens, PoP | legs valid, template, strike order, outlook, net premium | within budget, sizing, hedge, exit |
| ``pricing`` | long 1 European option from S, K, T, r, q, sigma | price, max loss, breakeven | legs match, net premium | hedge, exit |
| ``greeks`` | 2-3 given legs | mark-to-model value | legs match, net premium | hedge, exit |
| ``attribution`` | a long option re-marked days later | total, delta, gamma, theta, vega, unexplained P&L | legs match | hedge, exit |
| ``sizing`` | a given credit spread | max loss per spread, contracts allowed, buying power, 1-day 95% VaR | legs match, net premium | within budget, sizing, hedge, exit |

Every task asks for delta, gamma, vega and theta of its position.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from finenvs.data.chains import OptionChain
from finenvs.pricing import bsm_price
from finenvs.tasks.options.core import (
    KINDS,
    TEMPLATE_NAMES,
    TEMPLATES,
    build_template,
    engine_numbers,
)

MULTIPLIER = 100.0
TARGET_DAYS = (30, 60, 90)
MAX_STRIKES = 15
STRIKE_SPAN = 0.12
ACCOUNTS = (25_000.0, 50_000.0, 100_000.0, 250_000.0, 1_000_000.0)
RISK_PCTS = (0.01, 0.02, 0.05)
GREEKS_ASK = ["delta", "gamma", "vega", "theta"]

ASK: dict[str, dict[str, list[str]]] = {
    "strategy": {"pnl": ["max_profit", "max_loss", "breakevens", "pop"], "greeks": GREEKS_ASK,
                 "strategy": ["legs_valid", "template", "strikes_ordered", "outlook", "net_premium"],
                 "risk": ["within_budget", "sizing", "hedge", "exit_rule"]},
    "pricing": {"pnl": ["price", "max_loss", "breakevens"], "greeks": GREEKS_ASK,
                "strategy": ["legs_match", "net_premium"], "risk": ["hedge", "exit_rule"]},
    "greeks": {"pnl": ["value"], "greeks": GREEKS_ASK, "strategy": ["legs_match", "net_premium"],
               "risk": ["hedge", "exit_rule"]},
    "attribution": {"pnl": ["total_pnl", "delta_pnl", "gamma_pnl", "theta_pnl", "vega_pnl", "unexplained"],
                    "greeks": GREEKS_ASK, "strategy": ["legs_match"], "risk": ["hedge", "exit_rule"]},
    "sizing": {"pnl": ["max_loss_per_unit", "contracts_allowed", "buying_power", "var_95"], "greeks": GREEKS_ASK,
               "strategy": ["legs_match", "net_premium"], "risk": ["within_budget", "sizing", "hedge", "exit_rule"]},
}

#: answer key the agent must state for each scored item
ITEM_KEYS = {"contracts_allowed": "contracts", "legs_valid": "legs", "legs_match": "legs", "template": "legs",
             "strikes_ordered": "legs", "outlook": "legs", "within_budget": "contracts", "sizing": "contracts",
             "hedge": "hedge.shares", "exit_rule": "exit.take_profit, exit.stop_loss"}


def _nearest(listed: list[int], target: int) -> int:
    """The listed days to expiry nearest ``target`` (the earlier one on a tie)."""
    return min(listed, key=lambda d: (abs(d - target), d))


def offered_quotes(chain: OptionChain) -> list[dict[str, Any]]:
    """The contracts a task offers (module docstring), as JSON-able dicts."""
    days = chain.days_to_expiry()
    listed = sorted({int(d) for d in days if d >= 7})
    if not listed:
        raise ValueError(f"the {chain.symbol} chain of {chain.snapshot} has no expiry 7 or more days out")
    chosen = sorted({_nearest(listed, t) for t in TARGET_DAYS})
    quotes = []
    for d in chosen:
        mask = (days == d) & (np.abs(chain.strike / chain.spot - 1.0) <= STRIKE_SPAN) & (chain.mid > 0.005)
        strikes = np.unique(chain.strike[mask])
        both = [k for k in strikes if ((chain.strike == k) & mask & (chain.option_type == "call")).any()
                and ((chain.strike == k) & mask & (chain.option_type == "put")).any()]
        if len(both) > MAX_STRIKES:
            atm = int(np.argmin(np.abs(np.asarray(both) - chain.spot)))
            stride = math.ceil(len(both) / MAX_STRIKES)
            picked = [both[i] for i in range(atm % stride, len(both), stride)]
            both = picked[:MAX_STRIKES]
        for k in both:
            for kind in ("call", "put"):
                i = int(np.flatnonzero(mask & (chain.strike == k) & (chain.option_type == kind))[0])
                quotes.append({"type": kind, "strike": float(k), "expiry": str(chain.expiry[i]), "days": int(d),
                               "premium": round(float(chain.mid[i]), 2), "iv": float(chain.implied_vol[i])})
    return quotes


def _market(chain: OptionChain, quotes: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    first = min(q["days"] for q in quotes)
    near = [q for q in quotes if q["days"] == first]
    atm = min(near, key=lambda q: (abs(q["strike"] - chain.spot), q["type"]))
    return {"symbol": chain.symbol, "as_of": str(chain.snapshot), "spot": float(chain.spot), "rate": float(rate),
            "dividend_yield": float(chain.dividend_yield or 0.0), "multiplier": MULTIPLIER,
            "pop_vol": float(atm["iv"]), "chain_source": chain.source}


def make_task(chain: OptionChain, rng: np.random.Generator, *, kind: str | None = None,
              template: str | None = None, rate: float | None = None, task_id: str = "") -> dict[str, Any]:
    """One task instance from ``chain`` (module docstring); ``kind``/``template`` are drawn when None."""
    kind = kind if kind is not None else str(rng.choice(KINDS))
    quotes = offered_quotes(chain)
    r = float(rate if rate is not None else (chain.rate if chain.rate is not None else 0.0))
    market = _market(chain, quotes, r)
    task: dict[str, Any] = {"id": task_id, "kind": kind, "source": f"generated from the {chain.source} "
                            f"{chain.symbol} chain of {chain.snapshot}", "market": market, "quotes": quotes,
                            "given_legs": None, "template": None, "outlook": None, "budget": None, "contracts": None,
                            "ask": ASK[kind]}
    builder = {"strategy": _strategy, "pricing": _pricing, "greeks": _greeks, "attribution": _attribution,
               "sizing": _sizing}[kind]
    builder(task, rng, template)
    task["prompt"] = render_prompt(task)
    return task


def _budget(task: dict[str, Any], rng: np.random.Generator, legs: list[Any]) -> None:
    """A budget whose risk allowance fits 1 to about 20 units of ``legs``."""
    per_unit = engine_numbers({**task, "budget": None}, legs, 1.0)["max_loss"]
    risk_pct = float(rng.choice(RISK_PCTS))
    fits = [a for a in ACCOUNTS if 1 <= a * risk_pct / per_unit <= 25]
    account = float(rng.choice(fits)) if fits else float(math.ceil(per_unit * rng.integers(2, 12) / risk_pct / 1000) * 1000)
    task["budget"] = {"account": account, "risk_pct": risk_pct}


def _strategy(task: dict[str, Any], rng: np.random.Generator, template: str | None) -> None:
    template = template if template is not None else str(rng.choice(TEMPLATE_NAMES))
    task["template"], task["outlook"] = template, TEMPLATES[template][0]
    _budget(task, rng, build_template(task, template, center=0, width=1, expiry_index=0))


def _pick(task: dict[str, Any], rng: np.random.Generator, kind: str | None = None, expiry: str | None = None,
          near_money: int = 4) -> dict[str, Any]:
    pool = [q for q in task["quotes"] if (kind is None or q["type"] == kind) and (expiry is None or q["expiry"] == expiry)]
    spot = task["market"]["spot"]
    pool.sort(key=lambda q: abs(q["strike"] - spot))
    return pool[int(rng.integers(0, min(near_money * 2, len(pool))))]


def _leg(side: str, quote: dict[str, Any], quantity: float = 1.0) -> dict[str, Any]:
    return {"side": side, "type": quote["type"], "strike": quote["strike"], "expiry": quote["expiry"],
            "quantity": quantity}


def _pricing(task: dict[str, Any], rng: np.random.Generator, _template: str | None) -> None:
    q = dict(_pick(task, rng))
    m = task["market"]
    sigma = round(float(q["iv"]), 4)
    q["iv"] = sigma
    q["premium"] = float(bsm_price(m["spot"], q["strike"], q["days"] / 365.0, m["rate"], m["dividend_yield"], sigma,
                                   q["type"]))
    task["quotes"] = [q]
    task["market"]["pop_vol"] = sigma
    task["given_legs"] = [_leg("buy", q)]
    task["contracts"] = 1


def _greeks(task: dict[str, Any], rng: np.random.Generator, _template: str | None) -> None:
    n = int(rng.integers(2, 4))
    legs: list[dict[str, Any]] = []
    used: set[tuple[Any, Any, Any]] = set()
    while len(legs) < n:
        q = _pick(task, rng, near_money=6)
        key = (q["type"], q["strike"], q["expiry"])
        if key in used:
            continue
        used.add(key)
        legs.append(_leg(str(rng.choice(["buy", "sell"])), q, float(rng.integers(1, 11))))
    task["given_legs"] = legs
    task["contracts"] = 1


def _attribution(task: dict[str, Any], rng: np.random.Generator, _template: str | None) -> None:
    q = _pick(task, rng)
    m = task["market"]
    qty = float(rng.integers(1, 11))
    days_passed = int(rng.integers(1, min(8, q["days"])))
    vol1 = max(0.05, q["iv"] + float(rng.uniform(-0.03, 0.03)))
    spot1 = round(m["spot"] * float(np.exp(rng.normal(0.0, 0.03))), 2)
    task["attribution"] = {"type": q["type"], "strike": q["strike"], "quantity": qty, "spot0": m["spot"],
                           "spot1": spot1, "vol0": q["iv"], "vol1": vol1, "days0": q["days"],
                           "days_passed": days_passed}
    # the entry premium is the model value at entry, so the position's entry Greeks are the attribution's
    q = dict(q)
    q["premium"] = float(bsm_price(m["spot"], q["strike"], q["days"] / 365.0, m["rate"], m["dividend_yield"],
                                   q["iv"], q["type"]))
    task["quotes"] = [q]
    task["given_legs"] = [_leg("buy", q, qty)]
    task["contracts"] = 1


def _sizing(task: dict[str, Any], rng: np.random.Generator, _template: str | None) -> None:
    template = str(rng.choice(["bull_put_spread", "bear_call_spread"]))
    # an out-of-the-money credit spread; strikes clipped to the listed range could collapse onto one strike,
    # so draws that do are redrawn (then the nearest-the-money spread, which always has two strikes)
    sign = -1 if template == "bull_put_spread" else 1
    for _ in range(20):
        legs = build_template(task, template, center=sign * int(rng.integers(1, 4)), width=int(rng.integers(1, 3)),
                              expiry_index=0)
        if legs[0].strike != legs[1].strike and engine_numbers({**task, "budget": None}, legs, 1.0)["net_premium"] < 0:
            break  # two strikes and a real credit (deep wings can both quote 0.01)
    else:
        legs = build_template(task, template, center=0, width=1, expiry_index=0)
    task["given_legs"] = [leg.to_json() for leg in legs]
    task["template"], task["outlook"] = template, TEMPLATES[template][0]
    task["daily_vol"] = round(float(task["market"]["pop_vol"]) / math.sqrt(252.0), 6)
    _budget(task, rng, legs)


# ----------------------------------------------------------------------------- the prompt
def answer_keys(task: dict[str, Any]) -> list[str]:
    """The answer keys a task's scored items read, besides ``legs`` and ``contracts``, in ask order."""
    keys: list[str] = []
    for dim in ("pnl", "greeks", "strategy", "risk"):
        for item in task["ask"][dim]:
            key = ITEM_KEYS.get(item, item)
            if key not in keys and key not in ("legs", "contracts"):
                keys.append(key)
    return keys


#: The line that opens a generated question's listing of the contracts on offer (one indented line per quote).
LISTING_HEAD = "Contracts on offer (type strike expiry days premium iv):"


def _opening(task: dict[str, Any]) -> str:
    return f"FinOptions task {task['id'] or ''} ({task['kind']})."


def states_its_market(task: dict[str, Any]) -> bool:
    """Whether the task's question opens with its id, kind and market (a generated question; a bank item's is the
    published text)."""
    return task["prompt"].startswith(_opening(task) + " Market at the close of ")


def question_with_pointer(task: dict[str, Any], tool: str) -> str:
    """The task's question with its listing of the contracts on offer replaced by one line pointing to ``tool``
    (which returns the same contracts); a question without a listing (a bank item's, a pricing task's) as it is.

    For a prompt sent beside the tools: the listing is most of a generated question, and ``tool`` gives it in full.
    """
    lines = task["prompt"].split("\n")
    if LISTING_HEAD not in lines:
        return task["prompt"]
    at = lines.index(LISTING_HEAD)
    end = at + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    expiries = sorted({str(q["expiry"]) for q in task["quotes"]})
    pointer = (f"Contracts on offer: {len(task['quotes'])} quotes (call and put per strike) expiring "
               f"{', '.join(expiries)}; {tool} lists them (type, strike, premium, iv per expiry).")
    return "\n".join([*lines[:at], pointer, *lines[end:]])


def _money(x: float) -> str:
    return f"{x:,.2f}"


def render_prompt(task: dict[str, Any]) -> str:
    """The text an agent reads: the market, the contracts, the question and the numbers to state."""
    m = task["market"]
    mult = m["multiplier"]
    lines = [
        f"{_opening(task)} Market at the close of {m['as_of']}: "
        f"{m['symbol']} spot {_money(m['spot'])}, risk-free rate {m['rate']:.4%} (continuous), dividend yield "
        f"{m['dividend_yield']:.2%}. One contract = {mult:g} shares. Time in years = calendar days / 365.",
    ]
    kind = task["kind"]
    if kind == "strategy":
        b = task["budget"]
        lines.append(
            f"Build a {task['template'].replace('_', ' ')} ({TEMPLATES[task['template']][1]}) for a "
            f"{task['outlook']} outlook, using only the contracts below at their quoted premiums. Account "
            f"{_money(b['account'])}, risk budget {b['risk_pct']:.0%} of it: hold the largest number of units "
            "(contracts) whose max loss at expiry fits the budget."
        )
    elif kind == "pricing":
        q = task["quotes"][0]
        lines.append(
            f"Price a European {q['type']} with strike {q['strike']:g} expiring {q['expiry']} ({q['days']} days) "
            f"by Black-Scholes-Merton with volatility {q['iv']:.2%}. You buy 1 contract at that fair value."
        )
    elif kind == "greeks":
        lines.append("You hold the position below (premiums are the quotes). State its model value and Greeks, "
                     "and the stock trade that makes it delta-neutral.")
    elif kind == "attribution":
        a = task["attribution"]
        lines.append(
            f"You bought {a['quantity']:g} {a['type']} contracts, strike {a['strike']:g}, {a['days0']} days to expiry, "
            f"at the model value (spot {_money(a['spot0'])}, vol {a['vol0']:.2%}). {a['days_passed']} days later spot is "
            f"{_money(a['spot1'])} and vol {a['vol1']:.2%}. Revalue by Black-Scholes-Merton and attribute the P&L with "
            "the entry Greeks: delta_pnl = delta*dS, gamma_pnl = gamma*dS^2/2, theta_pnl = theta*days, vega_pnl = "
            "vega*(vol change in points); unexplained = total - their sum. Hedge and Greeks at entry."
        )
    elif kind == "sizing":
        b = task["budget"]
        lines.append(
            f"You want to sell the credit spread below. Account {_money(b['account'])}, risk budget {b['risk_pct']:.0%}. "
            "State the max loss per spread, the largest number of spreads within the budget (as contracts), the "
            f"buying power (= max loss of the position held) and the 1-day 95% delta-normal VaR with daily vol "
            f"{task['daily_vol']:.4%} (VaR = |delta x spot| x daily vol x 1.645)."
        )
    if task.get("given_legs"):
        lines.append("Position (per unit): " + "; ".join(
            f"{leg['side']} {leg['quantity']:g} {leg['type']} {leg.get('strike', '')} {leg.get('expiry', '')}".strip()
            for leg in task["given_legs"]))
    if kind != "pricing":
        lines.append(LISTING_HEAD)
        for q in task["quotes"]:
            lines.append(f"  {q['type']} {q['strike']:g} {q['expiry']} {q['days']}d {q['premium']:.2f} {q['iv']:.4f}")
    lines.append(f"For probability of profit use a lognormal model at sigma {m['pop_vol']:.4f} with drift r - q. "
                 "Greeks: each option at its own implied vol.")
    keys = answer_keys(task)
    lines.append(
        "Answer with one JSON object (schema: finenvs options_answer.schema.json): legs [{side buy/sell, type "
        "call/put/stock, strike, expiry, quantity}], contracts, and " + ", ".join(keys)
        + ". Money for the whole position (per share x multiplier x contracts); net_premium > 0 is a debit; "
        "delta in shares, vega per vol point, theta per calendar day; hedge.shares < 0 sells stock."
    )
    return "\n".join(lines)
