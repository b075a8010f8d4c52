"""FinQA-v0's question banks checked from the outside.

* Analytical bank (:mod:`finenvs.tasks.qa.analysis`): every topic's answer is recomputed from
  ``item.inputs`` by an independent route (root finding, linear replication, payoff grids,
  simulated income statements and cash flows), never by the builder's formulas.
* The 18 published FAB++ questions reproduce at seed 0 with the corrected answers of the shipped
  errata (``envs_data/questions/analysis_published.json``).
* Anti-memorisation: fresh seeds give fresh questions, never the published one; generation is
  deterministic; bad seeds and topics are refused.
* Every question scores 1.0 when answered with its own truth, written as a person would.
* Knowledge bank (:mod:`finenvs.tasks.qa.knowledge`): every truth is recomputed from the raw shipped
  files (prices parquet, XBRL facts, filing dates), and the bank is date-locked: changing
  anything after ``as_of`` (prices x3, a later XBRL bundle, later filings) changes no item.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import pathlib
import re
import shutil

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from finenvs.data.asof import AsOfView
from finenvs.data.documents import FilingStore, decision_time_utc, filing_available_utc
from finenvs.data.manifest import read_table
from finenvs.data.schema import PriceSeries
from finenvs.scoring.qa import score_answer
from finenvs.tasks.qa import analysis, knowledge
from finenvs.xbrl.corpus import Corpus, shipped_corpus

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "envs_data"
PUBLISHED = json.loads((DATA / "questions" / "analysis_published.json").read_text())
TOPICS = list(analysis.TOPICS)
AS_OF = knowledge.DEFAULT_AS_OF
EARLY_AS_OF = "2024-03-01"
KNOWLEDGE_SEEDS = range(81)


def _close(got: float, want: float, rel: float = 1e-6, abs_: float = 1e-9) -> bool:
    return math.isclose(float(got), float(want), rel_tol=rel, abs_tol=abs_)


# =============================================================================================== A
# Independent recomputations of every analytical topic from the stated inputs.
def _check_npv_crossover(x: dict, truth: dict) -> None:
    i, a, b = x["investment"], x["cash_flow_a_year1"], x["cash_flow_b_year2"]

    def gap(r: float) -> float:  # NPV_A - NPV_B
        return (-i + a / (1 + r)) - (-i + b / (1 + r) ** 2)

    r = brentq(gap, -0.5, 10.0, xtol=1e-15, rtol=1e-15)
    assert _close(truth["discount_rate"], r)
    assert abs(gap(truth["discount_rate"])) < 1e-6 * a


def _check_beta_targeting(x: dict, truth: dict) -> None:
    def beta(w_x: float) -> float:  # Y fixed at its weight, the rest (beta 0) risk-free
        w_rf = 1 - w_x - x["weight_y"]
        return w_x * x["beta_x"] + x["weight_y"] * x["beta_y"] + w_rf * 0.0

    w = brentq(lambda v: beta(v) - x["target_beta"], -5, 5, xtol=1e-15)
    assert _close(truth["weight_x"], w)
    assert 0 < truth["weight_x"] <= 1 - x["weight_y"] + 1e-12  # a long position, risk-free weight >= 0


def _check_bond_replication(x: dict, truth: dict) -> None:
    n, z, c1, p1, c2 = x["years"], x["zero_price"], x["coupon_1"], x["price_1"], x["coupon_2"]
    # cash flows per year of the coupon bond, the zero and the target bond
    coupon_bond = np.full(n, 1000 * c1)
    coupon_bond[-1] += 1000
    zero = np.zeros(n)
    zero[-1] = 1000
    target = np.full(n, 1000 * c2)
    target[-1] += 1000
    # units (coupon bonds, zeros) matching a coupon year and the final year
    units = np.linalg.solve(np.array([[coupon_bond[0], zero[0]], [coupon_bond[-1], zero[-1]]]),
                            np.array([target[0], target[-1]]))
    np.testing.assert_allclose(units[0] * coupon_bond + units[1] * zero, target, rtol=1e-12, atol=1e-9)
    assert _close(truth["price"], units @ np.array([p1, z]))


def _check_fcff(x: dict, truth: dict) -> None:
    # From the cash-flow statement: FCFF = CFO + after-tax interest - capex, whatever the interest.
    for interest in (0.0, 0.1 * x["ebit"], 0.37 * x["ebit"]):
        taxes = (x["ebit"] - interest) * x["tax_rate"]
        net_income = x["ebit"] - interest - taxes
        cfo = net_income + x["depreciation"] - x["working_capital_increase"]
        fcff = cfo + interest * (1 - x["tax_rate"]) - x["capex"]
        assert _close(truth["fcff"], fcff, rel=1e-9)


def _check_bull_spread(x: dict, truth: dict) -> None:
    k1, c1, k2, c2 = x["strike_long"], x["premium_long"], x["strike_short"], x["premium_short"]

    def profit(s: np.ndarray | float) -> np.ndarray | float:
        return np.maximum(s - k1, 0) - c1 - (np.maximum(s - k2, 0) - c2)

    grid = np.union1d(np.linspace(0.0, 3 * k2, 200_001), [k1, k2])
    values = profit(grid)
    assert _close(truth["max_profit"], values.max())
    assert _close(truth["max_loss"], -values.min())
    assert values.max() > 0 > values.min()
    breakeven = brentq(profit, k1, k2, xtol=1e-12)
    assert _close(truth["breakeven"], breakeven)


def _check_roe_leverage(x: dict, truth: dict) -> None:
    a, de = x["assets"], x["debt_to_equity"]
    debt, equity = np.linalg.solve(np.array([[1.0, 1.0], [1.0, -de]]), np.array([a, 0.0]))
    ebit = x["roa_ebit"] * a
    ebt = ebit - x["interest_rate"] * debt
    net_income = ebt - x["tax_rate"] * ebt
    assert _close(truth["roe"], net_income / equity)


def _check_mm_homemade_leverage(x: dict, truth: dict) -> None:
    value_a = x["shares_a"] * x["price_a"]
    debt_b, r, f = x["debt_b"], x["interest_rate"], x["fraction"]
    hold, borrow, own = truth["firm_a_position"], truth["borrowing"], truth["own_funds"]
    assert hold > 0 and borrow > 0
    for ebit in value_a * np.array([0.0, 0.03, 0.08, 0.15, 0.4]):
        homemade = (hold / value_a) * ebit - r * borrow  # share of A's payoff less personal interest
        firm_b = f * (ebit - r * debt_b)  # the same fraction of B's equity payoff
        assert _close(homemade, firm_b, rel=1e-9, abs_=1e-6)
    assert _close(own, hold - borrow)
    assert _close(own, f * (value_a - debt_b))  # costs what the fraction of B's equity costs


def _check_risk_neutral_probability(x: dict, truth: dict) -> None:
    s, p = x["spot"], truth["probability"]
    assert 0 < p < 1
    expected = p * s * (1 + x["up"]) + (1 - p) * s * (1 - x["down"])
    assert _close(expected / (1 + x["rate"]), s)


def _check_pv_comparison(x: dict, truth: dict) -> None:
    pv_b = x["amount_later"]
    for _ in range(x["years"]):  # discount one year at a time
        pv_b /= 1 + x["rate"]
    pvs = {"A": x["amount_now"], "B": pv_b}
    assert truth["better_option"] == max(pvs, key=pvs.get)
    assert _close(truth["difference"], abs(pvs["A"] - pvs["B"]))


def _check_duration_immunization(x: dict, truth: dict) -> None:
    w = truth["weight_b"]
    assert 0 < w < 1
    assert _close(w * x["duration_b"] + (1 - w) * x["duration_a"], x["liability_duration"])


def _check_combined_leverage(x: dict, truth: dict) -> None:
    # A firm with this DOL and DFL: sales 1,000, variable costs 40%, tax 25%, 100 shares.
    sales, contribution = 1000.0, 0.6
    ebit0 = sales * contribution / x["dol"]
    fixed = sales * contribution - ebit0
    interest = ebit0 - ebit0 / x["dfl"]

    def eps(s: float) -> float:
        return (s * contribution - fixed - interest) * (1 - 0.25) / 100

    change = eps(sales * (1 + x["sales_change"])) / eps(sales) - 1
    assert _close(truth["eps_change"], change)
    assert np.sign(truth["eps_change"]) == np.sign(x["sales_change"])


def _check_cal_leverage(x: dict, truth: dict) -> None:
    def expected(w: float) -> float:
        return (1 - w) * x["risk_free"] + w * x["expected_return"]

    w = brentq(lambda v: expected(v) - x["target_return"], -10, 10, xtol=1e-15)
    assert _close(truth["leverage"], w)
    assert _close(expected(truth["leverage"]), x["target_return"])
    assert _close(truth["std_dev"], abs(w) * x["std_dev"])  # the risk-free asset has no variance
    assert truth["leverage"] > 1  # the target is above the stock's return: borrowing


def _check_perpetuity(x: dict, truth: dict) -> None:
    def price(rate: float) -> float:  # a long series of coupons, with its geometric tail closed
        t = np.arange(1, 2001)
        head = float(np.sum(x["coupon"] / (1 + rate) ** t))
        return head + x["coupon"] / rate / (1 + rate) ** 2000

    assert _close(truth["price_change"], price(x["rate_after"]) / price(x["rate_before"]) - 1)
    assert (truth["price_change"] < 0) == (x["rate_after"] > x["rate_before"])


def _check_swap_comparative_advantage(x: dict, truth: dict) -> None:
    fx, sx, fy, sy = x["x_fixed"], x["x_spread"], x["y_fixed"], x["y_spread"]
    # X borrows fixed (its comparative advantage), Y floating; X pays Y LIBOR, Y pays X a fixed K.
    x_cost = lambda k: fx - k  # noqa: E731  X's all-in spread over LIBOR: fx + L - k
    y_cost = lambda k: sy + k  # noqa: E731  Y's all-in fixed rate: L + sy + k - L
    k = brentq(lambda v: (sx - x_cost(v)) - (fy - y_cost(v)), -1, 1, xtol=1e-15)
    assert _close(truth["x_spread"], x_cost(k), abs_=1e-12)
    assert _close(truth["y_fixed"], y_cost(k))
    saving_x, saving_y = sx - truth["x_spread"], fy - truth["y_fixed"]
    assert _close(saving_x, saving_y, abs_=1e-12)
    gain = (sx + fy) - (fx + sy)  # what both pay without the swap less with it (LIBOR cancels)
    assert gain > 0
    assert _close(saving_x + saving_y, gain, abs_=1e-12)


def _check_stock_split(x: dict, truth: dict) -> None:
    assert _close(truth["price"] * truth["shares"], x["price"] * x["shares"])  # market value kept
    assert _close(truth["shares"] * x["old"], x["shares"] * x["new"])
    assert float(truth["shares"]).is_integer()


def _bsm(s: float, k: float, r: float, t: float, sigma: float) -> tuple[float, float]:
    d1 = (math.log(s / k) + (r + sigma**2 / 2) * t) / (sigma * math.sqrt(t))
    d2 = d1 - sigma * math.sqrt(t)
    call = s * norm.cdf(d1) - k * math.exp(-r * t) * norm.cdf(d2)
    put = k * math.exp(-r * t) * norm.cdf(-d2) - s * norm.cdf(-d1)
    return call, put


def _check_put_call_parity(x: dict, truth: dict) -> None:
    c, s, k, r, t = x["call"], x["spot"], x["strike"], x["rate"], x["years"]
    p = truth["put_price"]
    assert _close(c - p, s - k * math.exp(-r * t))
    assert p > 0
    # the call is inside its no-arbitrage bounds: a BSM volatility prices it, and the put with it
    sigma = brentq(lambda v: _bsm(s, k, r, t, v)[0] - c, 1e-6, 5.0, xtol=1e-14)
    assert _close(_bsm(s, k, r, t, sigma)[1], p, rel=1e-6, abs_=1e-8)


def _check_gordon_growth(x: dict, truth: dict) -> None:
    d0, g, r = x["dividend"], x["growth"], x["required_return"]
    t = np.arange(1, 20_001)
    value = float(np.sum(d0 * ((1 + g) / (1 + r)) ** t))
    assert _close(truth["value"], value)


def _check_covered_interest_arbitrage(x: dict, truth: dict) -> None:
    s, f, iu, ie, n = x["spot"], x["forward"], x["usd_rate"], x["eur_rate"], x["notional"]

    def round_trip(borrow: str) -> float:
        """USD left at year end after the covered round trip on $n (or its EUR equivalent) borrowed."""
        if borrow == "USD":
            eur = n / s  # borrow USD, sell it spot for EUR
            eur_at_t = eur * (1 + ie)  # invest EUR
            usd_at_t = eur_at_t * f  # sold forward for USD
            return usd_at_t - n * (1 + iu)
        eur_debt = n / s  # borrow EUR, sell it spot for USD
        usd_at_t = eur_debt * s * (1 + iu)
        eur_owed = eur_debt * (1 + ie)  # bought forward
        return usd_at_t - eur_owed * f

    profits = {c: round_trip(c) for c in ("USD", "EUR")}
    best = max(profits, key=profits.get)
    assert profits[best] > 0 > min(profits.values())
    assert truth["opportunity"] is True
    assert truth["borrow"] == best
    assert _close(truth["profit"], profits[best])


CHECKS = {
    "npv_crossover": _check_npv_crossover,
    "beta_targeting": _check_beta_targeting,
    "bond_replication": _check_bond_replication,
    "fcff": _check_fcff,
    "bull_spread": _check_bull_spread,
    "roe_leverage": _check_roe_leverage,
    "mm_homemade_leverage": _check_mm_homemade_leverage,
    "risk_neutral_probability": _check_risk_neutral_probability,
    "pv_comparison": _check_pv_comparison,
    "duration_immunization": _check_duration_immunization,
    "combined_leverage": _check_combined_leverage,
    "cal_leverage": _check_cal_leverage,
    "perpetuity": _check_perpetuity,
    "swap_comparative_advantage": _check_swap_comparative_advantage,
    "stock_split": _check_stock_split,
    "put_call_parity": _check_put_call_parity,
    "gordon_growth": _check_gordon_growth,
    "covered_interest_arbitrage": _check_covered_interest_arbitrage,
}


def test_every_topic_has_an_independent_check():
    assert set(CHECKS) == set(TOPICS)
    assert len(TOPICS) == 18


@pytest.mark.parametrize("topic", TOPICS)
def test_answer_matches_independent_computation(topic):
    for seed in range(31):
        item = analysis.generate(topic, seed)
        assert item.section == "analysis" and item.topic == topic and item.seed == seed
        assert item.id == f"analysis/{topic}/{seed}"
        assert set(item.truth) == {p.name for p in item.parts}
        CHECKS[topic](item.inputs, item.truth)


_FLIP = {"A": "B", "B": "A", "USD": "EUR", "EUR": "USD", True: False}


@pytest.mark.parametrize("topic", TOPICS)
def test_independent_checks_reject_a_wrong_part(topic):
    """Each part is really checked: any one part off by 0.1% (or the other choice) fails its check."""
    for seed in range(4):
        item = analysis.generate(topic, seed)
        for name, value in item.truth.items():
            wrong = dict(item.truth)
            wrong[name] = _FLIP[value] if isinstance(value, (bool, str)) else value * 1.001 + 1e-6
            with pytest.raises(AssertionError):
                CHECKS[topic](item.inputs, wrong)


def _numbers_in(text: str) -> list[float]:
    """Every quantity the text states, read as written, as a fraction (%) and in millions."""
    out = []
    for m in re.finditer(r"(\d[\d,]*(?:\.\d+)?)(\s*%|\s+million)?", text):
        v = float(m.group(1).replace(",", ""))
        unit = (m.group(2) or "").strip()
        out.append(v / 100 if unit == "%" else v * 1e6 if unit == "million" else v)
    return out


@pytest.mark.parametrize("topic", TOPICS)
def test_question_text_states_every_input(topic):
    """The answer is computed from the inputs: the question must state each of them exactly."""
    for seed in range(0, 60):
        item = analysis.generate(topic, seed)
        stated = _numbers_in(item.question)
        for name, value in item.inputs.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            assert any(math.isclose(abs(value), v, rel_tol=1e-9, abs_tol=1e-12) for v in stated), (
                f"{topic}/{seed}: input {name}={value} is not stated in: {item.question}")


def _well_posed(topic: str, x: dict, truth: dict) -> list[str]:
    """What makes a drawn question meaningless (empty when it is a valid question)."""
    bad = []
    if topic == "bull_spread":
        if not (x["premium_long"] > x["premium_short"] > 0 and x["strike_short"] > x["strike_long"] > 0):
            bad.append(f"premiums/strikes not a bull spread: {x}")
    elif topic == "beta_targeting":
        if not 0 < truth["weight_x"] <= 1 - x["weight_y"] + 1e-12:
            bad.append(f"weight {truth['weight_x']}")
    elif topic == "put_call_parity":
        bound = max(0.0, x["spot"] - x["strike"] * math.exp(-x["rate"] * x["years"]))
        if not bound < x["call"] < x["spot"]:
            bad.append(f"call outside its arbitrage bounds: {x}")
    elif topic == "risk_neutral_probability":
        if not 0 < truth["probability"] < 1:
            bad.append(f"probability {truth['probability']}")
    elif topic == "gordon_growth":
        if not x["required_return"] > x["growth"] >= 0:
            bad.append(f"r <= g: {x}")
    elif topic == "perpetuity":
        if not (x["rate_before"] > 0 and x["rate_after"] > 0 and x["rate_after"] != x["rate_before"]):
            bad.append(f"rates {x}")
    elif topic == "mm_homemade_leverage":
        if not 0 < x["debt_b"] < x["shares_a"] * x["price_a"]:
            bad.append(f"debt {x}")
    elif topic == "duration_immunization":
        if not 0 < truth["weight_b"] < 1:
            bad.append(f"weight {truth['weight_b']}")
    elif topic == "swap_comparative_advantage":
        if not (x["y_fixed"] - x["x_fixed"]) - (x["y_spread"] - x["x_spread"]) > 0:
            bad.append(f"no gain: {x}")
    elif topic == "covered_interest_arbitrage":
        fair = x["spot"] * (1 + x["usd_rate"]) / (1 + x["eur_rate"])
        if abs(x["forward"] - fair) / fair <= 0.001:
            bad.append(f"no arbitrage: {x}")
    elif topic == "bond_replication":
        if x["coupon_2"] <= 0 or x["coupon_2"] == x["coupon_1"] or not 0 < x["zero_price"] < 1000:
            bad.append(f"bonds {x}")
    elif topic == "cal_leverage":
        if not x["target_return"] > x["expected_return"] > x["risk_free"]:
            bad.append(f"returns {x}")
    return bad


_WIDE_SEEDS = range(0, 1200)
_WIDE_PARAMS = list(TOPICS)


@pytest.mark.parametrize("topic", _WIDE_PARAMS)
def test_every_seed_draws_a_well_posed_question(topic):
    for seed in _WIDE_SEEDS:
        item = analysis.generate(topic, seed)
        assert _well_posed(topic, item.inputs, item.truth) == [], f"{topic} seed {seed}"
        assert all(math.isfinite(v) for v in item.truth.values() if isinstance(v, float))


# =============================================================================================== B
ANALYTICAL = [it for it in PUBLISHED["items"] if it["topic"]]
RETRIEVAL = [it for it in PUBLISHED["items"] if not it["topic"]]


def _note_numbers(pattern: str, note: str) -> tuple[float, ...]:
    m = re.search(pattern, note)
    assert m is not None, f"{pattern!r} not in the erratum note {note!r}"
    return tuple(float(g) for g in m.groups())


def _corrected_answers(entry: dict) -> dict:
    """part name -> the corrected answer the errata file states (keys mapped where they differ)."""
    topic, errata = entry["topic"], entry["errata"]
    rec, note = errata["recomputed"], errata["note"]
    if topic == "beta_targeting":
        return {"weight_x": rec["keep_Y_40pct"]}
    if topic == "bond_replication":
        return {"price": next(v for k, v in rec.items() if k.startswith("static_replication"))}
    if topic == "roe_leverage":
        return {"roe": rec["ROA_as_EBIT/Assets"]}
    if topic == "mm_homemade_leverage":
        return {"firm_a_position": rec["buy_A"], "borrowing": rec["borrow"], "own_funds": rec["own_funds"]}
    if topic == "swap_comparative_advantage":
        x_spread, y_fixed = _note_numbers(r"X pays LIBOR\+([\d.]+)%, Y pays ([\d.]+)%", note)
        return {"x_spread": x_spread / 100, "y_fixed": y_fixed / 100}
    if topic == "put_call_parity":  # the note: 1.37 is the answer for S = 97
        return {"put_price": entry["published_answer"]}
    if topic == "covered_interest_arbitrage":
        (borrow,) = re.findall(r"borrow (EUR|USD)", note)
        return {"opportunity": rec["opportunity"], "borrow": borrow, "profit": rec["profit_usd_at_T"]}
    parts = [p.name for p in analysis.generate(topic, 0).parts]
    if isinstance(rec, dict):
        return {name: rec[name] for name in parts}
    assert len(parts) == 1
    return {parts[0]: rec}


def _agree(got, want) -> bool:
    if got is None:
        return False
    if isinstance(want, (bool, str)) or isinstance(got, (bool, str)):
        return got == want
    # 0.01 absolute for amounts, 1e-4 (the errata's 4 decimals) for fractions, or 0.1% relative
    return math.isclose(float(got), float(want), rel_tol=1e-3, abs_tol=0.01 if abs(want) >= 1 else 1e-4)


def test_published_file_covers_the_18_topics_and_two_retrieval_items():
    assert sorted(it["topic"] for it in ANALYTICAL) == sorted(TOPICS)
    assert {it["id"] for it in ANALYTICAL} == {t.published_id for t in analysis.TOPICS.values()}
    assert len(RETRIEVAL) == 2
    for it in RETRIEVAL:
        assert it["kind"] == "retrieval" and it["topic"] is None
        assert it["not_reproduced"] and it["not_reproduced"] == analysis.NOT_REPRODUCED[it["id"]]
    assert set(analysis.NOT_REPRODUCED) == {it["id"] for it in RETRIEVAL}
    assert all(it["not_reproduced"] is None for it in ANALYTICAL)


@pytest.mark.parametrize("entry", ANALYTICAL, ids=[it["id"] for it in ANALYTICAL])
def test_seed_zero_reproduces_the_published_question_with_corrected_answer(entry):
    item = analysis.generate(entry["topic"], 0)
    assert item.published is not None and item.published["id"] == entry["id"]
    assert item.published["answer"] == entry["published_answer"]
    expected = _corrected_answers(entry)
    assert set(expected) == set(item.truth)
    for name, want in expected.items():
        assert _agree(item.truth[name], want), f"{entry['id']} {name}: {item.truth[name]} vs errata {want}"
    corrected = not entry["errata"]["verdict"].startswith("OK")
    assert item.published["corrected"] is corrected
    if corrected:
        assert isinstance(item.published["erratum"], str) and item.published["erratum"].strip()
        # the correction shows: the question or the answer differs from the published one
        published = entry["published_answer"]
        same_answer = (all(_agree(item.truth.get(k), v) for k, v in published.items())
                       if isinstance(published, dict) else _agree(next(iter(item.truth.values())), published))
        assert item.question != entry["question"] or not same_answer
    else:
        assert item.published["erratum"] is None
        published = entry["published_answer"]
        if isinstance(published, dict):
            for name, want in published.items():
                assert _agree(item.truth[name], want)
        else:
            assert _agree(next(iter(item.truth.values())), published)


def test_seed_zero_reads_the_published_inputs_from_the_question():
    """Seed 0's inputs are those the published question states (except where the erratum replaces one)."""
    for entry in ANALYTICAL:
        item = analysis.generate(entry["topic"], 0)
        stated = _numbers_in(entry["question"])
        missing = [k for k, v in item.inputs.items()
                   if not isinstance(v, bool) and isinstance(v, (int, float))
                   and not any(math.isclose(v, s, rel_tol=1e-9) for s in stated)]
        if entry["topic"] == "put_call_parity":
            assert missing == ["spot"] and item.inputs["spot"] == 97  # the typo the note names
        else:
            assert missing == [], (entry["id"], missing)


