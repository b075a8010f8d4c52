"""Methodology, calculation and final answer of an analytical answer, each checked in code.

FAB++ scores an analytical answer as methodology 30%, calculation 30% and final answer 40%,
with an LLM judge. This module checks the same three things without a judge:

* **methodology** (0 or 1): the reply names one of the topic's methods (:data:`METHODS`; e.g.
  ``gordon_growth``: "gordon growth model", "dividend discount model", "ddm", "constant growth
  model") or writes its formula (``D1 / (r - g)``). Names match case-insensitively as whole
  words (hyphens, underscores and punctuation read as spaces); formulas match with all
  any spacing (whitespace runs read as one space, which may sit between any two characters).
* **calculation** (share in [0, 1]): how many of the topic's key intermediates the reply states
  within tolerance (``D1`` and ``r - g`` for Gordon growth, the replicating weights of the bond
  replication, ...). Their truths come from :func:`finenvs.tasks.qa.analysis.key_values`, the same
  functions the question's truth is computed by.
* **answer** (share in [0, 1]): the existing part score of :func:`finenvs.scoring.qa.score_answer`.

``total = 0.3 * methodology + 0.3 * calculation + 0.4 * answer``: a bare correct number earns 0.4,
the right method and intermediates with an arithmetic slip in the final answer 0.6, everything 1.0.

**Reply formats.** Structured: a JSON object (a dict, or inside the text)
``{"method": "...", "intermediates": {"D1": 2.12, ...}, "answer": {...}}``; the ``answer`` is read
exactly as today. Free text: the method is any alias or formula anywhere in the reply; an
intermediate is a line ``name = number`` or ``name: number`` (the last number after the last
``=``/``:`` is the value, so ``D1 = 2 x 1.06 = 2.12`` reads 2.12; a line ``Step 2: D1 = 2.12`` is
read too, as is any name between two separators), or failing that an unnamed number within the intermediate's tolerance.

**Bounds.** Any reply is scored and nothing raises. JSON is read through
:mod:`finenvs.text.safe_json` (depth, size and number limits). Work is linear in the reply: each
line is looked at once and a name is at most :data:`MAX_NAME_CHARS` characters; unnamed numbers
are matched only when the reply holds at most :data:`MAX_UNNAMED_NUMBERS` of them (a reply that
lists every number it can think of earns no calculation credit from unnamed numbers), and a number
that restates the final answer is not an intermediate; a number literal longer than 64 characters
is not read. Reasons never echo more than a short prefix of the
reply. Lines starting with ``Answer:``/``Final answer:`` are the final answer, never an
intermediate.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from finenvs.scoring.qa import (
    Part,
    PartResult,
    key_of,
    score_answer,
    score_part,
)
from finenvs.tasks.qa import analysis
from finenvs.tasks.qa.items import QAItem
from finenvs.text import safe_json

#: FAB++'s analytical rubric: methodology, calculation, final answer.
WEIGHTS = {"methodology": 0.3, "calculation": 0.3, "answer": 0.4}
#: Most numbers a free-text reply may hold for unnamed numbers to count as intermediates.
MAX_UNNAMED_NUMBERS = 64
#: Longest intermediate name read before a ``=`` or ``:``.
MAX_NAME_CHARS = 48
#: Longest ``method`` string looked at in a structured reply.
MAX_METHOD_CHARS = 2_000
#: Most entries of a structured ``intermediates`` object looked at.
MAX_INTERMEDIATE_ENTRIES = 64
_MAX_NUMBER_TOKEN = 64
_MAX_LINE = 400


@dataclass(frozen=True)
class Intermediate:
    """A key intermediate of a topic's worked solution.

    Attributes:
        name: Key in :func:`finenvs.tasks.qa.analysis.key_values` and in a structured reply.
        label: What it is, for the prompt and the docs.
        kind: ``"number"`` or ``"percent"`` (a fraction; ``4%`` and ``0.04`` both read as 0.04).
        rel_tol: Relative tolerance.
        abs_tol: Absolute tolerance (in the value's unit).
        aliases: Other accepted names (matched like part names: case and separators ignored).
    """

    name: str
    label: str
    kind: str = "number"
    rel_tol: float = 0.01
    abs_tol: float = 0.0
    aliases: tuple[str, ...] = ()

    def part(self, value: float) -> Part:
        """This intermediate as a scored :class:`Part` with its truth."""
        return Part(self.name, float(value), self.kind, self.label, rel_tol=self.rel_tol, abs_tol=self.abs_tol,
                    aliases=self.aliases)


@dataclass(frozen=True)
class MethodSpec:
    """The accepted methods of one topic and its key intermediates.

    Attributes:
        method: Canonical name of the method (what :func:`reference_structured_answer` sends).
        aliases: Other names of the method (whole words, case-insensitive).
        formulas: The method's formula in the usual spellings (matched with whitespace removed).
        intermediates: The key intermediates scored by ``calculation``.
    """

    method: str
    aliases: tuple[str, ...]
    formulas: tuple[str, ...]
    intermediates: tuple[Intermediate, ...]


_I = Intermediate
_PCT_ABS = 5e-5  # half a basis point: a rate written to two decimals of a percent is right
#: topic -> its methods and key intermediates.
METHODS: dict[str, MethodSpec] = {
    "npv_crossover": MethodSpec(
        "npv crossover", ("equal npv", "crossover rate", "fisher rate", "fisher's intersection", "incremental irr",
                          "irr of the incremental cash flows", "irr of the differential cash flows"),
        ("a/(1+r)=b/(1+r)^2", "(1+r)=b/a", "1+r=b/a", "r=b/a-1", "npv_a=npv_b"),
        (_I("one_plus_r", "1 + r = CF_B / CF_A", rel_tol=1e-3, aliases=("1_r", "growth_factor", "cf_ratio")),
         _I("pv_inflow", "PV of either project's inflow at the crossover rate, $",
            aliases=("pv_a", "pv_b", "present_value")))),
    "beta_targeting": MethodSpec(
        "portfolio beta", ("weighted average beta", "portfolio beta equation", "beta targeting",
                           "weighted beta", "capm beta"),
        ("w_x*beta_x+w_y*beta_y", "beta_p=w_x*beta_x", "w_x=(beta_target-w_y*beta_y)/beta_x"),
        (_I("beta_y_contribution", "w_Y x beta_Y", aliases=("y_contribution", "w_y_beta_y")),
         _I("beta_x_contribution", "beta_target - w_Y x beta_Y, the beta Stock X must carry",
            aliases=("x_contribution", "required_x_beta", "w_x_beta_x")))),
    "bond_replication": MethodSpec(
        "static replication", ("replicating portfolio", "cash flow replication", "law of one price",
                               "no arbitrage replication", "replication", "arbitrage free pricing"),
        ("units=c2/c1", "price=n*p1+(1-n)*z", "w=c2/c1"),
        (_I("coupon_bond_units", "units of the coupon bond held (its coupon ratio)",
            aliases=("coupon_units", "units_coupon_bond", "coupon_bond_weight")),
         _I("zero_units", "units of the zero held (negative: sold short)",
            aliases=("zero_coupon_units", "units_zero", "zero_weight")))),
    "fcff": MethodSpec(
        "fcff from ebit", ("free cash flow to firm", "free cash flow to the firm", "nopat approach",
                           "ebit approach", "unlevered free cash flow"),
        ("ebit(1-t)+d&a-capex", "ebit*(1-t)+dep-capex", "fcff=ebit(1-t)+", "nopat+d&a-capex", "nopat+dep-capex"),
        (_I("nopat", "EBIT x (1 - t), $", aliases=("ebit_after_tax", "ebit_1_t")),
         _I("operating_cash_flow", "NOPAT + depreciation, $", aliases=("ocf", "nopat_plus_depreciation")))),
    "bull_spread": MethodSpec(
        "bull call spread payoff", ("vertical spread", "payoff analysis", "net debit", "call spread payoff",
                                    "payoff diagram", "debit spread"),
        ("max_profit=k2-k1-net", "breakeven=k1+net", "(k2-k1)-net"),
        (_I("net_debit", "premium paid minus premium received, $ per share", aliases=("net_premium", "net_cost")),
         _I("spread_width", "K2 - K1, $", aliases=("width", "strike_difference")))),
    "roe_leverage": MethodSpec(
        "levered roe", ("income statement approach", "dupont", "dupont analysis", "return on equity",
                        "financial leverage effect"),
        ("roe=ni/equity", "ni=(ebit-interest)(1-t)", "(ebit-i)(1-t)/e", "roe=net_income/equity"),
        (_I("equity", "assets / (1 + D/E), $", aliases=("total_equity",)),
         _I("ebit", "ROA x assets, $"),
         _I("interest", "rate x debt, $", aliases=("interest_expense",)),
         _I("net_income", "(EBIT - interest)(1 - t), $", aliases=("ni",)))),
    "mm_homemade_leverage": MethodSpec(
        "homemade leverage", ("modigliani miller", "mm proposition i", "mm proposition 1", "personal leverage",
                              "replicate levered equity", "modigliani and miller"),
        ("v_l=v_u", "e_b=v-d", "f*v_a-f*d"),
        (_I("firm_a_equity", "value of Firm A's equity, $", aliases=("v_a", "firm_value", "value_a")),
         _I("firm_b_equity", "value of Firm B's equity, $", aliases=("e_b", "equity_b", "value_b_equity")))),
    "risk_neutral_probability": MethodSpec(
        "risk neutral pricing", ("binomial model", "risk neutral probability", "risk neutral valuation",
                                 "one period binomial", "no arbitrage binomial"),
        ("p=(1+r-d)/(u-d)", "(1+r-d)/(u-d)", "p=(e^(rt)-d)/(u-d)", "(r-d)/(u-d)"),
        (_I("u", "up factor 1 + up move", rel_tol=1e-3, aliases=("up_factor",)),
         _I("d", "down factor 1 - down move", rel_tol=1e-3, aliases=("down_factor",)))),
    "pv_comparison": MethodSpec(
        "present value", ("discounting", "time value of money", "discounted cash flow", "present value comparison",
                          "compound discounting"),
        ("pv=fv/(1+r)^n", "fv/(1+r)^n", "pv=c/(1+r)^t"),
        (_I("pv_b", "PV of option B, $", aliases=("present_value_b", "pv_option_b", "pv")),
         _I("compound_factor", "(1 + r)^n", rel_tol=1e-3, aliases=("growth_factor", "discount_divisor")))),
    "duration_immunization": MethodSpec(
        "duration matching", ("immunization", "immunisation", "immunize", "immunise", "redington immunization",
                              "duration immunization", "match the duration"),
        ("w_b=(d_l-d_a)/(d_b-d_a)", "w*d_b+(1-w)*d_a=d_l", "(d_l-d_a)/(d_b-d_a)"),
        (_I("duration_spread", "D_B - D_A, years", aliases=("duration_difference",)),
         _I("weight_a", "the share in Bond A", "percent", abs_tol=_PCT_ABS, aliases=("bond_a", "w_a")))),
    "combined_leverage": MethodSpec(
        "degree of total leverage", ("combined leverage", "total leverage", "degree of combined leverage", "dtl",
                                     "dcl"),
        ("dtl=dol*dfl", "dol*dfl", "dol x dfl", "dcl=dol*dfl"),
        (_I("dtl", "DOL x DFL", aliases=("degree_of_total_leverage", "combined_leverage", "dcl")),
         _I("ebit_change", "DOL x sales change (the change in EBIT)", "percent", abs_tol=_PCT_ABS,
            aliases=("change_in_ebit", "operating_income_change")))),
    "cal_leverage": MethodSpec(
        "capital allocation line", ("cal", "leverage on the cal", "risky and risk free portfolio",
                                    "complete portfolio", "two fund portfolio"),
        ("w=(e_p-r_f)/(e_r-r_f)", "(t-rf)/(er-rf)", "sigma_p=w*sigma", "e(r_p)=r_f+w(e(r)-r_f)"),
        (_I("stock_excess_return", "E[r] - r_f", "percent", abs_tol=_PCT_ABS,
            aliases=("excess_return", "stock_risk_premium", "risk_premium")),
         _I("target_excess_return", "target return - r_f", "percent", abs_tol=_PCT_ABS,
            aliases=("target_risk_premium", "required_excess_return")))),
    "perpetuity": MethodSpec(
        "perpetuity valuation", ("perpetuity formula", "consol pricing", "perpetual bond pricing",
                                 "perpetuity pricing", "present value of a perpetuity"),
        ("p=c/r", "c/r", "pv=c/r", "p1/p0-1"),
        (_I("price_before", "C / r_before, $", aliases=("p0", "old_price", "initial_price")),
         _I("price_after", "C / r_after, $", aliases=("p1", "new_price")))),
    "swap_comparative_advantage": MethodSpec(
        "comparative advantage", ("quality spread differential", "qsd", "interest rate swap",
                                  "swap gains from comparative advantage", "comparative advantage swap"),
        ("qsd=(fy-fx)-(sy-sx)", "gain=(fy-fx)-(sy-sx)", "(y_fixed-x_fixed)-(y_float-x_float)"),
        (_I("total_gain", "fixed gap minus floating gap", "percent", abs_tol=_PCT_ABS,
            aliases=("qsd", "quality_spread_differential", "gain")),
         _I("gain_each", "half the gain, each party's saving", "percent", abs_tol=_PCT_ABS,
            aliases=("each_gain", "saving_each", "split_gain")))),
    "stock_split": MethodSpec(
        "split adjustment", ("stock split", "split ratio", "market value unchanged", "market capitalization unchanged",
                             "value is unchanged"),
        ("price*old/new", "shares*new/old", "p_new=p_old/ratio"),
        (_I("split_factor", "new shares per old share", rel_tol=1e-3, aliases=("split_ratio", "ratio")),
         _I("market_cap", "shares x price (unchanged by the split), $", aliases=("market_value", "market_capitalization")))),
    "put_call_parity": MethodSpec(
        "put call parity", ("put-call parity", "parity relation", "european put call parity"),
        ("c+ke^(-rt)=p+s", "p=c-s+ke^(-rt)", "c-s+ke^(-rt)", "p=c-s+pv(k)", "c+pv(k)=p+s"),
        (_I("discount_factor", "e^(-rT)", rel_tol=1e-3, aliases=("df", "e_rt")),
         _I("pv_strike", "K e^(-rT), $", rel_tol=1e-3, aliases=("pv_k", "present_value_of_strike", "discounted_strike")))),
    "gordon_growth": MethodSpec(
        "gordon growth model", ("dividend discount model", "ddm", "constant growth model", "gordon model",
                                "constant dividend growth model", "gordon growth"),
        ("d1/(r-g)", "v=d1/(r-g)", "p0=d1/(r-g)", "d0(1+g)/(r-g)"),
        (_I("D1", "next year's dividend D0 (1 + g), $", aliases=("next_dividend", "expected_dividend", "d_1")),
         _I("required_minus_growth", "r - g", "percent", abs_tol=_PCT_ABS,
            aliases=("r_g", "r_minus_g", "spread", "denominator")))),
    "covered_interest_arbitrage": MethodSpec(
        "covered interest arbitrage", ("covered interest parity", "interest rate parity", "cip", "irp",
                                       "covered interest rate parity"),
        ("f=s(1+i_usd)/(1+i_eur)", "s*(1+i_usd)/(1+i_eur)", "f/s=(1+i_d)/(1+i_f)", "f=s(1+r_d)/(1+r_f)"),
        (_I("fair_forward", "S (1 + i_USD) / (1 + i_EUR)", rel_tol=1e-3, aliases=("parity_forward", "implied_forward",
                                                                                  "theoretical_forward")),
         _I("repayment_usd", "the borrowed leg's repayment at year end, $", rel_tol=1e-4,
            aliases=("repayment", "cost_usd", "loan_repayment")))),
}


def method_spec(topic: str) -> MethodSpec:
    """The methods and key intermediates of an analysis topic.

    Raises:
        KeyError: Not an analysis topic.
    """
    if topic not in METHODS:
        raise KeyError(f"no method rubric for topic {topic!r}; analysis topics: {sorted(METHODS)}")
    return METHODS[topic]


def key_intermediates(item: QAItem) -> tuple[Part, ...]:
    """The item's key intermediates as scored parts, truths from :func:`finenvs.tasks.qa.analysis.key_values`."""
    spec = method_spec(item.topic)
    values = analysis.key_values(item.topic, item.inputs)
    return tuple(i.part(values[i.name]) for i in spec.intermediates)


# --------------------------------------------------------------------------- methodology
_DASHES = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2014": "-", "\u00d7": "*", "\u00b7": "*", "\u2019": "'"})


def _words(text: str) -> str:
    """Lower case, every run of non-alphanumerics as one space, padded: whole words are `` word ``."""
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()).strip() + " "


