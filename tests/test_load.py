"""Load and hostile input: 64 episodes at once against a slow, flaky endpoint; 1,000 hostile MCP calls.

The endpoint (:class:`FlakyServer`) answers ``POST /v1/chat/completions`` on 127.0.0.1 with the scripted
agents' replies (:class:`~finenvs.evaluation.agents.ScriptedRouter`) and, per request, draws from a seeded
generator keyed by the conversation and the attempt (so a retry of one request draws anew, and an outcome
does not depend on which episode's request arrives first): latency (every reply), HTTP 429 with a small
``Retry-After``, HTTP 500, a connection dropped before or in the middle of the reply, an HTTP 200 whose body
is not JSON, or a junk reply of 2-16 KB (random printable text, nested brackets, huge numbers, floods of
action markers, lone surrogates, NUL) as text or as ``commit_action`` arguments. Every fault it serves is
logged, so the test checks the run recorded each one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import socket
import string
import sys
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from finenvs.evaluation.agents import ScriptedRouter  # noqa: E402
from finenvs.evaluation.endpoints import OpenAIChatAgent  # noqa: E402
from finenvs.evaluation.llm import RunConfig, run_llm, run_llm_async  # noqa: E402
from finenvs.evaluation.runlog import read_trajectories  # noqa: E402
from finenvs.evaluation.score import score_run  # noqa: E402

#: FinTrading-v0 over one week (5 decisions) for 4 symbols x 16 seeds: 64 episodes, 320 decisions.
WEEK = {"start": "2026-01-02", "end": "2026-01-09"}
SEEDS = list(range(16))
SYMBOLS = ["MSFT", "TSLA", "AAPL", "NVDA"]
DECISIONS = 5
#: Retries and backoff small, so a run of hundreds of faults takes seconds.
FAST = {"max_retries": 1, "backoff_base": 0.01, "backoff_max": 0.05, "request_timeout": 20.0}

#: Fault -> share of requests (the rest are answered normally). Every reply takes 5-30 ms, one in ten 0.1-0.3 s more.
FAULTS = {"429": 0.06, "500": 0.06, "drop_mid": 0.04, "drop": 0.02, "junk_text": 0.06, "junk_commit": 0.03,
          "junk_body": 0.02}
ENDPOINT_FAULTS = {"429", "500", "drop_mid", "drop", "junk_body"}


def junk(rng: random.Random) -> str:
    """2-16 KB of something no protocol can read as an action."""
    size = rng.randint(2_048, 16_000)
    kind = rng.choice(["printable", "brackets", "numbers", "markers", "mixed"])
    if kind == "printable":
        return "".join(rng.choice(string.ascii_letters + string.digits + " .,;()<>/?!@#$%^&*\n") for _ in range(size))
    if kind == "brackets":
        depth = size // 2
        return "".join(rng.choice("[{") for _ in range(depth)) + "".join(rng.choice("]}") for _ in range(depth))
    if kind == "numbers":
        return "9" * (size - 8) + "e999999 " if rng.random() < 0.5 else "-" + "1" * (size - 1)
    if kind == "markers":
        marker = rng.choice(["Action:", "Action: ", "ACTION:\n", "commit_action(", "```json\n{", '{"action":',
                             "Final answer:"])
        return (marker * (size // len(marker) + 1))[:size]
    parts = ["\ud800", "\x00", "\udfff", "Action: \ud83d", "[" * 300, "1" * 5_000, "{\"action\": \"\x00\"}"]
    text = "".join(rng.choice(parts) for _ in range(size // 400 + 1))
    return text[:size]


class FlakyServer:
    """A slow, flaky chat-completions server; start with ``with FlakyServer(seed) as server:``."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.router = ScriptedRouter()
        self.lock = threading.Lock()
        self.attempts: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.junk_texts: set[str] = set()
        self.junk_arguments: set[str] = set()
        self.in_flight = self.most_in_flight = 0
        self.forced: deque[tuple[str, bytes]] = deque()  # (fault, payload) to serve next, before any draw
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with outer.lock:
                    outer.in_flight += 1
                    outer.most_in_flight = max(outer.most_in_flight, outer.in_flight)
                try:
                    self.answer(body)
                finally:
                    with outer.lock:
                        outer.in_flight -= 1

            def answer(self, body: dict[str, Any]) -> None:
                fault, payload, delay = outer.plan(body)
                time.sleep(delay)
                if fault == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                status = {"429": 429, "500": 500}.get(fault, 200)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if fault == "429":
                    self.send_header("Retry-After", "0.01")
                self.end_headers()
                if fault == "drop_mid":
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that hung up is expected
                    super().handle_error(request, client_address)

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FlakyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def plan(self, body: dict[str, Any]) -> tuple[str, bytes, float]:
        """``(fault, payload, delay)`` for one request; logs what it serves."""
        key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode("utf-8", "replace")).hexdigest()
        with self.lock:
            attempt = self.attempts[key]
            self.attempts[key] += 1
            if self.forced:
                fault, payload = self.forced.popleft()
                self.served[fault] += 1
                return fault, payload, 0.0
        rng = random.Random(f"{self.seed}:{key}:{attempt}")
        delay = rng.uniform(0.005, 0.03) + (rng.uniform(0.1, 0.3) if rng.random() < 0.1 else 0.0)
        draw, fault = rng.random(), "ok"
        for name, share in FAULTS.items():
            if draw < share:
                fault = name
                break
            draw -= share
        message: dict[str, Any]
        if fault in ("429", "500"):
            payload = json.dumps({"error": {"message": f"injected {fault}", "type": "test"}}).encode()
        elif fault == "junk_body":
            payload = junk(rng).encode("utf-8", "surrogatepass")
        elif fault in ("drop", "drop_mid"):
            payload = json.dumps(self.completion({"role": "assistant", "content": "Action: BUY"})).encode()
        else:
            if fault == "junk_text":
                text = junk(rng)
                message = {"role": "assistant", "content": text}
                with self.lock:
                    self.junk_texts.add(text)
            elif fault == "junk_commit":
                arguments = junk(rng)
                message = {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_junk", "type": "function",
                     "function": {"name": "commit_action", "arguments": arguments}}]}
                with self.lock:
                    self.junk_arguments.add(arguments)
            else:
                with self.lock:
                    reply = self.router.reply(body.get("messages", []), body.get("tools", []))
                message = reply.message()
            payload = json.dumps(self.completion(message)).encode()  # lone surrogates travel as \ud800 escapes
        with self.lock:
            self.served[fault] += 1
        return fault, payload, delay

    @staticmethod
    def completion(message: dict[str, Any]) -> dict[str, Any]:
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {"id": "chatcmpl-load", "object": "chat.completion", "created": 0, "model": "flaky",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}


