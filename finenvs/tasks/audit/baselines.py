"""FinAudit-v0 baselines: a tool-using oracle, an extract-only agent and a random/format-error agent, and the
offline chat agent of ``FinAudit-text-v0``.

Each baseline is ``policy(obs, info) -> answer`` built with ``from_env(env, seed)``
and reads the filing only through the env's tools (:class:`finenvs.tools.ToolBox`),
the way an LLM agent does. Each answers with the keys the env's grading asks for
(``env.unwrapped.text_protocol.answer_keys``: ``reported_value`` by default,
``extracted_value`` under HERCULEAN's grading), as a model told the rules would. The oracle re-derives the calculated value from the
tool outputs alone — it never calls the ground-truth code — so its accuracy of 1
on the generated instances is a check of the ground truth, not a tautology.

:class:`ScriptedAuditAgent` is the oracle as a chat agent (:mod:`finenvs.text.chat`):
it reads only its prompt and the tool results in its messages.
:func:`print_episode` is what ``finenvs run`` prints for one episode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.scoring.audit import ANSWER_KEYS, audit_rates
from finenvs.tasks.spec import EnvPolicy
from finenvs.text.chat import (
    NO_USAGE,
    ChatReply,
    ScriptedChatAgent,
    call_key,
    call_results,
    first_prompt,
    offered_parameters,
    prompt_state,
)
from finenvs.text.markdown import fmt_number, md_table, md_text
from finenvs.tools import ToolBox
from finenvs.tools.xbrl import calculation_children, fact_records


def _task(info: dict[str, Any]) -> tuple[str, str]:
    return str(info["concept"]), str(info["period"])


def answer_keys(env: Any) -> tuple[str, str]:
    """The two answer keys ``env``'s grading asks for (finenvs' when it names none)."""
    protocol = getattr(getattr(env, "unwrapped", env), "text_protocol", None)
    return tuple(getattr(protocol, "answer_keys", ANSWER_KEYS["finenvs"]))


def _answer(keys: tuple[str, str], reported: Any, calculated: Any) -> str:
    return json.dumps({keys[0]: reported, keys[1]: calculated})


def _most_precise_first(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repeated facts of one period differ only in precision: the most precise one is the value."""
    return sorted(facts, key=lambda f: -(99 if f["decimals"] == "INF" else int(f["decimals"] or 0)))


class _ToolAgent:
    def __init__(self, env: Any) -> None:
        self.tools = ToolBox(env, max_chars=200_000)
        self.keys = answer_keys(env)
        self.calls = 0

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        self.calls += 1
        result = self.tools.call(name, arguments)
        if not result.ok:
            raise ValueError(f"{name}{arguments}: {result.error}")
        return result.data

    def reported(self, concept: str, period: str) -> tuple[float, str] | None:
        """(value, unit) of the concept's non-dimensional fact for the period, or None."""
        facts = _most_precise_first(
            [f for f in fact_records(self.call("get_facts", concept=concept, period=period)) if f["value"] is not None])
        if not facts:
            return None
        return float(facts[0]["value"]), str(facts[0]["unit"])


