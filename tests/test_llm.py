"""The LLM-agent runner: the scripted agent through three paths, bad endpoints and replies, resume, re-scoring."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from finenvs.evaluation.endpoints import EndpointError, OpenAIChatAgent, _DirectPost
from finenvs.evaluation.llm import PriceTable, RunConfig, decide, drive_mcp_episode, run_llm, run_llm_async
from finenvs.evaluation.runlog import read_trajectories
from finenvs.evaluation.score import score_run
from finenvs.evaluation.session import EpisodeSession
from finenvs.tasks import EpisodeSpec
from finenvs.tasks.trading.agent import ScriptedTradingAgent
from finenvs.tasks.trading.protocol import TRADING_PROTOCOL
from finenvs.text.chat import ChatReply, ToolCall

pytest.importorskip("openai")
from chat_server import ChatServer  # noqa: E402

from helpers import SUBPROCESS_TIMEOUT, record_shape_mismatches  # noqa: E402

FAST = {"backoff_base": 0.001, "backoff_max": 0.01}


def steps_of(run_dir: Path, episode: int = 0) -> list[dict]:
    records, dropped = read_trajectories(Path(run_dir) / "trajectories.jsonl")
    assert dropped == 0
    return sorted((r for r in records if r["type"] == "step" and r["episode"] == episode), key=lambda r: r["step"])


def episode_record(run_dir: Path, episode: int = 0) -> dict:
    records, _ = read_trajectories(Path(run_dir) / "trajectories.jsonl")
    [record] = [r for r in records if r["type"] == "episode" and r["episode"] == episode]
    return record


@pytest.fixture(scope="module")
def server():
    with ChatServer() as srv:
        yield srv


@pytest.fixture()
def clean(server):
    server.faults.clear()
    server.requests.clear()
    return server


def endpoint_agent(server, **kwargs) -> OpenAIChatAgent:
    return OpenAIChatAgent("scripted", server.base_url, timeout=kwargs.pop("timeout", 10.0), **kwargs)


# ---------------------------------------------------------------------------- the three paths agree
@pytest.fixture(scope="module")
def in_process_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    config = RunConfig(symbols=["AAPL"], split="eval")
    summary = run_llm(config, ScriptedTradingAgent(), out=out, name="inproc", progress=False)
    assert summary.status == "complete"
    return summary.run_dir


def test_the_run_folder_holds_the_records_the_run_log_declares(in_process_run):
    mismatches, seen = record_shape_mismatches(in_process_run)
    assert mismatches == []
    assert seen["StepRecord"] == 60 and seen["EpisodeRecord"] == 1 and seen["RunOutcome"] == 1


def test_scripted_agent_completes_a_full_eval_episode_through_the_text_wrapper(in_process_run):
    steps = steps_of(in_process_run)
    final = episode_record(in_process_run)
    assert len(steps) == final["steps"] == 60  # every decision of the 2026-Q1 eval window
    assert {s["action"] for s in steps} == {"BUY", "HOLD"}  # the rules both enter and stay out
    assert all(s["invalid"] is None for s in steps)
    assert all(len(s["tool_calls"]) == 2 for s in steps)  # indicators + news (no news in 2026-Q1)
    assert all(s["prompt"].startswith("# FinTrading-v0") and s["messages"][1]["content"] == s["prompt"] for s in steps)
    metrics = final["metrics"]
    assert metrics["standard"]["cumulative_return"] == pytest.approx(metrics["final_equity"] - 1.0)
    assert final["label"] == "AAPL" and len(metrics["wealth"]) == 61 and all(isinstance(s["env_action"], int) for s in steps)


def test_finenvs_score_reproduces_the_live_scores_exactly(in_process_run):
    score = score_run(in_process_run)
    assert score.reproduced
    [episode] = score.episodes
    final = episode_record(in_process_run)
    assert episode.metrics == final["metrics"]  # both strict JSON: NaN recorded as None on both sides
    assert episode.reparse_mismatches == 0
    assert (in_process_run / "score.json").is_file() and (in_process_run / "score.md").is_file()


def test_openai_client_against_local_server_gives_the_same_actions_and_scores(in_process_run, clean, tmp_path):
    config = RunConfig(symbols=["AAPL"], split="eval")
    summary = run_llm(config, endpoint_agent(clean), out=tmp_path, name="http", progress=False)
    assert summary.status == "complete"
    ours, theirs = steps_of(in_process_run), steps_of(summary.run_dir)
    assert [s["action"] for s in theirs] == [s["action"] for s in ours]
    assert [s["reward"] for s in theirs] == [s["reward"] for s in ours]
    assert episode_record(summary.run_dir)["metrics"] == episode_record(in_process_run)["metrics"]
    assert len(clean.requests) == 120  # two chat turns per decision, each a real HTTP request
    assert all(s["usage"]["prompt_tokens"] > 0 for s in theirs)  # usage flows from the server
    assert score_run(summary.run_dir).reproduced


def test_the_endpoint_check_then_runs_reuse_no_connection_of_a_finished_event_loop(in_process_run, tmp_path):
    """Model servers keep connections alive (HTTP/1.1). The check before a run (`check_endpoint`: its own event loop)
    and each run (another loop) must not share a pooled connection: reused from a closed loop, the run's first
    request failed ("Event loop is closed") and its decision took the default action."""
    from finenvs.cli.common import check_endpoint

    with ChatServer() as keep_alive:
        keep_alive._httpd.RequestHandlerClass.protocol_version = "HTTP/1.1"
        agent = endpoint_agent(keep_alive)
        check_endpoint(agent)
        config = RunConfig(symbols=["AAPL"], split="eval", max_retries=0)
        for name in ("first", "second"):  # one agent, two runs: two more event loops
            summary = run_llm(config, agent, out=tmp_path, name=name, progress=False)
            assert summary.status == "complete"
            steps = steps_of(summary.run_dir)
            assert not any(s.get("endpoint_failed") or s["errors"] for s in steps), [s["errors"] for s in steps][:3]
            assert [s["action"] for s in steps] == [s["action"] for s in steps_of(in_process_run)]


def test_mcp_client_session_gives_the_same_actions_and_scores(in_process_run, tmp_path):
    from mcp import Client

    from finenvs.evaluation.mcp_server import McpEpisode, build_server

    episode = McpEpisode(EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"}, 0), out=tmp_path,
                         name="mcp")

    async def play():
        async with Client(build_server(episode)) as client:
            return await drive_mcp_episode(ScriptedTradingAgent(), client, TRADING_PROTOCOL)

    replies = asyncio.run(play())
    assert len(replies) == 60 and replies[-1]["done"] and replies[-1]["reproduced_offline"] is True
    ours, theirs = steps_of(in_process_run), steps_of(episode.files.root)
    assert [s["action"] for s in theirs] == [s["action"] for s in ours]
    assert [s["reward"] for s in theirs] == [s["reward"] for s in ours]
    assert replies[-1]["metrics"] == score_run(in_process_run).run_metrics()
    assert score_run(episode.files.root).reproduced


# ---------------------------------------------------------------------------- bad endpoints and replies
def short_run(agent, tmp_path, name="r", **config):
    cfg = RunConfig(symbols=["AAPL"], split="eval", max_decisions=config.pop("max_decisions", 2), **{**FAST, **config})
    return run_llm(cfg, agent, out=tmp_path, name=name, progress=False)


def test_rate_limit_and_server_errors_are_retried_then_succeed(clean, tmp_path):
    clean.faults.extend(["status:429", "status:500", "status:503"])
    summary = short_run(endpoint_agent(clean), tmp_path)
    first = steps_of(summary.run_dir)[0]
    assert first["retries"] == 3 and first["endpoint_errors"] == 3
    assert first["invalid"] is None and first["action"] in ("BUY", "HOLD")
    assert any("429" in e for e in first["errors"]) and any("500" in e for e in first["errors"])


def test_persistent_server_errors_become_an_invalid_step_not_a_crash(clean, tmp_path):
    clean.faults.extend(["text:BUY", *["status:500"] * 3])  # the endpoint answers a decision, then fails one
    summary = short_run(endpoint_agent(clean), tmp_path, max_retries=2, max_decisions=3)
    first, second, third = steps_of(summary.run_dir)
    assert first["invalid"] is None
    assert second["action"] == "HOLD" and second["invalid"].startswith("endpoint error")
    assert "after 3 attempts" in second["invalid"] and second["requests"] == 3
    assert third["invalid"] is None  # the run goes on


@pytest.mark.parametrize("fault", ["status:500", "status:429", "sleep:1.5"])
def test_an_episode_the_endpoint_never_answered_is_not_scored(clean, tmp_path, fault):
    """A first decision that fails at the endpoint records nothing: no default action is scored as the agent's, the
    episode is aborted with the cause (resumable), and the episodes after it do not start."""
    clean.faults.extend([fault] * 3)
    cfg = RunConfig(symbols=["AAPL", "MSFT"], split="eval", max_decisions=2, concurrency=1,
                    **{**FAST, "max_retries": 2, "request_timeout": 0.5})
    summary = run_llm(cfg, endpoint_agent(clean, timeout=0.5), out=tmp_path, name="dead", progress=False)
    assert summary.status == "incomplete"
    first, second = summary.outcomes
    assert first.status == "aborted" and first.decisions == 0
    assert first.message.startswith("the endpoint never answered: endpoint error")
    assert second.status == "aborted" and second.message == f"not started: {first.message}"
    assert steps_of(summary.run_dir) == []
    score = score_run(summary.run_dir)
    assert all(e.metrics is None for e in score.episodes)  # nothing scored, not a 0


@pytest.mark.parametrize("fault, reason", [("malformed", "malformed"), ("no_choices", "no choices"),
                                           ("status:400", "permanent")])
def test_unreadable_or_refused_replies_are_recorded_invalid_without_retry(clean, tmp_path, fault, reason):
    clean.faults.extend(["text:BUY", fault])  # an answered decision, then the fault (mid-episode: a recorded step)
    summary = short_run(endpoint_agent(clean), tmp_path, max_decisions=2)
    _, step = steps_of(summary.run_dir)
    assert step["action"] == "HOLD" and reason in step["invalid"]
    assert step["retries"] == 0


def test_a_request_timeout_is_retried(clean, tmp_path):
    clean.faults.append("sleep:1.5")
    summary = short_run(endpoint_agent(clean, timeout=0.5), tmp_path, max_decisions=1, request_timeout=0.5)
    [step] = steps_of(summary.run_dir)
    assert step["retries"] >= 1 and any("timed out" in e or "no reply" in e for e in step["errors"])
    assert step["invalid"] is None


@pytest.mark.parametrize(
    "fault, message",
    [("garbage_args", "not valid JSON"), ("unknown_tool", "unknown tool 'get_weather'"),
     ("wrong_type", "lookback must be of type integer")],
)
def test_bad_tool_calls_get_error_results_and_the_decision_continues(clean, tmp_path, fault, message):
    clean.faults.append(fault)
    summary = short_run(endpoint_agent(clean), tmp_path, max_decisions=1)
    [step] = steps_of(summary.run_dir)
    tool_messages = [m["content"] for m in step["messages"] if m["role"] == "tool"]
    assert any(message in t for t in tool_messages)
    assert any(not c["ok"] and message in c["error"] for c in step["tool_calls"])
    assert step["action"] in ("BUY", "HOLD")  # the agent still committed afterwards


@pytest.mark.parametrize("fault, reason", [("no_action", "no action found"), ("long", "the limit is 16384")])
def test_replies_without_a_readable_action_take_hold_and_count_as_format_errors(clean, tmp_path, fault, reason):
    clean.faults.append(fault)
    summary = short_run(endpoint_agent(clean), tmp_path, max_decisions=1)
    [step] = steps_of(summary.run_dir)
    assert step["action"] == "HOLD" and reason in step["invalid"]
    assert step["raw_text"] is not None  # the model's text is kept in the trajectory
    score = score_run(summary.run_dir)
    assert score.efficiency()["format_errors"] == 1


def test_a_format_retry_lets_the_agent_correct_itself(clean, tmp_path):
    clean.faults.extend(["no_action", "text:BUY"])
    summary = short_run(endpoint_agent(clean), tmp_path, max_decisions=1, format_retries=1)
    [step] = steps_of(summary.run_dir)
    assert step["action"] == "BUY" and step["invalid"] is None and step["via"] == "marker"
    assert any(e.startswith("format:") for e in step["errors"])


def test_an_unreachable_endpoint_aborts_before_any_decision_and_names_the_url(tmp_path):
    agent = OpenAIChatAgent("m", "http://127.0.0.1:9/v1", timeout=1.0)  # nothing listens on port 9
    summary = short_run(agent, tmp_path, max_decisions=None, max_retries=1, max_consecutive_endpoint_failures=3)
    assert summary.status == "incomplete"
    [outcome] = summary.outcomes
    assert outcome.status == "aborted" and outcome.decisions == 0
    assert "cannot reach http://127.0.0.1:9/v1" in outcome.message
    assert steps_of(summary.run_dir) == []
    meta = json.loads((summary.run_dir / "run.json").read_text())
    assert meta["status"] == "incomplete" and meta["outcomes"][0]["status"] == "aborted"


def test_an_endpoint_that_dies_mid_episode_aborts_it_after_consecutive_failures(clean, tmp_path):
    clean.faults.extend(["text:BUY", *["status:500"] * 50])
    summary = short_run(endpoint_agent(clean), tmp_path, max_decisions=None, max_retries=0,
                        max_consecutive_endpoint_failures=3)
    [outcome] = summary.outcomes
    assert outcome.status == "aborted" and outcome.decisions == 4
    assert "3 decisions in a row" in outcome.message and "500" in outcome.message
    steps = steps_of(summary.run_dir)
    assert len(steps) == 4 and steps[0]["invalid"] is None
    assert all("endpoint error" in s["invalid"] for s in steps[1:])


def test_token_usage_and_cost_are_accounted(clean, tmp_path):
    prices = PriceTable(input_per_million=3.0, output_per_million=15.0)
    cfg = RunConfig(symbols=["AAPL"], split="eval", max_decisions=3)
    summary = run_llm(cfg, endpoint_agent(clean), out=tmp_path, name="cost", prices=prices, progress=False)
    steps = steps_of(summary.run_dir)
    for s in steps:
        expected = s["usage"]["prompt_tokens"] * 3.0 / 1e6 + s["usage"]["completion_tokens"] * 15.0 / 1e6
        assert s["cost_usd"] == pytest.approx(expected) and s["cost_usd"] > 0
    eff = score_run(summary.run_dir).efficiency()
    assert eff["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in steps))
    assert eff["prompt_tokens"] == sum(s["usage"]["prompt_tokens"] for s in steps)
    assert eff["tool_calls_per_decision"] == pytest.approx(2.0)


def _wire_capture(set_cookie: str | None = None):
    """A server that records each request's path, headers and body bytes and answers one fixed completion (with
    ``Set-Cookie: set_cookie`` when given)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[tuple[str, dict, bytes]] = []
    reply = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Action: HOLD"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            seen.append((self.path, dict(self.headers), self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            if set_cookie:
                self.send_header("Set-Cookie", set_cookie)
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1", seen