def test_put_call_parity_erratum_diagnosis():
    """With the published S = $100 parity gives the erratum's negative put; S = $97 gives $1.37."""
    entry = next(it for it in ANALYTICAL if it["topic"] == "put_call_parity")
    (s_note,) = _note_numbers(r"S=(\d+)", entry["errata"]["note"])
    x = analysis.generate("put_call_parity", 0).inputs
    assert x["spot"] == s_note
    (s_published,) = _note_numbers(r"stock price is \$(\d+)", entry["question"])
    put_published = x["call"] - s_published + x["strike"] * math.exp(-x["rate"] * x["years"])
    assert _agree(put_published, entry["errata"]["recomputed"]["continuous"])
    assert "S = $97" in analysis.TOPICS["put_call_parity"].erratum
    assert "$97" in analysis.generate("put_call_parity", 0).question


# =============================================================================================== C
@pytest.mark.parametrize("topic", TOPICS)
def test_fresh_seeds_give_fresh_questions(topic):
    entry = next(it for it in ANALYTICAL if it["topic"] == topic)
    published_inputs = analysis.TOPICS[topic].published_inputs
    texts = {}
    for seed in range(1, 51):
        item = analysis.generate(topic, seed)
        assert item.question != entry["question"]
        assert item.question != analysis.generate(topic, 0).question
        assert item.inputs != published_inputs
        assert item.published is None
        texts[seed] = item.question
    assert texts[1] != texts[2]
    assert len(set(texts.values())) >= 45  # seeds rarely collide


