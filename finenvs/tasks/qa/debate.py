"""A deterministic adversarial debate for FinQA-v0: a confident, wrong counter-argument per question.

FAB++ optionally follows an answer with a debate: the agent hears a counter-argument, may revise,
and a multiplier in [0.8, 1.2] adjusts its score. Here the counter-argument is written in code
from the item's inputs: each analytical topic has a documented *common mistake*
(:data:`MISTAKES`), computed from the same inputs as the truth, and the counter-argument argues
for the mistake's values with its (wrong) reasoning. It never states the true value: a part is
argued only when the mistaken value is outside the part's scoring tolerance, and the text is
checked so that no number in it would score as a true part value (numbers in the reasoning
that would are dropped).

The analytical mistakes (first applicable one of each topic's list; "applicable" = at least one
part ends outside its tolerance):

* ``npv_crossover`` — simple instead of compound discounting of Year 2: ``a (1 + 2r) = b (1 + r)``.
* ``beta_targeting`` — rebalancing between X and Y only (weights of X and Y add to 100%), although Y
  stays at its weight and the rest is risk-free.
* ``bond_replication`` — the coupon ratio inverted: holding ``c1 / c2`` coupon bonds instead of ``c2 / c1``.
* ``fcff`` — taxes left out: ``EBIT + D&A - capex - dNWC``.
* ``bull_spread`` — the short call's premium ignored: the cost is the long call's premium alone.
* ``roe_leverage`` — ROE on pre-tax income: ``(EBIT - interest) / equity``.
* ``mm_homemade_leverage`` — borrowing on top of a full stake: hold ``f (V_A + D_B)`` of A, own funds ``f V_A``.
* ``risk_neutral_probability`` — the risk-free rate forgotten: ``p = (1 - d) / (u - d)``.
* ``pv_comparison`` — simple instead of compound discounting: ``PV_B = FV / (1 + n r)``; where that is
  within tolerance (short waits at low rates), the whole wait discounted as one period: ``FV / (1 + r)``.
* ``duration_immunization`` — ``w_B = (D_L - D_A) / D_B`` (the denominator without ``- D_A``).
* ``combined_leverage`` — DOL alone (the EBIT change read as the EPS change), DFL forgotten.
* ``cal_leverage`` — the target's excess return divided by the stock's *total* expected return.
* ``perpetuity`` — the price change measured on the new price: ``(P1 - P0) / P1``.
* ``swap_comparative_advantage`` — each party credited with the whole gain instead of half.
* ``stock_split`` — the split ratio applied the wrong way round.
* ``put_call_parity`` — the strike not discounted: ``P = C - S + K``.
* ``gordon_growth`` — D0 instead of D1; where growth is so low that this is within tolerance
  (g <= 1%), D1 discounted one extra year: ``D1 / ((r - g)(1 + r))``.
* ``covered_interest_arbitrage`` — the uncovered carry trade: borrow the lower-rate currency and
  book the interest differential on $1M as the profit; where that matches the truth (forward
  equal to spot), the borrowed leg's interest forgotten; then the profit stated in present value.

Every topic ends with a last resort (never needed over the tested seeds): an arithmetic slip of 10%
(at least three tolerances).

Knowledge items (:mod:`finenvs.tasks.qa.knowledge`) get a generic mistake per part kind
(:func:`knowledge_mistake`): a close is the previous trading day's close (from the ``view`` when
one is given, going back up to five sessions until it is outside the 0.1% tolerance; without a
view, the price read in cents, x100); a return is measured backwards, from the later close to the
earlier one (``-r / (1 + r)``: the wrong sign); a ratio
(margin, growth) is given in percent points read as a fraction (/100); an amount (EBITDA) is read
in thousands (/1,000) and a per-share amount (EPS) as if the shares were in thousands (x1,000);
a filing order is reversed; a date is not argued.

:func:`debate_outcome` turns the agent's answers before and after the debate into FAB++'s multiplier.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.scoring.qa import AnswerError, Part, parse_quantity, score_part
from finenvs.tasks.qa.items import QAItem
from finenvs.text.debate import DebateRound, debate_outcome
from finenvs.text.safe_json import MAX_NUMBER_CHARS

Values = dict[str, Any]


@dataclass(frozen=True)
class MistakeRule:
    """One documented mistake: ``compute(inputs) -> (wrong part values, reasoning with numbers)``.

    Attributes:
        name: Short id (``d0_instead_of_d1``).
        description: The mistake in one line (docs, and the reasoning when numbers must be dropped).
        compute: The wrong values of the parts it changes, and a sentence arguing for them.
    """

    name: str
    description: str
    compute: Callable[[dict[str, Any]], tuple[Values, str]]


@dataclass(frozen=True)
class Mistake:
    """The mistake argued against one item.

    Attributes:
        rule: The rule's name.
        description: Its one-line description.
        values: Part name -> wrong value, only parts outside their tolerance.
        reasoning: The sentence arguing for it (numbers dropped where one would match a truth).
    """

    rule: str
    description: str
    values: Values
    reasoning: str


def _m(x: float) -> str:
    return f"${x:,.2f}"


def _p(x: float) -> str:
    text = f"{100 * x:.2f}%"
    return "0.00%" if text == "-0.00%" else text


# ----------------------------------------------------------------------------- the 18 mistakes
def _npv(x: dict[str, Any]) -> tuple[Values, str]:
    a, b = x["cash_flow_a_year1"], x["cash_flow_b_year2"]
    r = (b - a) / (2 * a - b)
    return {"discount_rate": r}, (f"Year 2 is discounted at simple interest, so equal NPVs mean {a:,.0f} x (1 + 2r) = "
                                  f"{b:,.0f} x (1 + r), i.e. r = ({b:,.0f} - {a:,.0f}) / (2 x {a:,.0f} - {b:,.0f}).")


def _beta(x: dict[str, Any]) -> tuple[Values, str]:
    bx, by, t = x["beta_x"], x["beta_y"], x["target_beta"]
    w = (t - by) / (bx - by)
    return {"weight_x": w}, (f"The portfolio is X and Y only, so their weights add to 100%: w x {bx:g} + (1 - w) x "
                             f"{by:g} = {t:g}.")


def _bond(x: dict[str, Any]) -> tuple[Values, str]:
    c1, c2, p1, z = x["coupon_1"], x["coupon_2"], x["price_1"], x["zero_price"]
    units = c1 / c2
    return {"price": units * p1 + (1 - units) * z}, (
        f"To match the coupons you hold {c1:g}/{c2:g} = {units:.4f} coupon bonds and make up the face value with "
        f"{1 - units:.4f} zeros.")


def _fcff(x: dict[str, Any]) -> tuple[Values, str]:
    value = x["ebit"] + x["depreciation"] - x["capex"] - x["working_capital_increase"]
    return {"fcff": value}, ("Taxes are paid out of net income, not out of the firm's operating cash flow, so FCFF = "
                             "EBIT + depreciation - capex - the increase in working capital.")


def _spread(x: dict[str, Any]) -> tuple[Values, str]:
    k1, c1, k2 = x["strike_long"], x["premium_long"], x["strike_short"]
    return {"max_profit": k2 - k1 - c1, "max_loss": c1, "breakeven": k1 + c1}, (
        f"The premium received for the short call is collateral, not a reduction of your cost: your outlay is the "
        f"long call's {_m(c1)}.")


def _roe(x: dict[str, Any]) -> tuple[Values, str]:
    a, de = x["assets"], x["debt_to_equity"]
    equity = a / (1 + de)
    pre_tax = x["roa_ebit"] * a - x["interest_rate"] * (a - equity)
    return {"roe": pre_tax / equity}, ("ROE compares the equity holders' earnings before tax with equity: "
                                       "(EBIT - interest) / equity; the tax rate does not enter.")


def _mm(x: dict[str, Any]) -> tuple[Values, str]:
    value = x["shares_a"] * x["price_a"]
    f, d = x["fraction"], x["debt_b"]
    return {"firm_a_position": f * (value + d), "own_funds": f * value}, (
        f"You put up {f:.0%} of Firm A's equity yourself and borrow {f:.0%} of Firm B's debt on top, buying Firm A "
        "stock with both.")


def _rn(x: dict[str, Any]) -> tuple[Values, str]:
    return {"probability": x["down"] / (x["up"] + x["down"])}, (
        "Under risk neutrality the expected price change is zero: p x u + (1 - p) x d = 1, so p = (1 - d) / (u - d); "
        "the risk-free rate plays no part.")


def _pv(x: dict[str, Any]) -> tuple[Values, str]:
    pv = x["amount_later"] / (1 + x["years"] * x["rate"])
    better = "A" if x["amount_now"] > pv else "B"
    return {"better_option": better, "difference": abs(x["amount_now"] - pv)}, (
        f"Discount at the simple annual rate: PV_B = {x['amount_later']:,.0f} / (1 + {x['years']} x {x['rate']:g}) = "
        f"{pv:,.2f}.")


def _pv_once(x: dict[str, Any]) -> tuple[Values, str]:
    pv = x["amount_later"] / (1 + x["rate"])
    better = "A" if x["amount_now"] > pv else "B"
    return {"better_option": better, "difference": abs(x["amount_now"] - pv)}, (
        f"The opportunity cost is one rate for the whole wait: PV_B = {x['amount_later']:,.0f} / (1 + {x['rate']:g}).")


def _dur(x: dict[str, Any]) -> tuple[Values, str]:
    dl, da, db = x["liability_duration"], x["duration_a"], x["duration_b"]
    return {"weight_b": (dl - da) / db}, (
        f"Bond B must supply the duration Bond A lacks: ({dl:g} - {da:g}) / {db:g}.")


def _dtl(x: dict[str, Any]) -> tuple[Values, str]:
    return {"eps_change": x["dol"] * x["sales_change"]}, (
        f"EPS moves with operating profit, so the change is DOL x the sales change ({x['dol']:g} x "
        f"{_p(x['sales_change'])}); financial leverage changes the level of EPS, not its percentage change.")


def _cal(x: dict[str, Any]) -> tuple[Values, str]:
    w = (x["target_return"] - x["risk_free"]) / x["expected_return"]
    return {"std_dev": w * x["std_dev"], "leverage": w}, (
        f"Leverage is the extra return you want per unit of the stock's return: ({_p(x['target_return'])} - "
        f"{_p(x['risk_free'])}) / {_p(x['expected_return'])}.")


def _perp(x: dict[str, Any]) -> tuple[Values, str]:
    p0, p1 = x["coupon"] / x["rate_before"], x["coupon"] / x["rate_after"]
    return {"price_change": (p1 - p0) / p1}, (
        f"The price goes from {_m(p0)} to {_m(p1)}, and the change is measured against where the bond now trades: "
        "(P1 - P0) / P1.")


def _swap(x: dict[str, Any]) -> tuple[Values, str]:
    gain = (x["y_fixed"] - x["x_fixed"]) - (x["y_spread"] - x["x_spread"])
    return {"x_spread": x["x_spread"] - gain, "y_fixed": x["y_fixed"] - gain}, (
        f"The quality spread differential of {_p(gain)} is what each side saves by swapping instead of borrowing "
        "directly.")


def _split(x: dict[str, Any]) -> tuple[Values, str]:
    a, b = x["new"], x["old"]
    return {"price": x["price"] * a / b, "shares": x["shares"] * b / a}, (
        f"A {a}-for-{b} split multiplies the price by {a}/{b} and the share count by {b}/{a}.")


def _pcp(x: dict[str, Any]) -> tuple[Values, str]:
    return {"put_price": x["call"] - x["spot"] + x["strike"]}, (
        "Parity holds at expiry, where the strike is paid: P = C - S + K; there is nothing to discount.")


def _ggm_d0(x: dict[str, Any]) -> tuple[Values, str]:
    d0, g, r = x["dividend"], x["growth"], x["required_return"]
    return {"value": d0 / (r - g)}, (f"The model values the dividend the investor knows, {_m(d0)}, over r - g = "
                                     f"{_p(r - g)}.")


def _ggm_extra(x: dict[str, Any]) -> tuple[Values, str]:
    d0, g, r = x["dividend"], x["growth"], x["required_return"]
    d1 = d0 * (1 + g)
    return {"value": d1 / (r - g) / (1 + r)}, (
        "The first dividend arrives in a year, so D1 / (r - g) must be discounted one more year at the required "
        "return.")


def _cia_carry(x: dict[str, Any]) -> tuple[Values, str]:
    iu, ie, n = x["usd_rate"], x["eur_rate"], x["notional"]
    borrow = "EUR" if ie < iu else "USD"
    return {"borrow": borrow, "profit": n * abs(iu - ie)}, (
        f"Borrow the cheaper currency ({borrow}) and invest in the other: the profit is the interest differential "
        f"{_p(abs(iu - ie))} on $1 million.")


def _cia_no_interest(x: dict[str, Any]) -> tuple[Values, str]:
    s, f, iu, ie, n = x["spot"], x["forward"], x["usd_rate"], x["eur_rate"], x["notional"]
    fair = s * (1 + iu) / (1 + ie)
    if f < fair:
        return {"borrow": "EUR", "profit": n * (1 + iu) - n / s * f}, (
            "The borrowed euros are repaid at the forward rate; the loan's interest is covered by the forward.")
    return {"borrow": "USD", "profit": n / s * (1 + ie) * f - n}, (
        "The borrowed dollars are repaid from the forward sale; the loan's interest is covered by the forward.")


def _cia_pv(x: dict[str, Any]) -> tuple[Values, str]:
    s, f, iu, ie, n = x["spot"], x["forward"], x["usd_rate"], x["eur_rate"], x["notional"]
    fair = s * (1 + iu) / (1 + ie)
    profit = n * (1 + iu) - n / s * (1 + ie) * f if f < fair else n / s * (1 + ie) * f - n * (1 + iu)
    return {"profit": profit / (1 + iu)}, ("A profit is worth what it is worth today: the year-end gain discounted "
                                           "at the USD rate.")


def _rule(name: str, description: str, fn: Callable[[dict[str, Any]], tuple[Values, str]]) -> MistakeRule:
    return MistakeRule(name, description, fn)


#: topic -> its mistakes, tried in order.
MISTAKES: dict[str, tuple[MistakeRule, ...]] = {
    "npv_crossover": (_rule("simple_discounting", "simple instead of compound discounting of Year 2", _npv),),
    "beta_targeting": (_rule("x_and_y_only", "rebalancing between X and Y only, weights adding to 100%", _beta),),
    "bond_replication": (_rule("inverted_coupon_ratio", "holding c1/c2 coupon bonds instead of c2/c1", _bond),),
    "fcff": (_rule("no_tax", "taxes left out: EBIT + D&A - capex - dNWC", _fcff),),
    "bull_spread": (_rule("short_premium_ignored", "the short call's premium ignored", _spread),),
    "roe_leverage": (_rule("pre_tax_roe", "ROE on pre-tax income", _roe),),
    "mm_homemade_leverage": (_rule("borrow_on_top", "borrowing on top of a full stake in Firm A", _mm),),
    "risk_neutral_probability": (_rule("no_interest", "the risk-free rate forgotten: (1 - d) / (u - d)", _rn),),
    "pv_comparison": (_rule("simple_discounting", "simple instead of compound discounting", _pv),
                      _rule("one_period_discount", "the whole wait discounted as one period", _pv_once)),
    "duration_immunization": (_rule("wrong_denominator", "w_B = (D_L - D_A) / D_B", _dur),),
    "combined_leverage": (_rule("dol_only", "DOL alone, DFL forgotten", _dtl),),
    "cal_leverage": (_rule("total_return_denominator", "excess target return over the stock's total return",
                           _cal),),
    "perpetuity": (_rule("new_price_base", "the price change measured on the new price", _perp),),
    "swap_comparative_advantage": (_rule("full_gain_each", "each party credited with the whole gain", _swap),),
    "stock_split": (_rule("inverted_ratio", "the split ratio applied the wrong way round", _split),),
    "put_call_parity": (_rule("undiscounted_strike", "the strike not discounted: P = C - S + K", _pcp),),
    "gordon_growth": (_rule("d0_instead_of_d1", "D0 instead of D1 in D / (r - g)", _ggm_d0),
                      _rule("extra_discount_year", "D1 / (r - g) discounted one extra year", _ggm_extra)),
    "covered_interest_arbitrage": (
        _rule("uncovered_carry", "borrow the lower-rate currency, profit = interest differential", _cia_carry),
        _rule("borrowed_interest_forgotten", "the borrowed leg's interest forgotten", _cia_no_interest),
        _rule("present_value_profit", "the year-end profit discounted to today", _cia_pv)),
}


# ----------------------------------------------------------------------------- checks
def _states(value: Any, part: Part) -> bool:
    """Whether ``value`` scores as right for ``part``."""
    return score_part(value, part).correct


_NUMBER = re.compile(r"[-+]?\$?\d[\d,]*+(?:\.\d++)?%?")


def _numbers(text: str) -> list[float]:
    out = []
    for m in _NUMBER.finditer(text):
        token = m.group()
        if len(token) > MAX_NUMBER_CHARS:
            continue
        try:
            out.append(parse_quantity(token).value)
        except AnswerError:
            continue
    return out


def _matches_truth(text: str, parts: tuple[Part, ...]) -> bool:
    """Whether a number in ``text`` would score as the truth of a numeric part."""
    numeric = [p for p in parts if p.kind in ("number", "percent")]
    return any(_states(v, p) for v in _numbers(text) for p in numeric)


def _stated(values: Values, parts: tuple[Part, ...]) -> Values:
    """The wrong values worth arguing: outside their own tolerance and matching no other part's truth."""
    by_name = {p.name: p for p in parts}
    out: Values = {}
    for name, value in values.items():
        part = by_name.get(name)
        if part is None or _states(value, part):
            continue
        if part.kind in ("number", "percent") and any(
                _states(value, p) for p in parts if p.kind in ("number", "percent")):
            continue
        out[name] = value
    return out


