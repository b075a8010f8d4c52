"""Baselines for FinOptions-v0, its offline chat agent, and the bench's Options section.

FinOptions-v0 policies (``policy(obs, info) -> action``). Those that answer in text carry
``env_kwargs = {"action_mode": "text"}``: the bench builds their env with it (see
:class:`~finenvs.tasks.report.baselines.TemplateReportWriter` for the convention).

| name | mode | answer |
|---|---|---|
| ``engine_reference`` | text | the engine's exact answer (:func:`~finenvs.tasks.options.core.reference_answer`) as JSON: the ceiling, 100 by construction; it reads the task, never the future |
| ``template_rule`` | legs | RL action: the requested template at the money, one-strike wings, first expiry, full budget |
| ``random`` | legs | a uniform RL action from its own seeded generator |
| ``keyword_stuffer`` | text | the answer that fooled FAB++'s keyword scorer: every expected word, wrong numbers |
| ``leg_copier`` | text | the task's own legs (the engine's legs when the task asks for a position), no numbers |
| ``wrong_numbers`` | text | the engine's legs and contracts, every stated number 20% (and one unit) off |

:class:`ScriptedOptionsAgent` is the offline chat agent of ``FinOptions-text-v0``. FinDeltaHedge-v0 has
its own module, :mod:`finenvs.tasks.deltahedge.baselines`.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.tasks.options.core import TEMPLATE_NAMES, reference_answer
from finenvs.tasks.spec import EnvPolicy
from finenvs.text.chat import NO_USAGE, ChatReply, ScriptedChatAgent, current_turn, first_prompt
from finenvs.text.markdown import fmt_number, is_known, md_table
from finenvs.tools.options import quote_rows

#: gym.make kwargs of the policies that answer in text.
TEXT_MODE = {"action_mode": "text"}

KEYWORD_STUFFED = (
    "Using the Black-Scholes model with the annualized volatility and time to expiration, the fair value of the "
    "option is computed from d1 and d2. Delta 0.5, Gamma 0.05, Theta -0.10, Vega 0.20: delta measures direction, "
    "gamma convexity, theta time decay, vega volatility exposure. The iron condor / bull call spread / straddle "
    "has max profit 1, max loss 1 and breakeven points at the strikes; probability of profit 50%. Position size "
    "follows the 2% account risk rule; hedge delta with shares of the underlying; exit at 50% of max profit or "
    "a stop loss at 2x credit. Risk management, Kelly criterion, implied volatility, put-call parity."
)


class EngineReference:
    """The engine's own answer to every task, as JSON text (it reads the env's full task: a bank item's
    published position)."""

    name = "engine_reference"
    env_kwargs = TEXT_MODE

    def __init__(self, env: Any = None) -> None:
        self.env = getattr(env, "unwrapped", env)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> EngineReference:
        return cls(env)

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> str:
        task = self.env.task if self.env is not None and self.env.task is not None else info["task"]
        return json.dumps(self.answer(reference_answer(task)))

    def answer(self, reference: dict[str, Any]) -> dict[str, Any]:
        """What this policy answers, given the engine's answer (subclasses change it)."""
        return reference


@dataclass
class TemplateRule:
    """RL action: the requested template (bull call spread when none is asked), centred, full budget."""

    name: str = "template_rule"

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> TemplateRule:
        return cls()

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        template = info["task"].get("template") or "bull_call_spread"
        return np.array([TEMPLATE_NAMES.index(template), 3, 0, 0, 3], dtype=np.int64)


class RandomOptions:
    """A uniform MultiDiscrete action from its own generator."""

    name = "random"

    def __init__(self, nvec: Any, seed: int | None = 0) -> None:
        self.nvec = np.asarray(nvec)
        self.rng = np.random.default_rng(seed)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomOptions:
        return cls(getattr(env, "unwrapped", env).action_space.nvec, seed)

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return np.array([self.rng.integers(0, n) for n in self.nvec], dtype=np.int64)