@pytest.mark.parametrize("topic", TOPICS)
def test_generation_is_deterministic(topic):
    first = [analysis.generate(topic, s).record() for s in (0, 1, 7, 30)]
    analysis.bank(range(5))  # other draws in between change nothing
    again = [analysis.generate(topic, s).record() for s in (0, 1, 7, 30)]
    assert first == again
    assert analysis.generate(topic, np.int64(7)).record() == first[2]


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3", None])
def test_bad_seeds_are_refused(seed):
    with pytest.raises(ValueError):
        analysis.generate("fcff", seed)


def test_unknown_topic_is_refused():
    with pytest.raises(KeyError):
        analysis.generate("not_a_topic", 1)
    with pytest.raises(KeyError):
        analysis.topic_inputs("npv", 0)


# =============================================================================================== D
def _human(value, part) -> str:
    """The truth as a person writes it."""
    if part.kind == "percent":
        pct = 100 * float(value)
        return f"{pct:.2f}%" if abs(value) >= 0.01 else f"{pct:.3g}%"
    if part.kind == "number":
        sign, mag = ("-" if value < 0 else ""), abs(float(value))
        digits = f"{mag:,.2f}" if mag >= 1 else f"{mag:.3g}"
        return f"{sign}${digits}" if "$" in part.label else f"{sign}{digits}"
    if part.kind == "bool":
        return "yes" if value else "no"
    if part.kind == "sequence":
        return ", ".join(value)
    return str(value)


