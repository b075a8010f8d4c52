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

The per-topic methods are written once, as generators of tool calls
(:func:`question_steps`): ``scripted_agent`` runs them through a ToolBox, and
:class:`ScriptedQAChatAgent`, the offline chat agent of ``FinQA-text-v0``, runs
them over a conversation, reading the topic and inputs from its prompt.
:func:`print_episode` is what ``finenvs run`` prints for one question.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.tasks.qa.analysis import key_values
from finenvs.tasks.qa.env import DEFAULT_ANALYSIS_SCORE
from finenvs.tasks.qa.fab_public import SPLIT, count_items, shipped_items
from finenvs.tasks.qa.methods import METHODS
from finenvs.tasks.spec import EnvPolicy
from finenvs.text.chat import (
    NO_USAGE,
    ChatReply,
    ScriptedChatAgent,
    call_key,
    call_results,
    first_prompt,
    prompt_state,
)
from finenvs.text.markdown import fmt_number, md_table
from finenvs.tools import ToolBox
from finenvs.tools.xbrl import fact_records

#: One tool call: ``(tool name, arguments)``.
Request = tuple[str, dict[str, Any]]
#: A question's method: a generator that yields batches of tool calls, is sent their results (each the tool's
#: data, ``{"error": ...}`` for a failed call) and returns the answer. Agents run it their own way
#: (:func:`run_steps` through a ToolBox; :class:`ScriptedQAChatAgent` over a conversation).
Steps = Generator[list[Request], list[Any], Any]
REVENUE = ("us-gaap:Revenues", "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
           "us-gaap:SalesRevenueNet")


def _checked(name: str, arguments: dict[str, Any], result: Any) -> Any:
    if isinstance(result, dict) and "error" in result:
        raise ValueError(f"{name}{arguments}: {result['error']}")
    return result


def _ask(name: str, **arguments: Any) -> Generator[list[Request], list[Any], Any]:
    """One tool call; its data (a tool error raises ValueError)."""
    (result,) = yield [(name, arguments)]
    return _checked(name, arguments, result)


def _calcs(*expressions: str) -> Generator[list[Request], list[Any], list[float]]:
    """The ``calculate`` tool on independent expressions, in one batch."""
    results = yield [("calculate", {"expression": e}) for e in expressions]
    return [float(_checked("calculate", {"expression": e}, r)["value"]) for e, r in zip(expressions, results, strict=True)]


def _calc(expression: str) -> Generator[list[Request], list[Any], float]:
    (value,) = yield from _calcs(expression)
    return value


def question_steps(section: str, topic: str, x: dict[str, Any]) -> Steps:
    """The method for a question of ``section`` and ``topic`` with the inputs ``x`` the question states.

    A closed-book question (``x["closed_book"]``: the FAB public split) has no method: no shipped data answers
    it, so the method returns no answer (``None``) without calling a tool.
    """
    if x.get("closed_book"):
        return closed_book_steps()
    return analysis_steps(topic, x) if section == "analysis" else knowledge_steps(topic, x)


def closed_book_steps() -> Steps:
    """No tool call, no answer: the scripted agents know no facts beyond the shipped data."""
    return None
    yield []  # pragma: no cover - makes this a generator