def as_received(text: str) -> str:
    """``text`` as a client decodes it from the JSON the server wrote (adjacent surrogate escapes form a pair)."""
    return json.loads(json.dumps(text))


def load_config(seeds: list[int] = SEEDS, concurrency: int = 64) -> RunConfig:
    return RunConfig(env_id="FinTrading-v0", symbols=SYMBOLS, split="eval", env_kwargs=dict(WEEK), seeds=seeds,
                     concurrency=concurrency, max_consecutive_endpoint_failures=None, **FAST)


def check_run_folder(run_dir: Path, n_episodes: int) -> tuple[list[dict], list[dict]]:
    """Every planned episode once, each of its steps once and in order, the episode record after its steps."""
    records, dropped = read_trajectories(run_dir / "trajectories.jsonl")
    assert dropped == 0
    steps = [r for r in records if r["type"] == "step"]
    episodes = [r for r in records if r["type"] == "episode"]
    assert sorted(int(e["episode"]) for e in episodes) == list(range(n_episodes))  # one record each
    seen: dict[int, list[int]] = {}
    ended: set[int] = set()
    for r in records:
        index = int(r["episode"])
        if r["type"] == "step":
            assert index not in ended, f"a step of episode {index} after its episode record"
            seen.setdefault(index, []).append(int(r["step"]))
        elif r["type"] == "episode":
            ended.add(index)
    assert all(seen[i] == list(range(DECISIONS)) for i in range(n_episodes)), "a step lost, repeated or reordered"
    assert Counter((int(s["episode"]), int(s["step"])) for s in steps).most_common(1)[0][1] == 1
    return steps, episodes