def _compact(text: str) -> str:
    """Lower case, whitespace removed, dashes and multiplication signs unified (formulas)."""
    return re.sub(r"\s+", "", text.translate(_DASHES).lower())


def _formula_pattern(formula: str) -> re.Pattern[str]:
    """``formula`` with any single space between its characters, not glued to a word on either side."""
    f = _compact(formula)
    body = " ?".join(re.escape(ch) for ch in f)
    head = r"(?<![a-z0-9])" if f[0].isalnum() else ""
    tail = r"(?![a-z0-9])" if f[-1].isalnum() else ""
    return re.compile(head + body + tail)


def match_method(topic: str, text: str) -> str | None:
    """The topic's method named (or its formula written) in ``text``: the alias matched, or None."""
    spec = method_spec(topic)
    if not isinstance(text, str) or not text:
        return None
    words = _words(text)
    for name in (spec.method, *spec.aliases):
        if _words(name) in words:
            return name
    spaced = re.sub(r"\s+", " ", text.translate(_DASHES).lower())  # whitespace runs as one space
    for formula in spec.formulas:
        if _formula_pattern(formula).search(spaced):
            return formula
    return None


# --------------------------------------------------------------------------- reading the reply
_ANSWER_LINE = re.compile(r"^[ \t>*_#-]*+(?:final[ \t]++)?answer\b", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?\$?\d[\d,]*+(?:\.\d++)?(?:[eE][-+]?\d++)?"
    r"(?:[ \t]?(?i:thousand|million|billion|trillion|mn|bn|mm|k|m|b)(?![A-Za-z]))?%?")
