"""The model proxy (``finenvs.evaluation.model_proxy``): agent CLIs that stream and send no ``tool_choice`` get tool
calls from a plain chat-completions server, as a valid stream; hostile requests get short 4xx answers."""

from __future__ import annotations

import http.client
import json

import gymnasium as gym
import pytest
from chat_server import ChatServer

import finenvs  # noqa: F401
from finenvs.evaluation.model_proxy import ModelProxy, ProxyError, sse_body, sse_events

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def upstream():
    with ChatServer() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(upstream):
    with ModelProxy(upstream.base_url, timeout=30) as running:
        yield running


@pytest.fixture(scope="module")
def trading_request():
    """The first request an agent would send for one FinTrading decision: the prompt and the env's tools."""
    env = gym.make("FinTrading-text-v0", symbol="TSLA", split="eval")
    prompt, _ = env.reset(seed=0)
    tools = env.unwrapped.tool_specs() if hasattr(env.unwrapped, "tool_specs") else env.tool_specs()
    env.close()
    return [{"role": "user", "content": prompt}], tools


def _raw(proxy: ModelProxy, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=30)
    try:
        conn.putrequest(method, path)
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        conn.endheaders()
        if body:
            conn.send(body)
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw)
    finally:
        conn.close()


def test_a_streamed_tool_call_reaches_the_openai_client_in_stream_mode(proxy, upstream, trading_request):
    messages, tools = trading_request
    client = openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
    before = len(upstream.requests)
    stream = client.chat.completions.create(model="scripted", messages=messages, tools=tools, stream=True,
                                            stream_options={"include_usage": True})
    calls: dict[int, dict] = {}
    roles, finish, usage = [], [], None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            roles += [choice.delta.role] if choice.delta.role else []
            finish += [choice.finish_reason] if choice.finish_reason else []
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.id or ""
                call["name"] += delta.function.name or ""
                call["arguments"] += delta.function.arguments or ""
    names = {t["function"]["name"] for t in tools}
    assert roles == ["assistant"] and finish == ["tool_calls"]
    assert calls and all(c["name"] in names and c["id"] for c in calls.values())
    assert all(isinstance(json.loads(c["arguments"]), dict) for c in calls.values())
    assert usage is not None and usage.prompt_tokens > 0
    sent = upstream.requests[before]  # upstream saw one non-streamed request with the tool choice set
    assert len(upstream.requests) == before + 1
    assert sent["stream"] is False and "stream_options" not in sent and sent["tool_choice"] == "required"


def test_the_stream_says_what_the_upstream_said(proxy, upstream, trading_request):
    """Streamed and non-streamed replies carry the same content and tool calls as the upstream's own reply."""
    messages, tools = trading_request
    client = openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
    plain = client.chat.completions.create(model="scripted", messages=messages, tools=tools)
    direct = openai.OpenAI(base_url=upstream.base_url, api_key="x", max_retries=0).chat.completions.create(
        model="scripted", messages=messages, tools=tools)
    assert plain.choices[0].message.tool_calls == direct.choices[0].message.tool_calls
    upstream.faults.append("text:SELL")  # a text reply, streamed: the content in order, finish "stop"
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="scripted", messages=messages, stream=True) if c.choices)
    assert text == "Thinking...\nAction: SELL"


def test_tool_choice_is_configurable_and_a_clients_own_is_kept(proxy, upstream, trading_request):
    """The proxy's choice replaces none or "auto" (opencode sends "auto"); "none" or a named function is kept."""
    messages, tools = trading_request
    openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0).chat.completions.create(
        model="scripted", messages=messages, tools=tools, tool_choice="auto")
    assert upstream.requests[-1]["tool_choice"] == "required"
    with ModelProxy(upstream.base_url, tool_choice="auto") as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
        client.chat.completions.create(model="scripted", messages=messages, tools=tools)
        assert upstream.requests[-1]["tool_choice"] == "auto"
        client.chat.completions.create(model="scripted", messages=messages, tools=tools, tool_choice="none")
        assert upstream.requests[-1]["tool_choice"] == "none"
        named = {"type": "function", "function": {"name": "commit_action"}}
        client.chat.completions.create(model="scripted", messages=messages, tools=tools, tool_choice=named)
        assert upstream.requests[-1]["tool_choice"] == named
        client.chat.completions.create(model="scripted", messages=messages)  # no tools: no tool choice
        assert "tool_choice" not in upstream.requests[-1]
    with pytest.raises(ProxyError, match="tool_choice"):
        ModelProxy(upstream.base_url, tool_choice="always")
    with pytest.raises(ProxyError, match="http"):
        ModelProxy("file:///etc/passwd")


