"""LLM-agent rollouts: a tool-calling (ReAct-style) loop against any OpenAI-compatible endpoint.

For every decision of every episode the runner sends the env's prompt, lets
the agent call date-locked tools as often as the budget allows, and takes the
decision it commits (a ``commit_action`` call, or a reply ending ``Action: X``).
Everything is recorded (:mod:`finenvs.evaluation.runlog`) and ``finenvs score
RUN_DIR`` re-scores a run offline from its recorded actions::

    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.tasks.trading.agent import ScriptedTradingAgent
    from finenvs.evaluation.endpoints import OpenAIChatAgent

    config = RunConfig(env_id="FinTrading-v0", symbols=["TSLA", "AAPL"], split="eval")
    summary = run_llm(config, ScriptedTradingAgent(), out="runs")            # offline
    agent = OpenAIChatAgent("qwen2.5-7b-instruct", "http://127.0.0.1:8000/v1")
    summary = run_llm(config, agent, out="runs", concurrency=8)              # a server

Per decision: at most ``max_tool_calls`` tool calls; calls of a reply beyond
them are dropped (neither served nor kept in the conversation) and answered by
ONE notice asking for a commit; once the budget is spent, the requests that follow
offer ``commit_action`` alone (a model that keeps calling tools is shown the one
call it can still make, and the other schemas are not re-sent). The
``commit_action`` calls of a reply count as one (the first is kept; several that
disagree make the decision ambiguous).
A reply over :data:`~finenvs.text.protocol.MAX_REPLY_CHARS` (text plus tool
calls; the cap every transport shares) is malformed: the decision takes the
default, and the record keeps its size and first 200 characters, never the
reply. So the conversation re-sent each round, and recorded with the step, stays
within :func:`conversation_bound` (33 messages and about 1.6 M characters with
the defaults, whatever the agent sends). Each request times out after ``request_timeout``
seconds and transient failures (connection, timeout, 429, 5xx) are retried
``max_retries`` times with exponential backoff and jitter (or the server's
``Retry-After``); a decision that takes longer than ``decision_timeout``, an
endpoint that keeps failing, a malformed reply, non-JSON or mistyped tool
arguments, an unknown tool, a reply without an action or an over-long reply all
end in the protocol's default action, recorded with the reason as a format
error — the run never crashes on them. After
``max_consecutive_endpoint_failures`` failed decisions in a row the episode
stops (status ``aborted``) so a dead endpoint does not fill a run with
defaults; while the endpoint has answered no decision of the run, an episode
whose first decision finds no endpoint (not reached, timed out, 429/5xx after
every retry) stops before anything is recorded (an unreachable endpoint is never
scored as the default action) and the episodes after it do not start;
``--resume`` continues them later. Once the endpoint has answered, a decision
that still gets no reply is recorded with ``endpoint_failed``; an episode none of
whose decisions got a reply ends ``failed`` (no metrics, never scored on the
defaults it took; :attr:`RunSummary.endpoint_failed`). Episodes run concurrently
(``concurrency``, an asyncio semaphore).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from finenvs.evaluation.endpoints import EndpointError, oversize_error
from finenvs.evaluation.envpool import EnvPool
from finenvs.evaluation.integrity import open_run_to_resume
from finenvs.evaluation.replay import ReplayMismatch
from finenvs.evaluation.runlog import (
    RunFiles,
    RunMeta,
    TrajectoryWriter,
    jsonable,
    record_chain_head,
    run_metadata,
    write_run_json,
)
from finenvs.evaluation.seal import load_or_create_key
from finenvs.evaluation.session import EpisodeSession
from finenvs.evaluation.tokens import DecisionTokens, EpisodeTokens, reply_text
from finenvs.tasks import EpisodeSpec, Selection, TaskSpec, env_arguments, task_of
from finenvs.tasks import tasks as _tasks
from finenvs.text import safe_json
from finenvs.text.chat import ChatAgent, ChatReply, ToolCall, spec_name
from finenvs.text.plural import counted
from finenvs.text.protocol import MAX_PROMPT_CHARS, MAX_REPLY_CHARS, ParsedAction, TextProtocol
from finenvs.tools.registry import COMMIT_TOOL

FAILURE_RULES = ("default", "herculean")
#: HERCULEAN's attempts per decision before it counts as a failure.
HERCULEAN_ATTEMPTS = 5

SYSTEM_PROMPT = ("Read data with the tools (nothing after the decision time: asking for it counts as a look-ahead "
                 "attempt), then commit once with commit_action.")


@dataclass(frozen=True)
class PriceTable:
    """Dollar prices per million tokens; None = unknown (cost reported as n/a, never as 0)."""

    input_per_million: float | None = None
    output_per_million: float | None = None

    def cost(self, usage: dict[str, int] | None) -> float | None:
        if usage is None:
            return None
        prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        if prompt == 0 and completion == 0:
            return 0.0
        if self.input_per_million is None or self.output_per_million is None:
            return None
        return prompt * self.input_per_million / 1e6 + completion * self.output_per_million / 1e6

    @classmethod
    def load(cls, path: Path | str, model: str) -> PriceTable:
        """Read ``{"<model>": {"input_per_million": x, "output_per_million": y}, ...}`` (or one flat entry).

        Raises:
            ValueError: The file is not such a table or lacks ``model`` (names what it has).
        """
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"price table {path}: cannot be read as JSON ({exc})") from exc
        entry = doc.get(model, doc) if isinstance(doc, dict) else None
        if not isinstance(entry, dict) or not {"input_per_million", "output_per_million"} <= set(entry):
            models = sorted(k for k, v in doc.items() if isinstance(v, dict)) if isinstance(doc, dict) else []
            raise ValueError(
                f"price table {path}: no entry for model {model!r} with input_per_million and output_per_million; "
                f"models in the file: {models}"
            )
        return cls(float(entry["input_per_million"]), float(entry["output_per_million"]))


@dataclass
class RunConfig:
    """What an LLM run does.

    The episodes are the env's task-spec plan (:meth:`finenvs.tasks.TaskSpec.plan`) for
    ``split``, narrowed by ``symbols``, ``instances``, ``limit`` and ``seeds``.

    Attributes:
        env_id: Env id, base or text variant (the family's text protocol and tools are used).
        symbols: Symbols of market families (one episode each; FinHedging-v0: the universe); None = the plan's.
        split: Named split for every episode.
        env_kwargs: Further env arguments (``fee_bps``, ``start``/``end``, ...).
        seeds: Reset seeds (market families: one episode per symbol and seed; others: the first seed).
        instances: Indices into the plan (questions, audit instances, option tasks, hedging paths).
        limit: Run only the plan's first ``limit`` episodes.
        max_tool_calls: Tool calls allowed per decision (commit not counted; calls beyond it are dropped with one
            notice); None: the family's limit (its task spec's ``max_tool_calls``, 8 unless the family needs more).
        request_timeout: Seconds per chat request.
        decision_timeout: Seconds per decision, all requests and tools included.
        max_retries: Retries of a transient endpoint failure per request.
        backoff_base: First retry delay in seconds (doubles per retry, jittered ×0.5–1.5).
        backoff_max: Longest retry delay.
        concurrency: Episodes in flight at once.
        history: Recent decisions shown in each prompt.
        tool_max_chars: Cap on each tool result.
        format_retries: Times a reply without a valid action is sent back for another try.
        max_consecutive_endpoint_failures: Failed decisions in a row that stop an episode (None: never).
        max_decisions: Stop each episode after this many decisions (smoke runs; status ``partial``).
        live: HERCULEAN's live regime (market families): while the data ends before an episode's window end
            (``end``; default ``"latest"``, never), the episode runs as far as the data allows and waits (status
            ``waiting``) with the decision that needs a later bar recorded as pending: the one at the newest bar
            (FinReport-v0: its last report with a bar) of an env that takes ``open_end`` (set here: it keeps the
            position there); after ``finenvs data add`` appends the next bars, ``--resume`` steps it and goes on. The split defaults
            to ``live``.
        failure_rule: ``"default"``: a decision still invalid after its retries takes the protocol's documented
            default action. ``"herculean"``: HERCULEAN's rule — five attempts (``format_retries`` raised to at
            least 4), and a decision still without a valid action fails the episode (status ``failed``, no
            metrics, "—" in tables).
        seed: Seed of the retry jitter.
    """

    env_id: str = "FinTrading-v0"
    symbols: list[str] | None = None
    split: str | None = "eval"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0])
    instances: list[int] | None = None
    limit: int | None = None
    max_tool_calls: int | None = None
    request_timeout: float = 60.0
    decision_timeout: float = 600.0
    max_retries: int = 4
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    concurrency: int = 4
    history: int = 5
    tool_max_chars: int = 8_000
    format_retries: int = 0
    max_consecutive_endpoint_failures: int | None = 3
    max_decisions: int | None = None
    failure_rule: str = "default"
    seed: int = 0
    live: bool = False

    def __post_init__(self) -> None:
        if self.max_tool_calls is None:
            self.max_tool_calls = task_of(self.env_id).max_tool_calls
        for name in ("max_tool_calls", "max_retries", "history", "format_retries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}={value!r} must be an integer >= 0")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(f"concurrency={self.concurrency!r} must be an integer >= 1")
        for name in ("request_timeout", "decision_timeout", "backoff_max"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r} must be > 0")
        if float(self.backoff_base) < 0:
            raise ValueError(f"backoff_base={self.backoff_base!r} must be >= 0")
        if self.max_decisions is not None and self.max_decisions < 1:
            raise ValueError(f"max_decisions={self.max_decisions!r} must be None or >= 1")
        if not self.seeds:
            raise ValueError("seeds=[] is empty; give at least one seed")
        if self.failure_rule not in FAILURE_RULES:
            raise ValueError(f"failure_rule={self.failure_rule!r}; valid: {list(FAILURE_RULES)}")
        if self.failure_rule == "herculean":
            self.format_retries = max(self.format_retries, HERCULEAN_ATTEMPTS - 1)
        if self.live:
            from finenvs.data.splits import LATEST

            if "end" not in self.task.run_options:
                raise ValueError(f"{self.task.env_id} has no date window; live runs are for the families that "
                                 "take start/end: " + ", ".join(t.env_id for t in _tasks() if "end" in t.run_options))
            # the window ends where asked (``end``, default open: the newest bar, whichever day that is); until
            # the data reaches that end, an episode waits (see ``live`` above)
            self.env_kwargs = {"end": LATEST, **self.env_kwargs}
            if "open_end" in env_arguments(self.task.env_id)[0]:  # the env keeps the position at the newest bar
                self.env_kwargs = {"open_end": True, **self.env_kwargs}
            if self.split == "eval":
                self.split = "live"
        debate = self.env_kwargs.get("debate", False)
        if not isinstance(debate, bool):
            raise ValueError(f"env_kwargs debate={str(debate)[:40]!r} must be true or false")
        if debate and self.task.debate is None:
            raise ValueError(f"{self.task.env_id} has no debate round; FAB++'s debate is for "
                             + ", ".join(t.env_id for t in _tasks() if t.debate is not None))
        if "debate_rule" in self.env_kwargs:
            from finenvs.text.debate import DEBATE_RULES

            rule = self.env_kwargs["debate_rule"]
            if not debate or not isinstance(rule, str) or rule not in DEBATE_RULES:
                raise ValueError(f"env_kwargs debate_rule={str(rule)[:40]!r} must be one of {sorted(DEBATE_RULES)}, "
                                 "with debate true")

    @property
    def task(self) -> TaskSpec:
        return task_of(self.env_id)

    @property
    def tool_budget(self) -> int:
        """Tool calls allowed per decision: ``max_tool_calls`` as ``__post_init__`` resolved it."""
        assert self.max_tool_calls is not None  # None is replaced by the family's limit on construction
        return self.max_tool_calls

    def selection(self) -> Selection:
        return Selection(
            split=self.split or "eval", symbols=tuple(self.symbols) if self.symbols else None,
            instances=tuple(self.instances) if self.instances is not None else None, limit=self.limit,
            seeds=tuple(int(s) for s in self.seeds), env_kwargs=dict(self.env_kwargs))

    def episodes(self) -> list[EpisodeSpec]:
        """The run's episodes: the family's plan for this selection."""
        return self.task.plan(self.selection())


# ---------------------------------------------------------------------------- one decision
class ToolPort(Protocol):
    """What the decision loop needs from an episode: the tools and the protocol (in process or over MCP)."""

    protocol: TextProtocol

    def tool_specs(self) -> list[dict[str, Any]]: ...

    async def call_tool(self, name: str, arguments: str) -> str: ...


class SessionPort:
    """An in-process :class:`EpisodeSession` as a :class:`ToolPort`."""

    def __init__(self, session: EpisodeSession) -> None:
        self.session = session
        self.protocol = session.protocol

    def tool_specs(self) -> list[dict[str, Any]]:
        return self.session.tool_specs()

    async def call_tool(self, name: str, arguments: str) -> str:
        return self.session.call_tool(name, arguments).text()


@dataclass
class Decision:
    """The outcome of one decision loop, with everything the trajectory records."""

    parsed: ParsedAction
    raw_text: str | None
    messages: list[dict[str, Any]]
    usage: dict[str, int] | None
    requests: int = 0
    retries: int = 0
    endpoint_errors: int = 0
    errors: list[str] = field(default_factory=list)
    llm_seconds: float = 0.0
    tool_seconds: float = 0.0
    seconds: float = 0.0
    endpoint_failed: bool = False
    #: The failed request's :class:`EndpointError` kind (``transient``: not reached, timed out, 429/5xx after retries).
    endpoint_kind: str | None = None
    commit_arguments: str | None = None
    #: Prompt, completion and cached-prefix tokens of its requests (:mod:`finenvs.evaluation.tokens`).
    tokens: DecisionTokens = field(default_factory=DecisionTokens)

    def step_fields(self) -> dict[str, Any]:
        """The fields a step (or pending) record keeps beside the action: the commit's arguments and the tokens."""
        return {"commit_arguments": self.commit_arguments, "tokens": self.tokens.record()}