def _assert_round_trip(item) -> None:
    parts = item.parts
    assert score_answer({"answer": {p.name: p.value for p in parts}}, parts).score == 1.0
    assert score_answer(json.dumps({"answer": {p.name: _human(p.value, p) for p in parts}}), parts).score == 1.0
    if len(parts) == 1:
        p = parts[0]
        out = score_answer(f"Reasoning first.\nAnswer: {_human(p.value, p)}", parts)
        assert out.score == 1.0, (item.id, _human(p.value, p), out.record())
    else:
        line = "; ".join(f"{p.name}: {_human(p.value, p)}" for p in parts)
        out = score_answer(f"Answer: {line}", parts)
        assert out.score == 1.0, (item.id, line, out.record())
    for empty in ("", "   ", {"answer": ""}, {"answer": {}}):
        assert score_answer(empty, parts).score == 0.0
    # and a wrong answer is not accepted: each numeric truth off by three times its tolerance
    numeric = [p for p in parts if p.kind in ("number", "percent")]
    if numeric:
        off = {p.name: (p.value + 3 * p.tolerance() + 1e-6 if p in numeric else p.value) for p in parts}
        assert score_answer({"answer": off}, parts).score <= 1 - len(numeric) / len(parts) + 1e-12


@pytest.mark.parametrize("topic", TOPICS)
def test_every_question_scores_one_with_its_own_truth(topic):
    for seed in range(51):
        _assert_round_trip(analysis.generate(topic, seed))