# ---------------------------------------------------------------------------- 64 episodes at once
@pytest.mark.parametrize("n_seeds, concurrency", [pytest.param(16, 64, id="64-episodes"),
                                                   pytest.param(64, 256, id="256-episodes", marks=pytest.mark.slow)])
def test_concurrent_episodes_survive_a_slow_flaky_endpoint(tmp_path, n_seeds, concurrency):
    n_episodes = len(SYMBOLS) * n_seeds
    with FlakyServer(seed=20) as flaky:
        agent = OpenAIChatAgent("flaky", flaky.base_url, timeout=FAST["request_timeout"], max_tokens=None)
        began = time.perf_counter()
        summary = run_llm(load_config(list(range(n_seeds)), concurrency), agent, out=tmp_path, name="load",
                          progress=False)
        seconds = time.perf_counter() - began
    assert summary.status == "complete" and len(summary.outcomes) == n_episodes
    steps, episodes = check_run_folder(summary.run_dir, n_episodes)
    assert len(steps) == n_episodes * DECISIONS

    served = dict(flaky.served)
    print(f"\n{n_episodes} episodes, {len(steps)} steps, {sum(served.values())} requests in {seconds:.1f} s, at most "
          f"{flaky.most_in_flight} at once; served: {served}")
    assert flaky.most_in_flight >= 8  # the episodes really ran side by side (30-60 on an idle machine)
    # every endpoint fault the server served is counted on the step it hit, none lost, none invented
    assert sum(s["endpoint_errors"] for s in steps) == sum(served.get(f, 0) for f in ENDPOINT_FAULTS)
    assert all(len(s["errors"]) >= s["endpoint_errors"] for s in steps)
    failed = [s for s in steps if (s["invalid"] or "").startswith("endpoint error")]
    assert failed, "the seed should leave some decisions without a reply"
    for s in failed:
        assert s["action"] == "HOLD" and s["endpoint_errors"] >= 1
        assert "after 2 attempts" in s["invalid"] or "malformed" in s["invalid"]
    # a junk reply is an invalid step with the reason, never a crash and never an action
    junk_texts = {as_received(t) for t in flaky.junk_texts}
    junk_arguments = {as_received(t) for t in flaky.junk_arguments}
    junk_steps = [s for s in steps if s["raw_text"] in junk_texts or s.get("commit_arguments") in junk_arguments]
    assert len(junk_steps) == served["junk_text"] + served["junk_commit"]  # each junk reply ended a decision
    for s in junk_steps:
        assert s["action"] == "HOLD" and s["via"] == "default" and s["invalid"], s["invalid"]
        assert not s["invalid"].startswith("endpoint error")
    assert score_run(summary.run_dir).reproduced


@pytest.mark.parametrize("body", [b"[" * 5_000 + b"]" * 5_000, b'{"choices": ' + b"9" * 5_000 + b"}",
                                  b'{"id": "x", "choices": [{"message": {"role": "assistant", "content": "\\ud800'
                                  b'Action: BUY"}, "index": 0, "finish_reason": "stop"}]}'])
def test_a_reply_body_no_decoder_can_read_is_malformed_not_a_crash(tmp_path, body):
    with FlakyServer() as server:
        server.forced.append(("junk_body", body))
        agent = OpenAIChatAgent("flaky", server.base_url, timeout=FAST["request_timeout"], max_tokens=None)
        config = RunConfig(symbols=["AAPL"], env_kwargs=dict(WEEK), max_decisions=1, **FAST)
        summary = run_llm(config, agent, out=tmp_path, progress=False)
    [step] = [r for r in read_trajectories(summary.run_dir / "trajectories.jsonl")[0] if r["type"] == "step"]
    if body.startswith(b'{"id"'):  # a lone surrogate escape is JSON: the reply is read, and recorded as sent
        assert step["raw_text"] == "\ud800Action: BUY" and step["endpoint_errors"] == 0
    else:
        assert step["invalid"].startswith("endpoint error: malformed: unreadable reply") and step["retries"] == 0


@pytest.fixture()
def flaky():
    with FlakyServer(seed=21) as server:
        yield server