def analysis_steps(topic: str, x: dict[str, Any]) -> Steps:  # noqa: C901 - one formula per topic
    """An analytical topic's formula, every number through the calculator."""
    if topic == "npv_crossover":
        return (yield from _calc(f"{x['cash_flow_b_year2']} / {x['cash_flow_a_year1']} - 1"))
    if topic == "beta_targeting":
        return (yield from _calc(f"({x['target_beta']} - {x['weight_y']} * {x['beta_y']}) / {x['beta_x']}"))
    if topic == "bond_replication":
        k = f"({x['coupon_2']} / {x['coupon_1']})"
        return (yield from _calc(f"{k} * {x['price_1']} + (1 - {k}) * {x['zero_price']}"))
    if topic == "fcff":
        return (yield from _calc(f"{x['ebit']} * (1 - {x['tax_rate']}) + {x['depreciation']} - {x['capex']} - "
                                 f"{x['working_capital_increase']}"))
    if topic == "bull_spread":
        net = f"({x['premium_long']} - {x['premium_short']})"
        profit, loss, breakeven = yield from _calcs(f"{x['strike_short']} - {x['strike_long']} - {net}", net,
                                                    f"{x['strike_long']} + {net}")
        return {"max_profit": profit, "max_loss": loss, "breakeven": breakeven}
    if topic == "roe_leverage":
        equity = f"({x['assets']} / (1 + {x['debt_to_equity']}))"
        return (yield from _calc(f"({x['roa_ebit']} * {x['assets']} - {x['interest_rate']} * ({x['assets']} - "
                                 f"{equity})) * (1 - {x['tax_rate']}) / {equity}"))
    if topic == "mm_homemade_leverage":
        value = f"({x['shares_a']} * {x['price_a']})"
        position, borrowing, own = yield from _calcs(f"{x['fraction']} * {value}", f"{x['fraction']} * {x['debt_b']}",
                                                     f"{x['fraction']} * ({value} - {x['debt_b']})")
        return {"firm_a_position": position, "borrowing": borrowing, "own_funds": own}
    if topic == "risk_neutral_probability":
        return (yield from _calc(f"(1 + {x['rate']} - (1 - {x['down']})) / ((1 + {x['up']}) - (1 - {x['down']}))"))
    if topic == "pv_comparison":
        pv = yield from _calc(f"{x['amount_later']} / (1 + {x['rate']}) ** {x['years']}")
        return {"better_option": "A" if x["amount_now"] > pv else "B",
                "difference": (yield from _calc(f"abs({x['amount_now']} - {pv})"))}
    if topic == "duration_immunization":
        return (yield from _calc(f"({x['liability_duration']} - {x['duration_a']}) / "
                                 f"({x['duration_b']} - {x['duration_a']})"))
    if topic == "combined_leverage":
        return (yield from _calc(f"{x['dol']} * {x['dfl']} * {x['sales_change']}"))
    if topic == "cal_leverage":
        w = yield from _calc(f"({x['target_return']} - {x['risk_free']}) / ({x['expected_return']} - {x['risk_free']})")
        return {"std_dev": (yield from _calc(f"{w} * {x['std_dev']}")), "leverage": w}
    if topic == "perpetuity":
        return (yield from _calc(f"({x['coupon']} / {x['rate_after']}) / ({x['coupon']} / {x['rate_before']}) - 1"))
    if topic == "swap_comparative_advantage":
        gain = yield from _calc(f"abs(({x['y_fixed']} - {x['x_fixed']}) - ({x['y_spread']} - {x['x_spread']}))")
        x_spread, y_fixed = yield from _calcs(f"{x['x_spread']} - {gain} / 2", f"{x['y_fixed']} - {gain} / 2")
        return {"x_spread": x_spread, "y_fixed": y_fixed}
    if topic == "stock_split":
        price, shares = yield from _calcs(f"{x['price']} * {x['old']} / {x['new']}",
                                          f"{x['shares']} * {x['new']} / {x['old']}")
        return {"price": price, "shares": shares}
    if topic == "put_call_parity":
        return (yield from _calc(f"{x['call']} - {x['spot']} + {x['strike']} * exp(-{x['rate']} * {x['years']})"))
    if topic == "gordon_growth":
        return (yield from _calc(f"{x['dividend']} * (1 + {x['growth']}) / ({x['required_return']} - {x['growth']})"))
    if topic == "covered_interest_arbitrage":
        fair = yield from _calc(f"{x['spot']} * (1 + {x['usd_rate']}) / (1 + {x['eur_rate']})")
        n, s, f = x["notional"], x["spot"], x["forward"]
        if f < fair:
            profit = yield from _calc(f"{n} * (1 + {x['usd_rate']}) - {n} / {s} * (1 + {x['eur_rate']}) * {f}")
            return {"opportunity": "yes", "borrow": "EUR", "profit": profit}
        profit = yield from _calc(f"{n} / {s} * (1 + {x['eur_rate']}) * {f} - {n} * (1 + {x['usd_rate']})")
        return {"opportunity": "yes", "borrow": "USD", "profit": profit}
    raise ValueError(f"the scripted agent has no method for topic {topic!r}")