class OracleAuditor(_ToolAgent):
    """Reads the reported fact, then sums the concept's children role by role (first complete role,
    children without a fact computed from their own children), else applies the sign rule the
    ``get_concept`` tool states. Uses only tool outputs."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> OracleAuditor:
        return cls(env)

    def _value(self, concept: str, period: str, unit: str, path: tuple[str, ...]) -> float | None:
        facts = _most_precise_first([f for f in fact_records(self.call("get_facts", concept=concept, period=period))
                                     if f["value"] is not None and f["unit"] == unit])
        if facts:
            return float(facts[0]["value"])
        return self._sum(concept, period, unit, path)

    def _sum(self, concept: str, period: str, unit: str, path: tuple[str, ...]) -> float | None:
        roles = calculation_children(self.call("get_calculation", concept=concept))
        for kids in roles.values():
            total, complete = 0.0, True
            for child, weight in kids:
                if child in path:
                    return None
                value = self._value(child, period, unit, (*path, child))
                if value is None:
                    complete = False
                    break
                total += weight * value
            if complete and kids:
                return total
        return None

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        concept, period = _task(info)
        got = self.reported(concept, period)
        if got is None:
            return _answer(self.keys, None, None)
        reported, unit = got
        calculated = self._sum(concept, period, unit, (concept,))
        if calculated is None:
            meta = self.call("get_concept", concept=concept)
            calculated = abs(reported) if meta["non_negative"] else reported
        return _answer(self.keys, reported, calculated)


class ExtractOnly(_ToolAgent):
    """Finds the reported fact and answers it as the calculated value too (never detects an error)."""

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> ExtractOnly:
        return cls(env)

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        got = self.reported(*_task(info))
        value = got[0] if got else None
        return _answer(self.keys, value, value)


#: Replies the random agent sends half the time (structural errors of several kinds).
MALFORMED = (
    "The reported value looks right to me.",
    '{"reported_value": 100}',
    '{"reported_value": "about a billion", "calculated_value": 5}',
    "reported_value: 1,000; calculated_value: 1,000",
    '{"reported_value": 1, "calculated_value": 2} {"reported_value": 3, "calculated_value": 4}',
    '["reported_value", 1, "calculated_value", 1]',
)


class RandomAuditor:
    """Half the time a malformed reply (structural error), else two log-uniform random amounts."""

    def __init__(self, seed: int | None = 0, keys: tuple[str, str] = ANSWER_KEYS["finenvs"]) -> None:
        self.rng = np.random.default_rng(seed)
        self.keys = keys

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomAuditor:
        return cls(seed, answer_keys(env))

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        if self.rng.random() < 0.5:
            return MALFORMED[int(self.rng.integers(len(MALFORMED)))]
        a, b = (float(round(10 ** self.rng.uniform(3, 11))) for _ in range(2))
        return _answer(self.keys, a, b)


AUDIT_POLICIES: dict[str, tuple[type[EnvPolicy], str]] = {
    "oracle": (OracleAuditor, "uses the tools to read the fact and recompute the calculation network (ACC 1 check)"),
    "extract_only": (ExtractOnly, "reads the reported fact; calculated = reported"),
    "random": (RandomAuditor, "malformed half the time, random amounts otherwise"),
}


def run_audit(env: Any, policy: Any, indices: list[int] | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """Every instance of a fixed-list FinAudit-v0 env (or ``indices``) with ``policy``; one row each."""
    base = env.unwrapped
    rows = []
    for i in indices if indices is not None else range(len(base.instances)):
        obs, info = env.reset(seed=seed, options={"index": i})
        if hasattr(policy, "reset"):
            policy.reset(seed + i)
        _, reward, _, _, final = env.step(policy(obs, info))
        rows.append({"task_id": info["task_id"], "bundle": info["bundle"], "kind": final["kind"],
                     "label": final["audit"]["label"], "reason": final["audit"]["reason"], "reward": reward,
                     "look_ahead_attempts": final["look_ahead_attempts"]})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """ACC/SER/EER/CER overall and per injected kind."""
    return audit_rates([r["label"] for r in rows], [r["kind"] for r in rows])


def run_audit_bench(config: Any) -> dict[str, Any]:
    """FinAudit-v0's section of ``finenvs bench`` (its bench section's ``baselines``): the bench's env arguments
    reach it (``grading``, ``tasks_file``: a HERCULEAN-format task file replaces the eval instances)."""
    return run_audit_section(config.seed, env_kwargs=config.env_kwargs)


def run_audit_section(seed: int = 0, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """FinAudit-v0's eval split (or the task file ``env_kwargs`` names) with every baseline, for the scorecard.

    The record names its ``grading`` and ``tasks_file`` only when they are not the defaults (finenvs' grading,
    the generated eval instances), so a default bench's record is what it always was.
    """
    import gymnasium as gym

    from finenvs.tasks.audit.env import file_kwargs

    env_kwargs = dict(env_kwargs or {})
    kwargs = file_kwargs(env_kwargs.get("split"), env_kwargs) or {**env_kwargs, "split": "eval"}
    env = gym.make("FinAudit-v0", **kwargs)
    section: dict[str, Any] = {"n": len(env.get_wrapper_attr("instances")), "policies": {}}
    if kwargs.get("grading", "finenvs") != "finenvs":
        section["grading"] = kwargs["grading"]
    if kwargs["split"] == "file":
        section["tasks_file"] = kwargs["tasks_file"]
        section["excluded"] = list(env.get_wrapper_attr("excluded"))
    for name, (cls, _) in AUDIT_POLICIES.items():
        rows = run_audit(env, cls.from_env(env, seed), seed=seed)
        section["policies"][name] = {**summarise(rows), "rows": rows}
    env.close()
    return section


def audit_markdown(section: dict[str, Any]) -> list[str]:
    """The scorecard's Audit section."""
    def pct(x: float) -> str:
        return fmt_number(x, 100.0, 1)

    kinds = list(next(iter(section["policies"].values()))["by"])
    if section.get("tasks_file"):
        source = (f"{section['n']} answerable tasks of the HERCULEAN-format task file {md_text(section['tasks_file'])}"
                  f" ({len(section.get('excluded') or [])} excluded: no bundle or no ground truth).")
    else:
        source = (f"{section['n']} eval instances generated from the shipped SEC filings (seeds 0..{section['n'] - 1}; "
                  "20 per kind).")
    grading = ("Graded by HERCULEAN's rules (exactly the keys extracted_value and calculated_value, both values "
               "exact). " if section.get("grading") == "herculean" else "")
    lines = ["## Audit", "", "### FinAudit-v0", "",
             f"{source} {grading}Each answer lands in exactly one class: ACC (pass) + SER (structural) + EER "
             "(extraction) + CER (calculation) = 100%.", "",
             md_table(["policy", "ACC %", "SER %", "EER %", "CER %"],
                      [[name, *(pct(s[k]) for k in ("ACC", "SER", "EER", "CER"))]
                       for name, s in section["policies"].items()]),
             "", "ACC % by injected error:", "",
             md_table(["policy", *kinds], [[name, *(pct(s["by"][k]["ACC"]) for k in kinds)]
                                          for name, s in section["policies"].items()])]
    return lines + [""]