@pytest.mark.filterwarnings("ignore:coroutine 'connect_tcp:RuntimeWarning")  # a connect cut by the cancel
def test_an_interrupted_load_run_resumes_without_duplicates_and_rescores(flaky, tmp_path):
    from finenvs.cli import main

    agent = OpenAIChatAgent("flaky", flaky.base_url, timeout=FAST["request_timeout"], max_tokens=None)
    run_dir = tmp_path / "cut"
    trajectory = run_dir / "trajectories.jsonl"

    async def interrupted() -> None:
        task = asyncio.create_task(run_llm_async(load_config(), agent, out=tmp_path, name="cut", progress=False))
        while not task.done():  # stop once 20 episodes are finished, others mid-way
            await asyncio.sleep(0.02)
            if trajectory.exists() and trajectory.read_text(errors="replace").count('"type":"episode"') >= 20:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    records, _ = read_trajectories(trajectory)
    done_before = {int(r["episode"]) for r in records if r["type"] == "episode"}
    begun = {int(r["episode"]) for r in records if r["type"] == "step"} - done_before
    assert 20 <= len(done_before) < 64 and begun  # finished episodes are kept, begun ones replayed and continued
    with open(trajectory, "a") as fh:  # a write cut in the middle of a line, as a kill leaves it
        fh.write('{"type": "step", "episode": 63, "ste')

    assert main(["llm", "--resume", str(run_dir), "--quiet"]) == 0
    steps, _ = check_run_folder(run_dir, 64)
    assert len(steps) == 64 * DECISIONS
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert main(["score", str(run_dir)]) == 0
    assert score_run(run_dir).reproduced


# ---------------------------------------------------------------------------- 1,000 hostile MCP calls
class Wire:
    """:func:`~finenvs.evaluation.mcp_server.serve` driven in process: JSON-RPC lines in, lines out.

    The stdout side encodes each line as strict UTF-8, as the process's stdout does, so a reply UTF-8 cannot
    carry fails here as it would on the wire.
    """

    def __init__(self) -> None:
        import anyio

        self._anyio = anyio
        self._in_send, self._in = anyio.create_memory_object_stream(16)
        self._out_send, self._out = anyio.create_memory_object_stream(16)
        self.next_id = 0

    # the server's stdin and stdout
    def __aiter__(self) -> Wire:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._in.receive()
        except self._anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def write(self, text: str) -> None:
        text.encode("utf-8")
        await self._out_send.send(text)

    async def flush(self) -> None:
        pass

    # the client's side
    async def exchange(self, line: str) -> dict[str, Any]:
        """Send one line and read the one reply (every test line is a request, or garbage answered with id null)."""
        await self._in_send.send(line + "\n")
        with self._anyio.fail_after(20):
            reply = await self._out.receive()
        return json.loads(reply)

    async def call(self, name: Any, arguments: Any = None, *, raw_arguments: str | None = None,
                   omit: tuple[str, ...] = ()) -> dict[str, Any]:
        self.next_id += 1
        params = {"name": name, "arguments": {} if arguments is None else arguments}
        for key in omit:
            params.pop(key)
        text = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params})
        if raw_arguments is not None:  # arguments written as raw JSON text (what json.dumps cannot produce)
            text = text.replace('"arguments": {}', '"arguments": ' + raw_arguments, 1)
        reply = await self.exchange(text)
        assert reply.get("id") == self.next_id, reply
        return reply

    async def close(self) -> None:
        await self._in_send.aclose()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def hostile_calls(rng: random.Random, n: int, *, commits: bool = True) -> list[dict[str, Any]]:
    """``n`` hostile ``tools/call`` requests as keyword arguments of :meth:`Wire.call` (``commits=False``: the
    commits among them go to ``get_prices`` instead)."""
    huge = "x" * 1_000_000
    makers = [
        lambda: {"name": rng.choice(["get_weather", "", "GET_PRICES", "commit", "get_prices\x00", "../etc/passwd",
                                     "x" * 200_000, "\u202egnp.exe", "🙂" * 50])},
        lambda: {"name": "get_prices", "arguments": rng.choice([{"lookback": "ten"}, {"lookback": [1]},
                                                                {"lookback": -1}, {"lookback": 1.5},
                                                                {"lookback": True}, {"lookback": None},
                                                                {"symbol": {"a": 1}}, {"start": 20260101}])},
        lambda: {"name": rng.choice(["get_indicators", "get_news", "get_filing_section"]),
                 "arguments": rng.choice([{}, {"names": 5}, {"names": ["RSI"] * 10_000}, {"id": None},
                                          {"names": [[["SMA"]]]}])},
        lambda: {"name": rng.choice(["get_prices", "commit_action"]),
                 "raw_arguments": f'{{"lookback": {nested(rng.choice([40, 5_000]))}}}'},
        lambda: {"name": rng.choice(["get_prices", "commit_action"]),
                 "raw_arguments": f'{{"lookback": {"9" * rng.choice([65, 4_301, 5_000])}}}'},
        lambda: {"name": rng.choice(["get_prices", "get_news", "commit_action"]),
                 "arguments": {rng.choice(["lookback", "id", "action", "zzz"]): huge}},
        lambda: {"name": rng.choice(["get_news", "commit_action"]), "raw_arguments":
                 rng.choice(['{"id": "\\ud800"}', '{"action": "BUY\\udfff"}', '{"\\udc00": 1}'])},
        lambda: {"name": rng.choice(["get_news", "get_prices"]),
                 "arguments": rng.choice([{"id": "\x00"}, {"symbol": "TSLA\x00"}, {"\x00": "\x00"}])},
        lambda: {"name": rng.choice(["get_prices", "get_news"]), "omit": ("arguments",)},
        lambda: {"name": "get_prices", "omit": ("name",)},
        lambda: {"name": rng.choice(["get_prices", "commit_action"]),
                 "raw_arguments": rng.choice(["[1, 2]", '"BUY"', "5", "null", "1e999", "NaN"])},
        lambda: {"name": "commit_action", "arguments": rng.choice([{"action": 5}, {"action": ["BUY"]},
                                                                   {"action": "MOON"}, {},
                                                                   {"action": "BUY", "reasoning": {"a": [1]}}])},
    ]
    # commits that pass the bounds are invalid decisions that move the clock: rarer, so the episode outlasts them
    calls = [(makers[-1] if rng.random() < 0.02 else rng.choice(makers[:-1]))() for _ in range(n)]
    if not commits:
        for call in calls:
            call["name"] = "get_prices" if call.get("name") == "commit_action" else call.get("name")
    return calls