# =============================================================================================== E
@pytest.fixture(scope="module")
def raw_prices() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    table = read_table(DATA / "prices" / "core_2024_2026.parquet", "*")
    assert {"symbol", "date", "close"} <= set(table)
    dates = np.asarray(table["date"]).astype("datetime64[D]")
    out = {}
    for sym in np.unique(table["symbol"]):
        rows = np.flatnonzero(table["symbol"] == sym)
        order = rows[np.argsort(dates[rows])]
        out[str(sym)] = (dates[order], np.asarray(table["close"], dtype=float)[order])
    return out


@pytest.fixture(scope="module")
def raw_filings() -> list[tuple[str, str, str]]:
    table = read_table(DATA / "filings" / "sections.parquet", "filing_id, symbol, form, filed")
    filed = np.asarray(table["filed"]).astype("datetime64[D]").astype(str)
    return sorted({(str(s), str(f), d) for s, f, d in zip(table["symbol"], table["form"], filed, strict=True)})


@pytest.fixture(scope="module")
def default_view():
    return knowledge.make_view(AS_OF)


@pytest.fixture(scope="module")
def default_items(default_view):
    return [knowledge.generate(s, default_view) for s in KNOWLEDGE_SEEDS]


_REVENUE = ("us-gaap:Revenues", "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
            "us-gaap:SalesRevenueNet")


