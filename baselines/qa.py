"""FinQA-v0 baselines: the offline tool-using agent, a first-number reader and a random answerer.

Each is ``policy(obs, info) -> reply`` built with ``from_env(env, seed)``.

``scripted_agent`` answers through the text interface: it reads market data and
XBRL facts only through the env's date-locked tools and does every computation
with the ``calculate`` tool, writing its own formula for each topic from the
quantities the question states (``info["inputs"]``). It never reads the truth or
calls the generators' code, so its score is a check of the banks, not a
tautology. ``first_number`` is the scorer trap the issue names (answer with the
first number in the question); ``random`` sends a malformed reply half the time
and random numbers otherwise.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import time
from typing import Any

import numpy as np

from finenvs.tools import ToolBox


class ScriptedQAAgent:
    """Offline agent: tools for the data, the calculator for every number (see the module docstring)."""

    REVENUE = ("us-gaap:Revenues", "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
               "us-gaap:SalesRevenueNet")

    def __init__(self, env: Any) -> None:
        self.tools = ToolBox(env, max_chars=200_000)
        self.calls = 0

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> ScriptedQAAgent:
        return cls(env)

    def call(self, name: str, **arguments: Any) -> Any:
        self.calls += 1
        result = self.tools.call(name, arguments)
        if not result.ok:
            raise ValueError(f"{name}{arguments}: {result.error}")
        return result.data

    def calc(self, expression: str) -> float:
        return float(self.call("calculate", expression=expression)["value"])

    # ------------------------------------------------------------------ analysis
    def analysis(self, topic: str, x: dict[str, Any]) -> Any:  # noqa: C901 - one formula per topic
        c = self.calc
        if topic == "npv_crossover":
            return c(f"{x['cash_flow_b_year2']} / {x['cash_flow_a_year1']} - 1")
        if topic == "beta_targeting":
            return c(f"({x['target_beta']} - {x['weight_y']} * {x['beta_y']}) / {x['beta_x']}")
        if topic == "bond_replication":
            k = f"({x['coupon_2']} / {x['coupon_1']})"
            return c(f"{k} * {x['price_1']} + (1 - {k}) * {x['zero_price']}")
        if topic == "fcff":
            return c(f"{x['ebit']} * (1 - {x['tax_rate']}) + {x['depreciation']} - {x['capex']} - "
                     f"{x['working_capital_increase']}")
        if topic == "bull_spread":
            net = f"({x['premium_long']} - {x['premium_short']})"
            return {"max_profit": c(f"{x['strike_short']} - {x['strike_long']} - {net}"), "max_loss": c(net),
                    "breakeven": c(f"{x['strike_long']} + {net}")}
        if topic == "roe_leverage":
            equity = f"({x['assets']} / (1 + {x['debt_to_equity']}))"
            return c(f"({x['roa_ebit']} * {x['assets']} - {x['interest_rate']} * ({x['assets']} - {equity})) "
                     f"* (1 - {x['tax_rate']}) / {equity}")
        if topic == "mm_homemade_leverage":
            value = f"({x['shares_a']} * {x['price_a']})"
            return {"firm_a_position": c(f"{x['fraction']} * {value}"), "borrowing": c(f"{x['fraction']} * {x['debt_b']}"),
                    "own_funds": c(f"{x['fraction']} * ({value} - {x['debt_b']})")}
        if topic == "risk_neutral_probability":
            return c(f"(1 + {x['rate']} - (1 - {x['down']})) / ((1 + {x['up']}) - (1 - {x['down']}))")
        if topic == "pv_comparison":
            pv = c(f"{x['amount_later']} / (1 + {x['rate']}) ** {x['years']}")
            return {"better_option": "A" if x["amount_now"] > pv else "B", "difference": c(f"abs({x['amount_now']} - {pv})")}
        if topic == "duration_immunization":
            return c(f"({x['liability_duration']} - {x['duration_a']}) / ({x['duration_b']} - {x['duration_a']})")
        if topic == "combined_leverage":
            return c(f"{x['dol']} * {x['dfl']} * {x['sales_change']}")
        if topic == "cal_leverage":
            w = c(f"({x['target_return']} - {x['risk_free']}) / ({x['expected_return']} - {x['risk_free']})")
            return {"std_dev": c(f"{w} * {x['std_dev']}"), "leverage": w}
        if topic == "perpetuity":
            return c(f"({x['coupon']} / {x['rate_after']}) / ({x['coupon']} / {x['rate_before']}) - 1")
        if topic == "swap_comparative_advantage":
            gain = c(f"abs(({x['y_fixed']} - {x['x_fixed']}) - ({x['y_spread']} - {x['x_spread']}))")
            return {"x_spread": c(f"{x['x_spread']} - {gain} / 2"), "y_fixed": c(f"{x['y_fixed']} - {gain} / 2")}
        if topic == "stock_split":
            return {"price": c(f"{x['price']} * {x['old']} / {x['new']}"), "shares": c(f"{x['shares']} * {x['new']} / {x['old']}")}
        if topic == "put_call_parity":
            return c(f"{x['call']} - {x['spot']} + {x['strike']} * exp(-{x['rate']} * {x['years']})")
        if topic == "gordon_growth":
            return c(f"{x['dividend']} * (1 + {x['growth']}) / ({x['required_return']} - {x['growth']})")
        if topic == "covered_interest_arbitrage":
            fair = c(f"{x['spot']} * (1 + {x['usd_rate']}) / (1 + {x['eur_rate']})")
            n, s, f = x["notional"], x["spot"], x["forward"]
            if f < fair:
                profit = c(f"{n} * (1 + {x['usd_rate']}) - {n} / {s} * (1 + {x['eur_rate']}) * {f}")
                return {"opportunity": "yes", "borrow": "EUR", "profit": profit}
            profit = c(f"{n} / {s} * (1 + {x['eur_rate']}) * {f} - {n} * (1 + {x['usd_rate']})")
            return {"opportunity": "yes", "borrow": "USD", "profit": profit}
        raise ValueError(f"the scripted agent has no method for topic {topic!r}")

    # ------------------------------------------------------------------ knowledge
    def _closes(self, symbol: str, start: str, end: str) -> list[list[Any]]:
        return self.call("get_prices", symbol=symbol, start=start, end=end)["rows"]

    def _fact(self, bundle: str, concepts: tuple[str, ...], period: str) -> tuple[str, float] | None:
        for concept in concepts:
            try:
                facts = self.call("get_facts", bundle=bundle, concept=concept, period=period)["facts"]
            except ValueError:  # concept not in this filing
                continue
            values = [f for f in facts if f["value"] is not None]
            if values:
                best = max(values, key=lambda f: 99 if f["decimals"] in (None, "INF") else int(f["decimals"]))
                return concept, float(best["value"])
        return None

    def _prior_period(self, bundle: str, concept: str, period: str) -> str | None:
        start, end = (_dt.date.fromisoformat(p) for p in period.split(" to "))
        for f in self.call("get_facts", bundle=bundle, concept=concept)["facts"]:
            if " to " not in f["period"]:
                continue
            s, e = (_dt.date.fromisoformat(p) for p in f["period"].split(" to "))
            if 358 <= (end - e).days <= 373 and abs((e - s).days - (end - start).days) <= 7:
                return f["period"]
        return None

    def knowledge(self, topic: str, x: dict[str, Any]) -> Any:
        if topic == "close_price":
            return self._closes(x["symbol"], x["date"], x["date"])[-1][4]
        if topic == "period_return":
            rows = self._closes(x["symbol"], x["start"], x["end"])
            return self.calc(f"{rows[-1][4]} / {rows[0][4]} - 1")
        if topic == "max_close":
            first = _dt.date.fromisoformat(x["month"] + "-01")
            last = (first.replace(day=28) + _dt.timedelta(days=4)).replace(day=1) - _dt.timedelta(days=1)
            rows = self._closes(x["symbol"], first.isoformat(), last.isoformat())
            best = max(rows, key=lambda r: r[4])
            return {"date": best[0], "close": best[4]}
        if topic == "xbrl_metric":
            return self._metric(x["bundle"], x["metric"], x["period"])
        if topic == "filing_order":
            filed = {label: self.call("list_filings", symbol=f["symbol"], form=f["form"])["filings"][0]["filed"]
                     for label, f in x["filings"].items()}
            return sorted(filed, key=lambda label: filed[label])
        raise ValueError(f"the scripted agent has no method for topic {topic!r}")

    def _metric(self, bundle: str, metric: str, period: str) -> float:
        def need(concepts: tuple[str, ...], when: str = period) -> tuple[str, float]:
            got = self._fact(bundle, concepts, when)
            if got is None:
                raise ValueError(f"no fact of {concepts} for {when} in {bundle}")
            return got

        if metric in ("gross_margin", "operating_margin", "net_margin"):
            top = {"gross_margin": "us-gaap:GrossProfit", "operating_margin": "us-gaap:OperatingIncomeLoss",
                   "net_margin": "us-gaap:NetIncomeLoss"}[metric]
            return self.calc(f"{need((top,))[1]} / {need(self.REVENUE)[1]}")
        if metric == "revenue_growth":
            concept, now = need(self.REVENUE)
            prior = self._prior_period(bundle, concept, period)
            if prior is None:
                raise ValueError(f"no prior-year period for {period} in {bundle}")
            return self.calc(f"{now} / {need((concept,), prior)[1]} - 1")
        if metric == "eps_diluted":
            ni = need(("us-gaap:NetIncomeLoss",))[1]
            shares = need(("us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding",))[1]
            return self.calc(f"{ni} / {shares}")
        if metric == "ebitda":
            op = need(("us-gaap:OperatingIncomeLoss",))[1]
            return self.calc(f"{op} + {need(('us-gaap:DepreciationDepletionAndAmortization',))[1]}")
        raise ValueError(f"the scripted agent has no method for metric {metric!r}")

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        topic, inputs = info["topic"], info["inputs"]
        answer = self.analysis(topic, inputs) if info["section"] == "analysis" else self.knowledge(topic, inputs)
        return json.dumps({"answer": answer})


_NUMBER = re.compile(r"-?\d[\d,]*\.?\d*")


class FirstNumber:
    """Answers every part with the first number of the question (the free-text reading FinQA refuses)."""

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> FirstNumber:
        return cls()

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        question = obs.split("\n")[0].split(":", 1)[-1] if obs.startswith("As of") else obs.split("\n")[0]
        m = _NUMBER.search(question)
        value = m.group(0).replace(",", "") if m else "0"
        parts = info["parts"]
        if len(parts) == 1:
            return f"Answer: {value}"
        return json.dumps({"answer": {p: value for p in parts}})


#: Replies the random agent sends half the time (each scores 0 with a recorded reason).
MALFORMED = (
    "",
    "I think the answer is probably around 12 or maybe 15.",
    "Answer: 10\nAnswer: 12",
    '{"answer": 1} {"answer": 2}',
    '{"result": "n/a"}',
    "Answer: not sure",
)


class RandomQA:
    """Half the time a malformed reply, else a random number (or choice) per part."""

    def __init__(self, seed: int | None = 0) -> None:
        self.rng = np.random.default_rng(seed)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomQA:
        return cls(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        if self.rng.random() < 0.5:
            return MALFORMED[int(self.rng.integers(len(MALFORMED)))]
        answer = {p: float(np.round(10 ** self.rng.uniform(-2, 6), 4)) for p in info["parts"]}
        return json.dumps({"answer": answer if len(answer) > 1 else next(iter(answer.values()))})


QA_POLICIES: dict[str, tuple[type, str]] = {
    "scripted_agent": (ScriptedQAAgent, "offline agent: date-locked tools for data, the calculate tool for every number"),
    "first_number": (FirstNumber, "the first number of the question for every part (the naive reading)"),
    "random": (RandomQA, "malformed half the time, random numbers otherwise"),
}


def run_qa(env: Any, policy: Any, indices: list[int] | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """Every item of a fixed-list FinQA-v0 env (or ``indices``) with ``policy``; one row each.

    A policy that raises is recorded as an errored task (score 0, the error kept), never dropped.
    """
    base = env.unwrapped
    rows = []
    for i in indices if indices is not None else range(len(base.items)):
        began = time.perf_counter()
        obs, info = env.reset(seed=seed, options={"index": i})
        if hasattr(policy, "reset"):
            policy.reset(seed + i)
        calls_before = getattr(policy, "calls", 0)
        try:
            reply = policy(obs, info)
        except Exception as exc:  # an errored task scores 0 and is reported, with what it did before failing
            rows.append({"task_id": info["task_id"], "section": info["section"], "topic": info["topic"], "score": 0.0,
                         "reason": None, "error": f"{type(exc).__name__}: {exc}",
                         "tool_calls": getattr(policy, "calls", 0) - calls_before,
                         "look_ahead_attempts": base.as_of_view().counter.attempts,
                         "seconds": time.perf_counter() - began})
            continue
        _, reward, _, _, final = env.step(reply)
        rows.append({"task_id": info["task_id"], "section": info["section"], "topic": info["topic"],
                     "score": float(reward), "reason": final["qa"]["reason"] or next(
                         (p["reason"] for p in final["qa"]["parts"] if p["reason"]), None), "error": None,
                     "tool_calls": getattr(policy, "calls", 0) - calls_before,
                     "look_ahead_attempts": final["look_ahead_attempts"], "seconds": time.perf_counter() - began})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean score (0-100) per section and per topic, errors and unreadable answers counted."""
    out: dict[str, Any] = {"n": len(rows), "errors": sum(r["error"] is not None for r in rows), "sections": {},
                           "topics": {}}
    for key, field in (("sections", "section"), ("topics", "topic")):
        for name in sorted({r[field] for r in rows}):
            scores = [r["score"] for r in rows if r[field] == name]
            out[key][name] = {"n": len(scores), "score": 100.0 * float(np.mean(scores))}
    return out