def check_reply(reply: dict[str, Any], limit: int = 8_000) -> tuple[bool, str]:
    """``(is_error, text)`` of one reply; every result's content text is within ``limit``."""
    if "error" in reply:
        assert len(reply["error"]["message"]) <= limit
        return True, reply["error"]["message"]
    result = reply["result"]
    [block] = result["content"]
    assert len(block["text"]) <= limit, len(block["text"])
    assert json.loads(block["text"]) == result["structuredContent"] or "result" in result["structuredContent"]
    return bool(result.get("isError")), block["text"]


@pytest.mark.parametrize("n_wire", [pytest.param(850, id="1000-calls"),
                                    pytest.param(20_000, id="20000-calls", marks=pytest.mark.slow)])
def test_hostile_mcp_calls_leave_the_server_answering(tmp_path, n_wire):
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from finenvs.evaluation.llm import drive_mcp_episode
    from finenvs.evaluation.mcp_server import McpEpisode, build_server, serve
    from finenvs.tasks import EpisodeSpec
    from finenvs.tasks.trading.agent import ScriptedTradingAgent
    from finenvs.tasks.trading.protocol import TRADING_PROTOCOL

    episode = McpEpisode(EpisodeSpec(0, "FinTrading-v0", {"symbol": "TSLA", "split": "eval"}, 0), out=tmp_path,
                         name="hostile")
    rng = random.Random(20)
    wire = Wire()
    tally: Counter[str] = Counter()

    async def hostile_over_the_wire(n: int) -> None:
        for k in range(0, n, 50):  # commits stop while the episode still has decisions left for the normal calls
            for kwargs in hostile_calls(rng, min(50, n - k), commits=episode.session.step_index < 40):
                is_error, _ = check_reply(await wire.call(**kwargs))
                tally["error" if is_error else "result"] += 1

    async def go() -> tuple[Any, ...]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: serve(episode, stdin=wire, stdout=wire))
            init = await wire.exchange(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
            assert init["result"]["serverInfo"]["name"] == "finenvs"
            await wire._in_send.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
            unreadable = [  # (line, the id its error reply carries)
                ("hello", None), ("{", None), (nested(5_000), None), ("9" * 5_000, None), ("\x00", None),
                ("[1, 2]", None), ('{"jsonrpc": "1.0", "id": 77, "method": "tools/call"}', None),
                ('{"jsonrpc": "2.0", "id": 78, "method": "tools/call", "params": 5}', None),
                ('{"jsonrpc": "2.0", "id": "\\ud800x", "method": "tools/call"}', "\ufffdx"),
                ('{"jsonrpc": "2.0", "id": 79, "method": "tools/call", "params": {"name": "get_prices", "arguments": '
                 f'{{"lookback": {nested(3_000)}}}}}}}', 79),
                ('{"params": {"id": 1, "name": "x", "arguments": {"a": ' + "9" * 5_000 + '}}, "id": "last", '
                 '"jsonrpc": "2.0", "method": "tools/call"}', "last"),
            ]
            for line, rid in unreadable:
                reply = await wire.exchange(line)
                assert reply["id"] == rid and reply["error"]["code"] in (-32700, -32600), (line[:60], reply)
                assert len(reply["error"]["message"]) <= 200
                tally["unreadable"] += 1
            reply = await wire.exchange('{"jsonrpc": "2.0", "id": 80, "method": "tools/nope"}')
            assert reply["id"] == 80 and reply["error"]["code"] == -32601  # the SDK's own answer
            await hostile_over_the_wire(n_wire)
            taken = episode.session.step_index  # decisions hostile commits took (invalid, so the default)
            observation = check_reply(await wire.call("get_observation"))
            prices = check_reply(await wire.call("get_prices", {"lookback": 3}))
            commit = check_reply(await wire.call("commit_action", {"action": "BUY", "reasoning": "after the storm"}))
            await wire.close()

        async with Client(build_server(episode)) as client:  # Python values a JSON line cannot carry
            for arguments in [{"id": "\ud800"}, {"lookback": float("nan")}, {"lookback": 10 ** 4_400},
                              {"lookback": json.loads(nested(40))}, {"\udfff": "\ud83d"}] * 20:
                result = await client.call_tool(rng.choice(["get_news", "get_prices"]), arguments)
                text = result.content[0].text
                assert result.is_error is not None and len(text) <= 8_000
                text.encode("utf-8")
                tally["typed"] += 1
            before = episode.session.step_index
            replies = await drive_mcp_episode(ScriptedTradingAgent(), client, TRADING_PROTOCOL)
            after = []
            for kwargs in hostile_calls(rng, 50) + [{"name": "commit_action", "arguments": {"action": "BUY"}}] * 50:
                result = await client.call_tool(kwargs["name"], kwargs.get("arguments") or {})
                after.append(result)
        return observation, prices, commit, taken, before, replies, after

    began = time.perf_counter()
    observation, prices, commit, taken, before, replies, after = anyio.run(go)
    seconds = time.perf_counter() - began
    calls = sum(tally.values()) + len(after)
    print(f"\n{calls} hostile calls answered in {seconds:.1f} s: {dict(tally)}, {len(after)} after the end; "
          f"{taken} invalid commits took the default")
    assert calls >= n_wire + 150

    # a normal call after the storm still answers correctly
    assert not observation[0] and "Symbol: TSLA" in json.loads(observation[1])["observation"]
    rows = json.loads(prices[1])["rows"]
    assert not prices[0] and len(rows) == 3 and rows[-1][0] == json.loads(observation[1])["date"]
    assert json.loads(commit[1])["accepted"] is True and json.loads(commit[1])["action"] == "BUY"
    # the episode ran to its end, and every call after the end is refused, within the cap
    assert replies[-1]["done"] and replies[-1]["reproduced_offline"] and before < 60
    for result in after:
        assert result.is_error and "episode is over" in result.structured_content["error"]
        assert len(result.content[0].text) <= 8_000
    records, dropped = read_trajectories(tmp_path / "hostile" / "trajectories.jsonl")
    steps = [r for r in records if r["type"] == "step"]
    assert dropped == 0 and [s["step"] for s in steps] == list(range(60))
    assert score_run(tmp_path / "hostile").reproduced
    episode.close()