def test_models_pass_through(proxy):
    client = openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
    assert [m.id for m in client.models.list()] == ["scripted"]


def test_sse_events_from_odd_replies():
    """Arguments sent as an object become a JSON string; a missing finish reason is inferred; no choices: no chunks
    but [DONE]."""
    reply = {"id": "r", "model": "m", "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "function": {"name": "commit_action", "arguments": {"action": "BUY"}}}]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    events = sse_events(reply, include_usage=True)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    call = events[1]["choices"][0]["delta"]["tool_calls"][0]
    assert call["function"] == {"name": "commit_action", "arguments": '{"action": "BUY"}'} and call["index"] == 0
    assert events[2]["choices"][0]["finish_reason"] == "tool_calls" and events[3]["usage"]["total_tokens"] == 5
    assert sse_body({"choices": "nope"}) == b"data: [DONE]\n\n"


LONG = "A" * 100_000


@pytest.mark.parametrize("method, path, body, headers, status", [
    ("POST", "/v1/chat/completions", b'{"messages": []}', {}, 411),                        # no Content-Length
    ("POST", "/v1/chat/completions", b"", {"Content-Length": "99999999999"}, 413),          # over the cap
    ("POST", "/v1/chat/completions", b"x", {"Content-Length": "-1"}, 400),
    ("POST", "/v1/chat/completions", LONG.encode(), None, 400),                             # not JSON
    ("POST", "/v1/chat/completions", b"[1, 2]", None, 400),                                 # not an object
    ("POST", "/v1/chat/completions", b"[" * 100_000 + b"]" * 100_000, None, 400),           # nesting
    ("POST", "/v1/chat/completions", b"\xff\xfe{}", None, 400),                             # not UTF-8
    ("POST", "/v1/chat/completions", b'{"tools": "' + LONG.encode() + b'"}', None, 400),
    ("GET", "/v1/chat/completions", None, None, 405),
    ("GET", "/v1/" + LONG[:4000], None, None, 404),
    ("DELETE", "/v1/models", None, None, 404),
])
def test_hostile_requests_get_short_errors(proxy, method, path, body, headers, status):
    if headers is None:
        headers = {"Content-Length": str(len(body or b""))}
    got, payload = _raw(proxy, method, path, body, headers)
    assert got == status, payload
    message = payload["error"]["message"]
    assert len(message) < 200 and "AAAA" not in message


def test_upstream_failures_are_502_504_or_its_own_status(upstream, trading_request):
    messages, _ = trading_request
    body = json.dumps({"model": "scripted", "messages": messages, "stream": True}).encode()
    headers = {"Content-Length": str(len(body))}
    with ModelProxy(upstream.base_url, timeout=0.5) as proxy:
        for fault, status in (("status:500", 500), ("status:429", 429), ("malformed", 502), ("sleep:2", 504)):
            upstream.faults.append(fault)
            got, payload = _raw(proxy, "POST", "/v1/chat/completions", body, headers)
            assert got == status and payload["error"]["type"] == "upstream_error", (fault, payload)
        upstream.faults.append("huge:40000")
        small = ModelProxy(upstream.base_url, max_reply_bytes=10_000)
        with small:
            got, payload = _raw(small, "POST", "/v1/chat/completions", body, headers)
            assert got == 502 and "10,000" in payload["error"]["message"]
        assert proxy.counts["upstream_error"] == 4
    with ModelProxy("http://127.0.0.1:9/v1", timeout=5) as unreachable:
        got, payload = _raw(unreachable, "POST", "/v1/chat/completions", body, headers)
        assert got == 502 and "cannot be reached" in payload["error"]["message"]


def test_the_harness_serves_the_proxy_to_the_agent_program(tmp_path, upstream):
    """``--model-proxy``: the program gets the proxy as ``{model_url}`` and ``FINENVS_MODEL_URL`` (and the MCP server
    as ``FINENVS_MCP_URL``); the run records the upstream; ``{model_url}`` without a proxy is refused."""
    pytest.importorskip("mcp")
    pytest.importorskip("uvicorn")
    import shlex
    import sys

    from finenvs.evaluation.confine import probe_bwrap
    from finenvs.evaluation.harness import HarnessAgent, HarnessError, run_harness
    from finenvs.evaluation.llm import RunConfig

    with pytest.raises(HarnessError, match="model-proxy"):
        HarnessAgent("agent {model_url} {prompt_file}")
    script = ("import json, os, sys, urllib.request\n"
              "url = sys.argv[1]\n"
              "assert url == os.environ['FINENVS_MODEL_URL'] and os.environ['FINENVS_MCP_URL'].endswith('/mcp')\n"
              "models = json.load(urllib.request.urlopen(url + '/models'))\n"
              "print('models', [m['id'] for m in models['data']], flush=True)\n")
    agent = HarnessAgent(f"{sys.executable} -c {shlex.quote(script)} {{model_url}} {{prompt_file}}", timeout=60,
                         unconfined=probe_bwrap()[0] is None, model_proxy=upstream.base_url, model_tool_choice="auto")
    config = RunConfig(env_id="FinQA-v0", split="eval", instances=[0], failure_rule="default")
    summary = run_harness(config, agent, out=tmp_path, name="h", progress=False)
    (attempt,) = [json.loads(p.read_text()) for p in (summary.run_dir / "harness").glob("*/attempt.json")]
    assert attempt["exit_code"] == 0 and "models ['scripted']" in attempt["stdout_tail"], attempt["stderr_tail"]
    recorded = json.loads((summary.run_dir / "run.json").read_text())["agent"]["model_proxy"]
    assert recorded == {"upstream": upstream.base_url, "tool_choice": "auto"}


def test_schema_mode_asks_for_a_tool_call_as_constrained_json_and_returns_it_as_the_call(upstream, trading_request):
    """``tool_choice="schema"``: for a server that parses no tool call from a small model (llama.cpp's with
    SmolLM2), the request goes up without tools, with a JSON schema of the tools (a grammar there), and the JSON the
    model wrote comes back as a tool call, streamed or not; a reply that is not a call of an offered tool stays text."""
    messages, tools = trading_request
    names = {t["function"]["name"] for t in tools}

    class Constrained(ChatServer):
        answer = '{"name": "commit_action", "arguments": {"action": "SELL", "reasoning": "r"}}'

        def respond(self, body, fault):
            self.requests.append(body)
            reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": Constrained.answer}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
            return 200, json.dumps(reply).encode(), {}

    with Constrained() as server, ModelProxy(server.base_url, tool_choice="schema") as proxy:
        server.requests.clear()
        client = openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
        done = client.chat.completions.create(model="m", messages=messages, tools=tools, tool_choice="auto")
        sent = server.requests[-1]
        assert "tools" not in sent and "tool_choice" not in sent
        options = sent["response_format"]["json_schema"]["schema"]["anyOf"]
        assert {o["properties"]["name"]["const"] for o in options} == names
        commit = next(o for o in options if o["properties"]["name"]["const"] == "commit_action")
        advertised = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == "commit_action")
        forced = commit["properties"]["arguments"]
        assert "reasoning" in advertised["properties"] and "reasoning" not in advertised.get("required", [])
        assert forced == {**advertised, "properties": {k: v for k, v in advertised["properties"].items()
                                                       if k != "reasoning"}}  # optional free text: not in the grammar
        [call] = done.choices[0].message.tool_calls
        assert call.function.name == "commit_action" and json.loads(call.function.arguments)["action"] == "SELL"
        assert done.choices[0].finish_reason == "tool_calls" and done.choices[0].message.content is None
        stream = client.chat.completions.create(model="m", messages=messages, tools=tools, stream=True)
        parts = [c.choices[0].delta for c in stream if c.choices]
        assert "".join(d.tool_calls[0].function.arguments or "" for d in parts if d.tool_calls) == call.function.arguments
        for text in ('{"name": "get_weather", "arguments": {}}', "I would sell.", '{"name": "commit_action"'):
            Constrained.answer = text  # not a call of an offered tool: the text as the model wrote it
            got = client.chat.completions.create(model="m", messages=messages, tools=tools)
            assert got.choices[0].message.content == text and not got.choices[0].message.tool_calls
        client.chat.completions.create(model="m", messages=messages)  # no tools: the request as sent
        assert "response_format" not in server.requests[-1]
        client.chat.completions.create(model="m", messages=messages, tools=tools, tool_choice="none")
        assert server.requests[-1]["tool_choice"] == "none" and "response_format" not in server.requests[-1]


