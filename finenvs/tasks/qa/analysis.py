"""The Analytical Reasoning bank: 18 parametric question generators with answers computed in code.

Each topic of FAB++'s synthetic analytical questions (``SYN_LOGIC_0008`` ..
``SYN_LOGIC_0025``, AgentBusters, MIT) is a pair of functions: a sampler that
draws the question's inputs from a seeded generator, and a builder that writes
the question text and computes every part of the answer from those inputs.

``generate(topic, 0)`` is the published question, with its inputs as published,
and with the answer computed here. Where the published question was ill-posed
or its answer wrong (``envs_data/questions/errata`` and ``PUBLISHED`` below say
which and why), seed 0 is the *corrected* question: the wording states what the
published one left ambiguous, or an inconsistent input is replaced by the value
its published answer implies. Any other seed draws fresh inputs (re-drawn if
they would equal the published ones), so a model cannot have memorised the
answer.

Inputs are rounded to the precision a person would write in the question; the
answer is computed from the rounded inputs, so the text and the truth agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.scoring.qa import Part
from finenvs.tasks.qa.items import QAItem


def _money(x: float, digits: int = 2) -> str:
    """$1,234.56 / $1,234 (integers without decimals)."""
    if float(x).is_integer():
        return f"${x:,.0f}"
    return f"${x:,.{digits}f}"


def _millions(x: float) -> str:
    return f"${x / 1e6:,.{0 if (x / 1e6).is_integer() else 1}f} million"


def _pct(x: float, digits: int = 2) -> str:
    """0.055 -> '5.5%' (no trailing zeros)."""
    text = f"{100 * x:.{digits}f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _r(x: float, step: float) -> float:
    """Round to a multiple of ``step`` (float noise removed)."""
    return float(round(round(x / step) * step, 10))


@dataclass(frozen=True)
class Topic:
    """One generator: ``sample(rng) -> inputs`` and ``build(inputs) -> (question, parts, steps)``."""

    name: str
    published_id: str
    published_inputs: dict[str, Any]
    published_answer: Any
    erratum: str
    sample: Callable[[np.random.Generator], dict[str, Any]]
    build: Callable[[dict[str, Any]], tuple[str, tuple[Part, ...], tuple[str, ...]]]


# ----------------------------------------------------------------------------- 1 NPV crossover
def _npv_sample(rng: np.random.Generator) -> dict[str, Any]:
    invest = _r(rng.uniform(50_000, 500_000), 10_000)
    cf1 = _r(invest * rng.uniform(1.1, 1.8), 1_000)
    cf2 = _r(cf1 * (1 + rng.uniform(0.05, 0.35)), 1_000)
    return {"investment": invest, "cash_flow_a_year1": cf1, "cash_flow_b_year2": cf2}


def _npv_values(x: dict[str, Any]) -> dict[str, float]:
    a, b = x["cash_flow_a_year1"], x["cash_flow_b_year2"]
    r = b / a - 1
    return {"one_plus_r": b / a, "pv_inflow": a / (1 + r), "discount_rate": r}


def _npv_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    i, a, b = x["investment"], x["cash_flow_a_year1"], x["cash_flow_b_year2"]
    r = _npv_values(x)["discount_rate"]
    q = (f"A company has two mutually exclusive projects. Project A requires {_money(i)} investment and returns "
         f"{_money(a)} in Year 1. Project B requires {_money(i)} investment and returns {_money(b)} in Year 2. "
         "At what discount rate are the two projects equally attractive (i.e., have equal NPV)?")
    steps = (f"NPV_A = -{i:g} + {a:g}/(1+r); NPV_B = -{i:g} + {b:g}/(1+r)^2",
             f"equal NPV: {a:g}(1+r) = {b:g}", f"r = {b:g}/{a:g} - 1 = {r:.6f}")
    return q, (Part("discount_rate", r, "percent", "the discount rate", aliases=("rate", "r")),), steps


# ----------------------------------------------------------------------------- 2 beta targeting
def _beta_sample(rng: np.random.Generator) -> dict[str, Any]:
    while True:
        wx = _r(rng.uniform(0.4, 0.8), 0.05)
        wy = _r(1 - wx, 0.05)
        bx, by = _r(rng.uniform(1.1, 1.8), 0.05), _r(rng.uniform(0.5, 1.0), 0.05)
        if wx * bx + wy * by - 0.05 <= 0.75:  # no lower target to aim for
            continue
        target = _r(rng.uniform(0.7, wx * bx + wy * by - 0.05), 0.05)
        new = (target - wy * by) / bx
        if 0.05 < new < 1 - wy and abs(new - wx) > 0.02:
            return {"weight_x": wx, "beta_x": bx, "weight_y": wy, "beta_y": by, "risk_free": _r(rng.uniform(0.01, 0.05), 0.005),
                    "market_premium": _r(rng.uniform(0.04, 0.08), 0.005), "target_beta": target}


def _beta_values(x: dict[str, Any]) -> dict[str, float]:
    y_part = x["weight_y"] * x["beta_y"]
    return {"beta_y_contribution": y_part, "beta_x_contribution": x["target_beta"] - y_part,
            "weight_x": (x["target_beta"] - x["weight_y"] * x["beta_y"]) / x["beta_x"]}


def _beta_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    new = _beta_values(x)["weight_x"]
    q = (f"An investor holds a portfolio of two stocks: Stock X ({_pct(x['weight_x'])} weight, beta={x['beta_x']:g}) and "
         f"Stock Y ({_pct(x['weight_y'])} weight, beta={x['beta_y']:g}). The risk-free rate is {_pct(x['risk_free'])} and "
         f"the market risk premium is {_pct(x['market_premium'])}. The investor wants a portfolio beta of exactly "
         f"{x['target_beta']:g} by changing only the weight of Stock X: Stock Y stays at {_pct(x['weight_y'])} of the "
         "portfolio and the difference goes into (or comes out of) the risk-free asset, whose beta is 0. What should "
         "the new weight of Stock X be?")
    steps = (f"beta = w_X * {x['beta_x']:g} + {x['weight_y']:g} * {x['beta_y']:g} + w_rf * 0 = {x['target_beta']:g}",
             f"w_X = ({x['target_beta']:g} - {x['weight_y'] * x['beta_y']:g}) / {x['beta_x']:g} = {new:.6f}")
    return q, (Part("weight_x", new, "percent", "the new weight of Stock X", aliases=("weight",)),), steps


# ----------------------------------------------------------------------------- 3 bond replication
def _bond_sample(rng: np.random.Generator) -> dict[str, Any]:
    years = int(rng.integers(3, 11))
    c1 = _r(rng.uniform(0.03, 0.07), 0.005)
    c2 = _r(c1 + rng.choice([-1, 1]) * rng.uniform(0.01, 0.03), 0.005)
    c2 = max(c2, 0.01)
    if c2 == c1:
        c2 = c1 + 0.01
    y = rng.uniform(0.02, 0.08)
    zero = _r(1000 / (1 + y) ** years, 1)
    annuity = sum((1 + y) ** -t for t in range(1, years + 1))
    p1 = _r(1000 * c1 * annuity + zero, 1)
    return {"years": years, "zero_price": zero, "coupon_1": c1, "price_1": p1, "coupon_2": c2}


def _bond_values(x: dict[str, Any]) -> dict[str, float]:
    z, c1, p1, c2 = x["zero_price"], x["coupon_1"], x["price_1"], x["coupon_2"]
    units = c2 / c1
    return {"coupon_bond_units": units, "zero_units": 1 - units, "price": units * p1 + (1 - units) * z}


def _bond_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    n, z, c1, p1, c2 = x["years"], x["zero_price"], x["coupon_1"], x["price_1"], x["coupon_2"]
    values = _bond_values(x)
    units, price = values["coupon_bond_units"], values["price"]
    par = " at par" if p1 == 1000 else ""
    q = (f"A zero-coupon bond with face value $1,000 matures in {n} years and currently trades at {_money(z)}. A coupon "
         f"bond with the same maturity pays {_pct(c1)} annual coupons and trades{par} at {_money(p1)}. Using only "
         f"these two bonds, what is the arbitrage-free price of a {n}-year bond paying {_pct(c2)} annual coupons with "
         "face value $1,000? (Replicate its cash flows with the two bonds.)")
    steps = (f"hold {c2:g}/{c1:g} = {units:.6f} coupon bonds for the {1000 * c2:g} coupons",
             f"and {1 - units:.6f} zeros so the face value is 1,000",
             f"price = {units:.6f} * {p1:g} + {1 - units:.6f} * {z:g} = {price:.4f}")
    return q, (Part("price", price, "number", "the bond's price in $", aliases=("bond_price",)),), steps


# ----------------------------------------------------------------------------- 4 FCFF
def _fcff_sample(rng: np.random.Generator) -> dict[str, Any]:
    while True:
        ebit = _r(rng.uniform(5e6, 200e6), 1e6)
        x = {"ebit": ebit, "depreciation": _r(ebit * rng.uniform(0.05, 0.4), 1e6),
             "capex": _r(ebit * rng.uniform(0.1, 0.5), 1e6), "working_capital_increase": _r(ebit * rng.uniform(0, 0.2), 1e6),
             "tax_rate": _r(rng.uniform(0.15, 0.35), 0.01)}
        if abs(_fcff(x)) > 0.05 * ebit:
            return x


def _fcff(x: dict[str, Any]) -> float:
    return x["ebit"] * (1 - x["tax_rate"]) + x["depreciation"] - x["capex"] - x["working_capital_increase"]


def _fcff_values(x: dict[str, Any]) -> dict[str, float]:
    nopat = x["ebit"] * (1 - x["tax_rate"])
    return {"nopat": nopat, "operating_cash_flow": nopat + x["depreciation"], "fcff": _fcff(x)}


def _fcff_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    value = _fcff_values(x)["fcff"]
    q = (f"Company ABC has EBIT of {_millions(x['ebit'])}, depreciation of {_millions(x['depreciation'])}, capital "
         f"expenditures of {_millions(x['capex'])}, and working capital increase of "
         f"{_millions(x['working_capital_increase'])}. The tax rate is {_pct(x['tax_rate'])}. What is the Free Cash "
         "Flow to Firm (FCFF)?")
    steps = ("FCFF = EBIT (1 - t) + depreciation - capex - increase in working capital",
             f"= {x['ebit']:,.0f} x {1 - x['tax_rate']:g} + {x['depreciation']:,.0f} - {x['capex']:,.0f} - "
             f"{x['working_capital_increase']:,.0f} = {value:,.2f}")
    return q, (Part("fcff", value, "number", "FCFF in $", aliases=("free_cash_flow",)),), steps


# ----------------------------------------------------------------------------- 5 bull call spread
def _spread_sample(rng: np.random.Generator) -> dict[str, Any]:
    k1 = _r(rng.uniform(20, 300), 5)
    width = max(5.0, _r(k1 * rng.uniform(0.05, 0.2), 5))
    c2 = max(0.5, _r(k1 * rng.uniform(0.01, 0.06), 0.5))  # the short call's premium, > 0
    net = min(width - 0.5, max(0.5, _r(width * rng.uniform(0.2, 0.8), 0.5)))  # 0 < net debit < width
    return {"strike_long": k1, "premium_long": c2 + net, "strike_short": k1 + width, "premium_short": c2}


def _spread_values(x: dict[str, Any]) -> dict[str, float]:
    k1, c1, k2, c2 = x["strike_long"], x["premium_long"], x["strike_short"], x["premium_short"]
    net = c1 - c2
    return {"net_debit": net, "spread_width": k2 - k1, "max_profit": k2 - k1 - net, "max_loss": net,
            "breakeven": k1 + net}


def _spread_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    k1, c1, k2, c2 = x["strike_long"], x["premium_long"], x["strike_short"], x["premium_short"]
    net = _spread_values(x)["net_debit"]
    parts = (Part("max_profit", k2 - k1 - net, "number", "maximum profit, $ per share"),
             Part("max_loss", net, "number", "maximum loss as a positive $ amount per share"),
             Part("breakeven", k1 + net, "number", "breakeven price of the underlying, $"))
    q = (f"An investor buys a call option with strike {_money(k1)} for {_money(c1)} and simultaneously sells a call "
         f"option with strike {_money(k2)} for {_money(c2)} (both on the same underlying, same expiration). What is the "
         "maximum profit, maximum loss, and breakeven price of this bull call spread?")
    steps = (f"net premium = {c1:g} - {c2:g} = {net:g} (max loss)", f"max profit = ({k2:g} - {k1:g}) - {net:g}",
             f"breakeven = {k1:g} + {net:g}")
    return q, parts, steps


# ----------------------------------------------------------------------------- 6 ROE with leverage
def _roe_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {"assets": _r(rng.uniform(100e6, 2000e6), 50e6), "debt_to_equity": _r(rng.uniform(0.2, 2.5), 0.1),
            "interest_rate": _r(rng.uniform(0.03, 0.09), 0.005), "tax_rate": _r(rng.uniform(0.15, 0.35), 0.01),
            "roa_ebit": _r(rng.uniform(0.06, 0.2), 0.005)}


def _roe_values(x: dict[str, Any]) -> dict[str, float]:
    a, de = x["assets"], x["debt_to_equity"]
    equity = a / (1 + de)
    debt = a - equity
    ebit = x["roa_ebit"] * a
    interest = x["interest_rate"] * debt
    ni = (ebit - interest) * (1 - x["tax_rate"])
    return {"equity": equity, "debt": debt, "ebit": ebit, "interest": interest, "net_income": ni, "roe": ni / equity}


def _roe_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    a, de = x["assets"], x["debt_to_equity"]
    values = _roe_values(x)
    equity, debt, ebit, interest = values["equity"], values["debt"], values["ebit"], values["interest"]
    ni, roe = values["net_income"], values["roe"]
    q = (f"A firm has {_millions(a)} in assets, a debt-to-equity ratio of {de:g}, and pays {_pct(x['interest_rate'])} "
         f"interest on its debt. The corporate tax rate is {_pct(x['tax_rate'])}. If the firm's ROA, measured as EBIT "
         f"divided by total assets, is {_pct(x['roa_ebit'])}, what is the ROE (net income divided by equity)?")
    steps = (f"equity = {a:,.0f} / (1 + {de:g}) = {equity:,.2f}; debt = {debt:,.2f}",
             f"EBIT = {ebit:,.2f}; interest = {interest:,.2f}; net income = (EBIT - interest)(1 - t) = {ni:,.2f}",
             f"ROE = {ni:,.2f} / {equity:,.2f} = {roe:.6f}")
    return q, (Part("roe", roe, "percent", "ROE"),), steps


# ----------------------------------------------------------------------------- 7 homemade leverage
def _mm_sample(rng: np.random.Generator) -> dict[str, Any]:
    shares = _r(rng.uniform(0.5e6, 10e6), 0.5e6)
    price = _r(rng.uniform(10, 120), 1)
    value = shares * price
    return {"shares_a": shares, "price_a": price, "debt_b": _r(value * rng.uniform(0.2, 0.6), 1e6),
            "interest_rate": _r(rng.uniform(0.03, 0.08), 0.005), "fraction": _r(rng.uniform(0.02, 0.2), 0.01)}


def _mm_values(x: dict[str, Any]) -> dict[str, float]:
    value = x["shares_a"] * x["price_a"]
    f, d = x["fraction"], x["debt_b"]
    return {"firm_a_equity": value, "firm_b_equity": value - d, "firm_a_position": f * value, "borrowing": f * d,
            "own_funds": f * (value - d)}


def _mm_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    value = _mm_values(x)["firm_a_equity"]
    f, d = x["fraction"], x["debt_b"]
    parts = (Part("firm_a_position", f * value, "number", "value of Firm A stock to hold, $", aliases=("buy_a",)),
             Part("borrowing", f * d, "number", "amount to borrow personally, $", aliases=("borrow",)),
             Part("own_funds", f * (value - d), "number", "the investor's own money needed, $",
                  aliases=("net_investment",)))
    q = (f"In a Modigliani-Miller world with no taxes, Firm A is all-equity with {x['shares_a']:,.0f} shares at "
         f"{_money(x['price_a'])} each. Firm B is identical (same assets and operating income) but has "
         f"{_millions(d)} in debt at {_pct(x['interest_rate'])} interest, with remaining equity value of "
         f"{_millions(value - d)}. An investor can borrow personally at {_pct(x['interest_rate'])}. To create a "
         f"'homemade' leveraged position equivalent to owning {_pct(f)} of Firm B's equity out of Firm A's shares, how "
         "much Firm A stock must the investor hold, how much must the investor borrow, and how much of the "
         "investor's own money does the position need?")
    steps = (f"Firm A equity = {value:,.0f}; Firm B equity = {value - d:,.0f}",
             f"hold {f:g} of A = {f * value:,.0f}; borrow {f:g} of B's debt = {f * d:,.0f}",
             f"own funds = {f * value:,.0f} - {f * d:,.0f} = {f * (value - d):,.0f} (the cost of {f:g} of B's equity)")
    return q, parts, steps


# ----------------------------------------------------------------------------- 8 risk-neutral probability
def _rn_sample(rng: np.random.Generator) -> dict[str, Any]:
    r = _r(rng.uniform(0.01, 0.08), 0.005)
    return {"spot": _r(rng.uniform(20, 200), 1), "up": _r(rng.uniform(r + 0.05, 0.4), 0.01),
            "down": _r(rng.uniform(0.05, 0.3), 0.01), "rate": r}


def _rn_values(x: dict[str, Any]) -> dict[str, float]:
    u, d, r = 1 + x["up"], 1 - x["down"], x["rate"]
    return {"u": u, "d": d, "probability": (1 + r - d) / (u - d)}


def _rn_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    values = _rn_values(x)
    u, d, r = values["u"], values["d"], x["rate"]
    p = values["probability"]
    q = (f"A company's stock price follows a binomial model. Currently at {_money(x['spot'])}, it can go up "
         f"{_pct(x['up'])} or down {_pct(x['down'])} each period. The risk-free rate is {_pct(r)} per period. What is "
         "the risk-neutral probability of an up move?")
    steps = (f"u = {u:g}, d = {d:g}", f"p = (1 + r - d) / (u - d) = ({1 + r:g} - {d:g}) / ({u:g} - {d:g}) = {p:.6f}")
    return q, (Part("probability", p, "percent", "the probability (e.g. 57.14% or 0.5714)"),), steps


# ----------------------------------------------------------------------------- 9 PV comparison
def _pv_sample(rng: np.random.Generator) -> dict[str, Any]:
    while True:
        now = _r(rng.uniform(1_000, 100_000), 500)
        years = int(rng.integers(2, 11))
        rate = _r(rng.uniform(0.02, 0.12), 0.005)
        later = _r(now * (1 + rate) ** years * rng.uniform(0.9, 1.1), 100)
        if abs(later / (1 + rate) ** years - now) > 0.005 * now:
            return {"amount_now": now, "amount_later": later, "years": years, "rate": rate}


def _pv_values(x: dict[str, Any]) -> dict[str, float]:
    pv = x["amount_later"] / (1 + x["rate"]) ** x["years"]
    return {"pv_b": pv, "compound_factor": (1 + x["rate"]) ** x["years"], "difference": abs(x["amount_now"] - pv)}


def _pv_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    pv = _pv_values(x)["pv_b"]
    better = "A" if x["amount_now"] > pv else "B"
    diff = abs(x["amount_now"] - pv)
    q = (f"An investor can choose between: (A) receiving {_money(x['amount_now'])} today, or (B) receiving "
         f"{_money(x['amount_later'])} in {x['years']} years. The investor's opportunity cost of capital is "
         f"{_pct(x['rate'])} annually. Which option has higher present value and by how much?")
    steps = (f"PV_B = {x['amount_later']:g} / {1 + x['rate']:g}^{x['years']} = {pv:.4f}",
             f"{better} is higher by |{x['amount_now']:g} - {pv:.4f}| = {diff:.4f}")
    return q, (Part("better_option", better, "choice", "A or B", choices=("A", "B"), aliases=("option", "better")),
               Part("difference", diff, "number", "difference in present value, $")), steps


# ----------------------------------------------------------------------------- 10 duration immunisation
def _dur_sample(rng: np.random.Generator) -> dict[str, Any]:
    da = _r(rng.uniform(1, 8), 0.5)
    db = _r(rng.uniform(da + 5, 30), 0.5)
    return {"liability_duration": _r(rng.uniform(da + 1, db - 1), 0.5), "duration_a": da, "duration_b": db}


def _dur_values(x: dict[str, Any]) -> dict[str, float]:
    dl, da, db = x["liability_duration"], x["duration_a"], x["duration_b"]
    w = (dl - da) / (db - da)
    return {"duration_spread": db - da, "weight_a": 1 - w, "weight_b": w}


def _dur_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    dl, da, db = x["liability_duration"], x["duration_a"], x["duration_b"]
    w = _dur_values(x)["weight_b"]
    q = (f"A pension fund has liabilities with duration of {dl:g} years. It holds two bonds: Bond A with duration "
         f"{da:g} years and Bond B with duration {db:g} years. What percentage of the portfolio should be invested in "
         "Bond B to immunize the portfolio against interest rate changes?")
    steps = (f"w_B {db:g} + (1 - w_B) {da:g} = {dl:g}", f"w_B = ({dl:g} - {da:g}) / ({db:g} - {da:g}) = {w:.6f}")
    return q, (Part("weight_b", w, "percent", "the share in Bond B", aliases=("bond_b", "weight")),), steps


# ----------------------------------------------------------------------------- 11 combined leverage
def _dtl_sample(rng: np.random.Generator) -> dict[str, Any]:
    return {"dol": _r(rng.uniform(1.1, 4.0), 0.1), "dfl": _r(rng.uniform(1.05, 3.0), 0.05),
            "sales_change": _r(rng.choice([-1, 1]) * rng.uniform(0.02, 0.2), 0.01)}


def _dtl_values(x: dict[str, Any]) -> dict[str, float]:
    return {"dtl": x["dol"] * x["dfl"], "ebit_change": x["dol"] * x["sales_change"],
            "eps_change": x["dol"] * x["dfl"] * x["sales_change"]}


def _dtl_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    change = _dtl_values(x)["eps_change"]
    word = "increase" if x["sales_change"] > 0 else "decrease"
    q = (f"A company has operating leverage (DOL) of {x['dol']:g} and financial leverage (DFL) of {x['dfl']:g}. If "
         f"sales {word} by {_pct(abs(x['sales_change']))}, by what percentage will EPS change? (A fall is negative.)")
    steps = (f"DTL = {x['dol']:g} x {x['dfl']:g} = {x['dol'] * x['dfl']:g}",
             f"EPS change = DTL x {x['sales_change']:g} = {change:.6f}")
    return q, (Part("eps_change", change, "percent", "the change in EPS"),), steps


# ----------------------------------------------------------------------------- 12 CAL leverage
def _cal_sample(rng: np.random.Generator) -> dict[str, Any]:
    rf = _r(rng.uniform(0.01, 0.05), 0.005)
    er = _r(rng.uniform(rf + 0.03, 0.18), 0.005)
    return {"expected_return": er, "std_dev": _r(rng.uniform(0.12, 0.45), 0.01), "risk_free": rf,
            "target_return": _r(rng.uniform(er + 0.01, er + 0.1), 0.005)}


def _cal_values(x: dict[str, Any]) -> dict[str, float]:
    w = (x["target_return"] - x["risk_free"]) / (x["expected_return"] - x["risk_free"])
    return {"stock_excess_return": x["expected_return"] - x["risk_free"],
            "target_excess_return": x["target_return"] - x["risk_free"], "leverage": w, "std_dev": w * x["std_dev"]}


def _cal_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    values = _cal_values(x)
    w, sd = values["leverage"], values["std_dev"]
    q = (f"Stock XYZ has an expected return of {_pct(x['expected_return'])} and standard deviation of "
         f"{_pct(x['std_dev'])}. The risk-free rate is {_pct(x['risk_free'])}. An investor wants to create a portfolio "
         f"with expected return of {_pct(x['target_return'])} using Stock XYZ and the risk-free asset. What is the "
         "standard deviation of this portfolio and how much leverage is required (the weight in Stock XYZ, e.g. "
         "1.5 for 150%)?")
    steps = (f"w = ({x['target_return']:g} - {x['risk_free']:g}) / ({x['expected_return']:g} - {x['risk_free']:g}) = {w:.6f}",
             f"sd = w x {x['std_dev']:g} = {sd:.6f}")
    return q, (Part("std_dev", sd, "percent", "portfolio standard deviation", aliases=("standard_deviation",)),
               Part("leverage", w, "number", "weight in Stock XYZ (1.5 = 150%)", aliases=("weight",))), steps


# ----------------------------------------------------------------------------- 13 perpetuity
def _perp_sample(rng: np.random.Generator) -> dict[str, Any]:
    r0 = _r(rng.uniform(0.02, 0.1), 0.0025)
    r1 = _r(r0 + rng.choice([-1, 1]) * rng.uniform(0.0025, 0.02), 0.0025)
    if r1 <= 0.005 or r1 == r0:
        r1 = r0 + 0.01
    return {"coupon": _r(rng.uniform(10, 100), 5), "rate_before": r0, "rate_after": r1}


def _perp_values(x: dict[str, Any]) -> dict[str, float]:
    c, r0, r1 = x["coupon"], x["rate_before"], x["rate_after"]
    return {"price_before": c / r0, "price_after": c / r1, "price_change": r0 / r1 - 1}


def _perp_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    c, r0, r1 = x["coupon"], x["rate_before"], x["rate_after"]
    change = _perp_values(x)["price_change"]
    word = "rise" if r1 > r0 else "fall"
    q = (f"A perpetual bond pays {_money(c)} annually. If interest rates {word} from {_pct(r0)} to {_pct(r1)}, what is "
         "the percentage change in the bond's price? (A fall is negative.)")
    steps = (f"P0 = {c:g}/{r0:g} = {c / r0:.4f}; P1 = {c:g}/{r1:g} = {c / r1:.4f}", f"change = P1/P0 - 1 = {change:.6f}")
    return q, (Part("price_change", change, "percent", "the price change"),), steps


# ----------------------------------------------------------------------------- 14 swap comparative advantage
def _swap_sample(rng: np.random.Generator) -> dict[str, Any]:
    while True:
        fx = _r(rng.uniform(0.03, 0.08), 0.0025)
        sx = _r(rng.uniform(0.0, 0.015), 0.0025)
        fy = _r(fx + rng.uniform(0.005, 0.03), 0.0025)
        sy = _r(sx + rng.uniform(0.0, 0.015), 0.0025)
        if (fy - fx) - (sy - sx) >= 0.0025:
            return {"x_fixed": fx, "x_spread": sx, "y_fixed": fy, "y_spread": sy}


def _swap_values(x: dict[str, Any]) -> dict[str, float]:
    fx, sx, fy, sy = x["x_fixed"], x["x_spread"], x["y_fixed"], x["y_spread"]
    gain = (fy - fx) - (sy - sx)
    return {"fixed_gap": fy - fx, "total_gain": gain, "gain_each": gain / 2,
            "x_spread": sx - gain / 2,  # X wants floating: LIBOR + this
            "y_fixed": fy - gain / 2}  # Y wants fixed


def _swap_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    fx, sx, fy, sy = x["x_fixed"], x["x_spread"], x["y_fixed"], x["y_spread"]
    values = _swap_values(x)
    gain, x_pays, y_pays = values["total_gain"], values["x_spread"], values["y_fixed"]
    q = (f"Company X can borrow at fixed rate {_pct(fx)} or floating LIBOR+{_pct(sx)}. Company Y can borrow at fixed "
         f"rate {_pct(fy)} or floating LIBOR+{_pct(sy)}. X wants floating-rate debt and Y wants fixed-rate debt. Each "
         "borrows in the market where it has a comparative advantage and they enter an interest rate swap (no "
         "intermediary), splitting the total gain equally. What floating rate does X effectively pay (give its "
         "spread over LIBOR) and what fixed rate does Y effectively pay?")
    steps = (f"fixed gap {fy - fx:.4f} > floating gap {sy - sx:.4f}: X borrows fixed, Y borrows floating",
             f"total gain = {fy - fx:.4f} - {sy - sx:.4f} = {gain:.4f}, {gain / 2:.4f} each",
             f"X pays LIBOR + ({sx:.4f} - {gain / 2:.4f}) = LIBOR + {x_pays:.4f}; Y pays {fy:.4f} - {gain / 2:.4f} = {y_pays:.4f}")
    return q, (Part("x_spread", x_pays, "percent", "X's effective spread over LIBOR", abs_tol=1e-5,
                    aliases=("x_floating_spread", "x_floating")),
               Part("y_fixed", y_pays, "percent", "Y's effective fixed rate", aliases=("y_fixed_rate",))), steps


# ----------------------------------------------------------------------------- 15 stock split
def _split_sample(rng: np.random.Generator) -> dict[str, Any]:
    ratios = [(3, 2), (2, 1), (3, 1), (4, 1), (5, 4), (5, 1), (10, 1)]
    a, b = ratios[int(rng.integers(len(ratios)))]
    return {"shares": _r(rng.uniform(50_000, 5_000_000), 10_000), "price": _r(rng.uniform(10, 500), 1), "new": a, "old": b}


def _split_values(x: dict[str, Any]) -> dict[str, float]:
    return {"split_factor": x["new"] / x["old"], "market_cap": x["shares"] * x["price"],
            "price": x["price"] * x["old"] / x["new"], "shares": x["shares"] * x["new"] / x["old"]}


def _split_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    values = _split_values(x)
    price, shares = values["price"], values["shares"]
    q = (f"A company has {x['shares']:,.0f} shares outstanding at {_money(x['price'])} per share. It announces a "
         f"{x['new']}-for-{x['old']} stock split. After the split, what is the expected price per share and how many "
         "shares will be outstanding?")
    steps = (f"price = {x['price']:g} x {x['old']}/{x['new']} = {price:.4f}", f"shares = {x['shares']:,.0f} x {x['new']}/{x['old']}")
    return q, (Part("price", price, "number", "price per share, $"), Part("shares", shares, "number", "shares outstanding")), steps


# ----------------------------------------------------------------------------- 16 put-call parity
def _pcp_sample(rng: np.random.Generator) -> dict[str, Any]:
    s = _r(rng.uniform(20, 300), 1)
    k = _r(s * rng.uniform(0.85, 1.15), 1)
    r, t = _r(rng.uniform(0.01, 0.07), 0.005), float(rng.choice([0.25, 0.5, 1.0, 2.0]))
    lower = max(0.0, s - k * math.exp(-r * t))
    c = _r(lower + s * rng.uniform(0.02, 0.12), 0.5)
    return {"call": c, "spot": s, "strike": k, "rate": r, "years": t}


def _pcp_values(x: dict[str, Any]) -> dict[str, float]:
    pv_k = x["strike"] * math.exp(-x["rate"] * x["years"])
    return {"discount_factor": math.exp(-x["rate"] * x["years"]), "pv_strike": pv_k,
            "put_price": x["call"] - x["spot"] + pv_k}


def _pcp_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    values = _pcp_values(x)
    pv_k, put = values["pv_strike"], values["put_price"]
    yrs = "1 year" if x["years"] == 1 else f"{x['years']:g} years"
    q = (f"Using put-call parity, if a European call option on a non-dividend paying stock is priced at "
         f"{_money(x['call'])}, the stock price is {_money(x['spot'])}, the strike price is {_money(x['strike'])}, and "
         f"the risk-free rate is {_pct(x['rate'])} (continuously compounded) with {yrs} to expiration, what should be "
         "the price of the corresponding put option?")
    steps = (f"P = C - S + K e^(-rT) = {x['call']:g} - {x['spot']:g} + {x['strike']:g} e^(-{x['rate']:g} x {x['years']:g})",
             f"= {x['call']:g} - {x['spot']:g} + {pv_k:.4f} = {put:.4f}")
    return q, (Part("put_price", put, "number", "the put price, $", aliases=("put",)),), steps


# ----------------------------------------------------------------------------- 17 Gordon growth
def _ggm_sample(rng: np.random.Generator) -> dict[str, Any]:
    g = _r(rng.uniform(0.0, 0.07), 0.005)
    return {"dividend": _r(rng.uniform(0.5, 6), 0.05), "growth": g, "required_return": _r(g + rng.uniform(0.02, 0.08), 0.005)}


def _ggm_values(x: dict[str, Any]) -> dict[str, float]:
    d1 = x["dividend"] * (1 + x["growth"])
    return {"D1": d1, "required_minus_growth": x["required_return"] - x["growth"],
            "value": d1 / (x["required_return"] - x["growth"])}


def _ggm_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    values = _ggm_values(x)
    d1, value = values["D1"], values["value"]
    q = (f"An investor uses the Gordon Growth Model to value a stock. The stock just paid a dividend of "
         f"${x['dividend']:.2f}, dividends are expected to grow at {_pct(x['growth'])} annually forever, and the "
         f"required return is {_pct(x['required_return'])}. What is the intrinsic value of the stock?")
    steps = (f"D1 = {x['dividend']:g} x {1 + x['growth']:g} = {d1:.4f}",
             f"V = D1 / (r - g) = {d1:.4f} / {x['required_return'] - x['growth']:g} = {value:.4f}")
    return q, (Part("value", value, "number", "intrinsic value per share, $", aliases=("intrinsic_value", "price")),), steps


# ----------------------------------------------------------------------------- 18 covered interest arbitrage
def _cia_sample(rng: np.random.Generator) -> dict[str, Any]:
    while True:
        spot = _r(rng.uniform(0.9, 1.4), 0.01)
        iu, ie = _r(rng.uniform(0.01, 0.07), 0.0025), _r(rng.uniform(0.0, 0.06), 0.0025)
        fair = spot * (1 + iu) / (1 + ie)
        fwd = _r(fair * (1 + rng.choice([-1, 1]) * rng.uniform(0.003, 0.02)), 0.0001)
        if abs(fwd - fair) / fair > 0.001:
            return {"spot": spot, "forward": fwd, "usd_rate": iu, "eur_rate": ie, "notional": 1_000_000.0}


def _cia(x: dict[str, Any]) -> tuple[str, float, float]:
    s, f, iu, ie, n = x["spot"], x["forward"], x["usd_rate"], x["eur_rate"], x["notional"]
    fair = s * (1 + iu) / (1 + ie)
    if f < fair:  # EUR cheap forward: borrow EUR, sell spot, invest USD, buy EUR forward
        return "EUR", n * (1 + iu) - n / s * (1 + ie) * f, fair
    return "USD", n / s * (1 + ie) * f - n * (1 + iu), fair


def _cia_values(x: dict[str, Any]) -> dict[str, float]:
    borrow, profit, fair = _cia(x)
    eur = x["notional"] / x["spot"]
    # the borrowed leg's repayment at year end, in USD: the cost the invested leg must beat
    repay = x["notional"] * (1 + x["usd_rate"]) if borrow == "USD" else eur * (1 + x["eur_rate"]) * x["forward"]
    return {"fair_forward": fair, "eur_notional": eur, "repayment_usd": repay, "profit": profit}


def _cia_build(x: dict[str, Any]) -> tuple[str, tuple[Part, ...], tuple[str, ...]]:
    borrow, profit, fair = _cia(x)
    q = (f"A trader observes the following: Spot EUR/USD = {x['spot']:g}, 1-year forward EUR/USD = {x['forward']:g} "
         f"(USD per EUR), 1-year USD interest rate = {_pct(x['usd_rate'])}, 1-year EUR interest rate = "
         f"{_pct(x['eur_rate'])}. Is there a covered interest arbitrage opportunity? If so, which currency should the "
         "trader borrow, and what is the risk-free profit in USD at the end of the year per $1 million borrowed (or "
         "its EUR equivalent at spot)?")
    steps = (f"fair forward = {x['spot']:g} x {1 + x['usd_rate']:g} / {1 + x['eur_rate']:g} = {fair:.6f} vs {x['forward']:g}",
             f"borrow {borrow}; profit per 1,000,000 = {profit:.4f} USD at year end")
    return q, (Part("opportunity", True, "bool", "yes or no", aliases=("arbitrage",)),
               Part("borrow", borrow, "choice", "the currency to borrow", choices=("USD", "EUR"),
                    aliases=("borrow_currency", "currency")),
               Part("profit", profit, "number", "profit in USD at year end", aliases=("profit_usd",))), steps


# ----------------------------------------------------------------------------- the table
TOPICS: dict[str, Topic] = {t.name: t for t in (
    Topic("npv_crossover", "SYN_LOGIC_0008", {"investment": 100_000.0, "cash_flow_a_year1": 150_000.0,
          "cash_flow_b_year2": 180_000.0}, 0.2, "", _npv_sample, _npv_build),
    Topic("beta_targeting", "SYN_LOGIC_0009", {"weight_x": 0.6, "beta_x": 1.2, "weight_y": 0.4, "beta_y": 0.8,
          "risk_free": 0.03, "market_premium": 0.06, "target_beta": 1.0}, 0.5,
          "published 50% fits no reading; the question now says Y stays at 40% with the rest risk-free "
          "(56.67%; selling Y entirely would give 83.33%)", _beta_sample, _beta_build),
    Topic("bond_replication", "SYN_LOGIC_0010", {"years": 5, "zero_price": 680.0, "coupon_1": 0.06, "price_1": 1000.0,
          "coupon_2": 0.08}, 1085.35,
          "the premise was inconsistent (the zero implies 8.02%, the par bond 6%: the curve cannot be flat) and "
          "$1,085.35 has an arithmetic slip; the question now asks for the static replication price from the two "
          "bonds (4/3 coupon bonds - 1/3 zero = $1,106.67)", _bond_sample, _bond_build),
    Topic("fcff", "SYN_LOGIC_0011", {"ebit": 10e6, "depreciation": 2e6, "capex": 3e6, "working_capital_increase": 1e6,
          "tax_rate": 0.25}, 5_500_000.0, "", _fcff_sample, _fcff_build),
    Topic("bull_spread", "SYN_LOGIC_0012", {"strike_long": 100.0, "premium_long": 8.0, "strike_short": 110.0,
          "premium_short": 3.0}, {"max_profit": 5, "max_loss": 5, "breakeven": 105}, "", _spread_sample, _spread_build),
    Topic("roe_leverage", "SYN_LOGIC_0013", {"assets": 500e6, "debt_to_equity": 1.5, "interest_rate": 0.06,
          "tax_rate": 0.30, "roa_ebit": 0.10}, 0.181,
          "18.1% is unsupported (the published steps themselves reach 11.2%); ROA is now stated as EBIT / assets",
          _roe_sample, _roe_build),
    Topic("mm_homemade_leverage", "SYN_LOGIC_0014", {"shares_a": 1e6, "price_a": 50.0, "debt_b": 20e6,
          "interest_rate": 0.05, "fraction": 0.10},
          {"equity_investment": 3_000_000, "borrowing": 2_000_000, "net_investment": 1_000_000},
          "the published net investment of $1M contradicts its own steps: hold $5M of A, borrow $2M, own funds $3M",
          _mm_sample, _mm_build),
    Topic("risk_neutral_probability", "SYN_LOGIC_0015", {"spot": 100.0, "up": 0.20, "down": 0.15, "rate": 0.05}, 0.5714,
          "", _rn_sample, _rn_build),
    Topic("pv_comparison", "SYN_LOGIC_0016", {"amount_now": 10_000.0, "amount_later": 12_500.0, "years": 3,
          "rate": 0.08}, {"better_option": "A", "difference": 75.15},
          "12,500 / 1.08^3 = 9,922.90, so A is better by $77.10, not $75.15", _pv_sample, _pv_build),
    Topic("duration_immunization", "SYN_LOGIC_0017", {"liability_duration": 15.0, "duration_a": 5.0, "duration_b": 20.0},
          0.6667, "", _dur_sample, _dur_build),
    Topic("combined_leverage", "SYN_LOGIC_0018", {"dol": 2.5, "dfl": 1.6, "sales_change": 0.10}, 0.4, "",
          _dtl_sample, _dtl_build),
    Topic("cal_leverage", "SYN_LOGIC_0019", {"expected_return": 0.12, "std_dev": 0.25, "risk_free": 0.04,
          "target_return": 0.16}, {"std_dev": 0.375, "leverage": 1.5}, "", _cal_sample, _cal_build),
    Topic("perpetuity", "SYN_LOGIC_0020", {"coupon": 50.0, "rate_before": 0.05, "rate_after": 0.06}, -0.1667, "",
          _perp_sample, _perp_build),
    Topic("swap_comparative_advantage", "SYN_LOGIC_0021", {"x_fixed": 0.08, "x_spread": 0.01, "y_fixed": 0.10,
          "y_spread": 0.02}, 0.075,
          "ill-posed: X has the comparative advantage in fixed, so 'X borrows floating' loses 1%; the question now "
          "says X wants floating and Y wants fixed (X pays LIBOR+0.5%, Y pays 9.5%)", _swap_sample, _swap_build),
    Topic("stock_split", "SYN_LOGIC_0022", {"shares": 100_000.0, "price": 25.0, "new": 3, "old": 2},
          {"price": 16.67, "shares": 150000}, "", _split_sample, _split_build),
    Topic("put_call_parity", "SYN_LOGIC_0023", {"call": 8.0, "spot": 97.0, "strike": 95.0, "rate": 0.05, "years": 1.0},
          1.37,
          "with the published S = $100 parity gives a negative put (the $8 call is below its bound S - Ke^-rT = "
          "$9.63); $1.37 is the answer for S = $97, which the question now states, with continuous compounding",
          _pcp_sample, _pcp_build),
    Topic("gordon_growth", "SYN_LOGIC_0024", {"dividend": 2.0, "growth": 0.06, "required_return": 0.10}, 53.0, "",
          _ggm_sample, _ggm_build),
    Topic("covered_interest_arbitrage", "SYN_LOGIC_0025", {"spot": 1.10, "forward": 1.12, "usd_rate": 0.05,
          "eur_rate": 0.03, "notional": 1_000_000.0}, {"opportunity": True, "profit": 7272.73},
          "$7,272.73 has no valid derivation (the published steps reach $1,272): borrow EUR, invest USD, buy EUR "
          "forward for $1,272.73 per $1M at year end; the question now asks which currency to borrow",
          _cia_sample, _cia_build),
)}

#: The two published retrieval questions (SYN_QUAN_0001, SYN_QUAL_0002) are not analytical: the first needs
#: AAPL's FY2024 EBITDA, which the shipped data does not hold (the Knowledge bank asks the same metric of the
#: filings it ships), the second has no answer a program can check.
NOT_REPRODUCED = {
    "SYN_QUAN_0001": "AAPL FY2024 EBITDA: the shipped XBRL filings stop at FY2023 (10-K) and Q2 FY2025 (10-Q); "
                     "the Knowledge bank's `ebitda` topic asks it of the shipped filings",
    "SYN_QUAL_0002": "a free-text business description: no ground truth a program can check",
}


def _rng(topic: str, seed: int) -> np.random.Generator:
    index = list(TOPICS).index(topic)
    return np.random.default_rng([20_260_116, index, seed])


def topic_inputs(topic: str, seed: int) -> dict[str, Any]:
    """The inputs of ``topic`` at ``seed`` (0: the published inputs, corrected where noted)."""
    if topic not in TOPICS:
        raise KeyError(f"unknown analysis topic {topic!r}; topics: {sorted(TOPICS)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    t = TOPICS[topic]
    if seed == 0:
        return dict(t.published_inputs)
    rng = _rng(topic, int(seed))
    for _ in range(100):
        inputs = t.sample(rng)
        if inputs != t.published_inputs:
            return inputs
    raise RuntimeError(f"{topic}: could not draw inputs different from the published ones")  # pragma: no cover


def generate(topic: str, seed: int) -> QAItem:
    """The question of ``topic`` at ``seed`` with its answer computed from the inputs."""
    inputs = topic_inputs(topic, seed)
    t = TOPICS[topic]
    question, parts, steps = t.build(inputs)
    published = None
    if seed == 0:
        published = {"id": t.published_id, "answer": t.published_answer,
                     "corrected": bool(t.erratum), "erratum": t.erratum or None}
    return QAItem(id=f"analysis/{topic}/{int(seed)}", section="analysis", topic=topic, seed=int(seed),
                  question=question, parts=parts, inputs=inputs, solution=steps, published=published)


def published_items() -> list[QAItem]:
    """The 18 published analytical questions (seed 0 of every topic), with answers computed here."""
    return [generate(name, 0) for name in TOPICS]


def bank(seeds: Sequence[int]) -> list[QAItem]:
    """Every topic at every seed."""
    return [generate(name, s) for s in seeds for name in TOPICS]


#: topic -> ``values(inputs)``: the worked solution's named numbers (key intermediates and the truths of the
#: numeric parts), computed by the same functions the builders take their truths from.
_VALUES: dict[str, Callable[[dict[str, Any]], dict[str, float]]] = {
    "npv_crossover": _npv_values, "beta_targeting": _beta_values, "bond_replication": _bond_values,
    "fcff": _fcff_values, "bull_spread": _spread_values, "roe_leverage": _roe_values,
    "mm_homemade_leverage": _mm_values, "risk_neutral_probability": _rn_values, "pv_comparison": _pv_values,
    "duration_immunization": _dur_values, "combined_leverage": _dtl_values, "cal_leverage": _cal_values,
    "perpetuity": _perp_values, "swap_comparative_advantage": _swap_values, "stock_split": _split_values,
    "put_call_parity": _pcp_values, "gordon_growth": _ggm_values, "covered_interest_arbitrage": _cia_values,
}


def key_values(topic: str, inputs: dict[str, Any]) -> dict[str, float]:
    """The named numbers of ``topic``'s worked solution for ``inputs`` (e.g. ``{"D1": 2.12, ...}``).

    Each builder reads its truth from the same function, so an intermediate here and the
    truth of the item always agree.

    Raises:
        KeyError: Unknown topic.
    """
    if topic not in _VALUES:
        raise KeyError(f"unknown analysis topic {topic!r}; topics: {sorted(TOPICS)}")
    return {k: float(v) for k, v in _VALUES[topic](inputs).items()}


__all__ = ["NOT_REPRODUCED", "TOPICS", "Topic", "bank", "generate", "key_values", "published_items",
           "topic_inputs"]