#: The ``get_prices`` columns a knowledge question needs (the closes; not the day's other prices and volume).
CLOSES = ["date", "close"]


def knowledge_steps(topic: str, x: dict[str, Any]) -> Steps:
    """A knowledge topic's method: data through the date-locked tools, numbers through the calculator."""
    if topic == "close_price":
        return (yield from _ask("get_prices", symbol=x["symbol"], start=x["date"], end=x["date"],
                                columns=CLOSES))["rows"][-1][1]
    if topic == "period_return":
        rows = (yield from _ask("get_prices", symbol=x["symbol"], start=x["start"], end=x["end"], columns=CLOSES))["rows"]
        return (yield from _calc(f"{rows[-1][1]} / {rows[0][1]} - 1"))
    if topic == "max_close":
        first = _dt.date.fromisoformat(x["month"] + "-01")
        last = (first.replace(day=28) + _dt.timedelta(days=4)).replace(day=1) - _dt.timedelta(days=1)
        rows = (yield from _ask("get_prices", symbol=x["symbol"], start=first.isoformat(), end=last.isoformat(),
                                columns=CLOSES))["rows"]
        best = max(rows, key=lambda r: r[1])
        return {"date": best[0], "close": best[1]}
    if topic == "xbrl_metric":
        return (yield from _metric_steps(x["bundle"], x["metric"], x["period"]))
    if topic == "filing_order":
        asked = [("list_filings", {"symbol": f["symbol"], "form": f["form"]}) for f in x["filings"].values()]
        results = yield asked
        filed = {label: _checked(*request, result)["filings"][0]["filed"]
                 for label, request, result in zip(x["filings"], asked, results, strict=True)}
        return sorted(filed, key=lambda label: filed[label])
    raise ValueError(f"the scripted agent has no method for topic {topic!r}")


def _fact_steps(bundle: str, concepts: tuple[str, ...], period: str) -> Generator[list[Request], list[Any], Any]:
    """``(concept, value)`` of the first of ``concepts`` with a fact for the period (the most precise), or None."""
    for concept in concepts:
        (result,) = yield [("get_facts", {"bundle": bundle, "concept": concept, "period": period})]
        if isinstance(result, dict) and "error" in result:  # concept not in this filing
            continue
        values = [f for f in fact_records(result) if f["value"] is not None]
        if values:
            best = max(values, key=lambda f: 99 if f["decimals"] in (None, "INF") else int(f["decimals"]))
            return concept, float(best["value"])
    return None


def _metric_steps(bundle: str, metric: str, period: str) -> Generator[list[Request], list[Any], float]:
    def need(concepts: tuple[str, ...], when: str = period) -> Generator[list[Request], list[Any], tuple[str, float]]:
        got = yield from _fact_steps(bundle, concepts, when)
        if got is None:
            raise ValueError(f"no fact of {concepts} for {when} in {bundle}")
        return got

    if metric in ("gross_margin", "operating_margin", "net_margin"):
        top = {"gross_margin": "us-gaap:GrossProfit", "operating_margin": "us-gaap:OperatingIncomeLoss",
               "net_margin": "us-gaap:NetIncomeLoss"}[metric]
        numerator = (yield from need((top,)))[1]
        revenue = (yield from need(REVENUE))[1]
        return (yield from _calc(f"{numerator} / {revenue}"))
    if metric == "revenue_growth":
        concept, now = yield from need(REVENUE)
        prior = _prior_period(fact_records((yield from _ask("get_facts", bundle=bundle, concept=concept))), period)
        if prior is None:
            raise ValueError(f"no prior-year period for {period} in {bundle}")
        before = (yield from need((concept,), prior))[1]
        return (yield from _calc(f"{now} / {before} - 1"))
    if metric == "eps_diluted":
        ni = (yield from need(("us-gaap:NetIncomeLoss",)))[1]
        shares = (yield from need(("us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding",)))[1]
        return (yield from _calc(f"{ni} / {shares}"))
    if metric == "ebitda":
        op = (yield from need(("us-gaap:OperatingIncomeLoss",)))[1]
        da = (yield from need(("us-gaap:DepreciationDepletionAndAmortization",)))[1]
        return (yield from _calc(f"{op} + {da}"))
    raise ValueError(f"the scripted agent has no method for metric {metric!r}")