@dataclass
class KeywordStuffer:
    """Prose with every keyword a keyword scorer looks for and wrong numbers."""

    name: str = "keyword_stuffer"
    env_kwargs = TEXT_MODE

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> KeywordStuffer:
        return cls()

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> str:
        return KEYWORD_STUFFED


class LegCopier(EngineReference):
    """The task's own legs (or, for a task that asks for a position, the engine's legs), and no number: what a
    scorer that credits structure alone would reward."""

    name = "leg_copier"

    def answer(self, reference: dict[str, Any]) -> dict[str, Any]:
        return {k: reference[k] for k in KEPT if k in reference}


class WrongNumbers(EngineReference):
    """The engine's answer with every stated number 20% (and one unit) off, legs, contracts and exit kept: the
    right structure with wrong figures."""

    name = "wrong_numbers"

    def answer(self, reference: dict[str, Any]) -> dict[str, Any]:
        return {k: (v if k in KEPT else _off(v)) for k, v in reference.items()}


#: The parts of the engine's answer the adversarial baselines keep: the position, not its figures.
KEPT = ("legs", "contracts", "exit")


def _off(value: Any, factor: float = 1.2) -> Any:
    """``value`` with every number times ``factor`` and one unit further from 0 (so a figure near 0, which the
    scorer checks against an absolute floor, is off too)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return value * factor + math.copysign(1.0, value) if math.isfinite(value) else value
    if isinstance(value, list):
        return [_off(v, factor) for v in value]
    if isinstance(value, dict):
        return {k: _off(v, factor) for k, v in value.items()}
    return value


OPTIONS_POLICIES: dict[str, tuple[type[EnvPolicy], str]] = {
    "engine_reference": (EngineReference, "the engine's exact answer (ceiling, 100 by construction)"),
    "template_rule": (TemplateRule, "RL action: requested template at the money, full budget"),
    "random": (RandomOptions, "uniform RL action"),
    "keyword_stuffer": (KeywordStuffer, "every expected keyword, wrong numbers (the FAB++ scorer's blind spot)"),
    "leg_copier": (LegCopier, "the task's legs (or the engine's), no numbers"),
    "wrong_numbers": (WrongNumbers, "the engine's legs, every number 20% (and one unit) off"),
}


# ----------------------------------------------------------------------------- the bench section
def run_options_tasks(env: Any, policy: Any, seeds: list[int], options: list[dict[str, Any]] | None = None
                      ) -> list[dict[str, Any]]:
    """One FinOptions-v0 episode per seed (or per reset-options dict); the score breakdown of each."""
    out = []
    runs = options if options is not None else [None] * len(seeds)
    for seed, opts in zip(seeds, runs, strict=True):
        began = time.perf_counter()
        obs, info = env.reset(seed=seed, options=opts)
        _, reward, _, _, step_info = env.step(policy(obs, info))
        out.append({"task_id": info["task_id"], "kind": info["kind"], "score": float(reward),
                    "dimensions": step_info["dimensions"], "invalid": bool(step_info["invalid_action"]),
                    "realised_pnl": step_info.get("realised_pnl"), "seconds": time.perf_counter() - began})
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean score, and per dimension the mean % of its weight earned (over the tasks where it applies)."""
    dims = {}
    for dim in ("pnl", "greeks", "strategy", "risk"):
        values = []
        for r in rows:
            applicable = [v for v in r["dimensions"].values() if v is not None]
            if r["dimensions"].get(dim) is not None:
                values.append(100.0 * r["dimensions"][dim] / (100.0 / len(applicable)))
        dims[dim] = float(np.mean(values)) if values else math.nan
    return {"n": len(rows), "score": float(np.mean([r["score"] for r in rows])) if rows else math.nan,
            "scores": [r["score"] for r in rows],
            "dimensions": dims, "by_kind": {k: float(np.mean([r["score"] for r in rows if r["kind"] == k]))
                                            for k in sorted({r["kind"] for r in rows})}}