# ---------------------------------------------------------------------------- chat agent
class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


#: A value the walk cannot know yet: a tool result it still needs is not in the messages.
_UNKNOWN: Any = _Unknown()


class _OracleWalk:
    """:class:`OracleAuditor`'s walk over the tool results of one decision.

    Each read is a tool result or ``_UNKNOWN`` (the call is then added to ``missing``).
    Siblings after an unknown child are read too (speculatively: needed unless that
    child turns out to have no value), so each round asks for a whole role at once;
    ``sure`` says whether the oracle certainly makes the call (only then does a tool
    error in its result stop the walk).
    """

    def __init__(self, log: dict[str, Any], concept: str, period: str) -> None:
        self.log, self.concept, self.period = log, concept, period
        self.missing: list[tuple[str, dict[str, Any]]] = []
        self.reported: float | None = None

    def read(self, sure: bool, name: str, **arguments: Any) -> Any:
        key = call_key(name, arguments)
        if key not in self.log:
            if (name, arguments) not in self.missing:
                self.missing.append((name, arguments))
            return _UNKNOWN
        data = self.log[key]
        if isinstance(data, dict) and "error" in data:
            if sure:
                raise ValueError(f"{name}({', '.join(map(str, arguments.values()))}) failed: {data['error']}")
            return _UNKNOWN
        return data

    def value(self, concept: str, unit: str, path: tuple[str, ...], sure: bool) -> Any:
        data = self.read(sure, "get_facts", concept=concept, period=self.period)
        if data is _UNKNOWN:
            return _UNKNOWN
        facts = _most_precise_first([f for f in fact_records(data) if f["value"] is not None and f["unit"] == unit])
        return float(facts[0]["value"]) if facts else self.sum(concept, unit, path, sure)

    def sum(self, concept: str, unit: str, path: tuple[str, ...], sure: bool) -> Any:
        data = self.read(sure, "get_calculation", concept=concept)
        if data is _UNKNOWN:
            return _UNKNOWN
        for kids in calculation_children(data).values():
            total, known, complete = 0.0, True, True  # known: every child so far has its value
            for child, weight in kids:
                if child in path:
                    return None if known else _UNKNOWN
                value = self.value(child, unit, (*path, child), sure and known)
                if value is _UNKNOWN:
                    known = False
                elif value is None:  # the role is incomplete whatever the unknown children before it turn out
                    complete = False
                    break
                else:
                    total += weight * value
            if not complete:
                continue
            if not known:
                return _UNKNOWN
            if kids:
                return total
        return None

    def answer(self) -> tuple[float | None, float | None, str] | Any:
        """``(reported, calculated, how)``, or ``_UNKNOWN``; raises ValueError on a needed tool error."""
        data = self.read(True, "get_facts", concept=self.concept, period=self.period)
        self.read(False, "get_calculation", concept=self.concept)  # needed unless nothing is reported
        if data is _UNKNOWN:
            return _UNKNOWN
        facts = _most_precise_first([f for f in fact_records(data) if f["value"] is not None])
        if not facts:
            return None, None, f"no non-dimensional fact of {self.concept} for {self.period}"
        self.reported, unit = float(facts[0]["value"]), str(facts[0]["unit"])
        calculated = self.sum(self.concept, unit, (self.concept,), True)
        if calculated is _UNKNOWN:
            return _UNKNOWN
        if calculated is not None:
            return self.reported, calculated, f"calculated: the weighted sum of its children ({unit})"
        meta = self.read(True, "get_concept", concept=self.concept)
        if meta is _UNKNOWN:
            return _UNKNOWN
        if meta["non_negative"]:
            return self.reported, abs(self.reported), "no complete summation; calculated: the reported value, " \
                f"non-negative ({meta['non_negative_reason']})"
        return self.reported, self.reported, "no complete summation; calculated: the reported value"


