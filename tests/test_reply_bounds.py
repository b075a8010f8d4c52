"""Bounded replies on every transport: one reply cap (``MAX_REPLY_CHARS``) for in-process agents, the OpenAI-compatible
path, A2A and MCP; the decision loop's budget (calls beyond it dropped with one notice, commits counted once); and the
conversation each round re-sends, and each step records, within ``conversation_bound``. The assertions are on counts
and stored sizes, never on time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from finenvs.evaluation.llm import (
    MAX_LOOP_MESSAGE_CHARS,
    REPEAT_NOTE,
    RunConfig,
    SessionPort,
    conversation_bound,
    decide,
    message_chars,
    run_llm,
)
from finenvs.evaluation.runlog import read_trajectories
from finenvs.evaluation.session import EpisodeSession
from finenvs.tasks import EpisodeSpec
from finenvs.text.chat import REPLY_EXCERPT_CHARS, ChatReply, ToolCall
from finenvs.text.protocol import MAX_ARGUMENT_CHARS, MAX_REPLY_CHARS

FAST = {"backoff_base": 0.001, "backoff_max": 0.01}
SPEC = EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"}, 0)
MARK = "reply-mark-" + "q" * 21  # 32 characters, repeated through the long replies


class Canned:
    """An in-process agent: the same reply to every request."""

    name = "canned"

    def __init__(self, reply: ChatReply) -> None:
        self.reply, self.calls, self.sent = reply, 0, []

    def describe(self) -> dict:
        return {"kind": "canned"}

    async def complete(self, messages, tools):
        self.calls += 1
        self.sent.append((len(messages), sum(message_chars(m) for m in messages)))
        return self.reply


def flood(n: int, name: str = "get_prices") -> ChatReply:
    return ChatReply(None, [ToolCall(f"c{k}", name, json.dumps({"lookback": 2})) for k in range(n)])


def long_text(n: int) -> str:
    return (MARK * (n // len(MARK) + 1))[: n - len("\nAction: BUY")] + "\nAction: BUY"


@pytest.fixture()
def session():
    s = EpisodeSession(SPEC)
    yield s
    s.close()


def run_decide(agent, session, **config):
    return asyncio.run(decide(agent, SessionPort(session), session.prompt, RunConfig(**{**FAST, **config})))


def answered(messages: list[dict]) -> bool:
    """Every tool call of an assistant turn has its tool message (what a chat-completions server requires)."""
    asked = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return asked == [m["tool_call_id"] for m in messages if m["role"] == "tool"]


# ---------------------------------------------------------------------------- the decision loop
@pytest.mark.parametrize("n", [150, 2_000])
def test_a_flood_of_tool_calls_is_served_to_the_budget_and_dropped_with_one_notice_per_reply(session, n):
    agent = Canned(flood(n))
    d = run_decide(agent, session, max_tool_calls=8)
    turns = 8 + 0 + 3
    assert agent.calls == turns and "no decision after 11 model turns" in d.parsed.invalid
    tools = [m for m in d.messages if m["role"] == "tool"]
    notices = [m["content"] for m in d.messages[2:] if m["role"] == "user"]
    pointer = {"same_as": tools[0]["tool_call_id"], "note": REPEAT_NOTE}  # the same call again: its answer once
    assert len(tools) == 8 and "rows" in json.loads(tools[0]["content"])
    assert all(json.loads(m["content"]) == pointer for m in tools[1:])
    assert len(notices) == turns  # one per reply, never one per call
    assert f"{n - 8} tool call(s)" in notices[0] and all(f"{n} tool call(s)" in x for x in notices[1:])
    assert all(len(x) <= MAX_LOOP_MESSAGE_CHARS for x in notices) and answered(d.messages)
    # the same conversation whatever the flood: 2 + (1 + 8 + 1) + 10 x (1 + 1) messages, the largest request too
    assert len(d.messages) == 32 <= conversation_bound(RunConfig(max_tool_calls=8))[0]
    assert max(k for k, _ in agent.sent) == 30 and max(c for _, c in agent.sent) < 12_000


def test_the_commits_of_one_reply_count_once_and_calls_beyond_the_budget_are_dropped(session):
    reply = ChatReply(None, [*flood(3).tool_calls, *(ToolCall(f"k{k}", "commit_action", '{"action": "BUY"}')
                                                     for k in range(50))])
    d = run_decide(Canned(reply), session, max_tool_calls=2)
    assert d.parsed.name == "BUY" and d.parsed.valid and d.commit_arguments == '{"action": "BUY"}'
    [assistant] = [m for m in d.messages if m["role"] == "assistant"]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["get_prices", "get_prices", "commit_action"]
    assert answered(d.messages)
    notice = d.messages[-1]["content"]
    assert d.messages[-1]["role"] == "user" and "1 tool call(s)" in notice and "49 further commit_action" in notice


def test_disagreeing_commits_among_many_are_ambiguous_and_kept_once(session):
    calls = [ToolCall(f"k{k}", "commit_action", json.dumps({"action": "SELL" if k == 30 else "BUY"}))
             for k in range(40)]
    d = run_decide(Canned(ChatReply(None, calls)), session)
    assert d.parsed.name == "HOLD" and "ambiguous: 40 commit_action calls disagree" in d.parsed.invalid
    assert sum(len(m.get("tool_calls") or []) for m in d.messages) == 1


def test_a_reply_over_the_cap_is_malformed_and_kept_only_as_a_short_excerpt(session):
    text = long_text(MAX_REPLY_CHARS + 1)
    d = run_decide(Canned(ChatReply(text)), session)
    assert d.parsed.name == "HOLD" and d.endpoint_failed and d.raw_text is None
    assert d.parsed.invalid == (f"endpoint error: malformed: the reply has {MAX_REPLY_CHARS + 1:,} characters; the "
                                f"limit is {MAX_REPLY_CHARS:,}")
    assert [m["role"] for m in d.messages] == ["system", "user"]  # the reply is not in the conversation
    [error] = d.errors
    assert error.count(MARK) == REPLY_EXCERPT_CHARS // len(MARK)  # the excerpt, once, in the errors only
    assert len(json.dumps([d.messages, d.errors, d.parsed.invalid])) < len(d.messages[1]["content"]) + 2_000


def test_tool_calls_count_toward_the_cap_and_a_reply_at_the_cap_is_read(session):
    args = json.dumps({"lookback": 2, "pad": "p" * (MAX_REPLY_CHARS // 2)})
    over = ChatReply("x", [ToolCall("a", "get_prices", args), ToolCall("b", "get_prices", args)])
    assert over.size() > MAX_REPLY_CHARS
    d = run_decide(Canned(over), session)
    assert "malformed: the reply has" in d.parsed.invalid and not [m for m in d.messages if m["role"] == "tool"]
    at_cap = ChatReply(long_text(MAX_REPLY_CHARS))
    assert at_cap.size() == MAX_REPLY_CHARS
    d = run_decide(Canned(at_cap), session)
    assert not d.endpoint_failed and d.raw_text == at_cap.content  # read (then too long for an action)
    assert d.parsed.invalid == f"the reply has {MAX_REPLY_CHARS} characters; the limit is 16384"


class HugePort:
    """A remote tool port (an MCP server that keeps to no cap) answering every call with ``size`` characters."""

    def __init__(self, session: EpisodeSession, size: int) -> None:
        self.protocol, self.session, self.size = session.protocol, session, size

    def tool_specs(self):
        return self.session.tool_specs()

    async def call_tool(self, name, arguments):
        return json.dumps({"rows": "r" * self.size})


def test_a_tool_result_over_tool_max_chars_becomes_an_error_naming_its_size(session):
    agent = Canned(flood(2))
    d = asyncio.run(decide(agent, HugePort(session, 1_000_000), session.prompt,
                           RunConfig(**FAST, max_tool_calls=2, tool_max_chars=8_000)))
    results = [json.loads(m["content"]) for m in d.messages if m["role"] == "tool"]
    assert results == [{"error": "the tool result has 1,000,012 characters; the limit is 8,000"}] * 2


@pytest.mark.parametrize("reply", ["flood", "long"], ids=["flood", "long-replies"])
def test_the_recorded_step_stays_within_the_conversation_bound(tmp_path, reply):
    """Through run_llm: 2,000 calls every round, or a reply just under the cap every round."""
    config = RunConfig(symbols=["AAPL"], split="eval", max_tool_calls=8, max_decisions=1, **FAST)
    agent = Canned(flood(2_000) if reply == "flood" else ChatReply(long_text(MAX_REPLY_CHARS - 100)))
    if reply == "long":
        config.format_retries = 2
    summary = run_llm(config, agent, out=tmp_path, name="r", progress=False)
    [step] = [r for r in read_trajectories(summary.run_dir / "trajectories.jsonl")[0] if r["type"] == "step"]
    messages, chars = conversation_bound(config)
    assert len(step["messages"]) <= messages and sum(message_chars(m) for m in step["messages"]) <= chars
    assert all(k <= messages and c <= chars for k, c in agent.sent)
    size = (summary.run_dir / "trajectories.jsonl").stat().st_size
    if reply == "flood":
        assert len(step["messages"]) == 32 and size < 40_000  # 2,000 calls x 11 rounds once recorded 5.4 MB
    else:  # three replies (two format retries), each kept in the conversation, the last one also as raw_text
        text = (summary.run_dir / "trajectories.jsonl").read_text()
        assert text.count(MARK) == 4 * ((MAX_REPLY_CHARS - 100 - 12) // len(MARK))


# ---------------------------------------------------------------------------- the OpenAI-compatible path
pytest.importorskip("openai")
from chat_server import ChatServer  # noqa: E402

from finenvs.evaluation.endpoints import MAX_REPLY_BYTES, OpenAIChatAgent  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with ChatServer() as srv:
        yield srv


def one_step(server, tmp_path: Path, fault: str) -> tuple[dict, str]:
    server.faults.clear()
    server.faults.append(fault)
    server.sent = 0
    config = RunConfig(symbols=["AAPL"], split="eval", max_decisions=1, **FAST)
    summary = run_llm(config, OpenAIChatAgent("scripted", server.base_url, timeout=30), out=tmp_path, name="r",
                      progress=False)
    path = summary.run_dir / "trajectories.jsonl"
    [step] = [r for r in read_trajectories(path)[0] if r["type"] == "step"]
    return step, path.read_text()


def test_a_4m_character_reply_on_the_openai_path_is_malformed_and_never_stored(server, tmp_path):
    step, text = one_step(server, tmp_path, "huge:4000000")
    assert step["invalid"] == "endpoint error: malformed: the reply has 4,000,000 characters; the limit is 131,072"
    assert step["raw_text"] is None and step["retries"] == 0 and step["action"] == "HOLD"
    assert "x" * REPLY_EXCERPT_CHARS in step["errors"][0] and "x" * (REPLY_EXCERPT_CHARS + 1) not in text
    assert len(text) < 20_000  # the reply was stored twice before (8 MB)


def test_a_reply_under_the_cap_is_read_gzip_or_not(server, tmp_path):
    for k, fault in enumerate(["huge:50000", "gzip:50000"]):
        step, _ = one_step(server, tmp_path / str(k), fault)
        assert step["endpoint_errors"] == 0 and len(step["raw_text"]) == 50_000  # read, then too long an action
        assert step["invalid"] == "the reply has 50000 characters; the limit is 16384"


@pytest.mark.parametrize("fault", ["gzip:50000000", "endless"], ids=["gzip-bomb", "endless-body"])
def test_a_body_over_the_byte_cap_is_not_read_further(server, tmp_path, fault):
    step, text = one_step(server, tmp_path, fault)
    assert step["invalid"].startswith("endpoint error: malformed: the reply body has more bytes; the limit is "
                                      f"{MAX_REPLY_BYTES:,}")
    assert step["retries"] == 0 and len(text) < 20_000
    if fault == "endless":  # the client hung up past the cap, long before the server's own end (64 MiB)
        assert MAX_REPLY_BYTES < server.sent < 64 * 2**20


# ---------------------------------------------------------------------------- A2A
def test_a2a_replies_have_the_same_cap_and_excerpt(tmp_path):
    pytest.importorskip("a2a")
    from finenvs.evaluation.a2a import A2AChatAgent, serve_a2a

    config = RunConfig(symbols=["AAPL"], split="eval", max_decisions=1, **FAST)
    for size, reason in ((4_000_000, "the reply has 4,000,000 characters; the limit is 131,072"),
                         (10_000_000, "the reply body has 1")):
        with serve_a2a(Canned(ChatReply(long_text(size)))) as url:
            summary = run_llm(config, A2AChatAgent(url, timeout=30), out=tmp_path, name=f"a2a-{size}", progress=False)
        path = summary.run_dir / "trajectories.jsonl"
        [step] = [r for r in read_trajectories(path)[0] if r["type"] == "step"]
        assert step["invalid"].startswith(f"endpoint error: malformed: {reason}") and step["raw_text"] is None
        assert path.stat().st_size < 20_000


# ---------------------------------------------------------------------------- MCP
def test_the_mcp_server_refuses_calls_over_the_cap_and_records_a_commit_once(tmp_path):
    pytest.importorskip("mcp")
    from finenvs.evaluation.mcp_server import McpEpisode

    episode = McpEpisode(SPEC, out=tmp_path, name="mcp")
    try:
        data, error = episode.call("get_prices", {"lookback": 2, "pad": "p" * MAX_REPLY_CHARS})
        assert error and "the limit is 131,072" in data["error"] and len(json.dumps(data)) < 400
        data, error = episode.call("x" * (MAX_REPLY_CHARS + 1), {})
        assert error and len(json.dumps(data)) < 400
        # under the reply cap, over a commit's own limit: an invalid commit, its arguments recorded once
        pad = "p" * (MAX_ARGUMENT_CHARS + 10)
        data, error = episode.call("commit_action", {"action": "BUY", "reasoning": pad})
        assert not error and data["accepted"] is False and "the limit is 65536" in data["invalid"]
        data, error = episode.call("commit_action", {"action": "BUY"})
        assert not error and data["accepted"] is True
    finally:
        episode.close()
    text = (tmp_path / "mcp" / "trajectories.jsonl").read_text()
    steps = [r for r in read_trajectories(tmp_path / "mcp" / "trajectories.jsonl")[0] if r["type"] == "step"]
    assert [s["action"] for s in steps] == ["HOLD", "BUY"] and all(s["raw_text"] is None for s in steps)
    assert text.count(pad) == 1 and len(steps[0]["tool_calls"]) == 0  # the refused calls left nothing