def _fact(filing, concept: str, start: str, end: str) -> float | None:
    """The concept's value for the period from the raw facts list (non-dimensional contexts)."""
    values = set()
    for f in filing.facts:
        if f.concept != concept or f.value is None or f.unit is None:
            continue
        ctx = filing.contexts[f.context]
        if not ctx.dimensions and ctx.start == start and ctx.end == end:
            values.add(float(f.value))
    assert len(values) <= 1, (concept, start, end, values)
    return values.pop() if values else None


def _days(a: str, b: str) -> int:
    return (dt.date.fromisoformat(b) - dt.date.fromisoformat(a)).days


def _revenue(filing, start: str, end: str) -> tuple[str, float]:
    for concept in _REVENUE:
        value = _fact(filing, concept, start, end)
        if value is not None:
            return concept, value
    raise AssertionError(f"no revenue fact for {start} to {end}")


def _reported_eps(filing, start: str, end: str) -> float:
    value = _fact(filing, "us-gaap:EarningsPerShareDiluted", start, end)
    assert value is not None
    return value


def _xbrl_metric(filing, metric: str, start: str, end: str) -> float:
    if metric in ("gross_margin", "operating_margin", "net_margin"):
        top = {"gross_margin": "us-gaap:GrossProfit", "operating_margin": "us-gaap:OperatingIncomeLoss",
               "net_margin": "us-gaap:NetIncomeLoss"}[metric]
        return _fact(filing, top, start, end) / _revenue(filing, start, end)[1]
    if metric == "revenue_growth":
        concept, now = _revenue(filing, start, end)
        length = _days(start, end)
        prior = [(c.start, c.end) for c in filing.contexts.values()
                 if not c.dimensions and c.start and 358 <= _days(c.end, end) <= 373
                 and abs(_days(c.start, c.end) - length) <= 7]
        values = {_fact(filing, concept, *p) for p in prior} - {None}
        assert len(values) == 1
        return now / values.pop() - 1
    if metric == "eps_diluted":
        eps = (_fact(filing, "us-gaap:NetIncomeLoss", start, end)
               / _fact(filing, "us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding", start, end))
        # the reported EPS is rounded to the cent: the computed one lies within half a cent of it
        assert abs(eps - _reported_eps(filing, start, end)) <= 0.005 + 1e-12
        return eps
    if metric == "ebitda":
        return (_fact(filing, "us-gaap:OperatingIncomeLoss", start, end)
                + _fact(filing, "us-gaap:DepreciationDepletionAndAmortization", start, end))
    raise AssertionError(metric)


def _latest_public(raw_filings, as_of: str) -> dict[tuple[str, str], str]:
    """(symbol, form) -> filed date of the latest filing public at the close of as_of (filed before it)."""
    latest: dict[tuple[str, str], str] = {}
    for symbol, form, filed in raw_filings:
        if filed < as_of:
            latest[(symbol, form)] = max(filed, latest.get((symbol, form), ""))
    return latest


def _check_knowledge_item(item, as_of: str, raw_prices, raw_filings) -> None:
    x, truth, day_as_of = item.inputs, item.truth, np.datetime64(as_of)
    assert item.as_of == as_of and item.question.startswith(f"As of {as_of}: ")
    if item.topic == "close_price":
        dates, closes = raw_prices[x["symbol"]]
        day = np.datetime64(x["date"])
        visible = dates[dates <= day_as_of]
        assert day in visible[-knowledge.PRICE_HORIZON:]
        assert math.isclose(truth["close"], closes[dates == day][0], rel_tol=1e-12)
    elif item.topic == "period_return":
        dates, closes = raw_prices[x["symbol"]]
        a, b = np.datetime64(x["start"]), np.datetime64(x["end"])
        assert a < b <= day_as_of and np.count_nonzero((dates > a) & (dates <= b)) >= 5
        assert math.isclose(truth["return"], closes[dates == b][0] / closes[dates == a][0] - 1,
                            rel_tol=1e-12, abs_tol=1e-15)
    elif item.topic == "max_close":
        dates, closes = raw_prices[x["symbol"]]
        month = np.datetime64(x["month"], "M")
        assert month < np.datetime64(as_of, "M")  # a whole month before the as-of month
        rows = np.flatnonzero(dates.astype("datetime64[M]") == month)
        k = rows[np.argmax(closes[rows])]
        assert truth["date"] == str(dates[k])
        assert math.isclose(truth["close"], closes[k], rel_tol=1e-12)
    elif item.topic == "xbrl_metric":
        filing = shipped_corpus().filing(x["bundle"])
        index = json.loads((DATA / "xbrl" / x["bundle"] / "filing.json").read_text())
        assert index["filed"] <= as_of
        assert (filing.ticker, filing.form) == (index["ticker"], index["form"]) == (x["ticker"], x["form"])
        start, end = x["period"].split(" to ")
        lo, hi = (350, 380) if x["form"] == "10-K" else (80, 100)
        assert end == index["period_end"] and lo <= _days(start, end) <= hi
        (value,) = truth.values()
        assert math.isclose(value, _xbrl_metric(filing, x["metric"], start, end), rel_tol=1e-12)
    elif item.topic == "filing_order":
        latest = _latest_public(raw_filings, as_of)
        filed = {lab: latest[(f["symbol"], f["form"])] for lab, f in x["filings"].items()}
        assert len(set(filed.values())) == 3
        assert truth["order"] == sorted(filed, key=filed.get)
    else:
        raise AssertionError(item.topic)