@pytest.mark.parametrize("options", [{}, {"tool_choice": "required", "extra_body": {"top_k": 3}},
                                     {"temperature": None, "max_tokens": None}])
def test_the_endpoint_request_is_the_sdks_create_request_byte_for_byte(options):
    """OpenAIChatAgent posts through the client's generic ``post`` (skipping ``create``'s per-field type walk): the
    path, every header and the body bytes are what ``chat.completions.create`` sends, and the reply reads the same."""
    server, url, seen = _wire_capture()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u \u00e9 \u2028"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": '{"x": [1, 2.5, null]}'}]
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}}}}}]
    agent = OpenAIChatAgent("m", url, **options)
    kwargs = {"model": "m", "messages": messages, "tools": tools}
    for name in ("tool_choice", "temperature", "max_tokens"):
        if getattr(agent, name) is not None:
            kwargs[name] = getattr(agent, name)
    if agent.extra_body:
        kwargs["extra_body"] = agent.extra_body

    async def three():
        # the first request goes through the client's post; the second is the direct post built from it
        first = await agent.complete(list(messages), tools)
        second = await agent.complete(list(messages), tools)
        assert isinstance(agent._loop_client().direct, _DirectPost)
        return first, second, await agent._client.chat.completions.create(**kwargs)

    try:
        first, second, _ = asyncio.run(three())
    finally:
        server.shutdown()
    (sdk_path, sdk_headers, sdk_body) = seen[2]
    for path, headers, body in seen[:2]:
        assert {k: (v, sdk_headers.get(k)) for k, v in headers.items() if v != sdk_headers.get(k)} == {}
        assert (path, sorted(headers), body) == (sdk_path, sorted(sdk_headers), sdk_body)
    assert list(seen[1][1].items()) == list(seen[0][1].items())  # the direct post's headers, in the post's order
    for reply in (first, second):
        assert json.loads(body)["messages"] == messages and reply.content == "Action: HOLD"
        assert reply.usage == {"prompt_tokens": 1, "completion_tokens": 1}