def format_claim(value: Any, part: Part) -> str:
    """A wrong value as the counter-argument writes it (money and counts to the cent, rates to 0.01%)."""
    if part.kind == "percent":
        return _p(float(value))
    if part.kind == "number":
        return _m(float(value)) if "$" in part.label else f"{float(value):,.2f}"
    if part.kind == "bool":
        return "yes" if value else "no"
    if part.kind == "sequence":
        return ", ".join(value)
    return str(value)


def _slip(item: QAItem) -> Values:
    """Each numeric truth moved by 10% of itself, at least three tolerances and at least 1 (1% for a rate)."""
    out: Values = {}
    for p in item.parts:
        if p.kind in ("number", "percent"):
            v = float(p.value)
            step = max(0.1 * abs(v), 3 * p.tolerance(), 0.01 if p.kind == "percent" else 1.0)
            out[p.name] = v + step
    return out


# ----------------------------------------------------------------------------- knowledge
def knowledge_mistake(item: QAItem, view: Any = None) -> tuple[str, Values, str]:
    """The generic mistake for a knowledge item: ``(rule, wrong values, reasoning)`` (module docstring)."""
    values: Values = {}
    notes: list[str] = []
    for p in item.parts:
        v = p.value
        if p.kind == "sequence":
            values[p.name] = tuple(reversed(v))
            notes.append("the filings are listed from the most recent back")
        elif p.kind == "bool":
            values[p.name] = not v
        elif p.kind == "choice":
            others = [c for c in p.choices if c != v]
            if others:
                values[p.name] = others[0]
        elif p.kind == "percent":
            if p.name == "return" and v > -1 and not _states(-v / (1 + v), p):
                values[p.name] = -v / (1 + v)
                notes.append("the return runs from the later close back to the earlier one")
            elif p.name != "return" and not _states(v / 100, p):
                values[p.name] = v / 100
                notes.append("the filing reports the ratio in percent points")
            else:  # a return (or ratio) too close to 0 for either: one percentage point off
                values[p.name] = v + 0.01
                notes.append("the figure is one percentage point higher once rounded properly")
        elif p.kind == "number":
            if p.name == "close":
                prev = _previous_close(item, view, p)
                if prev is not None:
                    values[p.name] = prev
                    notes.append("the close is the last price recorded before that trading day ends: the previous "
                                 "session's close")
                else:
                    values[p.name] = float(v) * 100
                    notes.append("prices on the tape are quoted in cents")
            elif abs(float(v)) >= 1e5:
                values[p.name] = float(v) / 1000
                notes.append("XBRL amounts are reported in thousands")
            else:
                values[p.name] = float(v) * 1000
                notes.append("the share count is reported in thousands")
    reasoning = "; ".join(dict.fromkeys(notes))
    return "knowledge_generic", values, (reasoning[:1].upper() + reasoning[1:] + ".") if reasoning else ""