def test_knowledge_truths_match_the_raw_data(default_items, raw_prices, raw_filings):
    assert {it.topic for it in default_items} == set(knowledge.TOPICS)
    for item in default_items:
        _check_knowledge_item(item, AS_OF, raw_prices, raw_filings)
        _assert_round_trip(item)


def test_knowledge_generation_is_deterministic_and_refuses_bad_input(default_view, default_items):
    assert [knowledge.generate(s, default_view).record() for s in (0, 3, 17)] == [
        default_items[s].record() for s in (0, 3, 17)]
    for topic in knowledge.TOPICS:
        assert knowledge.generate(5, default_view, topic=topic).topic == topic
    for seed in (-1, 1.5, True):
        with pytest.raises(ValueError):
            knowledge.generate(seed, default_view)
    with pytest.raises(ValueError):
        knowledge.generate(1, default_view, topic="not_a_topic")
    assert default_view.counter.attempts == 0  # generation never reads past the clock


def test_every_shipped_eps_is_within_half_a_cent_of_the_reported_eps():
    for name in shipped_corpus().names:
        filing = shipped_corpus().filing(name)
        period = knowledge.main_period(filing)
        start, end = period
        _xbrl_metric(filing, "eps_diluted", start, end)  # asserts the half-cent reconciliation


def test_eps_items_accept_the_reported_eps(default_view):
    found = {}
    for seed in range(400):
        item = knowledge.generate(seed, default_view, topic="xbrl_metric")
        if item.inputs["metric"] == "eps_diluted":
            found.setdefault(item.inputs["bundle"], item)
        if len(found) == len(shipped_corpus().names):
            break
    assert {"amzn_10k_2022-12-31", "tsla_10q_2024-06-30"} <= set(found)
    failures = []
    for bundle, item in found.items():
        filing = shipped_corpus().filing(bundle)
        reported = _reported_eps(filing, *item.inputs["period"].split(" to "))
        computed = item.truth["eps_diluted"]
        # EPS is reported to the cent: computed and reported agree within half a cent, and the part accepts both
        if abs(computed - reported) > 0.005 or score_answer({"answer": reported}, item.parts).score != 1.0:
            failures.append((bundle, computed, reported))
    assert failures == []


# ------------------------------------------------------------------------- the date lock
def _with_future_filings(store: FilingStore, filed: str) -> FilingStore:
    """The store plus filings dated ``filed``: a new (ADBE, 10-Q) pair and a newer AAPL 10-K."""
    extra = [("ADBE-10-Q-CF", "ADBE", "10-Q"), ("AAPL-10-K-CF", "AAPL", "10-K"), ("META-10-Q-CF", "META", "10-Q")]
    cols = {name: list(getattr(store, name)) for name in ("filing_id", "symbol", "form", "section", "title",
                                                           "text", "document")}
    for fid, sym, form in extra:
        for name, value in (("filing_id", fid), ("symbol", sym), ("form", form), ("section", "item_7_mdna"),
                            ("title", "Item 7"), ("text", "counterfactual"), ("document", "cf.html.gz")):
            cols[name].append(value)
    cols["filed"] = np.concatenate([store.filed, np.array([filed] * len(extra), dtype="datetime64[D]")])
    cols["chars"] = [len(t) for t in cols["text"]]
    return FilingStore.from_columns(cols)


def _corpus_with_future_bundle(root: pathlib.Path, filed: str) -> Corpus:
    """The shipped bundles plus a copy of one of them released on ``filed``."""
    root.mkdir(parents=True)
    shipped = DATA / "xbrl"
    for name in shipped_corpus().names:
        (root / name).symlink_to(shipped / name, target_is_directory=True)
    source = shipped / "aapl_10q_2025-03-29_0000320193-25-000057"
    future = root / "aapl_10q_counterfactual"
    shutil.copytree(source, future)
    index = json.loads((future / "filing.json").read_text())
    index.update(bundle=future.name, filed=filed)
    (future / "filing.json").write_text(json.dumps(index))
    return Corpus(root)


def _counterfactual_view(catalog, as_of: str, cutoff: str, root: pathlib.Path) -> knowledge.QAView:
    """The QA view at ``as_of`` of data altered after ``cutoff``: prices x3, a bundle and filings released then."""
    cut = np.datetime64(cutoff)
    day_after = str(cut + np.timedelta64(1, "D"))
    cache: dict[str, PriceSeries] = {}

    def lookup(symbol: str) -> PriceSeries:
        if symbol not in cache:
            s = catalog.series(symbol)
            k = np.where(s.dates > cut, 3.0, 1.0)
            cache[symbol] = PriceSeries.from_arrays(symbol, s.dates, s.open * k, s.high * k, s.low * k,
                                                    s.close * k, s.volume, validate=False)
        return cache[symbol]

    # a filing dated on the cutoff is stamped 17:30 that day: after the close of the cutoff day
    market = AsOfView(lookup, as_of, rate_lookup=catalog.rates, news=catalog.news(),
                      filings=_with_future_filings(catalog.filings(), cutoff), symbols=catalog.symbols())
    return knowledge.QAView(market, _corpus_with_future_bundle(root, day_after))


def _records(view, seeds) -> list[dict]:
    items = [knowledge.generate(s, view) for s in seeds]
    items += [knowledge.generate(s, view, topic=t) for t in knowledge.TOPICS for s in range(15)]
    return [it.record() for it in items]