def _endpoint_outcome(agent, messages, tools, fault, server, *, warm):
    """What ``agent.complete`` gives for a request the server answers with ``fault``: the reply's fields or the
    error's. ``warm``: one reply first (the request under test is then the client's direct post)."""

    async def go():
        if warm:
            await agent.complete(messages, tools)
            assert isinstance(agent._loop_client().direct, _DirectPost)
        server.requests.clear()  # the reply's id counts them
        if fault is not None:
            server.faults.append(fault)
        try:
            reply = await agent.complete(messages, tools)
        except EndpointError as exc:
            return type(exc).__name__, exc.kind, exc.status, exc.retry_after, str(exc), exc.excerpt
        return reply.content, reply.tool_calls, reply.usage, reply.finish_reason, reply.model

    server.faults.clear()
    return asyncio.run(go())


@pytest.mark.parametrize("fault", [None, "no_usage", "text:BUY", "gzip:50000", "huge:4000000", "gzip:50000000",
                                   "endless", "status:400", "status:429", "status:500", "status:404", "malformed",
                                   "no_choices", "sleep:1.5"])
def test_the_direct_post_replies_and_fails_as_the_sdks_post(clean, fault):
    """After a client's first reply its requests skip the SDK's per-request building (_DirectPost): every reply and
    every failure (HTTP status with the SDK's text and Retry-After, timeouts, unreadable and oversized bodies) is
    what the SDK's own path gives for the same answer."""
    session = EpisodeSession(EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"}, 0))
    try:
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": session.prompt}]
        tools = session.tool_specs()
    finally:
        session.close()
    sdk = _endpoint_outcome(endpoint_agent(clean, timeout=0.5), messages, tools, fault, clean, warm=False)
    direct = _endpoint_outcome(endpoint_agent(clean, timeout=0.5), messages, tools, fault, clean, warm=True)
    assert direct == sdk
    expected = {"status:429": "transient (HTTP 429): Error code: 429 - injected 429", "sleep:1.5": "timed out after",
                "malformed": "malformed: unreadable reply", "gzip:50000000": "the reply body has more bytes"}
    assert fault not in expected or expected[fault] in str(sdk)  # the failure itself, not two equal crashes


def test_the_direct_post_of_a_stopped_server_fails_as_the_sdks_post():
    """A server that has gone (the connection refused): a connection error, as the SDK's path reports one."""
    messages = [{"role": "user", "content": "FinTrading-v0"}]
    agent = None

    async def go(fresh):
        nonlocal agent
        if not fresh:
            server.faults.append("text:BUY")
            await agent.complete(messages, [])
            assert isinstance(agent._loop_client().direct, _DirectPost)
            server.__exit__(None, None, None)
        try:
            await (agent if not fresh else OpenAIChatAgent("m", url, timeout=2.0)).complete(messages, [])
        except EndpointError as exc:
            return exc.kind, exc.status, str(exc)

    server = ChatServer()
    with server:
        url = server.base_url
        agent = OpenAIChatAgent("m", url, timeout=2.0)
        direct = asyncio.run(go(False))
    sdk = asyncio.run(go(True))
    assert direct == sdk == ("transient", None, f"transient: cannot reach {url}: Connection error.")


def test_a_server_that_sets_a_cookie_gets_it_back_through_the_sdks_post():
    """The direct post has no cookie jar of its own: once the server has set a cookie, requests go through the SDK's
    post, which sends it, as ``chat.completions.create`` does."""
    server, url, seen = _wire_capture(set_cookie="route=a; Path=/")
    agent = OpenAIChatAgent("m", url)

    async def go():
        await agent.complete([{"role": "user", "content": "u"}], [])
        await agent.complete([{"role": "user", "content": "u"}], [])
        return agent._loop_client().direct

    try:
        direct = asyncio.run(go())
    finally:
        server.shutdown()
    assert direct is False  # the cookie came with the first reply
    assert "Cookie" not in seen[0][1] and seen[1][1]["Cookie"] == "route=a"


def test_unknown_prices_give_no_cost_rather_than_zero():
    assert PriceTable().cost({"prompt_tokens": 10, "completion_tokens": 5}) is None
    assert PriceTable().cost({"prompt_tokens": 0, "completion_tokens": 0}) == 0.0


def test_price_table_file_errors_name_the_problem(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-x": {"input_per_million": 1, "output_per_million": 2}}))
    assert PriceTable.load(path, "gpt-x") == PriceTable(1.0, 2.0)
    with pytest.raises(ValueError, match="no entry for model 'other'.*gpt-x"):
        PriceTable.load(path, "other")


# ---------------------------------------------------------------------------- the decision loop itself
class ReplayAgent:
    """Returns canned replies in order (then repeats the last)."""

    name = "canned"

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = 0

    def describe(self):
        return {"kind": "canned"}

    async def complete(self, messages, tools):
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        if isinstance(reply, Exception):
            raise reply
        return reply


@pytest.fixture()
def session():
    s = EpisodeSession(EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"}, 0))
    yield s
    s.close()


def run_decide(agent, session, **config):
    from finenvs.evaluation.llm import SessionPort

    return asyncio.run(decide(agent, SessionPort(session), session.prompt, RunConfig(**{**FAST, **config})))


def call(name, args, k=0):
    return ToolCall(f"c{k}", name, json.dumps(args))


def test_the_tool_budget_is_enforced_and_an_endless_caller_ends_invalid(session):
    agent = ReplayAgent([ChatReply(None, [call("get_prices", {"lookback": 2})])])
    d = run_decide(agent, session, max_tool_calls=3)
    assert d.parsed.action == TRADING_PROTOCOL.actions["HOLD"] and "no decision after" in d.parsed.invalid
    results = [json.loads(m["content"]) for m in d.messages if m["role"] == "tool"]
    assert len(results) == 3 and all("rows" in r for r in results)  # exactly the budget was served
    notices = [m["content"] for m in d.messages if m["role"] == "user"][1:]  # after the prompt
    assert notices and all("dropped unanswered" in n and "budget is 3" in n for n in notices)
    # the calls beyond the budget are not in the conversation: every assistant call is answered
    calls = [c["id"] for m in d.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert len(calls) == 3


def test_once_the_budget_is_spent_only_the_commit_is_offered(session):
    class Offered(ReplayAgent):
        def __init__(self, replies):
            super().__init__(replies)
            self.offered = []

        async def complete(self, messages, tools):
            self.offered.append([t["function"]["name"] for t in tools])
            return await super().complete(messages, tools)

    two = [call("get_prices", {"lookback": 2}), call("get_rate", {}, 1)]
    agent = Offered([ChatReply(None, two), ChatReply(None, [call("get_prices", {"lookback": 3}, 2)]),
                     ChatReply(None, [call("commit_action", {"action": "BUY"}, 3)])])
    d = run_decide(agent, session, max_tool_calls=2)
    everything = [t["function"]["name"] for t in session.tool_specs()]
    assert len(everything) > 2 and agent.offered == [everything, ["commit_action"], ["commit_action"]]
    assert d.parsed.name == "BUY" and d.parsed.valid  # the commit after the budget is read as usual
    # the call made anyway (not offered) is dropped with the notice; exactly the budget was served
    assert sum(m["role"] == "tool" for m in d.messages) == 3  # two answers and the commit's
    assert any("dropped unanswered" in m["content"] for m in d.messages if m["role"] == "user")
    # under the budget every tool stays on offer: the scripted agents' requests are unchanged
    agent = Offered([ChatReply(None, two), ChatReply(None, [call("commit_action", {"action": "SELL"}, 2)])])
    assert run_decide(agent, session, max_tool_calls=3).parsed.name == "SELL"
    assert agent.offered == [everything, everything]


def test_disagreeing_commits_in_one_reply_are_ambiguous(session):
    agent = ReplayAgent([ChatReply(None, [call("commit_action", {"action": "BUY"}), call("commit_action",
                                                                                          {"action": "SELL"}, 1)])])
    d = run_decide(agent, session)
    assert d.parsed.name == "HOLD" and "ambiguous" in d.parsed.invalid


def test_a_commit_with_an_unknown_action_is_invalid(session):
    d = run_decide(ReplayAgent([ChatReply(None, [call("commit_action", {"action": "MOON"})])]), session)
    assert d.parsed.name == "HOLD" and "unknown action 'MOON'" in d.parsed.invalid


def test_an_agent_that_raises_is_recorded_not_propagated(session):
    d = run_decide(ReplayAgent([RuntimeError("boom")]), session)
    assert d.endpoint_failed and "RuntimeError: boom" in d.parsed.invalid


def test_transient_errors_honour_retry_after(session):
    slept = []

    async def fake_sleep(seconds):
        slept.append(seconds)

    from finenvs.evaluation.llm import SessionPort

    agent = ReplayAgent([EndpointError("transient", "busy", status=429, retry_after=7.0),
                         ChatReply("Action: BUY")])
    d = asyncio.run(decide(agent, SessionPort(session), session.prompt, RunConfig(), sleep=fake_sleep))
    assert slept == [7.0] and d.parsed.name == "BUY" and d.retries == 1


def test_a_slow_agent_hits_the_decision_timeout(session):
    class Slow(ReplayAgent):
        async def complete(self, messages, tools):
            await asyncio.sleep(5)

    d = run_decide(Slow([]), session, decision_timeout=0.3, request_timeout=10)
    assert d.parsed.name == "HOLD" and d.parsed.invalid


class InFlight:
    """The scripted agent, slowed down, counting how many requests are in flight at once."""

    name = "in-flight"

    def __init__(self):
        self.agent, self.now, self.most = ScriptedTradingAgent(), 0, 0

    def describe(self):
        return {"kind": "test"}

    async def complete(self, messages, tools):
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.002)
        self.now -= 1
        return self.agent.reply(messages, tools)


def test_episodes_run_concurrently_up_to_the_limit(tmp_path):
    agent = InFlight()
    cfg = RunConfig(symbols=["AAPL", "MSFT", "NVDA", "TSLA"], split="eval", max_decisions=5, concurrency=3)
    summary = run_llm(cfg, agent, out=tmp_path, name="conc", progress=False)
    assert agent.most == 3  # overlapped, and never more than the semaphore allows
    assert [o.status for o in summary.outcomes] == ["partial"] * 4
    assert sorted({s["episode"] for s in read_trajectories(summary.run_dir / "trajectories.jsonl")[0]}) == [0, 1, 2, 3]


# ---------------------------------------------------------------------------- interruption and resume
class StopAfter:
    """Wraps an agent; after ``n`` calls it blocks until cancelled (a Ctrl-C mid-decision)."""

    def __init__(self, agent, n, event):
        self.agent, self.n, self.event, self.calls = agent, n, event, 0
        self.name = agent.name

    def describe(self):
        return self.agent.describe()

    async def complete(self, messages, tools):
        self.calls += 1
        if self.calls > self.n:
            self.event.set()
            await asyncio.sleep(3600)
        return await self.agent.complete(messages, tools)


def test_an_interrupted_run_leaves_valid_jsonl_and_resumes_to_the_same_result(in_process_run, tmp_path):
    config = RunConfig(symbols=["AAPL"], split="eval")

    async def interrupted():
        event = asyncio.Event()
        task = asyncio.create_task(run_llm_async(config, StopAfter(ScriptedTradingAgent(), 41, event), out=tmp_path,
                                                 name="cut", progress=False))
        await event.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    run_dir = tmp_path / "cut"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "interrupted" and "--resume" in meta["note"]
    assert len(steps_of(run_dir)) == 20  # 41 calls = 20 whole decisions, the 21st cut mid-way
    with open(run_dir / "trajectories.jsonl", "a") as fh:  # and a write cut in the middle of a line
        fh.write('{"type": "step", "episode": 0, "ste')
    summary = run_llm(config, ScriptedTradingAgent(), resume=run_dir, progress=False)
    assert summary.status == "complete"
    resumed, whole = steps_of(run_dir), steps_of(in_process_run)
    assert [s["action"] for s in resumed] == [s["action"] for s in whole]
    assert [s["reward"] for s in resumed] == [s["reward"] for s in whole]
    assert episode_record(run_dir)["metrics"] == episode_record(in_process_run)["metrics"]
    assert score_run(run_dir).reproduced


def test_resume_refuses_a_different_configuration(in_process_run):
    with pytest.raises(ValueError, match="episodes differ"):
        run_llm(RunConfig(symbols=["MSFT"], split="eval"), ScriptedTradingAgent(), resume=in_process_run,
                progress=False)


def test_a_new_run_never_overwrites_an_existing_folder(in_process_run):
    with pytest.raises(FileExistsError, match="--resume"):
        run_llm(RunConfig(symbols=["AAPL"]), ScriptedTradingAgent(), out=in_process_run.parent, name="inproc",
                progress=False)


# ---------------------------------------------------------------------------- the CLI
def run_cli(*args, timeout=SUBPROCESS_TIMEOUT):
    return subprocess.run([sys.executable, "-m", "finenvs.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def test_cli_llm_without_an_endpoint_runs_the_scripted_agent(tmp_path):
    proc = run_cli("llm", "--symbols", "NVDA", "--out", str(tmp_path), "--name", "cli")
    assert proc.returncode == 0, proc.stderr
    assert "the live scores exactly" in proc.stdout and "format errors" in proc.stdout
    assert (tmp_path / "cli" / "score.json").is_file()


def test_cli_score_detects_a_tampered_trajectory(in_process_run, tmp_path):
    import shutil

    copy = tmp_path / "tampered"
    shutil.copytree(in_process_run, copy)
    lines = (copy / "trajectories.jsonl").read_text().splitlines()
    step = json.loads(lines[10])
    step["reward"] += 0.01
    lines[10] = json.dumps(step)
    (copy / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    assert run_cli("score", str(in_process_run)).returncode == 0
    proc = run_cli("score", str(copy))
    assert proc.returncode == 1 and "NOT reproduced" in proc.stdout and "step 10" in proc.stdout


def test_cli_bad_arguments_exit_2_with_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    proc = subprocess.run([sys.executable, "-m", "finenvs.cli", "llm", "--model", "x"], capture_output=True, text=True,
                          env=env, timeout=SUBPROCESS_TIMEOUT)
    assert proc.returncode == 2 and "--model needs --base-url or OPENAI_BASE_URL" in proc.stderr
    proc = run_cli("score", "/nonexistent/run")
    assert proc.returncode == 2 and "not a finenvs run folder" in proc.stderr


def test_a_bug_in_one_episode_aborts_that_episode_only(tmp_path, monkeypatch):
    """An unexpected exception inside one episode is recorded as that episode's outcome ("aborted", with the
    error); the others finish, the trajectory file stays whole and the run is resumable (status incomplete)."""
    import finenvs.evaluation.llm as llm

    real = llm.run_episode

    async def flaky(agent, spec, *args, **kwargs):
        if spec.index == 1:
            raise RuntimeError("a parser bug")
        return await real(agent, spec, *args, **kwargs)

    monkeypatch.setattr(llm, "run_episode", flaky)
    cfg = RunConfig(symbols=["AAPL", "MSFT", "NVDA"], split="eval", max_decisions=2)
    summary = run_llm(cfg, ScriptedTradingAgent(), out=tmp_path, name="bug", progress=False)
    by_index = {o.spec.index: o for o in summary.outcomes}
    assert by_index[1].status == "aborted" and "RuntimeError: a parser bug" in by_index[1].message
    assert {by_index[0].status, by_index[2].status} <= {"complete", "partial"}
    assert summary.status == "incomplete"
    meta = json.loads((summary.run_dir / "run.json").read_text())
    assert meta["status"] == "incomplete"
    assert {json.loads(line)["episode"] for line in (summary.run_dir / "trajectories.jsonl").read_text().splitlines()} \
        == {0, 2}


def test_an_episode_whose_env_cannot_be_built_is_reported_and_the_run_still_scores(tmp_path):
    """JPM has no FinReport-v0 peer basket: its episode aborts with the reason, the other plays, and finenvs score
    re-scores the run (it used to crash building the aborted episode's env) and says why the episode stopped."""
    from finenvs.tasks import task_of

    config = RunConfig(env_id="FinReport-v0", symbols=["AAPL", "JPM"], split=None,
                       env_kwargs={"dataset": "yahoo_2015_2026", "start": "2016-04-01", "end": "2016-06-30"})
    summary = run_llm(config, task_of("FinReport-v0").make_scripted_agent(), out=tmp_path, name="r", progress=False)
    assert [o.status for o in summary.outcomes] == ["complete", "aborted"]
    score = score_run(summary.run_dir)
    assert score.problems == [] and score.status == "incomplete"
    done, stopped = score.episodes
    assert done.status == "complete" and done.reproduced
    assert stopped.status == "incomplete" and "JPM has no peer basket" in stopped.reason


def test_a_run_stopped_at_max_decisions_exits_3_and_says_how_to_go_on(tmp_path, capsys):
    """A smoke run stopped where it was asked is neither a failure (1) nor the whole run (0): exit 3, as
    ``finenvs score`` calls it incomplete, with the --resume line."""
    from finenvs.cli import main

    assert main(["llm", "--env", "FinTrading-v0", "--symbols", "AAPL", "--max-decisions", "2", "--out",
                 str(tmp_path), "--name", "r", "--quiet"]) == 3
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("run stopped at --max-decisions as asked") and f"--resume {tmp_path / 'r'}" in out[-1]
    assert main(["llm", "--resume", str(tmp_path / "r"), "--quiet"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("run complete")