def _prior_period(facts: list[dict[str, Any]], period: str) -> str | None:
    """The period of ``facts`` a year before ``period`` and as long (within a week)."""
    start, end = (_dt.date.fromisoformat(p) for p in period.split(" to "))
    for f in facts:
        if " to " not in f["period"]:
            continue
        s, e = (_dt.date.fromisoformat(p) for p in f["period"].split(" to "))
        if 358 <= (end - e).days <= 373 and abs((e - s).days - (end - start).days) <= 7:
            return f["period"]
    return None


def run_steps(steps: Steps, call: Callable[[str, dict[str, Any]], Any]) -> Any:
    """Run a method to its answer with ``call(name, arguments) -> data`` (``{"error": ...}`` for a failed call)."""
    try:
        requests = next(steps)
        while True:
            requests = steps.send([call(name, arguments) for name, arguments in requests])
    except StopIteration as done:
        return done.value


class ScriptedQAAgent:
    """Offline agent: tools for the data, the calculator for every number (see the module docstring).

    It runs :func:`question_steps` through a :class:`~finenvs.tools.ToolBox` on the env.
    """

    REVENUE = REVENUE

    def __init__(self, env: Any) -> None:
        self.tools = ToolBox(env, max_chars=200_000)
        self.calls = 0

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> ScriptedQAAgent:
        return cls(env)

    def fetch(self, name: str, arguments: dict[str, Any]) -> Any:
        """One tool call: its data, ``{"error": ...}`` when it failed."""
        self.calls += 1
        return self.tools.call(name, arguments).data

    def call(self, name: str, **arguments: Any) -> Any:
        """One tool call: its data (a tool error raises ValueError)."""
        return _checked(name, arguments, self.fetch(name, arguments))

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        steps = question_steps(info["section"], info["topic"], info["inputs"])
        answer = run_steps(steps, self.fetch)
        # FAB++'s structured answer: the method it used and the intermediates it computed on the way
        return json.dumps({**_structured(info["section"], info["topic"], info["inputs"]), "answer": answer})


_TASK = re.compile(r"(?P<id>\S+) \((?P<section>\w+), topic (?P<topic>\w+)\)")