@dataclass
class ScriptedAuditAgent(ScriptedChatAgent):
    """Offline FinAudit-v0 agent that speaks the chat protocol: :class:`OracleAuditor`, in rounds of tool calls.

    It reads ``Concept:`` and ``Period:`` from the prompt and replays the oracle's
    walk over the tool results in the messages (it keeps no state: the same
    conversation always gets the same reply). Each assistant turn asks, in parallel,
    for every result the walk needs next:

    1. ``get_facts`` of the concept for the period and its ``get_calculation``;
    2. ``get_facts`` of the children of the role being summed (all of them: the
       siblings after a child whose value is still unknown are asked speculatively);
    3. ``get_calculation`` of the children without a fact, then their children's
       facts, and so on down the network;
    4. ``get_concept`` when no role sums completely (the sign rule);

    then commits ``{"reported_value", "calculated_value"}`` with ``commit_action`` — or the keys the
    ``commit_action`` schema requires (``extracted_value`` under HERCULEAN's grading, with no ``reasoning``
    when the schema offers none), as a model that reads its tools would.
    The ``get_facts`` of several concepts in one turn (same period) go as one call
    with ``concepts`` when the offered ``get_facts`` has that argument (one by one
    otherwise: the same answers). On the 100 eval instances it makes 3 tool calls
    per decision in three turns (the network never needs a grandchild there; the
    oracle itself makes 3 to 18), within the runner's default budget of 8.

    A tool error on a call the walk needs (the runner's budget error included)
    commits the reported value as both values (:class:`ExtractOnly`'s answer), or
    ``null`` values (a structural error) when the reported fact is not known, with
    the reason in ``reasoning``. Without tools it answers with ``null`` values in text.
    """

    name: str = "scripted-audit"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, round_no = self._offered(messages, tools)
        schema = _commit_schema(tools, first_prompt(messages))
        if not {"get_facts", "get_calculation", "get_concept", "commit_action"} <= names:
            return ChatReply("I cannot read the filing without tools.\n" + _answer(schema[0], None, None),
                             usage=NO_USAGE)
        task = prompt_state(first_prompt(messages))
        if not task.get("Concept") or not task.get("Period"):
            return self._commit(schema, round_no, None, None, "the prompt names no Concept and Period")
        asked = call_results(messages)
        walk = _OracleWalk(_one_per_concept(asked), task["Concept"], task["Period"])
        try:
            answer = walk.answer()
        except (ValueError, KeyError, TypeError) as exc:  # a tool error, or a result without the expected fields
            return self._commit(schema, round_no, walk.reported, walk.reported, f"{exc!s}; answering the reported value")
        if answer is not _UNKNOWN:
            return self._commit(schema, round_no, *answer)
        if walk.missing:
            return self._calls(round_no, *(_batched(walk.missing) if _batches(tools) else walk.missing))
        return self._commit(schema, round_no, walk.reported, walk.reported, "tool results unreadable; answering the reported value")

    def _commit(self, schema: tuple[tuple[str, str], bool], round_no: int, reported: float | None,
                calculated: float | None, why: str) -> ChatReply:
        keys, reasoning = schema
        arguments: dict[str, Any] = {keys[0]: reported, keys[1]: calculated}
        if reasoning:
            arguments["reasoning"] = why
        return self._calls(round_no, ("commit_action", arguments))


def _batches(tools: list[dict[str, Any]]) -> bool:
    """Whether the offered ``get_facts`` reads several concepts in one call (its schema has ``concepts``)."""
    properties = (offered_parameters(tools, "get_facts") or {}).get("properties")
    return isinstance(properties, dict) and "concepts" in properties