def test_nothing_after_as_of_changes_any_item(catalog, default_view, tmp_path):
    view = _counterfactual_view(catalog, AS_OF, AS_OF, tmp_path / "xbrl")
    # the alterations are there, just not visible
    assert "aapl_10q_counterfactual" in view.xbrl.corpus.names
    assert "aapl_10q_counterfactual" not in view.visible()
    full = catalog.series("AAPL")
    later = full.dates > np.datetime64(AS_OF)
    assert later.any()
    unlocked = view.market.at(str(full.dates[-1])).prices("AAPL")  # the same data with a later clock
    assert np.allclose(unlocked.close[later], 3 * full.close[later])
    assert np.array_equal(unlocked.close[~later], full.close[~later])
    assert _records(view, KNOWLEDGE_SEEDS) == _records(default_view, KNOWLEDGE_SEEDS)
    assert view.counter.attempts == 0
    with pytest.raises(ValueError):
        view.get("aapl_10q_counterfactual")
    assert view.counter.attempts == 1


def test_the_same_alterations_before_as_of_do_change_items(catalog, default_view, tmp_path):
    """Control: the invariance above is not vacuous (the alterations reach the items once visible)."""
    cutoff = str(np.datetime64(AS_OF) - np.timedelta64(75, "D"))
    view = _counterfactual_view(catalog, AS_OF, cutoff, tmp_path / "xbrl")
    assert "aapl_10q_counterfactual" in view.visible()
    changed = {a["topic"] for a, b in zip(_records(view, KNOWLEDGE_SEEDS), _records(default_view, KNOWLEDGE_SEEDS),
                                          strict=True) if a != b}
    assert {"xbrl_metric", "filing_order"} <= changed
    assert changed & {"close_price", "period_return", "max_close"}


_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


def test_early_as_of_items_refer_to_nothing_later(raw_prices, raw_filings):
    view = knowledge.make_view(EARLY_AS_OF)
    topics = set()
    for seed in KNOWLEDGE_SEEDS:
        item = knowledge.generate(seed, view)
        topics.add(item.topic)
        text = " ".join([item.question, json.dumps(item.inputs), *item.solution])
        assert all(d <= EARLY_AS_OF for d in _ISO.findall(text)), (item.id, text)
        if item.topic == "xbrl_metric":
            assert shipped_corpus().filing(item.inputs["bundle"]).filed <= EARLY_AS_OF
        _check_knowledge_item(item, EARLY_AS_OF, raw_prices, raw_filings)
    assert {"close_price", "period_return", "xbrl_metric"} <= topics
    # nothing to ask: no whole month within the 60-day minimum, no filing section public yet
    assert not {"max_close", "filing_order"} & topics
    assert view.counter.attempts == 0
    visible = {json.loads(p.read_text())["bundle"] for p in (DATA / "xbrl").glob("*/filing.json")
               if json.loads(p.read_text())["filed"] <= EARLY_AS_OF}
    assert set(view.visible()) == visible and len(visible) < len(shipped_corpus().names)


def test_xbrl_get_of_a_later_bundle_is_refused_and_counted():
    later = "aapl_10q_2025-03-29_0000320193-25-000057"
    xbrl = knowledge.XbrlAsOf(shipped_corpus(), EARLY_AS_OF)
    assert xbrl.get("aapl_10k_2023-09-30").ticker == "AAPL"
    assert xbrl.counter.attempts == 0
    with pytest.raises(ValueError) as refused:
        xbrl.get(later)
    assert xbrl.counter.attempts == 1
    with pytest.raises(ValueError) as absent:  # answered exactly like a bundle that does not exist
        xbrl.get("no_such_bundle")
    assert str(refused.value) == str(absent.value).replace("no_such_bundle", later)
    assert "2025-05-02" not in str(refused.value) and xbrl.counter.attempts == 1
    assert xbrl.counter.log[-1].requested == "2025-05-02" and later in xbrl.counter.log[-1].what
    with pytest.raises(ValueError):
        xbrl.get()
    assert xbrl.counter.attempts == 1
    # through a QA view the attempt lands in the market view's (the episode's) counter
    view = knowledge.make_view(EARLY_AS_OF)
    with pytest.raises(ValueError):
        view.get(later)
    assert view.counter.attempts == 1 and view.market.counter is view.counter


def test_xbrl_bundle_is_not_visible_at_the_close_of_its_filing_day():
    as_of = "2024-01-26"
    view = knowledge.make_view(as_of)
    early = [n for n in view.visible()
             if filing_available_utc(shipped_corpus().filing(n).filed) > decision_time_utc(as_of)]
    assert early == []


def test_docs_errata_count_and_table_agree_with_the_shipped_errata():
    """The FinQA-v0 page's FAB++ errata paragraph names as many wrong or ill-posed published questions as
    envs_data's errata file holds, and its table lists each of them."""
    root = pathlib.Path(__file__).resolve().parents[1]
    items = json.loads((root / "envs_data" / "questions" / "analysis_published.json").read_text())["items"]
    wrong = sorted(i["id"] for i in items if not i["errata"]["verdict"].startswith("OK")
                   and i["errata"]["verdict"] != "qualitative")
    readme = (root / "docs" / "envs" / "qa.md").read_text()
    words = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine",
             10: "Ten"}
    assert f"{words[len(wrong)]} published questions were wrong or ill-posed" in readme
    listed = sorted(set(re.findall(r"^ *\| (SYN_LOGIC_\d+) ", readme, flags=re.M)))
    assert listed == wrong
    # the total across FAB++ counts the options bank's errata too
    options = json.loads((root / "envs_data" / "questions" / "options.json").read_text())["items"]
    wrong_options = [i["id"] for i in options if (i.get("errata_file") or {}).get("verdict", "OK").startswith("WRONG")]
    assert wrong_options == ["risk_002"]
    total = len(wrong) + len(wrong_options)
    assert (f"{total} of FAB++'s published answers are wrong or ill-posed ({len(wrong)} analytical,\n"
            f"  {len(wrong_options)} options;") in readme