def _previous_close(item: QAItem, view: Any, part: Part) -> float | None:
    """The latest close before the item's date that is outside the part's tolerance (up to 5 sessions back).

    Read through ``view`` (an as-of view, so nothing after the question's date); None without one.
    """
    if view is None:
        return None
    try:
        symbol = item.inputs["symbol"]
        day = item.inputs.get("date") or item.truth.get("date")
        days = view.calendar(symbol)
        k = int(np.searchsorted(days, np.datetime64(day, "D")))
        for j in range(k - 1, max(k - 6, -1), -1):
            bars = view.prices(symbol, start=days[j], end=days[j])
            close = float(bars.close[-1])
            if not _states(close, part):
                return close
    except Exception:  # noqa: BLE001 - a view that cannot answer leaves the view-free mistake
        return None
    return None


# ----------------------------------------------------------------------------- public API
def mistake(item: QAItem, view: Any = None) -> Mistake:
    """The mistake argued against ``item``: its wrong part values (each outside tolerance) and reasoning.

    Args:
        item: An analysis or knowledge item.
        view: For knowledge price questions, an optional as-of view to read the previous close from.
    """
    parts = item.parts
    if item.section != "analysis" or item.topic not in MISTAKES:
        rule, values, reasoning = knowledge_mistake(item, view)
        candidates = [(rule, "generic knowledge mistake", values, reasoning)]
    else:
        candidates = []
        for r in MISTAKES[item.topic]:
            values, reasoning = r.compute(item.inputs)
            candidates.append((r.name, r.description, values, reasoning))
    candidates.append(("arithmetic_slip", "a 10% arithmetic slip", _slip(item),
                       "Recomputing carefully gives a different figure."))
    for rule, description, values, reasoning in candidates:
        stated = _stated(values, parts)
        if not stated:
            continue
        if _matches_truth(reasoning, parts):
            reasoning = f"The mistake in your answer: {description}."
        return Mistake(rule, description, stated, reasoning)
    raise ValueError(f"{item.id}: no mistake outside the tolerance")  # pragma: no cover - the slip always is