Sleep = Callable[[float], Awaitable[Any]]

#: Names of dropped tool calls a notice lists (each cut to 40 characters).
NOTICE_NAMES = 5
#: Longest message the loop writes itself (a notice, a format retry, a commit's answer), in characters.
MAX_LOOP_MESSAGE_CHARS = 2_000


def model_turns(config: RunConfig) -> int:
    """Requests one decision may make (retries of a failed request aside): one per tool call, per format retry,
    and three more."""
    return config.tool_budget + config.format_retries + 3


def conversation_bound(config: RunConfig) -> tuple[int, int]:
    """``(messages, characters)`` that a decision's conversation never exceeds: what each request re-sends and what
    the step records (``messages``).

    Counted: the system message and the prompt (at most :data:`~finenvs.text.protocol.MAX_PROMPT_CHARS`); per model
    turn (:func:`model_turns`) its reply (at most :data:`~finenvs.text.protocol.MAX_REPLY_CHARS`, the calls beyond
    the budget dropped) and one message of the loop's own (a notice or a format retry, at most
    :data:`MAX_LOOP_MESSAGE_CHARS`); the results of at most ``max_tool_calls`` tools (each at most
    ``tool_max_chars``) and one commit's answer. A message's characters are its content's plus each tool call's id,
    name and arguments.
    """
    turns = model_turns(config)
    messages = 2 + 2 * turns + config.tool_budget + 1
    chars = (len(SYSTEM_PROMPT) + MAX_PROMPT_CHARS + turns * (MAX_REPLY_CHARS + MAX_LOOP_MESSAGE_CHARS)
             + config.tool_budget * config.tool_max_chars + MAX_LOOP_MESSAGE_CHARS)
    return messages, chars