_STRUCTURED_KEYS = ("method", "intermediates", "answer")


@dataclass(frozen=True)
class ParsedReply:
    """What a reply says, before scoring.

    Attributes:
        form: ``"dict"``, ``"json"`` (a structured object inside text) or ``"text"``.
        method_text: Where the method is looked for (the ``method`` field, else the whole reply; capped).
        method_field: Whether ``method_text`` is a structured ``method`` field.
        named: Intermediate name key -> raw value, in reply order (first wins).
        unnamed: Raw numbers that may match an intermediate by value (empty when too many).
        answer_source: What :func:`finenvs.scoring.qa.score_answer` reads.
        notes: Why something was not read (limits).
    """

    form: str
    method_text: str
    method_field: bool
    named: dict[str, Any]
    unnamed: tuple[Any, ...]
    answer_source: Any
    notes: tuple[str, ...] = ()


def _structured_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        found = safe_json.objects(text, allow_non_finite=True)
    except safe_json.JSONLimitError as exc:
        return None, str(exc)[:120]
    for obj in found:
        if any(k in obj for k in _STRUCTURED_KEYS[:2]):
            return obj, None
    return None, None


def _from_object(obj: dict[str, Any], form: str, fallback_text: str, source: Any) -> ParsedReply:
    method = obj.get("method")
    notes: list[str] = []
    method_field = isinstance(method, str)
    method_text = method[:MAX_METHOD_CHARS] if isinstance(method, str) else fallback_text
    named: dict[str, Any] = {}
    unnamed: list[Any] = []
    inter = obj.get("intermediates")
    if isinstance(inter, dict):
        for k, (name, value) in enumerate(inter.items()):
            if k >= MAX_INTERMEDIATE_ENTRIES:
                notes.append(f"only the first {MAX_INTERMEDIATE_ENTRIES} intermediates were read")
                break
            key = key_of(str(name)[:MAX_NAME_CHARS * 2])
            if key and key not in named:
                named[key] = value
            unnamed.append(value)
    elif isinstance(inter, list):  # unnamed values
        unnamed = list(inter[:MAX_INTERMEDIATE_ENTRIES])
    elif inter is not None:
        notes.append("'intermediates' is neither an object nor a list")
    return ParsedReply(form, method_text, method_field, named, tuple(unnamed), source, tuple(notes))


