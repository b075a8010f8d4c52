"""Chat messages between finenvs and an agent: the reply types, the agent protocol, and the plumbing of
offline scripted agents.

An agent turns a chat (OpenAI chat-completions messages) and a list of tools
into one reply: text and/or tool calls (:class:`ChatReply`). Every agent the
runner drives speaks this: a model endpoint
(:class:`finenvs.evaluation.endpoints.OpenAIChatAgent`), a remote A2A agent, or
an offline scripted agent (:class:`ScriptedChatAgent` subclasses, one per task
family), which reads the tool results in the messages exactly as a model would.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from finenvs.text import safe_json
from finenvs.text.protocol import MAX_REPLY_CHARS

#: Characters of an over-long reply kept in the record (its beginning), and in an error message.
REPLY_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str

    def message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ChatReply:
    """One assistant turn."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    model: str | None = None

    def size(self) -> int:
        """Characters the reply carries: its text plus each tool call's id, name and arguments (what
        :data:`~finenvs.text.protocol.MAX_REPLY_CHARS` bounds). Fields that are not text count 0."""
        return len(_text(self.content)) + sum(len(_text(c.id)) + len(_text(c.name)) + len(_text(c.arguments))
                                              for c in self.tool_calls if isinstance(c, ToolCall))

    def oversize(self) -> str | None:
        """Why the reply is over :data:`~finenvs.text.protocol.MAX_REPLY_CHARS` (its size and the limit), or None."""
        size = self.size()
        return None if size <= MAX_REPLY_CHARS else oversize_reason(size)

    def excerpt(self) -> str:
        """The reply's first :data:`REPLY_EXCERPT_CHARS` characters (text first, then the tool calls), for a record
        of a reply too long to keep."""
        limit = REPLY_EXCERPT_CHARS
        text = _text(self.content)[:limit]
        for call in self.tool_calls[:limit]:
            if len(text) >= limit:
                break
            if isinstance(call, ToolCall):
                text += f" {_text(call.name)[:limit]}({_text(call.arguments)[:limit]})"
        return text[:limit]

    def message(self) -> dict[str, Any]:
        """The turn as a chat message to append to the conversation.

        An assistant turn with tool calls and no text is sent with ``content: ""``:
        the chat-completions spec also allows null, but some servers (llama.cpp's
        Python server) reject it.
        """
        content = self.content if self.content is not None or not self.tool_calls else ""
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if self.tool_calls:
            msg["tool_calls"] = [c.message() for c in self.tool_calls]
        return msg


_NOT_ASCII = re.compile(r"[^\x20-\x7e]")


def json_quoted(text: str) -> str:
    """``text`` as one JSON string literal on one line, for a prompt that carries text it must not take as its own:
    printable Unicode kept as it is, every quote, backslash, line break (``\\n``, U+2028, ...) and other
    non-printable character escaped, so the literal ends only at its closing quote whatever ``text`` holds (forged
    markers, instructions); ``json.loads`` gives ``text`` back."""
    encoded = json.dumps(text, ensure_ascii=False)
    return _NOT_ASCII.sub(lambda m: m.group() if m.group().isprintable() else json.dumps(m.group())[1:-1], encoded)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def oversize_reason(size: int) -> str:
    """The reason recorded for a reply of ``size`` characters, over :data:`~finenvs.text.protocol.MAX_REPLY_CHARS`."""
    return f"the reply has {size:,} characters; the limit is {MAX_REPLY_CHARS:,}"


class ChatAgent(Protocol):
    """What the runner needs of an agent."""

    name: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply: ...

    def describe(self) -> dict[str, Any]: ...


#: The usage an offline agent reports: it spends no tokens (its cost is $0). The runner still counts what its requests
#: carry, as a model would read them (an ``o200k_base`` estimate: :mod:`finenvs.evaluation.tokens`).
NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0}


