"""A2A: remote agents over Google's Agent-to-Agent protocol, served in process, against direct runs."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("a2a")

import httpx  # noqa: E402
from a2a.client.errors import A2AClientError  # noqa: E402
from a2a.helpers import new_data_part, new_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor  # noqa: E402
from a2a.server.tasks import TaskUpdater  # noqa: E402
from a2a.types import Part, Task, TaskState, TaskStatus  # noqa: E402

from finenvs.evaluation.a2a import A2AChatAgent, _endpoint_error, render_text, serve_a2a  # noqa: E402
from finenvs.evaluation.endpoints import EndpointError  # noqa: E402
from finenvs.evaluation.llm import SYSTEM_PROMPT, RunConfig, run_llm  # noqa: E402
from finenvs.evaluation.runlog import read_trajectories  # noqa: E402
from finenvs.evaluation.session import EpisodeSession  # noqa: E402
from finenvs.tasks import EpisodeSpec  # noqa: E402
from finenvs.tasks.trading.agent import ScriptedTradingAgent  # noqa: E402

FAST = {"backoff_base": 0.001, "backoff_max": 0.01, "max_retries": 1}


def steps_of(run_dir: Path) -> list[dict]:
    records, dropped = read_trajectories(Path(run_dir) / "trajectories.jsonl")
    assert dropped == 0
    return sorted((r for r in records if r["type"] == "step"), key=lambda r: r["step"])


def run(agent, tmp_path, name, decisions=5, **config):
    cfg = RunConfig(env_id="FinTrading-v0", symbols=["AAPL"], split="eval", max_decisions=decisions, **config)
    return run_llm(cfg, agent, out=tmp_path, name=name, progress=False)


class Replies(AgentExecutor):
    """A hand-written A2A agent that ignores the request and answers with fixed parts."""

    def __init__(self, *parts: Part) -> None:
        self.parts = list(parts)

    async def execute(self, context, event_queue) -> None:
        await event_queue.enqueue_event(new_message(self.parts, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:  # pragma: no cover
        raise NotImplementedError


class TaskAgent(AgentExecutor):
    """Answers with a Task: working, then an artifact (text + tool call), then ``state``."""

    def __init__(self, state: str = "complete") -> None:
        self.state = state

    async def execute(self, context, event_queue) -> None:
        await event_queue.enqueue_event(Task(id=context.task_id, context_id=context.context_id,
                                             status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                                             history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await updater.add_artifact([new_text_part("thinking"), new_data_part(
            {"tool_calls": [{"name": "commit_action", "arguments": {"action": "BUY", "size": 1}}],
             "usage": {"prompt_tokens": 12, "completion_tokens": 3}})], name="reply")
        await getattr(updater, self.state)(updater.new_agent_message([new_text_part("done")]))

    async def cancel(self, context, event_queue) -> None:  # pragma: no cover
        raise NotImplementedError


class Crashes(AgentExecutor):
    async def execute(self, context, event_queue) -> None:
        raise RuntimeError("boom")

    async def cancel(self, context, event_queue) -> None:  # pragma: no cover
        raise NotImplementedError


@pytest.fixture(scope="module")
def scripted_url():
    with serve_a2a(ScriptedTradingAgent()) as url:
        yield url


@pytest.fixture(scope="module")
def direct_run(tmp_path_factory):
    return run(ScriptedTradingAgent(), tmp_path_factory.mktemp("runs"), "direct")


def conversation() -> tuple[list[dict], list[dict], EpisodeSession]:
    session = EpisodeSession(EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"}, 0))
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": session.prompt}]
    return messages, session.tool_specs(), session


# ---------------------------------------------------------------------------- the same agent, over A2A
def test_a_round_trip_returns_what_the_scripted_agent_returns(scripted_url):
    messages, tools, session = conversation()
    agent, scripted = A2AChatAgent(scripted_url), ScriptedTradingAgent()
    try:
        first = asyncio.run(agent.complete(messages, tools))  # a fresh decision: tool calls
        assert first == scripted.reply(messages, tools) and len(first.tool_calls) == 2
        messages = messages + [first.message()] + [
            {"role": "tool", "tool_call_id": c.id, "content": session.call_tool(c.name, c.arguments).text()}
            for c in first.tool_calls
        ]
        second = asyncio.run(agent.complete(messages, tools))  # the follow-up round: the commit
        assert second == scripted.reply(messages, tools) and second.tool_calls[0].name == "commit_action"
    finally:
        session.close()
    assert agent.name == scripted.name and first.usage == {"prompt_tokens": 0, "completion_tokens": 0}


def test_the_text_part_renders_the_new_content_for_text_only_agents():
    messages, tools, session = conversation()
    session.close()
    first = render_text(messages, tools)
    assert first.startswith(SYSTEM_PROMPT) and messages[1]["content"] in first
    assert "Action: <decision>" in first  # how a text-only agent answers
    call = {"id": "c1", "type": "function", "function": {"name": "list_news", "arguments": "{}"}}
    follow = messages + [{"role": "assistant", "content": "", "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": '{"items": []}'}]
    assert render_text(follow, tools).startswith('Result of list_news:\n{"items": []}')


def test_a_run_through_a2a_takes_the_same_actions_as_the_scripted_agent(scripted_url, direct_run, tmp_path):
    summary = run(A2AChatAgent(scripted_url), tmp_path, "a2a")
    [outcome] = summary.outcomes
    assert outcome.status == "partial" and outcome.decisions == 5
    ours, theirs = steps_of(summary.run_dir), steps_of(direct_run.run_dir)
    assert len(ours) == 5 and all(s["invalid"] is None and s["endpoint_errors"] == 0 for s in ours)
    assert all([c["name"] for c in s["tool_calls"]] == ["get_indicators", "list_news"] for s in ours)
    assert [s["action"] for s in ours] == [s["action"] for s in theirs]
    assert [s["reward"] for s in ours] == [s["reward"] for s in theirs]
    meta = json.loads((summary.run_dir / "run.json").read_text())
    assert meta["agent"]["kind"] == "a2a" and meta["agent"]["card_version"]


def test_a_text_only_agent_decides_through_the_text_protocol(tmp_path):
    with serve_a2a(Replies(new_text_part("I think so.\nAction: BUY")), name="texter") as url:
        summary = run(A2AChatAgent(url), tmp_path, "text", decisions=3)
    steps = steps_of(summary.run_dir)
    assert [s["action"] for s in steps] == ["BUY"] * 3
    assert all(s["via"] == "marker" and s["invalid"] is None and not s["tool_calls"] for s in steps)


def test_a_task_reply_is_read_from_its_artifacts():
    messages, tools, session = conversation()
    session.close()
    with serve_a2a(TaskAgent("complete")) as url:
        reply = asyncio.run(A2AChatAgent(url).complete(messages, tools))
    assert reply.content == "thinking" and reply.usage == {"prompt_tokens": 12, "completion_tokens": 3}
    [call] = reply.tool_calls
    assert call.name == "commit_action" and json.loads(call.arguments) == {"action": "BUY", "size": 1}
    assert call.id == "a2a_call_0" and "1.0" not in call.arguments  # a made-up id; whole numbers stay ints


@pytest.mark.parametrize(("state", "kind"), [("failed", "transient"), ("reject", "permanent"),
                                             ("requires_input", "permanent")])
def test_a_task_that_does_not_complete_is_an_endpoint_error(state, kind):
    with serve_a2a(TaskAgent(state)) as url, pytest.raises(EndpointError) as err:
        asyncio.run(A2AChatAgent(url).complete([{"role": "user", "content": "hi"}], []))
    assert err.value.kind == kind


# ---------------------------------------------------------------------------- failures
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_nobody_listening_is_transient():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EndpointError) as err:
        A2AChatAgent(url)  # reading the card for its name
    assert err.value.kind == "transient"
    agent = A2AChatAgent(url, name="remote", timeout=5)  # with a name the card is read on first use
    with pytest.raises(EndpointError) as err:
        asyncio.run(agent.complete([{"role": "user", "content": "hi"}], []))
    assert err.value.kind == "transient" and "cannot reach" in str(err.value)


def test_a_missing_agent_card_is_a_permanent_http_error(scripted_url):
    with pytest.raises(EndpointError) as err:
        A2AChatAgent(scripted_url + "/nobody-here?token=abc123")
    assert (err.value.kind, err.value.status) == ("permanent", 404) and "abc123" not in str(err.value)


GARBAGE = {
    "tool_calls is not a list": Replies(new_data_part({"tool_calls": "nope"})),
    "no text and no tool calls": Replies(),  # no parts at all
    "not an object": Replies(new_data_part([1, 2])),
    "needs a name": Replies(new_data_part({"tool_calls": [{"arguments": "{}"}]})),
    "usage.prompt_tokens": Replies(new_text_part("Action: BUY"),
                                   new_data_part({"usage": {"prompt_tokens": "x"}})),
    "characters; the limit is 131,072": Replies(new_text_part("x" * 2_000_000)),
}


@pytest.mark.parametrize("reason", list(GARBAGE))
def test_garbage_replies_are_malformed_and_recorded_as_invalid_steps(reason, tmp_path):
    with serve_a2a(GARBAGE[reason]) as url:
        agent = A2AChatAgent(url, timeout=10)
        with pytest.raises(EndpointError) as err:
            asyncio.run(agent.complete([{"role": "user", "content": "hi"}], []))
        assert err.value.kind == "malformed" and reason in str(err.value) and len(str(err.value)) < 400
        summary = run(agent, tmp_path, "bad", decisions=1, **FAST)
    [step] = steps_of(summary.run_dir)
    assert step["action"] == "HOLD" and "malformed" in step["invalid"] and step["requests"] == 1


def test_a_crashing_agent_is_an_endpoint_error_and_the_run_goes_on(tmp_path):
    with serve_a2a(Crashes()) as url:
        summary = run(A2AChatAgent(url, timeout=10), tmp_path, "crash", decisions=2,
                      max_consecutive_endpoint_failures=None, **FAST)
    steps = steps_of(summary.run_dir)
    assert len(steps) == 2 and all(s["invalid"].startswith("endpoint error") for s in steps)


def test_http_errors_are_classified_like_the_openai_endpoint():
    def status_error(code: int, headers: dict | None = None) -> Exception:
        request = httpx.Request("POST", "http://agent/")
        cause = httpx.HTTPStatusError("x", request=request, response=httpx.Response(code, headers=headers,
                                                                                      request=request))
        try:
            raise A2AClientError(f"HTTP Error {code}") from cause
        except A2AClientError as exc:
            return exc

    busy = _endpoint_error(status_error(429, {"retry-after": "2"}), "http://agent")
    assert (busy.kind, busy.status, busy.retry_after) == ("transient", 429, 2.0)
    assert _endpoint_error(status_error(503), "u").kind == "transient"
    assert _endpoint_error(status_error(401), "u").kind == "permanent"
    assert _endpoint_error(A2AClientError("JSON Decode Error: x"), "u").kind == "malformed"


def test_describe_has_no_secrets_and_is_json(scripted_url):
    secret_url = scripted_url.replace("http://", "http://user:hunter2@") + "/?token=abc123"
    described = json.dumps(A2AChatAgent(secret_url, name="remote").describe())
    assert "hunter2" not in described and "abc123" not in described
    full = A2AChatAgent(scripted_url).describe()
    assert json.loads(json.dumps(full)) == full
    assert full["kind"] == "a2a" and full["card_name"] == "scripted-momentum" and full["card_version"]


def test_import_finenvs_does_not_import_a2a():
    code = "import sys, finenvs, finenvs.evaluation.a2a, finenvs.evaluation.llm; print('a2a' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