def _name_keys(line: str, seps: list[int]) -> list[str]:
    """Candidate names of a ``name = value`` line: every segment before the last separator.

    ``Step 2: D1 = 2 x 1.06 = 2.12`` gives ``step_2``, ``d1`` and ``2_x_1_06`` (the line is at most
    a few hundred characters, so this is bounded work).
    """
    starts = [0, *(i + 1 for i in seps[:-1])]
    segments = (line[a:b] for a, b in zip(starts, seps, strict=True))
    return [k for k in (key_of(seg) for seg in segments if len(seg.strip()) <= MAX_NAME_CHARS) if k]


def _from_text(text: str) -> ParsedReply:
    named: dict[str, Any] = {}
    unnamed: list[str] = []
    too_many = False
    for raw_line in text.splitlines():
        if _ANSWER_LINE.match(raw_line[:64]):
            continue
        line = raw_line[:_MAX_LINE]
        seps = [i for i, ch in enumerate(line) if ch in ":="]
        if seps and len(raw_line) <= _MAX_LINE:
            value = line[seps[-1] + 1:].strip()
            if value and _NUMBER.search(value):
                for key in _name_keys(line, seps):
                    named.setdefault(key, value)
        if not too_many:
            for m in _NUMBER.finditer(raw_line):
                if len(unnamed) >= MAX_UNNAMED_NUMBERS:
                    too_many = True
                    break
                if len(m.group()) <= _MAX_NUMBER_TOKEN:
                    unnamed.append(m.group())
    notes = (f"more than {MAX_UNNAMED_NUMBERS} numbers: unnamed numbers are not matched",) if too_many else ()
    return ParsedReply("text", text, False, named, () if too_many else tuple(unnamed), text, notes)