@dataclass
class ScriptedQAChatAgent(ScriptedChatAgent):
    """Offline FinQA-v0 agent that speaks the chat protocol: :class:`ScriptedQAAgent`'s methods, in rounds.

    It reads the question's section, topic and inputs from the prompt's ``Task:``
    and ``Inputs:`` lines and runs :func:`question_steps` over the tool results in
    the messages (it keeps no state: the same conversation always gets the same
    reply): each assistant turn makes the method's next batch of calls (market
    data and XBRL facts through the date-locked tools, every number through
    ``calculate``), and once it has its answer the agent commits ``{"answer": ...}``
    with ``commit_action``. On the 150 eval questions that is 1 to 4 tool calls per
    decision (the ScriptedQAAgent's calls), within the runner's default budget of 8.

    A tool error the method cannot work around, a prompt without readable ``Task:``
    and ``Inputs:`` lines or a topic it has no method for commits ``{"answer": null}``
    (scored 0) with the reason in ``reasoning``. Without tools it answers in text
    that it cannot compute (scored 0).
    """

    name: str = "scripted-qa"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, round_no = self._offered(messages, tools)
        if not {"calculate", "commit_action"} <= names:
            return ChatReply("I cannot read data or compute without tools, so I give no answer.", usage=NO_USAGE)
        state = prompt_state(first_prompt(messages))
        task = _TASK.fullmatch(state.get("Task", ""))
        try:
            inputs = json.loads(state["Inputs"])
        except (KeyError, ValueError):
            inputs = None
        if task is None or not isinstance(inputs, dict):
            return self._commit(round_no, None, "the prompt has no readable Task and Inputs lines")
        log = call_results(messages)
        steps = question_steps(task["section"], task["topic"], inputs)
        try:
            requests = next(steps)
            while True:
                pending = {call_key(*r): r for r in requests if call_key(*r) not in log}
                if pending:
                    return self._calls(round_no, *pending.values())
                requests = steps.send([log[call_key(*r)] for r in requests])
        except StopIteration as done:
            if inputs.get("closed_book"):
                return self._commit(round_no, None, "closed-book question: no shipped data answers it, and the "
                                    "scripted agent knows nothing else")
            return self._commit(round_no, done.value, f"{task['topic']}: data from the date-locked tools, every "
                                "number from the calculate tool", **_structured(task["section"], task["topic"], inputs))
        except (ValueError, KeyError, TypeError, IndexError) as exc:  # a tool error, or a result it cannot read
            return self._commit(round_no, None, f"no answer: {exc}")

    def _commit(self, round_no: int, answer: Any, why: str, **structured: Any) -> ChatReply:
        return self._calls(round_no, ("commit_action", {**structured, "answer": answer, "reasoning": why}))