def run_options_bench(config: Any, n_generated: int = 25) -> dict[str, Any]:
    """FinOptions-v0 for the scorecard: ``n_generated`` generated tasks of ``config.split`` (seeds ``config.seed,
    config.seed + 1, ...``) and the FAB++ bank, every policy in the env of its own action mode."""
    import gymnasium as gym

    from finenvs.tasks.options.bank import load_bank

    section: dict[str, Any] = {"options": {}, "bank": {}, "n_generated": n_generated, "tasks": {}}
    envs: dict[tuple[Any, ...], Any] = {}

    def env_for(cls: type, **kwargs: Any) -> Any:
        kwargs = {**kwargs, **getattr(cls, "env_kwargs", {})}
        key = tuple(sorted(kwargs.items()))
        if key not in envs:
            envs[key] = gym.make("FinOptions-v0", **kwargs)
        return envs[key]

    bank_ids = [{"task_id": t["id"]} for t in load_bank()]
    seeds = [config.seed + i for i in range(n_generated)]
    for name, (cls, _) in OPTIONS_POLICIES.items():
        generated = env_for(cls, split=config.split)
        rows = run_options_tasks(generated, cls.from_env(generated, config.seed), seeds)
        section["options"][name] = summarise(rows)
        bank_env = env_for(cls, bank="fabpp")
        bank_rows = run_options_tasks(bank_env, cls.from_env(bank_env, config.seed), [config.seed] * len(bank_ids),
                                      bank_ids)
        section["bank"][name] = {**summarise(bank_rows), "items": {r["task_id"]: r["score"] for r in bank_rows}}
        # the FAB++ section aggregate's view: every task's 0-100 score, generated then bank
        section["tasks"][name] = [{"section": "options", "task_id": r["task_id"], "score": r["score"], "error": None}
                                  for r in rows + bank_rows]
    for env in envs.values():
        env.close()
    return section



def options_markdown(section: dict[str, Any]) -> list[str]:
    """The scorecard's Options section."""
    def cell(x: float) -> str:  # "—": a dimension the question does not ask (not an unknown number)
        return fmt_number(x, digits=1) if is_known(x) else "—"

    lines = ["## Options", "",
             "### FinOptions-v0", "",
             f"{section['n_generated']} generated tasks (seeded, all five kinds) and the {len(next(iter(section['bank'].values()))['items'])}-item "
             "FAB++ bank. Score 0-100 = P&L, Greeks, Strategy, Risk at 25 each, every number checked against the "
             "pricing engine; a bank item leaves out a dimension its question does not ask (—). `engine_reference` is "
             "the engine's own answer (the ceiling); RL policies state no numbers (the env states the engine's), so "
             "their signal is Strategy and Risk; `keyword_stuffer` is the answer a keyword scorer rewards; `leg_copier` "
             "and `wrong_numbers` restate the legs without the numbers or with wrong ones (structure earns credit "
             "only in proportion to the figures stated right). Dimension "
             "columns: the mean % of the dimension's weight earned.", ""]
    header = ["policy", "tasks", "score", "P&L %", "Greeks %", "Strategy %", "Risk %"]
    for title, table in (("Generated tasks", section["options"]), ("FAB++ bank", section["bank"])):
        lines += [f"#### {title}", "", md_table(header, [
            [name, str(s["n"]), cell(s["score"]), *(cell(s["dimensions"][d]) for d in ("pnl", "greeks", "strategy", "risk"))]
            for name, s in table.items()]), ""]
    kinds = sorted({k for s in section["options"].values() for k in s["by_kind"]})
    lines += ["#### Score by task kind (generated)", "", md_table(["policy", *kinds], [
        [name, *(cell(s["by_kind"].get(k, math.nan)) for k in kinds)] for name, s in section["options"].items()]), ""]
    return lines