def parse_reply(reply: Any) -> ParsedReply:
    """Read a reply (a dict, or any text) into method text, named and unnamed intermediates; never raises."""
    if isinstance(reply, dict):
        problem = safe_json.check_value(reply, allow_non_finite=True)
        if problem is not None:
            return ParsedReply("dict", "", False, {}, (), reply, (f"the reply breaks a limit: {problem}",))
        return _from_object(reply, "dict", "", reply)
    if isinstance(reply, bytes):
        reply = reply.decode("utf-8", errors="replace")
    if not isinstance(reply, str):
        return ParsedReply("none", "", False, {}, (), reply, (f"the reply is a {type(reply).__name__}, not text",))
    obj, problem = _structured_object(reply)
    if obj is not None:
        return _from_object(obj, "json", reply, reply)
    parsed = _from_text(reply)
    if problem is not None:
        parsed = dataclasses.replace(parsed, notes=(*parsed.notes, f"JSON not read: {problem}"))
    return parsed


# --------------------------------------------------------------------------- scoring
def _named_value(named: dict[str, Any], part: Part) -> Any:
    for key in part.keys:
        if key in named:
            return named[key]
    for key in part.keys:  # "d1_next_dividend", "nopat_in_usd": a name followed by words
        for given in named:
            if given.startswith(key + "_"):
                return named[given]
    return None