def message_chars(message: dict[str, Any]) -> int:
    """Characters of a chat message as :func:`conversation_bound` counts them."""
    content = message.get("content")
    calls = message.get("tool_calls") or []
    return (len(content) if isinstance(content, str) else 0) + sum(
        len(str(c.get("id") or "")) + len(str((c.get("function") or {}).get("name") or ""))
        + len(str((c.get("function") or {}).get("arguments") or "")) for c in calls)


def _loop_text(text: str, limit: int = MAX_LOOP_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 20] + " ... (cut)"


@dataclass(frozen=True)
class ReplyCalls:
    """The tool calls of one reply as the decision loop serves them.

    Attributes:
        kept: The calls kept in the conversation, in the reply's order: the first ``budget`` calls that are not
            ``commit_action`` (each served) and the first ``commit_action`` (all commits of a reply count as one).
        commits: Every ``commit_action`` call of the reply (read together: if they disagree, the decision is
            ambiguous).
        dropped: How many calls were beyond the budget: neither served nor kept, answered by one notice.
        dropped_names: The first distinct names among them (at most :data:`NOTICE_NAMES`).
        extra_commits: ``commit_action`` calls after the first (read, not kept).
    """

    kept: list[ToolCall]
    commits: list[ToolCall]
    dropped: int
    dropped_names: tuple[str, ...]
    extra_commits: int

    @classmethod
    def of(cls, calls: list[ToolCall], budget: int) -> ReplyCalls:
        kept: list[ToolCall] = []
        commits: list[ToolCall] = []
        dropped: list[ToolCall] = []
        for call in calls:
            if call.name == COMMIT_TOOL:
                if not commits:
                    kept.append(call)
                commits.append(call)
            elif budget > 0:
                budget -= 1
                kept.append(call)
            else:
                dropped.append(call)
        names = tuple(dict.fromkeys(str(c.name)[:40] for c in dropped[:1000]))[:NOTICE_NAMES]
        return cls(kept, commits, len(dropped), names, max(0, len(commits) - 1))

    def notice(self, max_tool_calls: int) -> str | None:
        """The one message that answers what was dropped (None when nothing was)."""
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped} tool call(s) of your reply ({', '.join(self.dropped_names)}"
                         f"{', ...' if self.dropped > len(self.dropped_names) else ''}) were dropped unanswered: the "
                         f"budget is {max_tool_calls} tool calls per decision; call {COMMIT_TOOL} now")
        if self.extra_commits:
            parts.append(f"{self.extra_commits} further {COMMIT_TOOL} call(s) of your reply were read with the first "
                         "and are not kept")
        return "; ".join(parts) + "." if parts else None