def print_episode(env: Any, result: dict[str, Any]) -> list[str]:
    """The lines ``finenvs run`` prints for one FinOptions-v0 task: the prompt, the score and every item lost.

    Args:
        env: The episode's env (its ``spec.id`` names it when ``result`` has no ``"env"``).
        result: The episode as :func:`finenvs.evaluation.episodes.play_episode` returns it: ``info`` (the
            reset info, with the prompt), ``reward`` (the score), ``final`` (the step's info), ``policy``.
    """
    info, final = result["info"], result["final"]
    dims = ", ".join(f"{k} {'-' if v is None else f'{v:.1f}'}" for k, v in final["dimensions"].items())
    env_id = result.get("env") or env.spec.id
    return [*info["prompt"].split("\n"), "",
            f"{env_id} {info['task_id']} policy={result['policy']}: score {result['reward']:.1f}/100 ({dims})",
            *(f"  lost {i['dimension']}/{i['name']}: {i['reason']}" for i in final["items"] if i["credit"] < 1)]


def run_output(env: Any, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """``finenvs run``'s printer form ``(env, result, flags) -> (lines, --json record)``: :func:`print_episode` and
    the task's record (id, kind, score, dimensions, items)."""
    info, final = result["info"], result["final"]
    record = {"env": result.get("env") or env.spec.id, "policy": result["policy"], "task_id": info["task_id"],
              "kind": info["kind"], "score": result["reward"], "dimensions": final["dimensions"],
              "items": final["items"], "parse_error": final["parse_error"]}
    return print_episode(env, result), record


# ----------------------------------------------------------------------------- the offline chat agent
def prompt_legs(prompt: str) -> list[dict[str, Any]]:
    """The legs a generated question's ``Position (per unit):`` line gives (``sell 1 put 460.0 2026-02-27; ...``), or
    none when the prompt has no such line or one this reader does not follow."""
    line = next((x for x in prompt.split("\n") if x.startswith(POSITION_LINE)), None)
    legs: list[dict[str, Any]] = []
    for part in (line[len(POSITION_LINE):].split("; ") if line else []):
        words = part.split()
        if len(words) == 3 and words[2] == "stock":
            legs.append({"side": words[0], "type": "stock"})
            continue
        if len(words) != 5 or words[2] not in ("call", "put"):
            return []
        try:
            legs.append({"side": words[0], "type": words[2], "strike": float(words[3]), "expiry": words[4]})
        except ValueError:
            return []
    return legs


#: The prefix of a generated question's line that lists the position it gives.
POSITION_LINE = "Position (per unit): "


def quotes_needed(legs: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``get_quotes`` filter that holds every quote the engine prices ``legs`` with (their strikes' range, and
    their expiry when they share one); no filter (the whole chain) without option legs or with one it cannot place.
    The reference answer to a task with given legs reads no other quote (all 87 such generated tasks of the eval,
    live and train plans: the same answer from these quotes as from the chain)."""
    options = [leg for leg in legs if isinstance(leg, dict) and leg.get("type") in ("call", "put")]
    try:
        strikes = [float(leg["strike"]) for leg in options]
    except (KeyError, TypeError, ValueError):
        return {}
    expiries = {leg.get("expiry") for leg in options}
    if not options or not all(isinstance(e, str) and e for e in expiries):
        return {}
    wanted: dict[str, Any] = {"min_strike": min(strikes), "max_strike": max(strikes)}
    if len(expiries) == 1:
        wanted["expiry"] = expiries.pop()
    return wanted


def _turn_results(messages: list[dict[str, Any]]) -> list[tuple[str | None, Any, Any]]:
    """``(tool, arguments, result)`` of every tool call of this decision, in call order."""
    calls: dict[Any, tuple[str | None, Any]] = {}
    out = []
    for msg in current_turn(messages):
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = None
            calls[call.get("id")] = (fn.get("name"), args)
        if msg.get("role") == "tool" and msg.get("tool_call_id") in calls:
            name, args = calls[msg["tool_call_id"]]
            try:
                data = json.loads(msg.get("content") or "null")
            except ValueError:
                data = {"error": "unreadable tool result"}
            out.append((name, args, data))
    return out


@dataclass
class ScriptedOptionsAgent(ScriptedChatAgent):
    """Offline FinOptions-v0 agent that speaks the chat protocol: tools first, then the committed answer.

    Stateless (the reply is a function of the messages): it calls ``get_task`` and
    ``get_quotes`` (for a question that gives the position, only its legs' strikes and
    expiry: :func:`quotes_needed` of :func:`prompt_legs`; else the chain), pages
    ``get_quotes`` until ``next_offset`` is null, rebuilds the
    public task (the tool data: market, what is asked, given legs, the contracts
    on offer) and commits the engine's answer to it
    (:func:`~finenvs.tasks.options.core.reference_answer`), field by field. On
    generated tasks that is the full answer (100); on a bank item it is the answer
    the public fields support (a bank item's published position and its per-leg
    Greeks are not tool data). A tool error, or a task the engine cannot answer
    from the tool data, commits ``{"legs": []}`` (it scores 0) with the reason as
    the reasoning (a result cut to the size cap counts as an error). Without the tools it replies in prose with
    no answer (0).
    """

    name: str = "scripted-options"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, round_no = self._offered(messages, tools)
        if not {"get_task", "get_quotes", "commit_action"} <= names:
            return ChatReply("I cannot read the task's data without the options tools, so I give no answer.",
                             usage=NO_USAGE)
        results = _turn_results(messages)
        task = next((data for name, _, data in reversed(results) if name == "get_task"), None)
        if task is None:
            wanted = quotes_needed(prompt_legs(first_prompt(messages)))
            return self._calls(round_no, ("get_task", {}), ("get_quotes", {**wanted, "offset": 0}))
        needed = quotes_needed(task.get("given_legs") or []) if isinstance(task, dict) else {}
        asked = [({k: v for k, v in args.items() if k != "offset"}, data) for name, args, data in results
                 if name == "get_quotes" and isinstance(args, dict)]
        # the quotes asked first serve when they hold the needed ones (the whole chain holds every quote)
        wanted = asked[0][0] if asked and asked[0][0] in ({}, needed) else needed
        pages = [data for kind, data in asked if kind == wanted]
        bad = next((d for d in [task, *pages] if not isinstance(d, dict) or "error" in d or "truncated" in d), None)
        if bad is not None:
            why = bad.get("error") or "its result was cut to the size cap" if isinstance(bad, dict) else "no result"
            return self._fallback(round_no, f"a tool failed: {str(why)[:200]}")
        if not pages:  # the prompt named other contracts than the task: the ones the task needs
            return self._calls(round_no, ("get_quotes", {**wanted, "offset": 0}))
        if pages[-1].get("next_offset") is not None:
            return self._calls(round_no, ("get_quotes", {**wanted, "offset": pages[-1]["next_offset"]}))
        try:  # a page without the expected fields cannot be read: no answer, with the reason
            task = {**task, "quotes": [q for page in pages for q in quote_rows(page)]}
            answer = reference_answer(task)
        except Exception as exc:  # the engine cannot answer from the tool data: say why, commit nothing
            return self._fallback(round_no, f"the engine cannot answer from the tool data: {type(exc).__name__}: "
                                            f"{str(exc)[:200]}")
        return self._calls(round_no, ("commit_action", {**answer, "reasoning": "the pricing engine's numbers for "
                                                        "the position the task asks for"}))

    def _fallback(self, round_no: int, reason: str) -> ChatReply:
        return self._calls(round_no, ("commit_action", {"legs": [], "reasoning": reason}))