def _short(record: dict[str, Any]) -> dict[str, Any]:
    given = record.get("given")
    if isinstance(given, str) and len(given) > 80:
        record["given"] = given[:80] + "..."
    if isinstance(record.get("reason"), str):
        record["reason"] = record["reason"][:200]
    return record


def _same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _score_intermediates(parsed: ParsedReply, parts: tuple[Part, ...],
                         answered: tuple[float, ...] = ()) -> list[dict[str, Any]]:
    """Score each intermediate: by name first, else by an unnamed number within tolerance.

    ``answered`` holds the numbers read as the final answer: restating them is not an intermediate
    (a bare answer that happens to equal an intermediate earns the answer share only).
    """
    results: list[dict[str, Any] | None] = [None] * len(parts)
    for k, part in enumerate(parts):
        raw = _named_value(parsed.named, part)
        if raw is not None:
            results[k] = {**_short(score_part(raw, part).record()), "via": "name"}
    used: set[int] = set()
    for k, part in enumerate(parts):
        if results[k] is not None:
            continue
        for j, raw in enumerate(parsed.unnamed):
            if j in used:
                continue
            r = score_part(raw, part)
            if r.correct and not any(_same_number(float(r.read), a) for a in answered):
                used.add(j)
                results[k] = {**_short(r.record()), "via": "value"}
                break
        if results[k] is None:
            missing = PartResult(part.name, part.describe(), None, None, False, "not stated")
            results[k] = {**missing.record(), "via": None}
    return [r for r in results if r is not None]