def counter_argument(item: QAItem, view: Any = None) -> str:
    """A short, confident counter-argument for the mistake's values; it never states a true value."""
    m = mistake(item, view)
    parts = {p.name: p for p in item.parts}

    def claims(named: Callable[[Part], str]) -> str:
        return "; ".join(f"{named(parts[n])} is {format_claim(v, parts[n])}" for n, v in m.values.items())

    text = (f"I disagree with your answer. {m.reasoning} So {claims(part_label)}. I am confident in this; "
            "please revise.")
    if _matches_truth(text, item.parts):  # a label holding a number that happens to be a truth
        text = (f"I disagree with your answer. {m.reasoning} So {claims(lambda p: p.name)}. I am confident in "
                "this; please revise.")
    return text


def part_label(part: Part) -> str:
    """The part's label without its unit or example ("the probability (e.g. 57.14%)" -> "the probability")."""
    if part.kind == "sequence":
        return "the order"
    if part.kind in ("choice", "bool") or " or " in part.label:
        return "the " + part.name.replace("_", " ")
    text = re.split(r",|\(| in \$", part.label or part.name, maxsplit=1)[0].strip()
    return text or part.name


def answer_correct(reward: float, info: dict[str, Any]) -> bool:
    """Whether a FinQA-v0 answer is correct for the debate: every answer part right (the answer share 1.0, under
    either grading: with FAB++'s methodology/calculation/answer split the answer share is ``info["qa"]["answer"]``,
    so a right answer without its method is still a right answer the counter-argument tries to move)."""
    qa = info.get("qa") if isinstance(info, dict) else None
    share = qa.get("answer_score", reward) if isinstance(qa, dict) else reward
    return float(share) >= 1.0 - 1e-9


def debate_round(env: Any) -> DebateRound:
    """FinQA-v0's debate round for :class:`finenvs.wrappers.debate.Debate` (its task spec's ``debate``): the
    counter-argument of the env's current item (a knowledge item's mistake reads the env's as-of view, e.g. the
    previous session's close); an answer is correct when every part of it is right (:func:`answer_correct`)."""
    item = env.item
    view = env.as_of_view() if item.section == "knowledge" and item.as_of is not None else None
    wrong = mistake(item, view)
    return DebateRound(counter_argument(item, view), wrong.rule, 1.0, answer_correct)


__all__ = ["MISTAKES", "Mistake", "MistakeRule", "answer_correct", "counter_argument", "debate_outcome", "debate_round", "format_claim",
           "knowledge_mistake", "mistake", "part_label"]
