"""A tool call repeated within one decision runs again but its answer is not sent twice (the runner's pointer)."""

from __future__ import annotations

import asyncio
import json

import pytest

from finenvs.evaluation.llm import REPEAT_NOTE, RunConfig, SessionPort, decide
from finenvs.evaluation.session import EpisodeSession
from finenvs.tasks import task
from finenvs.tasks.spec import Selection
from finenvs.text.chat import ChatReply, ToolCall, call_key, call_results, tool_results

PRICES = json.dumps({"lookback": 3})
FUTURE = json.dumps({"start": "2030-01-02", "end": "2030-01-09"})


class Script:
    """An in-process agent replying with the given turns in order (the last one again after that)."""

    name = "script"

    def __init__(self, *turns: ChatReply) -> None:
        self.turns, self.seen = list(turns), []

    def describe(self) -> dict:
        return {"kind": "script"}

    async def complete(self, messages, tools):
        self.seen.append([dict(m) for m in messages])
        return self.turns[min(len(self.seen) - 1, len(self.turns) - 1)]


@pytest.fixture()
def session():
    spec = task("trading").plan(Selection(split="eval", limit=1))[0]
    s = EpisodeSession(spec)
    yield s
    s.close()


def play(session: EpisodeSession, agent: Script):
    return asyncio.run(decide(agent, SessionPort(session), session.prompt, RunConfig(env_id="FinTrading-v0")))


def tool_messages(messages):
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


def test_a_repeated_call_is_answered_with_a_pointer_and_agents_read_the_earlier_answer(session):
    agent = Script(
        ChatReply(None, [ToolCall("a", "get_prices", PRICES)]),
        ChatReply(None, [ToolCall("b", "get_prices", PRICES), ToolCall("c", "get_rate", "{}"),
                         ToolCall("d", "get_prices", json.dumps({"lookback": 4}))]),
        ChatReply(None, [ToolCall("e", "commit_action", json.dumps({"action": "HOLD"}))]),
    )
    d = play(session, agent)
    assert d.parsed.valid and d.parsed.name == "HOLD"
    sent = tool_messages(d.messages)
    assert "rows" in json.loads(sent["a"]) and json.loads(sent["b"]) == {"same_as": "a", "note": REPEAT_NOTE}
    assert "rows" in json.loads(sent["d"])  # other arguments: a call of its own
    assert json.loads(sent["c"])["series"] == "DTB3"
    # the call ran again: both are in the step's tool calls, and a reader of the conversation gets the answer twice
    record = session.commit(d.parsed, messages=d.messages)
    assert [c["name"] for c in record["tool_calls"]] == ["get_prices", "get_prices", "get_rate", "get_prices"]
    assert call_results(d.messages)[call_key("get_prices", {"lookback": 3})] == json.loads(sent["a"])
    assert tool_results(d.messages[2:])["get_prices"] == json.loads(sent["d"])
    assert tool_results(d.messages[2:5])["get_prices"] == json.loads(sent["a"])  # the pointer of turn 2 reads as "a"


def test_a_repeated_look_ahead_is_counted_each_time(session):
    agent = Script(
        ChatReply(None, [ToolCall("a", "get_prices", FUTURE), ToolCall("b", "get_prices", FUTURE)]),
        ChatReply(None, [ToolCall("c", "commit_action", json.dumps({"action": "HOLD"}))]),
    )
    d = play(session, agent)
    sent = tool_messages(d.messages)
    assert json.loads(sent["b"]) == {"same_as": "a", "note": REPEAT_NOTE}
    record = session.commit(d.parsed, messages=d.messages)
    first, again = (c["look_ahead"] for c in record["tool_calls"])
    assert first == again > 0 and record["look_ahead"] == 2 * first


def test_a_short_answer_is_repeated_as_it_is_and_a_changed_answer_in_full(session):
    """The pointer never makes an answer longer, and a different answer to the same call is sent whole."""

    class Flaky(SessionPort):
        def __init__(self, s):
            super().__init__(s)
            self.n = 0

        async def call_tool(self, name, arguments):
            self.n += 1
            return "{}" if name == "get_state" else json.dumps({"n": self.n, "pad": "x" * 200})

    agent = Script(
        ChatReply(None, [ToolCall("a", "get_state", "{}"), ToolCall("b", "get_state", "{}"),
                         ToolCall("c", "get_prices", PRICES), ToolCall("d", "get_prices", PRICES)]),
        ChatReply(None, [ToolCall("e", "commit_action", json.dumps({"action": "HOLD"}))]),
    )
    d = asyncio.run(decide(agent, Flaky(session), session.prompt, RunConfig(env_id="FinTrading-v0")))
    sent = tool_messages(d.messages)
    assert sent["a"] == sent["b"] == "{}"
    assert json.loads(sent["c"])["n"] == 3 and json.loads(sent["d"])["n"] == 4