def _bounded_result(text: Any, limit: int) -> str:
    """A tool result as the conversation carries it: at most ``limit`` characters (the session's tools already
    keep to it; a remote port's longer result becomes an error naming its size)."""
    if not isinstance(text, str):
        return json.dumps({"error": f"the tool result is a {type(text).__name__}, not text"})
    if len(text) <= limit:
        return text
    return json.dumps({"error": f"the tool result has {len(text):,} characters; the limit is {limit:,}"})


#: The note of a tool answer that repeats an earlier call of the same decision (see :func:`_unless_repeated`).
REPEAT_NOTE = "the same call earlier in this decision: its answer, unchanged"


def _unless_repeated(earlier: dict[tuple[str, str, str], str], call: ToolCall, text: str) -> str:
    """``text``, or a pointer to the earlier call of this decision with the same tool, arguments and answer: the call
    ran again (it counts toward the budget and any look-ahead attempt), but its answer is not sent twice."""
    first = earlier.setdefault((call.name, call.arguments, text), call.id)
    if first == call.id:
        return text
    pointer = json.dumps({"same_as": first, "note": REPEAT_NOTE})
    return pointer if len(pointer) < len(text) else text


async def decide(
    agent: ChatAgent,
    port: ToolPort,
    prompt: str,
    config: RunConfig,
    *,
    rng: random.Random | None = None,
    sleep: Sleep = asyncio.sleep,
    tally: EpisodeTokens | None = None,
) -> Decision:
    """Run the tool-calling loop for one decision. Never raises for agent or endpoint problems.

    ``tally`` counts the tokens of the episode's requests in order (one per episode, so the first request of a
    decision is compared with the last of the one before); a fresh one when None."""
    rng = rng or random.Random(config.seed)
    tally = tally if tally is not None else EpisodeTokens()
    protocol = port.protocol
    began = time.perf_counter()
    deadline = began + float(config.decision_timeout)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]
    tools = port.tool_specs()
    commit_only = [t for t in tools if spec_name(t) == COMMIT_TOOL] or tools
    d = Decision(protocol.invalid("no reply"), None, messages, {"prompt_tokens": 0, "completion_tokens": 0})
    used = 0
    earlier: dict[tuple[str, str, str], str] = {}  # (tool, arguments, answer) -> the first such call's id
    format_retries = config.format_retries
    max_rounds = model_turns(config)

    replies = 0

    def finish(parsed: ParsedAction, **changes: Any) -> Decision:
        d.parsed = parsed
        for key, value in changes.items():
            setattr(d, key, value)
        d.tokens = tally.take()
        if not replies:  # the endpoint never answered this decision: its tokens and cost are unknown, not 0
            d.usage = None
        d.seconds = time.perf_counter() - began
        return d

    for _ in range(max_rounds):
        if time.perf_counter() >= deadline:
            return finish(protocol.invalid(f"decision timed out after {config.decision_timeout:g} s"))
        offered = tools if used < config.tool_budget else commit_only  # the budget spent: only the commit is left
        try:
            reply = await _request(agent, messages, offered, config, d, rng, sleep, deadline)
        except EndpointError as exc:
            return finish(protocol.invalid(f"endpoint error: {exc}"), endpoint_failed=True, endpoint_kind=exc.kind)
        tally.count(messages, offered, reply.usage, reply_text(reply))
        replies += 1
        if reply.usage is None or d.usage is None:  # one unknown count makes the decision's unknown
            d.usage = None
        else:
            for key in ("prompt_tokens", "completion_tokens"):
                d.usage[key] += int(reply.usage.get(key) or 0)
        d.raw_text = reply.content
        if reply.tool_calls:
            turn = ReplyCalls.of(reply.tool_calls, config.tool_budget - used)
            messages.append(ChatReply(reply.content if reply.content is not None else "", turn.kept).message())
            commit: tuple[ParsedAction, str] | None = None
            answer = ""  # the tool result of the kept commit: how its first call reads
            if turn.commits:
                verdicts = [protocol.parse_commit(c.arguments) for c in turn.commits]
                parsed = verdicts[0]
                content: dict[str, Any] = {"accepted": parsed.valid, "action": parsed.name}
                if not parsed.valid:
                    content["invalid"] = _loop_text(str(parsed.invalid), MAX_LOOP_MESSAGE_CHARS // 2)
                answer = json.dumps(content)
                if len({(p.name, p.invalid) for p in verdicts}) > 1:
                    parsed = protocol.invalid(f"ambiguous: {len(verdicts)} {COMMIT_TOOL} calls disagree")
                commit = (parsed, turn.commits[0].arguments)
            for call in turn.kept:
                if call.name == COMMIT_TOOL:
                    text = answer
                else:
                    used += 1
                    t0 = time.perf_counter()
                    text = _bounded_result(await port.call_tool(call.name, call.arguments), config.tool_max_chars)
                    d.tool_seconds += time.perf_counter() - t0
                    text = _unless_repeated(earlier, call, text)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            notice = turn.notice(config.tool_budget)
            if notice is not None:
                notice = _loop_text(notice)
                messages.append({"role": "user", "content": notice})
                d.errors.append(notice)
            if commit is not None:
                return finish(commit[0], commit_arguments=commit[1])
            continue
        messages.append(reply.message())
        parsed = protocol.parse_text(reply.content if reply.content is not None else "")
        if parsed.valid or format_retries == 0:
            return finish(parsed)
        format_retries -= 1
        d.errors.append(f"format: {parsed.invalid}")
        messages.append({
            "role": "user",
            "content": _loop_text(f"Your reply had no valid action ({parsed.invalid}). Call {COMMIT_TOOL}, or end "
                                  f"your reply with one line 'Action: <{protocol.answer_format}>'."),
        })
    return finish(protocol.invalid(f"no decision after {max_rounds} model turns"))


async def _request(
    agent: ChatAgent,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    config: RunConfig,
    d: Decision,
    rng: random.Random,
    sleep: Sleep,
    deadline: float,
) -> Any:
    # Hand-written on purpose: tenacity/backoff can stop after a delay, but do not shrink each request's
    # timeout to what is left of the decision's deadline, honour Retry-After, or count requests per step.
    attempt = 0
    while True:
        d.requests += 1
        t0 = time.perf_counter()
        try:
            budget = max(0.001, min(float(config.request_timeout) + 5.0, deadline - t0))
            reply = await asyncio.wait_for(agent.complete(list(messages), tools), timeout=budget)
            too_long = oversize_error(reply) if isinstance(reply, ChatReply) else None
            if too_long is None:  # any agent's reply has the transports' cap (theirs stop reading sooner)
                return reply
            raise too_long
        except asyncio.TimeoutError:
            error = EndpointError("transient", f"no reply within {budget:.1f} s")
        except EndpointError as exc:
            error = exc
        except Exception as exc:  # an agent's own bug: record it, never crash the run
            error = EndpointError("permanent", f"agent raised {type(exc).__name__}: {exc}")
        finally:
            d.llm_seconds += time.perf_counter() - t0
        d.endpoint_errors += 1
        d.errors.append(str(error) if error.excerpt is None else f"{error}; it begins {error.excerpt!r}")
        if error.kind != "transient" or attempt >= config.max_retries:
            if attempt:
                raise EndpointError(error.kind, f"{error.args[0]} (after {attempt + 1} attempts)", status=error.status)
            raise error
        delay = error.retry_after if error.retry_after is not None else (
            min(config.backoff_max, config.backoff_base * 2**attempt) * (0.5 + rng.random())
        )
        if time.perf_counter() + delay >= deadline:
            raise EndpointError(error.kind, f"{error.args[0]} (no time left to retry)", status=error.status)
        await sleep(delay)
        attempt += 1
        d.retries += 1


# ---------------------------------------------------------------------------- episodes and runs
@dataclass
class EpisodeOutcome:
    """How an episode of a run ended."""

    spec: EpisodeSpec
    status: str  # complete | failed | partial | aborted | skipped (already complete or failed when resumed)
    #: the episode record (written now, or read back when resumed: then as the run's file holds it)
    record: Mapping[str, Any] | None
    decisions: int
    message: str = ""


@dataclass
class RunSummary:
    """What :func:`run_llm` did."""

    run_dir: Path
    status: str
    outcomes: list[EpisodeOutcome]
    seconds: float

    def episode_records(self) -> list[Mapping[str, Any]]:
        return [o.record for o in self.outcomes if o.record is not None]

    @property
    def endpoint_failed(self) -> list[EpisodeOutcome]:
        """The episodes that failed because the endpoint failed on every one of their decisions (not scored)."""
        return [o for o in self.outcomes if o.record is not None and o.record.get("status") == "failed"
                and "endpoint_failed_decisions" in o.record]


#: How an episode whose first decision found no endpoint ends (status ``aborted``; nothing recorded or scored).
NEVER_ANSWERED = "the endpoint never answered"


async def run_episode(
    agent: ChatAgent,
    spec: EpisodeSpec,
    config: RunConfig,
    *,
    writer: TrajectoryWriter | None = None,
    recorded: list[dict[str, Any]] | None = None,
    prices: PriceTable = PriceTable(),
    on_decision: Callable[[int], object] | None = None,
    on_start: Callable[[int], None] | None = None,
    sleep: Sleep = asyncio.sleep,
    pool: EnvPool | None = None,
    pending: dict[str, Any] | None = None,
    run_answered: list[bool] | None = None,
) -> EpisodeOutcome:
    """One episode through the decision loop (after replaying ``recorded`` steps, if any); its text env comes
    from ``pool`` (and goes back to it) when one is given. ``run_answered`` (one flag the run's episodes share)
    records whether the endpoint has answered any decision of the run: only while it has not does a first
    decision that finds no endpoint abort the episode."""
    env = pool.take(spec) if pool is not None else None
    try:
        session = EpisodeSession(spec, writer=writer, history=config.history, tool_max_chars=config.tool_max_chars,
                                 recorded=recorded, env=env, live=config.live, pending=pending)
    except BaseException:
        if pool is not None and env is not None:
            pool.give(spec, env)
        raise
    if on_start is not None:
        info = session.reset_info
        expected = info.get("n_decisions") or info.get("n_reports") or info.get("n_steps") or 1
        on_start(int(expected) - session.step_index)
    rng = random.Random(f"{config.seed}-{spec.index}")
    port = SessionPort(session)
    bind = getattr(agent, "bind_session", None)  # an agent that serves the episode's tools itself (the harness)
    if bind is not None:
        bind(session)
    failures = 0
    tally = EpisodeTokens()
    answered = session.step_index > 0  # whether the endpoint has answered a decision of this episode
    try:
        while not session.done and not session.waiting:
            if config.max_decisions is not None and session.step_index >= config.max_decisions:
                return EpisodeOutcome(spec, "partial", None, session.step_index,
                                      f"stopped after max_decisions={config.max_decisions}")
            decision = await decide(agent, port, session.prompt, config, rng=rng, sleep=sleep, tally=tally)
            if (decision.endpoint_kind == "transient" and not answered and not (run_answered and run_answered[0])
                    and config.max_consecutive_endpoint_failures is not None):
                # the endpoint never answered this episode (not reached, timed out, 429/5xx after every retry): no
                # decision is recorded and nothing is scored (a default action would score as if the agent had chosen
                # it); --resume plays it later. A reply that came but is unreadable is the agent's invalid decision.
                return EpisodeOutcome(spec, "aborted", None, session.step_index,
                                      f"{NEVER_ANSWERED}: {decision.parsed.invalid}")
            answered = answered or not decision.endpoint_failed
            if answered and run_answered is not None:
                run_answered[0] = True
            if config.failure_rule == "herculean" and not decision.parsed.valid:
                reason = (f"no valid decision after {config.format_retries + 1} attempts at step "
                          f"{session.step_index}: {decision.parsed.invalid}")
                record = session.fail(reason, messages=decision.messages, raw_text=decision.raw_text,
                                      usage=decision.usage, errors=decision.errors,
                                      endpoint_failed=decision.endpoint_failed, tokens=decision.tokens.record())
                if on_decision is not None:
                    on_decision(1)
                return EpisodeOutcome(spec, "failed", record, session.step_index, reason)
            session.commit(
                decision.parsed,
                raw_text=decision.raw_text,
                messages=decision.messages,
                usage=decision.usage,
                cost_usd=prices.cost(decision.usage),
                requests=decision.requests,
                retries=decision.retries,
                endpoint_errors=decision.endpoint_errors,
                errors=decision.errors,
                timing={"seconds": decision.seconds, "llm_seconds": decision.llm_seconds,
                        "tool_seconds": decision.tool_seconds},
                extra=decision.step_fields(),
                endpoint_failed=decision.endpoint_failed,
            )
            if on_decision is not None:
                on_decision(1)
            failures = failures + 1 if decision.endpoint_failed else 0
            limit = config.max_consecutive_endpoint_failures
            if limit is not None and failures >= limit and not session.done:
                return EpisodeOutcome(spec, "aborted", None, session.step_index,
                                      f"endpoint failed on {failures} decisions in a row (last: "
                                      f"{decision.parsed.invalid}); resume the run later")
        if session.waiting:  # a live episode at its last open decision: decide now, step it when a later bar exists
            if session.pending is None:
                decision = await decide(agent, port, session.prompt, config, rng=rng, sleep=sleep, tally=tally)
                session.hold(decision.parsed, raw_text=decision.raw_text, messages=decision.messages,
                             usage=decision.usage, cost_usd=prices.cost(decision.usage), requests=decision.requests,
                             retries=decision.retries, endpoint_errors=decision.endpoint_errors,
                             errors=decision.errors, **decision.step_fields(),
                             timing={"seconds": decision.seconds, "llm_seconds": decision.llm_seconds,
                                     "tool_seconds": decision.tool_seconds},
                             **({"endpoint_failed": True} if decision.endpoint_failed else {}))
                if on_decision is not None:
                    on_decision(1)
            return EpisodeOutcome(spec, "waiting", None, session.step_index,
                                  f"waiting at {session.date}: its decision is recorded; add the next bar(s) with "
                                  "finenvs data add, then continue with finenvs llm --resume RUN --live")
        final = session.episode_record
        if final is not None and final.get("status") == "failed":  # the endpoint failed on every decision
            return EpisodeOutcome(spec, "failed", final, session.step_index, str(final.get("reason")))
        return EpisodeOutcome(spec, "complete", final, session.step_index)
    finally:
        if bind is not None:
            bind(None)
        session.close()
        if pool is not None and env is not None:
            pool.give(spec, env)


def _run_meta(config: RunConfig, agent: ChatAgent, prices: PriceTable, run_dir: Path) -> RunMeta:
    return run_metadata(run_dir, "llm-runner", agent=agent.describe(), config=dataclasses.asdict(config),
                        episodes=config.episodes(), prices=dataclasses.asdict(prices))


def _group_steps(records: list[dict[str, Any]]) -> tuple[dict[int, list[dict[str, Any]]], dict[int, dict[str, Any]]]:
    """Step and pending records by episode (in file order), and the episode record of each finished episode."""
    steps: dict[int, list[dict[str, Any]]] = {}
    done: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.get("type") in ("step", "pending"):  # a pending record is split off in one()
            steps.setdefault(int(record["episode"]), []).append(record)
        elif record.get("type") == "episode" and record.get("status") in ("complete", "failed"):
            done[int(record["episode"])] = record
    return steps, done


async def run_llm_async(
    config: RunConfig,
    agent: ChatAgent,
    *,
    out: Path | str = "finenvs-runs",
    name: str | None = None,
    resume: Path | str | None = None,
    prices: PriceTable = PriceTable(),
    progress: bool = True,
    sleep: Sleep = asyncio.sleep,
) -> RunSummary:
    """Async form of :func:`run_llm`."""
    from tqdm.auto import tqdm

    began = time.perf_counter()
    episodes = config.episodes()
    key = load_or_create_key()
    head = None
    if resume is not None:
        files = RunFiles(Path(resume))
        # only a run this machine's key signed, with an intact chain, is continued; everything replayed or
        # stepped below (recorded actions, a pending live decision) comes from the records checked here
        meta, check = open_run_to_resume(files.root)
        recorded_specs = [EpisodeSpec.from_dict(e) for e in meta.get("episodes", [])]
        if recorded_specs != episodes:
            raise ValueError(
                f"{files.root}: the run's episodes differ from this configuration; resume with the same env, "
                "symbols, split, env arguments and seeds (they are in run.json)"
            )
        genesis = meta["integrity"]["genesis"]
        if check.partial:  # a line cut off by a crash (the run was still running): dropped before appending
            with open(files.trajectories, "r+b") as fh:
                fh.truncate(check.whole_bytes)
        head = (check.lines, check.final)
        steps, complete = _group_steps([record for _, record in check.records])
        meta["status"] = "running"
        meta.setdefault("resumed_utc", []).append(_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    else:
        run_name = name or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        root = Path(out) / run_name
        if root.exists():
            raise FileExistsError(f"{root} exists; choose another --name or continue it with --resume {root}")
        root.mkdir(parents=True)
        files = RunFiles(root)
        meta = _run_meta(config, agent, prices, root)
        genesis = meta["integrity"]["genesis"]
        steps, complete = {}, {}
    write_run_json(files.run, meta, key=key)
    writer = TrajectoryWriter(files.trajectories, genesis=genesis, key=key, head=head)
    pool = EnvPool(history=config.history, tool_max_chars=config.tool_max_chars)
    semaphore = asyncio.Semaphore(config.concurrency)
    # one tick per episode, out of the episodes this run plays (a resumed run's finished ones left out): the total is
    # known before any starts, whatever a family's decisions per episode; the decisions taken so far ride along
    to_play = sum(s.index not in complete for s in episodes)
    bar = tqdm(total=to_play, unit="episode", desc=f"finenvs llm {agent.name}", disable=not progress or None)
    decided = [0]

    def on_decision(n: int = 1) -> None:
        decided[0] += n
        bar.set_postfix_str(counted(decided[0], "decision"), refresh=False)
        bar.update(0)  # redrawn when tqdm's interval has passed, not on every decision
    outcomes: list[EpisodeOutcome] = []
    unreachable: list[str] = []  # set when an episode's first decision found no endpoint: later ones do not start
    run_answered = [bool(steps)]  # whether the endpoint has answered a decision of this run (a resumed one has)

    async def one(spec: EpisodeSpec) -> EpisodeOutcome:
        if spec.index in complete:
            return EpisodeOutcome(spec, "skipped", complete[spec.index], len(steps.get(spec.index, [])),
                                  "already complete")
        async with semaphore:
            if unreachable:
                return EpisodeOutcome(spec, "aborted", None, len(steps.get(spec.index, [])),
                                      f"not started: {unreachable[0]}")
            outcome = await _one(spec)
            if outcome.status == "aborted" and outcome.message.startswith(NEVER_ANSWERED):
                unreachable.append(outcome.message)
            return outcome

    async def _one(spec: EpisodeSpec) -> EpisodeOutcome:
        try:
            return await _play(spec)
        finally:
            bar.update(1)

    async def _play(spec: EpisodeSpec) -> EpisodeOutcome:
        recorded = [r for r in steps.get(spec.index, []) if r.get("type") == "step"]
        pending = next((r for r in reversed(steps.get(spec.index, [])) if r.get("type") == "pending"
                        and r.get("step") == len(recorded)), None)
        try:
            return await run_episode(agent, spec, config, writer=writer, recorded=recorded, prices=prices,
                                     on_decision=on_decision, sleep=sleep, pool=pool,
                                     pending=pending, run_answered=run_answered)
        except ReplayMismatch:
            raise
        except Exception as exc:  # a bug in one episode must not take the others (and the file) with it
            return EpisodeOutcome(spec, "aborted", None, len(steps.get(spec.index, [])),
                                  f"internal error: {type(exc).__name__}: {str(exc)[:200]}; the episode's "
                                  "lines so far are kept and --resume retries it")

    status = "interrupted"
    try:
        outcomes = list(await asyncio.gather(*(one(s) for s in episodes)))
        finished = all(o.status in ("complete", "failed", "skipped") for o in outcomes)
        waiting = all(o.status in ("complete", "failed", "skipped", "waiting") for o in outcomes)
        status = "complete" if finished else "waiting" if waiting else "incomplete"
        return RunSummary(files.root, status, outcomes, time.perf_counter() - began)
    except ReplayMismatch:
        status = "failed"
        raise
    finally:
        bar.close()
        writer.close()
        pool.close()
        meta["status"] = status
        meta["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        if outcomes:
            meta["outcomes"] = [{"episode": o.spec.index, "status": o.status, "decisions": o.decisions,
                                 "message": o.message} for o in outcomes]
        if status == "interrupted":
            meta["note"] = f"interrupted; continue with: finenvs llm --resume {files.root}"
        record_chain_head(meta, writer)
        write_run_json(files.run, meta, key=key)


# ---------------------------------------------------------------------------- over MCP
class McpPort:
    """An MCP client session (``mcp.Client``) as a :class:`ToolPort`: the same decision loop, remote tools."""

    def __init__(self, client: Any, tools: list[Any], protocol: TextProtocol) -> None:
        self.client = client
        self.protocol = protocol
        self._specs = [
            {"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.input_schema}}
            for t in tools
            if t.name != "get_observation"
        ]

    def tool_specs(self) -> list[dict[str, Any]]:
        return self._specs

    async def call_tool(self, name: str, arguments: str) -> str:
        args, problem = (safe_json.try_loads(arguments, allow_non_finite=True) if arguments and arguments.strip()
                         else ({}, None))
        if problem is not None:
            return json.dumps({"error": f"arguments of {name} are not valid JSON ({problem})"})
        if not isinstance(args, dict):
            return json.dumps({"error": f"arguments of {name} must be a JSON object"})
        result = await self.client.call_tool(name, args)
        return "".join(getattr(block, "text", "") for block in result.content)


async def drive_mcp_episode(
    agent: ChatAgent,
    client: Any,
    protocol: TextProtocol,
    config: RunConfig | None = None,
    *,
    sleep: Sleep = asyncio.sleep,
) -> list[dict[str, Any]]:
    """Play a served episode to its end with ``agent``: observation, tools, commit, repeat.

    The agent's ``commit_action`` arguments are forwarded as given, so the
    server judges them; a decision that ended in a text reply is sent as the
    commit its protocol reads it as (:meth:`~finenvs.text.protocol.TextProtocol.commit_for`),
    one without any reply (an endpoint failure) as ``{"action": "(no action: <reason>)"}``.

    Returns:
        The server's replies to each commit (the last one carries the results).
    """
    config = config or RunConfig()
    listing = await client.list_tools()
    port = McpPort(client, listing.tools, protocol)
    rng = random.Random(config.seed)
    tally = EpisodeTokens()
    replies: list[dict[str, Any]] = []
    while True:
        observed = await client.call_tool("get_observation", {})
        data = observed.structured_content or {}
        if data.get("done") or observed.is_error:
            return replies
        decision = await decide(agent, port, data["observation"], config, rng=rng, sleep=sleep, tally=tally)
        arguments: Any = None
        if decision.commit_arguments is not None:
            arguments = safe_json.try_loads(decision.commit_arguments, allow_non_finite=True)[0]
        if not isinstance(arguments, dict):  # a text reply (or none): forwarded as the commit it means
            arguments = protocol.commit_for(decision.parsed) if decision.parsed.via != "default" else {
                "action": f"(no action: {decision.parsed.invalid})"[:200]}
        reply = await client.call_tool(COMMIT_TOOL, arguments)
        replies.append(reply.structured_content or {})
        if (reply.structured_content or {}).get("done"):
            return replies


def run_llm(config: RunConfig, agent: ChatAgent, **kwargs: Any) -> RunSummary:
    """Run (or with ``resume=RUN_DIR`` continue) an LLM-agent evaluation; see :func:`run_llm_async`.

    Args:
        config: Episodes and loop limits.
        agent: :class:`~finenvs.evaluation.endpoints.OpenAIChatAgent`, the offline
            :class:`~finenvs.tasks.trading.agent.ScriptedTradingAgent`, or any object
            with ``name``, ``describe()`` and ``async complete(messages, tools)``.
        out: Parent folder of new runs (default ``finenvs-runs``).
        name: Run folder name (default: UTC timestamp).
        resume: A run folder to continue: completed episodes are kept, partial
            ones replayed and continued.
        prices: Token prices for cost accounting.
        progress: Show a progress bar.

    Returns:
        A :class:`RunSummary`; the run folder holds ``run.json`` and ``trajectories.jsonl``.
    """
    return asyncio.run(run_llm_async(config, agent, **kwargs))


__all__ = [
    "MAX_LOOP_MESSAGE_CHARS",
    "SYSTEM_PROMPT",
    "Decision",
    "EpisodeOutcome",
    "McpPort",
    "PriceTable",
    "RunConfig",
    "RunSummary",
    "ReplyCalls",
    "SessionPort",
    "ToolPort",
    "conversation_bound",
    "decide",
    "drive_mcp_episode",
    "jsonable",
    "message_chars",
    "model_turns",
    "run_episode",
    "run_llm",
    "run_llm_async",
]