# ---------------------------------------------------------------------------- finenvs llm --model-proxy
def _steps(run_dir):
    from finenvs.evaluation.runlog import read_trajectories

    records, dropped = read_trajectories(run_dir / "trajectories.jsonl")
    assert dropped == 0
    return [r for r in records if r["type"] == "step"]


def test_finenvs_llm_plays_through_the_proxy_and_resumes_through_a_new_one(upstream, tmp_path, capsys, monkeypatch):
    """``finenvs llm --model-proxy UPSTREAM``: the agent's requests reach the upstream through the proxy (non-streamed,
    ``tool_choice`` set), the run records the upstream and the tool choice (not the proxy's passing address), the
    proxy is stopped when the run ends, and ``--resume`` serves the recorded upstream through a proxy of its own."""
    from finenvs.cli import main

    stopped = []
    real_stop = ModelProxy.stop
    monkeypatch.setattr(ModelProxy, "stop", lambda self: (stopped.append(self.port), real_stop(self))[1])
    before = len(upstream.requests)
    argv = ["llm", "--env", "FinTrading-v0", "--symbols", "AAPL", "--split", "eval", "--model-proxy",
            upstream.base_url, "--model", "scripted", "--out", str(tmp_path), "--name", "p", "--quiet"]
    assert main([*argv, "--max-decisions", "2"]) == 3  # stopped where asked
    sent = upstream.requests[before:]
    assert sent and all(r["stream"] is False and r["tool_choice"] == "required" for r in sent if r.get("tools"))
    assert len(stopped) == 1
    meta = json.loads((tmp_path / "p" / "run.json").read_text())
    assert meta["agent"]["base_url"] == upstream.base_url and meta["agent"]["model"] == "scripted"
    assert meta["agent"]["model_proxy"] == {"upstream": upstream.base_url, "tool_choice": "required"}
    steps = _steps(tmp_path / "p")
    assert len(steps) == 2 and all(s["via"] == "tool" and not s["errors"] for s in steps)
    capsys.readouterr()
    resumed = len(upstream.requests)
    assert main(["llm", "--resume", str(tmp_path / "p"), "--max-decisions", "3", "--quiet"]) == 3
    assert len(stopped) == 2 and len(upstream.requests) > resumed
    assert all(r["tool_choice"] == "required" for r in upstream.requests[resumed:] if r.get("tools"))
    assert len(_steps(tmp_path / "p")) == 3


