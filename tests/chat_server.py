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

``ChatServer(AgentCliRouter())`` is the same "model" for an agent CLI (opencode) playing through ``finenvs
harness``: see :class:`AgentCliRouter`. ``python tests/chat_server.py [--agent-cli] [--port N]`` serves either
until interrupted.
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


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


class AgentCliRouter:
    """The scripted router as the model behind an agent CLI that plays through ``finenvs harness`` (opencode).

    The CLI sends its own system prompt and tools, prefixes the MCP server's tools with the server's name
    (``finenvs_commit_action``), passes the harness's prompt file after a note, and asks for session titles in
    requests of its own. This router finds the env's prompt (the line ``# <env id>``) in the user messages, shows
    the family's scripted agent only the finenvs tools under their own names, maps its calls back to the names the
    CLI offered, commits a text reply through ``commit_action`` (as ``tests/harness_agent.py`` does), and after the
    commit answers in text so that the CLI ends its turn. A request with no env prompt (a title) gets a short text.
    """

    name = "agent-cli-router"

    def __init__(self, server_name: str = "finenvs") -> None:
        self.prefix = server_name + "_"
        self.router = ScriptedRouter()

    def describe(self) -> dict[str, Any]:
        return {"kind": self.name}

    def _bare(self, name: str) -> str:
        return name[len(self.prefix):] if name.startswith(self.prefix) else name

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        from finenvs.text.chat import NO_USAGE, ChatReply

        offered = {self._bare(t["function"]["name"]): t for t in tools or [] if t.get("function", {}).get("name")}
        start = prompt = None
        for k, m in enumerate(messages):
            text = _text(m.get("content")) if m.get("role") == "user" else ""
            at = text.find("\n# Fin") + 1 if not text.startswith("# Fin") else 0
            if text.startswith("# Fin") or at > 0:
                start, prompt = k, text[at:]
                break
        if prompt is None or "commit_action" not in offered:  # a title request, or no finenvs tools
            return ChatReply("finenvs decision", usage=dict(NO_USAGE))
        conversation: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for m in messages[start + 1:]:
            if m.get("role") == "assistant":
                calls = [{**c, "function": {**c["function"], "name": self._bare(c["function"]["name"])}}
                         for c in m.get("tool_calls") or []]
                if any(c["function"]["name"] == "commit_action" for c in calls):
                    return ChatReply("Committed.", usage=dict(NO_USAGE))  # the decision is made: end the turn
                conversation.append({**m, "content": _text(m.get("content")), "tool_calls": calls} if calls
                                    else {**m, "content": _text(m.get("content"))})
            elif m.get("role") == "tool":
                conversation.append({**m, "content": _text(m.get("content"))})
        prefixed = any(t["function"]["name"].startswith(self.prefix) for t in offered.values())
        own = [{"type": "function", "function": {**t["function"], "name": bare}} for bare, t in offered.items()
               if bare != "get_observation" and (t["function"]["name"] != bare or not prefixed)]
        reply = self.router.reply(conversation, own)
        calls = list(reply.tool_calls)
        if not calls:  # a text reply is committed under the commit schema's one text field
            schema = offered["commit_action"]["function"].get("parameters") or {}
            field = next((k for k in ("report", "answer", "action") if k in schema.get("properties", {})), "action")
            calls = [ToolCall("call_text_commit", "commit_action", json.dumps({field: reply.content or ""}))]
        names = {bare: t["function"]["name"] for bare, t in offered.items()}
        return ChatReply(None, [ToolCall(c.id, names.get(c.name, c.name), c.arguments) for c in calls],
                         usage=dict(NO_USAGE))

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return self.reply(messages, tools)


class ChatServer:
    """Start with ``with ChatServer() as server: server.base_url``."""

    def __init__(self, agent: Any = None, port: int = 0) -> None:
        self.agent = agent or ScriptedRouter()
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.sent = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            # headers and body go out in separate writes: on a kept-alive (HTTP/1.1) connection Nagle's algorithm
            # then holds the body for the client's delayed ACK, 40 ms a request
            disable_nagle_algorithm = True

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

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
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


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="serve the scripted model on 127.0.0.1 until interrupted")
    parser.add_argument("--agent-cli", action="store_true", help="the model for an agent CLI (AgentCliRouter)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ChatServer(AgentCliRouter() if args.agent_cli else None, port=args.port)
    with server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