def _batched(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """``calls`` with the ``get_facts`` of several concepts and the same other arguments as one call (``concepts``,
    where the first of them was)."""
    groups: dict[str, list[str]] = {}
    for name, arguments in calls:
        if name == "get_facts" and "concept" in arguments:
            rest = {k: v for k, v in arguments.items() if k != "concept"}
            groups.setdefault(call_key(name, rest), []).append(arguments["concept"])
    out: list[tuple[str, dict[str, Any]]] = []
    for name, arguments in calls:
        if name != "get_facts" or "concept" not in arguments:
            out.append((name, arguments))
            continue
        rest = {k: v for k, v in arguments.items() if k != "concept"}
        group = groups.pop(call_key(name, rest), None)
        if group is not None:  # the group's first call: the whole group (an empty one already went)
            out.append((name, arguments) if len(group) == 1 else (name, {"concepts": group, **rest}))
    return out


def _one_per_concept(asked: dict[str, Any]) -> dict[str, Any]:
    """The tool results by call, with each ``get_facts`` of several ``concepts`` also as the one-concept calls it
    stands for: its rows of that concept, an error when the concept is not in the filing (null), and its own error
    for each when it failed."""
    out = dict(asked)
    for key, data in asked.items():
        if not key.startswith("get_facts{"):
            continue
        arguments = json.loads(key[len("get_facts"):])
        concepts = arguments.pop("concepts", None)
        if not isinstance(concepts, list):
            continue
        facts = data.get("facts") if isinstance(data, dict) else None
        for concept in concepts:
            if not isinstance(concept, str):
                continue
            if isinstance(data, dict) and "error" in data:
                one: Any = data
            elif not isinstance(facts, dict) or concept not in facts:
                one = {"error": "the get_facts answer does not name this concept"}
            elif facts[concept] is None:
                one = {"error": "the concept is not in the filing"}
            else:
                one = {"columns": data["columns"], "rows": facts[concept]}
            out.setdefault(call_key("get_facts", {**arguments, "concept": concept}), one)
    return out


def _commit_schema(tools: list[dict[str, Any]], prompt: str) -> tuple[tuple[str, str], bool]:
    """``(answer keys, whether a reasoning field is offered)`` as the ``commit_action`` schema states them; without
    that tool, the keys the prompt names (HERCULEAN's when it names ``extracted_value``)."""
    parameters = offered_parameters(tools, "commit_action")
    if parameters is not None:
        required = parameters.get("required")
        if isinstance(required, list) and len(required) == 2 and all(isinstance(k, str) for k in required):
            properties = parameters.get("properties") or {}
            return (required[0], required[1]), isinstance(properties, dict) and "reasoning" in properties
    keys = ANSWER_KEYS["herculean"] if '"extracted_value"' in prompt else ANSWER_KEYS["finenvs"]
    return keys, True


# ---------------------------------------------------------------------------- finenvs run
def print_episode(env: Any, result: dict[str, Any]) -> list[str]:
    """The lines ``finenvs run`` prints for one FinAudit-v0 episode: the task, the verdict, the answer, the truth.

    Args:
        env: The episode's env (its ``spec.id`` names it when ``result`` has no ``"env"``).
        result: The episode: ``obs`` (the task text), ``info`` (the reset info), ``action`` (the answer),
            ``reward``, ``final`` (the step's info), ``policy`` (a name) and optionally ``env`` (the env id),
            as :func:`finenvs.evaluation.episodes.play_episode` returns them.
    """
    info, final = result["info"], result["final"]
    audit, truth = final["audit"], final["audit"]["truth"]
    env_id = result.get("env") or env.spec.id
    return [*str(result["obs"]).split("\n"), "",
            f"{env_id} {info['task_id']} policy={result['policy']}: {audit['label']} ({audit['reason']})",
            f"  answer: {result['action']}",
            f"  truth:  reported {truth['reported_value']:,.0f}, calculated {truth['calculated_value']:,.0f} "
            f"(tolerance {truth['reported_tolerance']:,.0f}); injected: {final['injection']}"]


def run_output(env: Any, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """``finenvs run``'s printer form ``(env, result, flags) -> (lines, --json record)``: :func:`print_episode` and
    the episode's record (task, injection, answer, verdict, truth, reward)."""
    info, final = result["info"], result["final"]
    audit = final["audit"]
    record = {"env": result.get("env") or env.spec.id, "policy": result["policy"], "task_id": info["task_id"],
              "bundle": info["bundle"], "concept": info["concept"], "period": info["period"], "kind": final["kind"],
              "injection": final["injection"], "answer": result["action"], "label": audit["label"],
              "reason": audit["reason"], "truth": audit["truth"], "reward": result["reward"]}
    return print_episode(env, result), record


__all__ = ["AUDIT_POLICIES", "ExtractOnly", "OracleAuditor", "RandomAuditor", "ScriptedAuditAgent",
           "audit_markdown", "print_episode", "run_audit", "run_audit_bench",
           "run_audit_section", "run_output", "summarise"]