def test_the_grammar_leaves_out_only_optional_free_text():
    from finenvs.evaluation.model_proxy import grammar_parameters

    params = {"type": "object", "additionalProperties": False, "required": ["answer", "action"], "properties": {
        "answer": {"type": "string"}, "action": {"type": "string", "enum": ["A", "B"]},
        "note": {"type": "string"}, "size": {"type": "number"}, "kind": {"type": "string", "const": "x"},
        "legs": {"type": "array", "items": {"type": "object"}}}}
    assert set(grammar_parameters(params)["properties"]) == {"answer", "action", "size", "kind", "legs"}
    assert grammar_parameters(params)["required"] == ["answer", "action"] and params["properties"]["note"]
    only_text = {"type": "object", "properties": {"note": {"type": "string"}}}
    assert grammar_parameters(only_text) == only_text  # never an empty object where the tool takes one field
    assert grammar_parameters({"type": "object"}) == {"type": "object"}


def test_finenvs_llm_schema_mode_forces_the_hedging_pair_enum(tmp_path, capsys):
    """FinHedging-v0's commit tool advertises the pair rule without the 56-pair enum (tokens); in schema mode the
    proxy's grammar request carries the family's whole vocabulary again, so a constrained model's first commit is a
    pair of the universe. The other modes send the tools as advertised."""
    from finenvs.cli import main
    from finenvs.tasks.hedging.protocol import hedging_protocol

    class Grammar(ChatServer):
        """A server that honours the response_format: it answers the first enum word naming a pair."""

        def respond(self, body, fault):
            self.requests.append(body)
            options = body["response_format"]["json_schema"]["schema"]["anyOf"]
            commit = next(o for o in options if o["properties"]["name"]["const"] == "commit_action")
            pair = next(w for w in commit["properties"]["arguments"]["properties"]["action"]["enum"] if "/" in w)
            call = {"name": "commit_action", "arguments": {"action": pair}}
            reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": json.dumps(call)}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
            return 200, json.dumps(reply).encode(), {}

    with Grammar() as server:
        server.requests.clear()
        assert main(["llm", "--env", "FinHedging-v0", "--model-proxy", server.base_url, "--model", "m",
                     "--model-tool-choice", "schema", "--max-decisions", "1", "--out", str(tmp_path), "--name", "h",
                     "--quiet"]) == 3
        [step] = _steps(tmp_path / "h")
        sent = server.requests[-1]
    assert "tools" not in sent
    commit = next(o for o in sent["response_format"]["json_schema"]["schema"]["anyOf"]
                  if o["properties"]["name"]["const"] == "commit_action")
    universe = json.loads((tmp_path / "h" / "run.json").read_text())["episodes"][0]
    env = gym.make("FinHedging-v0", **universe["env_kwargs"])
    vocabulary = env.unwrapped.text_protocol.action_words
    env.close()
    words = commit["properties"]["arguments"]["properties"]["action"]["enum"]
    assert words == vocabulary and sum("/" in w for w in words) == 56
    assert step["via"] == "tool" and not step["errors"] and "/" in step["action"]  # a valid pair, committed
    assert hedging_protocol(["AAA", "BBB"]).commit_advertised()["properties"]["action"].get("enum") is None
    constrained = {"commit_action": hedging_protocol(["AAA", "BBB"]).commit_constrained()}
    with ChatServer() as plain, ModelProxy(plain.base_url, tool_choice="required", constrained=constrained) as proxy:
        tools = [{"type": "function", "function": {"name": "commit_action", "parameters": {
            "type": "object", "properties": {"action": {"type": "string"}}}}}]
        openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=tools)
        assert plain.requests[-1]["tools"] == tools  # not schema mode: the tools as the client sent them


