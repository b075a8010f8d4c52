"""Build envs_data/questions/options.json, the curated FinOptions-v0 bank, from the FAB++ options questions.

A maintainer tool (not run at install or run time)::

    python envs_data/build_questions.py --source /path/to/gathered/data

Each FAB++ "Options Alpha" question whose answer is a number becomes a task in
the FinOptions-v0 format (see :mod:`finenvs.tasks.options.core`): its inputs as
the market, quotes and legs; the items it asks for; the published answer
(``published``); the engine's recomputation (``engine``, every number the task
scores); whether they agree and, where they do not, the correction and why
(``erratum``, from ``questions/fabpp/errata_recomputed.json`` and the engine).
Questions with no numeric answer (judgement only) or whose inputs do not pin one
down are listed under ``excluded`` with the reason. The question text is kept
verbatim, followed by the answer-format line every task carries.

Conventions the questions leave open, fixed here and stated per item
(``assumptions``): the as-of date is a nominal 2025-01-02 (the questions have
none); T = calendar days / 365; no dividends; where only a spread's net
premium is given it is carried on one leg (every asked number depends only on
the net premium).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.data.manifest import sha256_file
from finenvs.pricing import bsm_price, implied_vol
from finenvs.tasks.options.core import engine_numbers as _engine
from finenvs.tasks.options.core import parse_leg, reference_answer, score_answer
from finenvs.tasks.options.instances import answer_keys

HERE = Path(__file__).resolve().parent
DEST = "questions/options.json"
AS_OF = "2025-01-02"
SOURCE = "FAB++ Options Alpha questions, GitHub yxc20089/AgentBusters data/options/questions.json (MIT)"


def _expiry(days: int) -> str:
    return str(np.datetime64(AS_OF) + np.timedelta64(int(days), "D"))


def _market(symbol: str, spot: float, rate: float, multiplier: float, pop_vol: float = 0.2) -> dict[str, Any]:
    return {"symbol": symbol, "as_of": AS_OF, "spot": float(spot), "rate": float(rate), "dividend_yield": 0.0,
            "multiplier": float(multiplier), "pop_vol": float(pop_vol), "chain_source": "question"}


def _task(q: dict[str, Any], kind: str, market: dict[str, Any], quotes: list[dict[str, Any]], ask: dict[str, list],
          **extra: Any) -> dict[str, Any]:
    task = {"id": q["question_id"], "kind": kind, "source": f"{SOURCE}: {q['question_id']}", "market": market,
            "quotes": quotes, "given_legs": None, "template": None, "outlook": None, "budget": None,
            "contracts": 1, "ask": ask}
    task.update(extra)
    return task


def _quote(kind: str, strike: float, days: int, premium: float, iv: float | None) -> dict[str, Any]:
    return {"type": kind, "strike": float(strike), "expiry": _expiry(days), "days": int(days),
            "premium": float(premium), "iv": None if iv is None else float(iv)}


def _leg(side: str, quote: dict[str, Any], quantity: float = 1.0) -> dict[str, Any]:
    return {"side": side, "type": quote["type"], "strike": quote["strike"], "expiry": quote["expiry"],
            "quantity": float(quantity)}


def build_items(questions: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    items = []
    g: dict[str, list[str]] = {"pnl": [], "greeks": [], "strategy": [], "risk": []}

    # opt_pricing_001: BSM call price
    q = questions["opt_pricing_001"]
    quote = _quote("call", q["strike"], q["days_to_expiry"], 0.0, q["volatility"])
    quote["premium"] = float(bsm_price(q["spot_price"], q["strike"], q["days_to_expiry"] / 365, q["rate"], 0.0,
                                       q["volatility"], "call"))
    items.append(_task(q, "pricing", _market(q["ticker"], q["spot_price"], q["rate"], 1.0, q["volatility"]), [quote],
                       {**g, "pnl": ["price"], "greeks": [], "strategy": ["legs_match"]},
                       given_legs=[_leg("buy", quote)],
                       published={"call_price": 3.22, "put_price": 7.48},
                       assumptions=["r continuous", "T = 30/365", "per share (multiplier 1)"]))
    # opt_pricing_002: theoretical value vs market
    q = questions["opt_pricing_002"]
    quote = _quote("call", q["strike"], q["days_to_expiry"], 0.0, q["volatility"])
    quote["premium"] = float(bsm_price(q["spot_price"], q["strike"], q["days_to_expiry"] / 365, q["rate"], 0.0,
                                       q["volatility"], "call"))
    iv_market = implied_vol(q["market_price"], q["spot_price"], q["strike"], q["days_to_expiry"] / 365, q["rate"],
                            0.0, "call")
    items.append(_task(q, "pricing", _market(q["ticker"], q["spot_price"], q["rate"], 1.0, q["volatility"]), [quote],
                       {**g, "pnl": ["price"], "greeks": [], "strategy": ["legs_match"]},
                       given_legs=[_leg("buy", quote)],
                       published={"theoretical_price": 25.18, "assessment": "underpriced"},
                       note=(f"premise odd: the question states IV 45% for an $18.50 option, but $18.50 implies "
                             f"IV {iv_market:.2%}; the theoretical value at 45% is scored")))
    # greeks_001: Greeks of one call
    q = questions["greeks_001"]
    quote = _quote("call", q["strike"], q["days_to_expiry"], 0.0, q["volatility"])
    quote["premium"] = float(bsm_price(q["spot_price"], q["strike"], q["days_to_expiry"] / 365, q["rate"], 0.0,
                                       q["volatility"], "call"))
    items.append(_task(q, "greeks", _market(q["ticker"], q["spot_price"], q["rate"], 1.0, q["volatility"]), [quote],
                       {**g, "greeks": ["delta", "gamma", "vega", "theta"], "strategy": ["legs_match"]},
                       given_legs=[_leg("buy", quote)],
                       published=dict(q["ground_truth"]),
                       assumptions=["theta per calendar day (/365)", "vega per 1 vol point", "per share"]))
    # greeks_002: net delta of stated per-leg deltas, and the hedge
    q = questions["greeks_002"]
    quotes = [_quote(p["type"], p["strike"], 30, 0.0, None) for p in q["positions"]]
    legs = [_leg("buy" if p["quantity"] > 0 else "sell", qt, abs(p["quantity"])) for p, qt in zip(q["positions"], quotes,
                                                                                                 strict=True)]
    items.append(_task(q, "greeks", _market(q["ticker"], 450.0, 0.0, 100.0), quotes,
                       {**g, "greeks": ["delta"], "strategy": ["legs_match"], "risk": ["hedge"]},
                       given_legs=legs, leg_greeks=[{"delta": p["delta"]} for p in q["positions"]],
                       published=dict(q["ground_truth"]),
                       note="the published net delta 0.75 is in contracts; finenvs states delta in shares (75)",
                       assumptions=["per-leg deltas as stated (no model inputs given)", "100 shares per contract",
                                    "spot and expiry nominal: no asked number depends on them"]))
    # strategy_001: the iron condor with four quoted premiums
    q = questions["strategy_001"]
    spot = float(q["spot_price"])
    raw = [("put", 4400, 8.0), ("put", 4420, 12.0), ("call", 4580, 11.0), ("call", 4600, 7.0)]
    quotes = []
    for kind, strike, premium in raw:
        iv = implied_vol(premium, spot, strike, 30 / 365, 0.0, 0.0, kind)
        quotes.append(_quote(kind, strike, 30, premium, iv))
    items.append(_task(q, "strategy", _market(q["ticker"], spot, 0.0, 1.0), quotes,
                       {**g, "pnl": ["max_profit", "max_loss", "breakevens"],
                        "strategy": ["legs_valid", "template", "strikes_ordered", "outlook", "net_premium"]},
                       template="iron_condor", outlook="neutral",
                       reference_legs=[_leg("buy", quotes[0]), _leg("sell", quotes[1]), _leg("sell", quotes[2]),
                                       _leg("buy", quotes[3])],
                       published={k: q["ground_truth"][k] for k in ("max_profit", "max_loss", "breakeven_lower",
                                                                    "breakeven_upper")},
                       assumptions=["per share (the question's units)", "r = 0 (not given)"]))
    # pnl_001: attribution with the stated Greeks
    q = questions["pnl_001"]
    quote = _quote("call", 140.0, 30, q["entry_price"], None)
    items.append(_task(q, "attribution", _market(q["ticker"], 138.0, 0.0, 1.0), [quote],
                       {**g, "pnl": ["total_pnl", "delta_pnl", "gamma_pnl", "theta_pnl", "vega_pnl", "unexplained"],
                        "strategy": ["legs_match"]},
                       given_legs=[_leg("buy", quote)], leg_greeks=[dict(q["original_greeks"])],
                       attribution={"type": "call", "strike": 140.0, "quantity": 1.0, "spot0": 138.0,
                                    "spot1": 138.0 + q["stock_move"], "vol_change_points": q["iv_change"] * 100,
                                    "days_passed": q["days_passed"], "price0": q["entry_price"],
                                    "price1": q["current_price"], "greeks": dict(q["original_greeks"])},
                       published=dict(q["ground_truth"]),
                       assumptions=["vega per vol point x 2 points", "expiry nominal (30 days): unused"]))
    # risk_001: sizing a put credit spread
    q = questions["risk_001"]
    quotes = [_quote("put", 370.0, 30, q["spread_credit"], None), _quote("put", 360.0, 30, 0.0, None)]
    items.append(_task(q, "sizing", _market(q["ticker"], q["spot_price"], 0.0, 100.0), quotes,
                       {**g, "pnl": ["max_loss_per_unit", "contracts_allowed", "buying_power"],
                        "strategy": ["legs_match", "net_premium"], "risk": ["within_budget", "sizing"]},
                       given_legs=[_leg("sell", quotes[0]), _leg("buy", quotes[1])], contracts=None,
                       budget={"account": q["account_size"], "risk_pct": q["risk_pct"]},
                       template="bull_put_spread", outlook="bullish",
                       published=dict(q["ground_truth"]),
                       assumptions=["the $2.50 net credit is carried on the short leg (only the net is given)",
                                    "100 shares per contract"]))
    # risk_002: delta-normal VaR of stock plus calls with stated deltas
    q = questions["risk_002"]
    quotes = [_quote("call", 385.0, 30, 8.0, None), _quote("call", 390.0, 30, 5.0, None)]
    legs = [{"side": "buy", "type": "stock", "quantity": 100.0}, _leg("buy", quotes[0], 5), _leg("sell", quotes[1], 3)]
    items.append(_task(q, "sizing", _market(q["ticker"], q["spot_price"], 0.0, 100.0), quotes,
                       {**g, "pnl": ["var_95", "delta_dollars"], "greeks": ["delta"], "strategy": ["legs_match"],
                        "risk": ["hedge"]},
                       given_legs=legs, leg_greeks=[{}, {"delta": 0.48}, {"delta": 0.35}],
                       daily_vol=q["daily_vol"], published=dict(q["ground_truth"]),
                       erratum=("the published exposures multiply contracts x delta x 1000; with 100-share "
                                "contracts the net delta is 235 shares = $89,300 and the 1-day 95% VaR "
                                "$2,643.94 (errata_recomputed.json agrees)"),
                       assumptions=["100 shares per contract", "VaR = |delta x spot| x daily vol x 1.645"]))
    # copy_001: a bull call spread bought for a net debit
    q = questions["copy_001"]
    lo, hi = q["spread_strikes"]
    quotes = [_quote("call", lo, 30, q["debit"], None), _quote("call", hi, 30, 0.0, None)]
    items.append(_task(q, "strategy", _market(q["ticker"], q["spot_price"], 0.0, 1.0), quotes,
                       {**g, "pnl": ["max_profit", "max_loss", "breakevens"],
                        "strategy": ["legs_match", "template", "net_premium"]},
                       given_legs=[_leg("buy", quotes[0]), _leg("sell", quotes[1])],
                       template="bull_call_spread", outlook="bullish",
                       published={k: q["ground_truth"][k] for k in ("max_profit", "max_loss", "breakeven")},
                       assumptions=["the $2.30 net debit is carried on the long leg (only the net is given)",
                                    "per share", "expiry nominal (30 days)"]))
    excluded = [
        {"id": "strategy_002", "reason": "the straddle's leg premiums and strikes are not given (only its $14 "
         "cost); the breakeven move 14/180 = 7.78% is arithmetic, not a position the engine can score"},
        {"id": "vol_001", "reason": "judgement only (buy or sell volatility): no numeric answer"},
        {"id": "vol_002", "reason": "judgement only (term-structure trade): no numeric answer"},
        {"id": "defense_001", "reason": "judgement only (defend or adjust): no numeric answer"},
        {"id": "race_001", "reason": "growth arithmetic (46.8% a month) and judgement; no options position"},
    ]
    return items, excluded


def finish(task: dict[str, Any]) -> dict[str, Any]:
    """Attach the prompt, the engine's numbers and the comparison with the published answer."""
    legs = [parse_leg(leg) for leg in task["given_legs"]] if task.get("given_legs") else None
    answer = reference_answer(task)
    shares = (answer.get("hedge") or {}).get("shares")
    if isinstance(shares, float) and math.isnan(shares):  # no delta to hedge: null, as strict JSON has no NaN
        answer["hedge"] = {"shares": None}
    contracts = float(answer["contracts"])
    numbers = _engine(task, legs or [parse_leg(leg) for leg in answer["legs"]], contracts)
    asked = [n for dim in ("pnl", "greeks") for n in task["ask"][dim]]
    engine = {n: numbers["max_contracts"] if n == "contracts_allowed" else numbers[n] for n in asked}
    if "net_premium" in task["ask"]["strategy"]:
        engine["net_premium"] = numbers["net_premium"]
    if "hedge" in task["ask"]["risk"]:
        engine["hedge_shares"] = numbers["hedge_shares"]
    task["engine"] = {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in engine.items()}
    task["reference_answer"] = answer
    check = score_answer(task, answer)
    assert check.total == 100.0, (task["id"], check.items)
    keys = answer_keys(task)
    question = task.pop("question")
    task["prompt"] = (
        f"{question}\n\nAnswer with one JSON object (schema: finenvs options_answer.schema.json): legs [{{side "
        f"buy/sell, type call/put/stock, strike, expiry, quantity}}] (expiries: "
        f"{sorted({q['expiry'] for q in task['quotes']})}, as of {task['market']['as_of']}), contracts"
        + (", " + ", ".join(keys) if keys else "")
        + f". Amounts {'per share' if task['market']['multiplier'] == 1 else 'in dollars, 100 shares per contract'}"
        "; net_premium > 0 is a debit; theta per calendar day, vega per vol point; hedge.shares < 0 sells stock."
    )
    return task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="folder holding questions/fabpp/")
    args = parser.parse_args()
    raw = json.loads((args.source / "questions/fabpp/options_questions.json").read_text())
    questions = {q["question_id"]: q for q in raw["questions"]}
    errata = {e["question_id"]: e for e in json.loads(
        (args.source / "questions/fabpp/errata_recomputed.json").read_text())["entries"]}
    items, excluded = build_items(questions)
    for task in items:
        task["question"] = questions[task["id"]]["question"]
        if task["id"] in errata:
            task["errata_file"] = {"verdict": errata[task["id"]]["verdict"], "note": errata[task["id"]]["note"]}
        finish(task)
    doc = {"description": "FinOptions-v0 curated bank: FAB++ options questions with engine-recomputed truths",
           "source": SOURCE, "licence": "MIT (FAB++ repository); recomputations by finenvs",
           "conventions": __doc__.split("Conventions the questions leave open, fixed here and stated per item\n")[1]
           .split('"""')[0].strip().replace("\n", " "),
           "items": items, "excluded": excluded}
    dest = HERE / DEST
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n")
    manifest_path = HERE / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"] = [e for e in manifest["files"] if e["file"] != DEST]
    manifest["files"].append({
        "file": DEST, "kind": "questions", "dataset": "options_bank",
        "description": (f"FinOptions-v0 curated bank: {len(items)} FAB++ options questions as scored tasks with "
                        f"engine-recomputed truths, published answers and errata; {len(excluded)} excluded (listed)."),
        "sha256": sha256_file(dest), "rows": len(items), "date_min": AS_OF, "date_max": AS_OF, "symbols": [],
        "source": SOURCE, "licence": "MIT (FAB++ repository)",
        "transform": "questions re-expressed as FinOptions-v0 tasks; truths recomputed by finenvs.pricing",
        "excluded_rows": excluded,
    })
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    for task in items:
        print(f"{task['id']}: engine {task['engine']} published {task['published']}")


if __name__ == "__main__":
    main()
