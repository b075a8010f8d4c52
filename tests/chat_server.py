"""A chat-completions server on 127.0.0.1 for tests: the scripted agent behind a real HTTP endpoint.

It answers ``POST /v1/chat/completions`` the way an OpenAI-compatible server
does (tool calls included), with :class:`~finenvs.evaluation.agents.ScriptedRouter`
choosing the reply (each env's offline scripted agent, by the env the prompt
names), and ``GET /v1/models``. Faults are injected per request from a queue
(``server.faults``): each request pops one, if any:

| fault | what the server does |
|---|---|
| ``"status:429"`` / ``"status:500"`` / ``"status:400"`` | that HTTP error (429 carries ``Retry-After: 0``) |
| ``"malformed"`` | HTTP 200 with a body that is not JSON |
| ``"no_choices"`` | HTTP 200 with ``"choices": []`` |
| ``"sleep:S"`` | waits S seconds, then answers normally |
| ``"garbage_args"`` | the reply's first tool call gets arguments ``{not json`` |
| ``"unknown_tool"`` | the reply calls ``get_weather`` |
| ``"wrong_type"`` | the reply calls ``get_prices`` with ``lookback="ten"`` |
| ``"no_action"`` | a text reply with no action and no tool call |
| ``"long"`` | a text reply of 20,000 characters ending ``Action: BUY`` |
| ``"text:X"`` | a text reply ``Thinking...\\nAction: X`` |
| ``"huge:N"`` | a text reply of N characters ending ``Action: BUY`` |
| ``"gzip:N"`` | the same reply of N characters, gzip-compressed (``Content-Encoding: gzip``) |
| ``"no_usage"`` | the reply reports no token usage (an endpoint that does not count tokens) |
| ``"endless"`` | HTTP 200 with no ``Content-Length``, then a JSON body that never ends (written until the client hangs up or 64 MiB; ``server.sent`` counts the bytes) |

Token usage is reported as characters / 4 of the request and the reply.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from finenvs.evaluation.agents import ScriptedRouter
from finenvs.text.chat import ToolCall


class ChatServer:
    """Start with ``with ChatServer() as server: server.base_url``."""

    def __init__(self, agent: Any = None) -> None:
        self.agent = agent or ScriptedRouter()
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.sent = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # a client that stopped reading (a body over its cap)
                    pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                               .encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:
                    outer.requests.append(body)
                    fault = outer.faults.popleft() if outer.faults else None
                if fault == "endless":
                    self._endless()
                    return
                status, payload, headers = outer.respond(body, fault)
                self._send(status, payload, headers)

            def _endless(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()  # HTTP/1.0 and no length: the body ends when the connection does
                chunk = b'{"id": "x", "choices": [{"message": {"role": "assistant", "content": "' + b"x" * 65_536
                try:
                    while outer.sent < 64 * 2**20:
                        self.wfile.write(chunk)
                        outer.sent += len(chunk)
                        chunk = b"x" * 65_536
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------ replies
    def respond(self, body: dict[str, Any], fault: str | None) -> tuple[int, bytes, dict[str, str]]:
        if fault and fault.startswith("status:"):
            status = int(fault.split(":")[1])
            headers = {"Retry-After": "0"} if status == 429 else {}
            return status, json.dumps({"error": {"message": f"injected {status}", "type": "test"}}).encode(), headers
        if fault == "malformed":
            return 200, b"this is not json {", {}
        if fault == "no_choices":
            return 200, json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
                                    "choices": []}).encode(), {}
        if fault and fault.startswith("sleep:"):
            time.sleep(float(fault.split(":")[1]))
        messages, tools = body.get("messages", []), body.get("tools", [])
        reply = self.agent.reply(messages, tools)
        content, calls = reply.content, list(reply.tool_calls)
        if fault == "garbage_args" and calls:
            calls[0] = ToolCall(calls[0].id, calls[0].name, "{not json")
        elif fault == "unknown_tool":
            content, calls = None, [ToolCall("call_x", "get_weather", '{"city": "Paris"}')]
        elif fault == "wrong_type":
            content, calls = None, [ToolCall("call_x", "get_prices", '{"lookback": "ten"}')]
        elif fault == "no_action":
            content, calls = "I think the market is interesting today.", []
        elif fault == "long":
            content, calls = "x" * 20_000 + "\nAction: BUY", []
        elif fault and fault.startswith("text:"):
            content, calls = f"Thinking...\nAction: {fault.split(':', 1)[1]}", []
        elif fault and fault.startswith(("huge:", "gzip:")):
            content, calls = "x" * (int(fault.split(":")[1]) - len("\nAction: BUY")) + "\nAction: BUY", []
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [c.message() for c in calls]
        prompt_chars = len(json.dumps(messages)) + len(json.dumps(tools))
        completion_chars = len(json.dumps(message))
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4,
                      "total_tokens": prompt_chars // 4 + completion_chars // 4},
        }
        if fault == "no_usage":
            del payload["usage"]
        if fault and fault.startswith("gzip:"):
            return 200, gzip.compress(json.dumps(payload).encode()), {"Content-Encoding": "gzip"}
        return 200, json.dumps(payload).encode(), {}