def score_structured(item: QAItem, answer: Any) -> dict[str, Any]:
    """Score a reply to an analytical item on methodology, calculation and final answer.

    Args:
        item: An analysis item (knowledge items have no method rubric: their ``total`` is the
            answer score, ``methodology`` and ``calculation`` are None).
        answer: The reply: a dict or any text (structured JSON or free text).

    Returns:
        ``{"total", "methodology", "calculation", "answer", "weights", "method", "intermediates",
        "answer_detail", "form", "reasons"}``; ``total = 0.3 methodology + 0.3 calculation + 0.4 answer``.
        Never raises for any reply.
    """
    outcome = score_answer(answer if isinstance(answer, (dict, str, bytes)) else type(answer).__name__,
                                   item.parts)
    answer_score = float(outcome.score)
    detail = outcome.record()
    detail["parts"] = [_short(r) for r in detail["parts"]]
    if isinstance(detail.get("reason"), str):
        detail["reason"] = detail["reason"][:200]
    reasons: list[str] = []
    if outcome.reason:
        reasons.append(f"answer: {outcome.reason[:200]}")
    else:
        for p in outcome.parts:
            if not p.correct:
                reasons.append(f"answer part {p.name}: {(p.reason or 'wrong')[:200]}")
    if item.topic not in METHODS:
        return {"total": answer_score, "methodology": None, "calculation": None, "answer": answer_score,
                "weights": {"answer": 1.0}, "method": None, "intermediates": [], "answer_detail": detail,
                "form": None, "reasons": [*reasons, f"no method rubric for {item.section} topic {item.topic!r}"]}
    parsed = parse_reply(answer)
    reasons.extend(parsed.notes)
    matched = match_method(item.topic, parsed.method_text)
    methodology = 1.0 if matched is not None else 0.0
    if matched is None:
        spec = METHODS[item.topic]
        reasons.append(f"methodology: no method of {item.topic} named (e.g. {spec.method!r}, {spec.aliases[0]!r}) "
                       f"and no formula such as {spec.formulas[0]!r}")
    parts = key_intermediates(item)
    answered = tuple(float(r.read) for r in outcome.parts
                     if isinstance(r.read, (int, float)) and not isinstance(r.read, bool))
    inter = _score_intermediates(parsed, parts, answered)
    right = sum(1 for r in inter if r["correct"])
    calculation = right / len(parts)
    for r in inter:
        if not r["correct"]:
            reasons.append(f"calculation {r['name']}: {r['reason'] or 'wrong'}")
    total = (WEIGHTS["methodology"] * methodology + WEIGHTS["calculation"] * calculation
             + WEIGHTS["answer"] * answer_score)
    return {"total": float(total), "methodology": methodology, "calculation": float(calculation),
            "answer": answer_score, "weights": dict(WEIGHTS),
            "method": {"matched": matched, "source": "method field" if parsed.method_field else "reply text"},
            "intermediates": inter, "answer_detail": detail, "form": parsed.form, "reasons": reasons}


# --------------------------------------------------------------------------- reference answers
def reference_structured(item: QAItem) -> dict[str, Any]:
    """The structured answer a perfect agent gives, as a dict (method, intermediates, answer)."""
    spec = method_spec(item.topic)
    values = analysis.key_values(item.topic, item.inputs)
    return {"method": spec.method,
            "intermediates": {i.name: values[i.name] for i in spec.intermediates},
            "answer": {p.name: list(p.value) if isinstance(p.value, tuple) else p.value for p in item.parts}}


def reference_structured_answer(item: QAItem) -> str:
    """The JSON a perfect agent sends for an analysis item: ``{"method", "intermediates", "answer"}``."""
    return json.dumps(reference_structured(item))


def _text_number(value: float, kind: str) -> str:
    if kind == "percent":
        return f"{100 * value:.10g}%"
    return f"{value:.12g}"


def _text_part(part: Part) -> str:
    if part.kind in ("number", "percent"):
        return _text_number(float(part.value), part.kind)
    if part.kind == "bool":
        return "yes" if part.value else "no"
    if part.kind == "sequence":
        return ", ".join(part.value)
    return str(part.value)


def reference_free_text_answer(item: QAItem) -> str:
    """The same answer as free text: a method line, ``name = value`` lines and an ``Answer:`` line."""
    spec = method_spec(item.topic)
    values = analysis.key_values(item.topic, item.inputs)
    lines = [f"Method: the {spec.method}."]
    lines += [f"{i.name} = {_text_number(values[i.name], i.kind)}" for i in spec.intermediates]
    if len(item.parts) == 1:
        lines.append(f"Answer: {_text_part(item.parts[0])}")
    else:
        lines.append("Answer: " + "; ".join(f"{p.name}: {_text_part(p)}" for p in item.parts))
    return "\n".join(lines)


__all__ = ["MAX_UNNAMED_NUMBERS", "METHODS", "WEIGHTS", "Intermediate", "MethodSpec", "ParsedReply",
           "key_intermediates", "match_method", "method_spec", "parse_reply", "reference_free_text_answer",
           "reference_structured", "reference_structured_answer", "score_structured"]