def current_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages after the last user message (this decision's assistant and tool turns)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[i + 1 :]
    return list(messages)


def tool_results(turn: list[dict[str, Any]]) -> dict[str, Any]:
    """Tool name -> parsed JSON result, for the tool calls of this turn (the latest of each name)."""
    names: dict[Any, Any] = {}  # call id -> tool name, as the messages give them
    answers: dict[Any, Any] = {}  # call id -> its answer
    out: dict[str, Any] = {}
    for msg in turn:
        for call in msg.get("tool_calls") or []:
            names[call.get("id")] = (call.get("function") or {}).get("name")
        if msg.get("role") == "tool":
            name = names.get(msg.get("tool_call_id"))
            if not isinstance(name, str):
                continue  # the result of no named call: nothing to file it under
            out[name] = _tool_answer(msg, answers)
    return out


def _tool_answer(msg: dict[str, Any], answers: dict[Any, Any]) -> Any:
    """A tool message's parsed answer (``{"error": ...}`` when unreadable), filed under its call id in ``answers``; a
    repeated call's pointer (``{"same_as": id, "note": ...}``, see :func:`finenvs.evaluation.llm.decide`) reads as
    the earlier call's answer."""
    value, problem = safe_json.try_loads(str(msg.get("content") or "null"), allow_non_finite=True)
    if problem is not None:
        value = {"error": "unreadable tool result"}
    elif (isinstance(value, dict) and set(value) == {"same_as", "note"} and isinstance(value["same_as"], str)
          and value["same_as"] in answers):
        value = answers[value["same_as"]]
    answers[msg.get("tool_call_id")] = value
    return value


def first_prompt(messages: list[dict[str, Any]]) -> str:
    """The decision's prompt: the first user message (``messages[1]``, after the system message)."""
    return next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")


def prompt_state(prompt: str) -> dict[str, str]:
    """The ``Label: value`` lines of a prompt's ``## Episode`` and ``## Now`` sections (see
    :func:`finenvs.text.protocol.render_prompt`)."""
    out: dict[str, str] = {}
    for heading in ("\n## Episode\n", "\n## Now\n"):
        _, found, rest = prompt.partition(heading)
        for line in rest.split("\n") if found else []:
            label, sep, value = line.partition(": ")
            if not sep or line.startswith("#"):  # the blank line before the next section ends it
                break
            out.setdefault(label, value)
    return out


def spec_name(spec: Any) -> Any:
    """The function name of one OpenAI tool spec (``{"type": "function", "function": {"name": ...}}``); None for
    anything else."""
    function = spec.get("function") if isinstance(spec, dict) else None
    return function.get("name") if isinstance(function, dict) else None


def offered_parameters(tools: list[dict[str, Any]] | None, name: str) -> dict[str, Any] | None:
    """The parameters schema of the offered tool ``name`` (the first spec of that name), or None when it is not
    offered or its parameters are not an object."""
    for spec in tools or []:
        if spec_name(spec) == name:
            parameters = spec["function"].get("parameters")
            return parameters if isinstance(parameters, dict) else None
    return None


def call_key(name: str, arguments: dict[str, Any]) -> str:
    """One tool call as a string: its name and its arguments' canonical JSON."""
    return name + json.dumps(arguments, sort_keys=True)


def call_results(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Every tool result in ``messages`` by :func:`call_key` of its call: each assistant tool call is paired, by id,
    with the tool message answering it (parsed JSON; ``{"error": ...}`` when unreadable). Unlike
    :func:`tool_results` it keeps every call of a tool, not the latest per name."""
    calls: dict[Any, str] = {}
    answers: dict[Any, Any] = {}  # tool call id -> its answer
    out: dict[str, Any] = {}
    for msg in messages:
        for call in msg.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments, problem = safe_json.try_loads(str(function.get("arguments") or "{}"), allow_non_finite=True)
            if problem is None and isinstance(arguments, dict):
                calls[call.get("id")] = call_key(str(function.get("name")), arguments)
        if msg.get("role") == "tool" and msg.get("tool_call_id") in calls:
            out[calls[msg["tool_call_id"]]] = _tool_answer(msg, answers)
    return out


# ---------------------------------------------------------------------------- offline
@dataclass
class ScriptedChatAgent:
    """Shared plumbing of the offline agents: a stateless reply per conversation, read from its messages."""

    name: str = "scripted"

    def describe(self) -> dict[str, Any]:
        return {"kind": "scripted", **asdict(self)}

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        return self.reply(messages, tools)

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def _turn(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[set[Any], dict[str, Any], int]:
        """``(tool names offered, this decision's tool results by name, assistant turns so far)``."""
        turn = current_turn(messages)
        names = {t.get("function", {}).get("name") for t in tools or []}
        return names, tool_results(turn), sum(1 for m in turn if m.get("role") == "assistant")

    @staticmethod
    def _offered(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[set[Any], int]:
        """``(tool names offered, assistant turns so far)``: :meth:`_turn` without parsing the tool results (for
        agents that read them with :func:`call_results`)."""
        names = {t.get("function", {}).get("name") for t in tools or []}
        return names, sum(1 for m in current_turn(messages) if m.get("role") == "assistant")

    @staticmethod
    def _calls(round_no: int, *calls: tuple[str, dict[str, Any]]) -> ChatReply:
        """A turn that calls ``(tool, arguments)`` pairs."""
        return ChatReply(None, [ToolCall(f"call_{round_no}_{k}", name, json.dumps(args, separators=(",", ":")))
                                for k, (name, args) in enumerate(calls)], usage=NO_USAGE)



__all__ = ["NO_USAGE", "REPLY_EXCERPT_CHARS", "ChatAgent", "ChatReply", "ScriptedChatAgent", "ToolCall", "call_key", "call_results",
           "current_turn", "first_prompt", "json_quoted", "offered_parameters", "oversize_reason", "prompt_state",
           "spec_name", "tool_results"]