def _structured(section: str, topic: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """An analytical answer's method and the intermediates computed on the way (FAB++'s methodology and
    calculation); nothing for a knowledge question."""
    if section != "analysis" or topic not in METHODS:
        return {}
    spec = METHODS[topic]
    values = key_values(topic, inputs)
    return {"method": spec.method, "intermediates": {i.name: values[i.name] for i in spec.intermediates}}


# ---------------------------------------------------------------------------- finenvs run
def print_episode(env: Any, result: dict[str, Any]) -> list[str]:
    """The lines ``finenvs run`` prints for one FinQA-v0 episode: the question, the score, the answer, each part.

    Args:
        env: The episode's env (its ``spec.id`` names it when ``result`` has no ``"env"``).
        result: The episode: ``obs`` (the question), ``info`` (the reset info), ``action`` (the reply),
            ``reward`` (the score), ``final`` (the step's info), ``policy`` (a name) and optionally ``env`` (the
            env id), as :func:`finenvs.evaluation.episodes.play_episode` returns them.
    """
    qa = result["final"]["qa"]
    env_id = result.get("env") or env.spec.id
    return [*str(result["obs"]).split("\n"), "",
            f"{env_id} {result['info']['task_id']} policy={result['policy']}: score {result['reward']:.3f}"
            + (f" ({qa['reason']})" if qa["reason"] else ""),
            f"  answer: {result['action']}",
            *(f"  {p['name']}: {'ok' if p['correct'] else 'wrong'}, expected {p['expected']}, read {p['read']}"
              + (f" ({p['reason']})" if p["reason"] else "") for p in qa["parts"]),
            "  solution: " + "; ".join(qa["solution"])]


def run_output(env: Any, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """``finenvs run``'s printer form ``(env, result, flags) -> (lines, --json record)``: :func:`print_episode` and
    the episode's record (question, answer, score, parts, truth, solution)."""
    final = result["final"]
    qa = final["qa"]
    record = {"env": result.get("env") or env.spec.id, "policy": result["policy"],
              "task_id": result["info"]["task_id"], "question": result["obs"], "answer": result["action"],
              "score": result["reward"], "reason": qa["reason"], "parts": qa["parts"], "truth": qa["truth"],
              "solution": qa["solution"], "look_ahead_attempts": final["look_ahead_attempts"]}
    return print_episode(env, result), record


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
        if len(parts) <= 1:  # one part, or a free-text question (the FAB public split)
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
        if not answer:  # a free-text question (the FAB public split): one random number
            return f"Answer: {float(np.round(10 ** self.rng.uniform(-2, 6), 4))}"
        return json.dumps({"answer": answer if len(answer) > 1 else next(iter(answer.values()))})


class Reference:
    """The reference answer: the expert answer of a FAB public question, the computed truth of any other.

    An oracle (it reads the env's current item, which no agent sees): its score checks the scorer and the
    data, not an agent. On the FAB public split it should pass every deterministic rubric item; where it does
    not, that is a matcher bug or a data issue (``tests/test_fab_public.py`` lists them).
    """

    def __init__(self, env: Any) -> None:
        self.env = env

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> Reference:
        return cls(env)

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        item = self.env.unwrapped.item
        truth = item.truth
        if "expert_answer" in truth and not item.parts:
            return json.dumps({"answer": truth["expert_answer"]})
        return json.dumps({"answer": truth}, default=str)


QA_POLICIES: dict[str, tuple[type[EnvPolicy], str]] = {
    "scripted_agent": (ScriptedQAAgent, "offline agent: date-locked tools for data, the calculate tool for every number"),
    "first_number": (FirstNumber, "the first number of the question for every part (the naive reading)"),
    "random": (RandomQA, "malformed half the time, random numbers otherwise"),
    "reference": (Reference, "oracle: the expert answer (FAB public split) or the computed truth; checks the scorer"),
}
#: The split of the Finance Agent Benchmark's public questions the bench plays beside the eval questions.
PUBLIC_SPLIT = SPLIT
#: The policies ``finenvs bench`` runs on the eval questions (the reference oracle is left out: it scores the
#: scorer, not an agent).
BENCH_POLICIES = ("scripted_agent", "first_number", "random")


#: How the scorecard states the grading of the analytical questions (knowledge: the share of answer parts).
GRADING_NOTES = {
    "fabpp": ("Score 0-100: a knowledge question the share of answer parts within tolerance; an analytical question "
              "graded as FAB++ does (`--analysis-grading fabpp`): methodology 30, calculation 30 (key "
              "intermediates), answer 40, each checked in code."),
    "answer": ("Score 0-100 = the share of answer parts within tolerance (`--analysis-grading answer`: analytical "
               "questions graded on the answer only, not FAB++'s methodology/calculation/answer split)."),
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


def run_qa_bench(config: Any) -> dict[str, Any]:
    """FinQA-v0's section of ``finenvs bench`` (its bench section's ``baselines``): every baseline on the eval
    questions and on the Finance Agent Benchmark's public questions (``section["public"]``, the split its spec's
    ``bench.extra_splits`` names), and each one's tasks of both for the FAB++ aggregate (``section["tasks"]``: score
    0-100; a policy that raised scores 0 with its error). The public questions are Knowledge tasks, as FAB++ counts
    its public questions (``public_csv``) in Knowledge Retrieval."""
    # the bench's Analysis grading (``BenchConfig.analysis_grading``; this family's gradings are its analysis_score)
    grading = getattr(config, "analysis_grading", DEFAULT_ANALYSIS_SCORE)
    section = run_qa_section(config.seed, analysis_score=grading)
    public = run_qa_section(config.seed, split=PUBLIC_SPLIT, analysis_score=grading)
    public["rubric"] = count_items(shipped_items())
    section["public"] = public
    section["tasks"] = {name: [{"section": r["section"], "task_id": r["task_id"], "score": 100.0 * r["score"],
                                "error": r["error"]} for r in s["rows"] + public["policies"][name]["rows"]]
                        for name, s in section["policies"].items()}
    return section


def run_qa_section(seed: int = 0, split: str = "eval", analysis_score: str = DEFAULT_ANALYSIS_SCORE) -> dict[str, Any]:
    """FinQA-v0's ``split`` (default: the eval questions) with every baseline, for the scorecard (analytical
    questions graded by ``analysis_score``: FAB++'s split by default, ``"answer"`` answer-only)."""
    import gymnasium as gym

    env = gym.make("FinQA-v0", split=split, analysis_score=analysis_score)
    section: dict[str, Any] = {"n": len(env.get_wrapper_attr("items")), "as_of": env.get_wrapper_attr("as_of"),
                               "split": split, "grading": analysis_score, "policies": {}}
    for name in BENCH_POLICIES:
        cls = QA_POLICIES[name][0]
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
             "is kept out). " + GRADING_NOTES[section.get("grading", "answer")] + " Every truth is computed in "
             "code. `scripted_agent` reads the data through the date-locked tools and computes with the calculate "
             "tool; `first_number` answers with the question's first number.", "",
             md_table(["policy", "Knowledge", "Analysis", "errors", "tool calls/question", "look-ahead"], [
                 [name, *(fmt_number(s["sections"].get(k, {}).get("score"), digits=1) for k in ("knowledge", "analysis")),
                  str(s["errors"]),
                  fmt_number(np.mean([r["tool_calls"] for r in s["rows"]]) if s["rows"] else 0.0, digits=1),
                  str(sum(r["look_ahead_attempts"] for r in s["rows"]))] for name, s in policies.items()]),
             "", "Score by topic:", "",
             md_table(["topic", "n", *policies], [
                 [t, str(next(s["topics"][t]["n"] for s in policies.values() if t in s["topics"])),
                  *(fmt_number(s["topics"].get(t, {}).get("score"), digits=1) for s in policies.values())]
                 for t in topics])]
    lines.append("")
    if section.get("public"):
        lines += public_markdown(section["public"], knowledge=sum(
            1 for r in next(iter(policies.values()))["rows"] if r["section"] == "knowledge") if policies else 0)
    return lines


def public_markdown(public: dict[str, Any], knowledge: int) -> list[str]:
    """The scorecard's block on the Finance Agent Benchmark's public questions (closed-book, rubric-scored)."""
    rubric = public.get("rubric") or {}
    unscored = rubric.get("questions", public["n"]) - rubric.get("questions_scored", public["n"])
    lines = ["### The Finance Agent Benchmark's public questions (`fab_public`)", "",
             f"{public['n']} public questions, closed-book (they ask about filings, releases and guidance finenvs "
             "does not ship; no tool looks them up), each scored by its rubric in code: the share of its "
             "deterministic items (those stating a figure, an amount, a percentage or a date) the answer passes; "
             f"qualitative items are listed, not scored ({rubric.get('deterministic', '?')} of "
             f"{rubric.get('items', '?')} items are deterministic; {unscored} questions have none and score 0). "
             f"They are Knowledge tasks: the section aggregate's Knowledge is the mean over the {knowledge} "
             f"knowledge questions above and these {public['n']} ({knowledge + public['n']} tasks), as FAB++ counts "
             "its public questions (`public_csv`) in Knowledge Retrieval. The offline `scripted_agent` knows no "
             "fact beyond the shipped data, so it gives no answer (0).", "",
             md_table(["policy", "score", "answers scoring > 0", "errors"], [
                 [name, fmt_number(s["sections"].get("knowledge", {}).get("score"), digits=1),
                  f"{sum(r['score'] > 0 for r in s['rows'])} of {s['n']}", str(s["errors"])]
                 for name, s in public["policies"].items()]),
             ""]
    return lines


__all__ = ["BENCH_POLICIES", "MALFORMED", "PUBLIC_SPLIT", "public_markdown", "QA_POLICIES", "REVENUE", "FirstNumber", "RandomQA", "Reference", "Request",
           "ScriptedQAAgent",
           "ScriptedQAChatAgent", "Steps", "analysis_steps", "closed_book_steps", "knowledge_steps", "print_episode", "qa_markdown",
           "question_steps", "run_output", "run_qa", "run_qa_bench", "run_qa_section", "run_steps", "summarise"]