def run_qa_section(seed: int = 0) -> dict[str, Any]:
    """FinQA-v0's eval split with every baseline, for the scorecard."""
    import gymnasium as gym

    env = gym.make("FinQA-v0", split="eval")
    section: dict[str, Any] = {"n": len(env.unwrapped.items), "as_of": env.unwrapped.as_of, "policies": {}}
    for name, (cls, _) in QA_POLICIES.items():
        rows = run_qa(env, cls.from_env(env, seed), seed=seed)
        section["policies"][name] = {**summarise(rows), "rows": rows}
    env.close()
    return section


def qa_markdown(section: dict[str, Any]) -> list[str]:
    """The scorecard's FinQA-v0 block."""
    policies = section["policies"]
    topics = sorted({t for s in policies.values() for t in s["topics"]})
    lines = ["## Knowledge and analysis (FinQA-v0)", "",
             f"{section['n']} eval questions: the Knowledge bank at {section['as_of']} (prices, filing dates and "
             "XBRL facts visible then) and the 18 analytical topics at seeds 1..5 (seed 0, the published question, "
             "is kept out). Score 0-100 = the share of answer parts within tolerance; every truth is computed in "
             "code. `scripted_agent` reads the data through the date-locked tools and computes with the calculate "
             "tool; `first_number` answers with the question's first number.", "",
             "| policy | Knowledge | Analysis | errors | tool calls/question | look-ahead |", "|---|---:|---:|---:|---:|---:|"]
    for name, s in policies.items():
        calls = np.mean([r["tool_calls"] for r in s["rows"]]) if s["rows"] else 0.0
        look = sum(r["look_ahead_attempts"] for r in s["rows"])
        cells = [f"{s['sections'].get(k, {}).get('score', float('nan')):.1f}" for k in ("knowledge", "analysis")]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {s['errors']} | {calls:.1f} | {look} |")
    lines += ["", "Score by topic:", "", "| topic | n | " + " | ".join(policies) + " |",
              "|---|---:|" + "---:|" * len(policies)]
    for t in topics:
        n = next(s["topics"][t]["n"] for s in policies.values() if t in s["topics"])
        lines.append(f"| {t} | {n} | " + " | ".join(f"{s['topics'].get(t, {}).get('score', float('nan')):.1f}"
                                                    for s in policies.values()) + " |")
    lines.append("")
    return lines


__all__ = ["MALFORMED", "QA_POLICIES", "FirstNumber", "RandomQA", "ScriptedQAAgent", "qa_markdown", "run_qa",
           "run_qa_section", "summarise"]