def test_constrained_schemas_come_from_the_episodes_own_protocols():
    """The constrained map: the commit tool of a family whose constrained schema differs from the advertised one,
    matched under an agent CLI's MCP prefix too; nothing for a family that advertises its whole schema, nor when the
    run's episodes disagree."""
    from finenvs.evaluation.model_proxy import (
        constrained_for,
        constrained_tools,
        grammar_parameters,
        schema_request,
    )
    from finenvs.tasks import EpisodeSpec

    hedging = [EpisodeSpec(0, "FinHedging-v0", {"symbols": ["AAPL", "MSFT", "NVDA"], "split": "eval"}, seed=0),
               EpisodeSpec(1, "FinHedging-v0", {"symbols": ["AAPL", "MSFT", "NVDA"], "split": "eval"}, seed=1)]
    forced = constrained_tools(hedging)
    assert list(forced) == ["commit_action"]
    assert sorted(forced["commit_action"]["properties"]["action"]["enum"][4:]) == [
        "AAPL/MSFT", "AAPL/NVDA", "MSFT/AAPL", "MSFT/NVDA", "NVDA/AAPL", "NVDA/MSFT"]
    other = EpisodeSpec(2, "FinHedging-v0", {"symbols": ["AAPL", "MSFT", "AMZN"], "split": "eval"}, seed=0)
    assert constrained_tools([*hedging, other]) == {}
    assert constrained_tools([EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"})]) == {}
    assert constrained_for("finenvs_commit_action", forced) is forced["commit_action"]
    assert constrained_for("get_prices", forced) is None and constrained_for("commit_action", None) is None
    own = {"type": "object", "properties": {"lookback": {"type": "integer"}}}
    body = {"messages": [], "tools": [{"type": "function", "function": {"name": "finenvs_commit_action",
                                                                       "parameters": {"type": "object"}}},
                                      {"type": "function", "function": {"name": "get_prices", "parameters": own}}]}
    options = schema_request(body, forced)["response_format"]["json_schema"]["schema"]["anyOf"]
    assert [o["properties"]["arguments"] for o in options] == [grammar_parameters(forced["commit_action"]), own]
    assert "reasoning" in forced["commit_action"]["properties"]  # kept in what the env is told; out of the grammar


@pytest.mark.parametrize("flags, says", [
    (["--model-proxy", "U", "--base-url", "U", "--model", "m"], "--model-proxy UPSTREAM_URL"),
    (["--model-proxy", "U", "--a2a-url", "http://127.0.0.1:9"], "--a2a-url, not both"),
    (["--model-proxy", "U", "--model", "m", "--tool-choice", "auto"], "the proxy sets the tool choice"),
    (["--model-proxy", "U"], "--model-proxy needs --model"),
    (["--model-tool-choice", "schema"], "give --model-proxy UPSTREAM_URL too"),
    (["--model-tool-choice", "schema", "--base-url", "U", "--model", "m"], "give --model-proxy UPSTREAM_URL too"),
    (["--model-proxy", "file:///etc/passwd", "--model", "m"], "http:// or https://"),
    (["--model-proxy", "http://127.0.0.1:9/v1", "--model", "m"], "does not answer, nothing was run"),
])
def test_finenvs_llm_proxy_flags_that_conflict_fail_before_any_work(flags, says, upstream, tmp_path, capsys,
                                                                      monkeypatch):
    import finenvs.evaluation.llm as llm
    from finenvs.cli import main

    def no_run(*args, **kwargs):
        raise AssertionError("run_llm ran: the bad flags were not caught before the work")

    monkeypatch.setattr(llm, "run_llm", no_run)
    flags = [upstream.base_url if f == "U" else f for f in flags]
    assert main(["llm", "--env", "FinTrading-v0", "--out", str(tmp_path), "--name", "x", "--quiet", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("finenvs: error:") and says in err, err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("choice, pairs", [("schema", 56), ("required", None)])
def test_finenvs_harness_gives_its_proxy_the_constrained_schemas_in_schema_mode(choice, pairs, monkeypatch, capsys):
    """``finenvs harness --model-proxy URL --model-tool-choice schema``: the agent program's proxy forces the same
    constrained commit schema as ``finenvs llm``'s (FinHedging's pair enum); in the other modes it forces none."""
    import finenvs.evaluation.harness as harness
    from finenvs.cli import main

    seen = []

    def capture(config, agent, **kwargs):
        seen.append(agent)
        raise RuntimeError("captured")

    monkeypatch.setattr(harness, "run_harness", capture)
    main(["harness", "--env", "FinHedging-v0", "--agent-cmd", "agent {prompt_file}", "--model-proxy",
          "http://127.0.0.1:9/v1", "--model-tool-choice", choice, "--quiet"])
    [agent] = seen
    if pairs is None:
        assert agent.model_constrained is None
    else:
        words = agent.model_constrained["commit_action"]["properties"]["action"]["enum"]
        assert sum("/" in w for w in words) == pairs
