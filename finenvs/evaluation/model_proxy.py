"""A small OpenAI-compatible proxy in front of a chat-completions endpoint, for agent programs that stream.

Agent CLIs such as opencode send every chat request with ``stream: true``, and with no ``tool_choice`` or
``"auto"``. A plain local server (llama-cpp-python's, for one) then offers the model no tools, lets a small model
answer in prose, or cannot stream a tool call. The proxy sits between the program and the model server:

* ``POST .../chat/completions`` goes to the upstream endpoint **non-streaming**; when the request carries tools
  and its ``tool_choice`` is absent or ``"auto"``, the proxy sets its own (``"required"`` by default, or
  ``"auto"``); a client's ``"none"`` or named function is kept.
* When the client asked for ``stream: true``, the upstream's one reply is re-emitted as a valid server-sent event
  stream: a role chunk, the content, each tool call (id, name, arguments), the finish reason, the usage (when the
  client asked ``stream_options.include_usage``), then ``data: [DONE]``.
* ``GET .../models`` passes through.

What the program sends is hostile input: the request body is read only with a ``Content-Length`` of at most
``max_body_bytes``; a body that is not a JSON object, an unknown path or method, an upstream that cannot be reached
or answers with something that is not a chat completion all get a short JSON error (4xx for the client's fault, 502
or 504 for the upstream's) that names the problem without echoing the input. The upstream's reply is read at most
``max_reply_bytes``.

``finenvs harness --model-proxy UPSTREAM_URL`` starts one for a run and gives the agent program its address (the
``{model_url}`` placeholder and the ``FINENVS_MODEL_URL`` variable); ``finenvs llm --model-proxy UPSTREAM_URL
--model NAME`` starts one for its own endpoint agent (:class:`ProxiedAgent`). In schema mode both force the
episodes' constrained commit schemas (:func:`constrained_tools`). :class:`ModelProxy` is the same in Python::

    with ModelProxy("http://127.0.0.1:8080/v1") as proxy:
        proxy.base_url    # http://127.0.0.1:PORT/v1, the endpoint to give the program
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from finenvs.errors import FinEnvsError

#: Largest request body the proxy reads (an agent CLI's request holds its whole conversation and tool schemas).
MAX_BODY_BYTES = 16 * 2**20
#: Largest upstream reply the proxy reads.
MAX_REPLY_BYTES = 16 * 2**20
#: Characters of an upstream error's message passed on to the client.
ERROR_CHARS = 500
#: The ``tool_choice`` values the proxy can set on a request with tools (in place of none or ``"auto"``); ``"schema"``
#: asks the upstream for one JSON object of a schema made from the tools instead (:func:`schema_request`).
TOOL_CHOICES = ("required", "auto", "schema")


def constrained_for(name: str, constrained: Mapping[str, dict[str, Any]] | None) -> dict[str, Any] | None:
    """The schema ``constrained`` gives the tool ``name``: under that name, or under the name after an agent CLI's
    MCP prefix (opencode offers ``commit_action`` of the server ``finenvs`` as ``finenvs_commit_action``)."""
    if not constrained:
        return None
    if name in constrained:
        return constrained[name]
    return next((schema for key, schema in constrained.items() if name.endswith("_" + key)), None)


def _free_text(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string" and "enum" not in schema \
        and "const" not in schema


def grammar_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters as schema mode forces them: its optional free-text fields left out (a small model spends
    its whole ``max_tokens`` inside one, such as a commit's ``reasoning``, and JSON cut off there is no call at
    all); required fields, enums, numbers and nested objects as the tool says."""
    props, required = params.get("properties"), params.get("required")
    if not isinstance(props, dict):
        return params
    needed = set(required) if isinstance(required, list) else set()
    kept = {k: v for k, v in props.items() if k in needed or not _free_text(v)}
    return {**params, "properties": kept} if kept and len(kept) < len(props) else params


def schema_request(body: dict[str, Any], constrained: Mapping[str, dict[str, Any]] | None = None
                   ) -> dict[str, Any] | None:
    """``body`` asking for a tool call as constrained JSON, for servers that parse no tool call from a small model.

    The tools and ``tool_choice`` are taken out and ``response_format`` asks for one object ``{"name": <a tool's
    name>, "arguments": <that tool's parameters>}`` (JSON schema ``anyOf`` over the tools), which llama.cpp's server
    and others turn into a grammar: the reply can only be a call of an offered tool. ``constrained`` gives, per tool
    name, the parameters to force instead of the ones the tool advertises (:func:`constrained_tools`: an enum the
    prompt leaves out to save tokens costs none in a grammar); optional free text is left out
    (:func:`grammar_parameters`). None when no tool has a name.
    """
    options = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        name, params = function.get("name"), function.get("parameters")
        if not isinstance(name, str) or not name:
            continue
        forced = constrained_for(name, constrained)
        if forced is not None:
            params = forced
        params = grammar_parameters(params) if isinstance(params, dict) and params.get("properties") else {
            "type": "object"}
        options.append({"type": "object", "properties": {"name": {"const": name}, "arguments": params},
                        "required": ["name", "arguments"]})
    if not options:
        return None
    out = {k: v for k, v in body.items() if k not in ("tools", "tool_choice", "parallel_tool_calls")}
    out["response_format"] = {"type": "json_schema",
                              "json_schema": {"name": "tool_call", "schema": {"anyOf": options}}}
    return out


def tool_call_reply(reply: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """A reply to :func:`schema_request` with each choice whose content is ``{"name", "arguments"}`` of a tool in
    ``names`` made a ``tool_calls`` message (finish reason ``tool_calls``); any other content stays text."""
    for k, choice in enumerate(_list(reply.get("choices"))):
        message = _dict(choice.get("message")) if isinstance(choice, dict) else {}
        content = message.get("content")
        try:
            call = json.loads(content) if isinstance(content, str) else None
        except ValueError:
            continue
        if not (isinstance(call, dict) and call.get("name") in names and isinstance(call.get("arguments"), dict)):
            continue
        choice["message"] = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}_{int(time.time() * 1000) % 10**9}", "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]}
        choice["finish_reason"] = "tool_calls"
    return reply


def constrained_tools(episodes: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Per tool name, the parameters schema mode forces in place of the advertised ones, for a run of ``episodes``
    (:class:`~finenvs.tasks.EpisodeSpec`): each distinct env's own text protocol says it
    (:meth:`~finenvs.text.protocol.TextProtocol.commit_constrained`, where it differs from what the commit tool
    advertises). A tool whose episodes disagree is left out: each request keeps what its tool advertises."""
    from finenvs.evaluation.envpool import make_base_env
    from finenvs.tools.registry import COMMIT_TOOL

    seen: set[str] = set()
    schemas: list[dict[str, Any] | None] = []
    for spec in episodes:
        key = spec.env_id + json.dumps(spec.env_kwargs, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        env = make_base_env(spec)
        try:
            base: Any = env.unwrapped  # a family's env: it has a text protocol
            protocol = base.text_protocol
            forced = protocol.commit_constrained()
            schemas.append(None if forced == protocol.commit_advertised() else forced)
        finally:
            env.close()
    if not schemas or schemas[0] is None or any(s != schemas[0] for s in schemas[1:]):
        return {}
    return {COMMIT_TOOL: schemas[0]}


class ProxyError(FinEnvsError):
    """The proxy cannot start (a bad upstream URL, an option out of range)."""


def _error(status: int, message: str, kind: str = "invalid_request_error") -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "code": status}}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def sse_events(reply: dict[str, Any], include_usage: bool = False) -> list[dict[str, Any]]:
    """A non-streamed chat completion as the chunks of a stream (``chat.completion.chunk`` objects).

    The first chunk carries the role, then the content (one chunk), then each tool call in one chunk (its index, id,
    name and whole arguments), then the finish reason; with ``include_usage`` a last chunk with no choices carries the
    usage, as OpenAI's API sends it.
    """
    head = {"id": str(reply.get("id") or "chatcmpl-proxy"), "object": "chat.completion.chunk",
            "created": reply.get("created") if isinstance(reply.get("created"), int) else int(time.time()),
            "model": str(reply.get("model") or "")}
    chunks: list[dict[str, Any]] = []
    for position, choice in enumerate(_list(reply.get("choices"))):
        if not isinstance(choice, dict):
            continue
        index = choice["index"] if isinstance(choice.get("index"), int) else position
        message = _dict(choice.get("message"))

        def chunk(delta: dict[str, Any], finish: str | None = None, index: int = index) -> dict[str, Any]:
            return {**head, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        chunks.append(chunk({"role": "assistant", "content": ""}))
        for field in ("reasoning_content", "content"):
            text = message.get(field)
            if isinstance(text, str) and text:
                chunks.append(chunk({field: text}))
        calls = _list(message.get("tool_calls"))
        for n, call in enumerate(c for c in calls if isinstance(c, dict)):
            function = _dict(call.get("function"))
            arguments = function.get("arguments")
            if not isinstance(arguments, str):  # some servers send the arguments as an object
                arguments = json.dumps(arguments if arguments is not None else {})
            chunks.append(chunk({"tool_calls": [{
                "index": n, "id": str(call.get("id") or f"call_{n}"), "type": "function",
                "function": {"name": str(function.get("name") or ""), "arguments": arguments}}]}))
        finish = choice.get("finish_reason")
        if not isinstance(finish, str) or not finish:
            finish = "tool_calls" if calls else "stop"
        chunks.append(chunk({}, finish))
    if include_usage and isinstance(reply.get("usage"), dict):
        chunks.append({**head, "choices": [], "usage": reply["usage"]})
    return chunks


def sse_body(reply: dict[str, Any], include_usage: bool = False) -> bytes:
    """The ``text/event-stream`` body of :func:`sse_events`, ending ``data: [DONE]``."""
    lines = [f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n" for chunk in sse_events(reply, include_usage)]
    return ("".join(lines) + "data: [DONE]\n\n").encode("utf-8")


class ModelProxy:
    """The proxy on ``host:port`` (port 0: a free one) in daemon threads; see the module docstring.

    Args:
        upstream: The upstream endpoint's base URL (``http://127.0.0.1:8080/v1``); ``/chat/completions`` and
            ``/models`` are appended.
        tool_choice: Set on a request that has tools and a ``tool_choice`` that is absent or ``"auto"``:
            ``"required"`` (the model must call a tool: an agent program's decision is a ``commit_action`` call) or
            ``"auto"``; or ``"schema"``: such a request asks the upstream for one JSON object naming a tool and its
            arguments (:func:`schema_request`), and the reply comes back as that tool call (for a server that
            parses no tool call from a small model). A client's ``"none"`` or named function is kept.
        api_key: Sent upstream as ``Authorization: Bearer ...`` when the client sends no ``Authorization`` of its own.
        timeout: Seconds one upstream request may take.
        max_body_bytes: Largest request body read from a client (413 beyond).
        max_reply_bytes: Largest upstream reply read (502 beyond).
        constrained: In schema mode, the parameters to force per tool name instead of the advertised ones
            (:func:`constrained_tools`); ignored in the other modes, where the model reads the tools as sent.
    """

    def __init__(self, upstream: str, *, tool_choice: str = "required", host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, timeout: float = 600.0, max_body_bytes: int = MAX_BODY_BYTES,
                 max_reply_bytes: int = MAX_REPLY_BYTES,
                 constrained: Mapping[str, dict[str, Any]] | None = None) -> None:
        if not isinstance(upstream, str) or not upstream.startswith(("http://", "https://")):
            raise ProxyError(f"the upstream must be an http:// or https:// URL, not {str(upstream)[:200]!r}")
        if tool_choice not in TOOL_CHOICES:
            raise ProxyError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, not {str(tool_choice)[:40]!r}")
        if not timeout > 0:
            raise ProxyError(f"timeout must be positive, not {timeout!r}")
        self.upstream = upstream.rstrip("/")
        self.tool_choice = tool_choice
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_body_bytes = int(max_body_bytes)
        self.max_reply_bytes = int(max_reply_bytes)
        self.constrained = dict(constrained or {})
        #: requests answered, by what happened (``"streamed"``, ``"json"``, ``"models"``, ``"client_error"``,
        #: ``"upstream_error"``)
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as agent CLIs' HTTP clients expect; every reply has a length

            def log_message(self, *args: Any) -> None:  # the program's requests are not the evaluator's log
                pass

            def do_GET(self) -> None:  # noqa: N802
                proxy._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                proxy._handle(self, "POST")

            def do_PUT(self) -> None:  # noqa: N802
                proxy._handle(self, "PUT")

            def do_DELETE(self) -> None:  # noqa: N802
                proxy._handle(self, "DELETE")

            def do_PATCH(self) -> None:  # noqa: N802
                proxy._handle(self, "PATCH")

        self._httpd = ThreadingHTTPServer((host, int(port)), Handler)
        self._httpd.daemon_threads = True
        self.host, self.port = str(self._httpd.server_address[0]), int(self._httpd.server_address[1])
        self.base_url = f"http://{self.host}:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="finenvs-model-proxy")
        self._started = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ModelProxy:
        if not self._started:
            self._thread.start()
            self._started = True
        return self

    def stop(self) -> None:
        if self._started:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._started = False
        self._httpd.server_close()

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def shown_upstream(self) -> str:
        """The upstream URL as records and messages give it: without its query string."""
        return self.upstream.split("?", 1)[0]

    def describe(self) -> dict[str, Any]:
        """What a run records about the proxy (the upstream's query string and credentials left out)."""
        described: dict[str, Any] = {"upstream": self.shown_upstream, "tool_choice": self.tool_choice,
                                     "counts": dict(self.counts)}
        if self.tool_choice == "schema" and self.constrained:
            described["constrained"] = sorted(self.constrained)
        return described

    # ------------------------------------------------------------------ requests
    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path.split("?", 1)[0].rstrip("/")
        payload: dict[str, Any] | bytes
        try:
            if path.endswith("/chat/completions"):
                if method != "POST":
                    status, payload, content_type = *_error(405, "use POST for chat completions"), None
                else:
                    status, payload, content_type = self._chat(handler)
            elif path.endswith("/models") and method == "GET":
                status, payload, content_type = *self._models(handler), None
            else:
                self._drain(handler)
                status, payload, content_type = *_error(404, "the proxy serves POST /v1/chat/completions and GET "
                                                             "/v1/models only"), None
        except Exception as exc:  # noqa: BLE001 - whatever goes wrong, the client gets an answer, not a reset
            status, payload, content_type = *_error(500, f"the proxy failed: {type(exc).__name__}", "server_error"), None
        if status >= 400 and isinstance(payload, dict):
            self._count("upstream_error" if payload["error"]["type"] == "upstream_error" else "client_error")
        self._send(handler, status, payload, content_type)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any] | bytes,
              content_type: str | None) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", content_type or "application/json")
        handler.send_header("Content-Length", str(len(body)))
        if content_type == "text/event-stream":
            handler.send_header("Cache-Control", "no-cache")
        if handler.close_connection:
            handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # a client that hung up
            pass

    def _drain(self, handler: BaseHTTPRequestHandler) -> None:
        """Read a body the proxy does not use (so a kept-alive connection stays in step), or close the connection."""
        length = handler.headers.get("Content-Length")
        if length is None and handler.headers.get("Transfer-Encoding") is None:
            return
        try:
            size = int(length) if length is not None else -1
        except ValueError:
            size = -1
        if 0 <= size <= self.max_body_bytes:
            handler.rfile.read(size)
        else:
            handler.close_connection = True

    def _read_json(self, handler: BaseHTTPRequestHandler) -> tuple[dict[str, Any] | None, tuple[int, dict] | None]:
        length = handler.headers.get("Content-Length")
        if handler.headers.get("Transfer-Encoding") is not None or length is None:
            handler.close_connection = True
            return None, _error(411, "send the request body with a Content-Length")
        try:
            size = int(length)
        except ValueError:
            size = -1
        if size < 0 or not length.strip().isdigit():
            handler.close_connection = True
            return None, _error(400, "the Content-Length is not a byte count")
        if size > self.max_body_bytes:
            handler.close_connection = True
            return None, _error(413, f"the request body has {size:,} bytes; the limit is {self.max_body_bytes:,}")
        raw = handler.rfile.read(size)
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None, _error(400, "the request body is not JSON (UTF-8)")
        if not isinstance(body, dict):
            return None, _error(400, f"the request body is a JSON {type(body).__name__}, not an object")
        return body, None

    def _headers(self, handler: BaseHTTPRequestHandler) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        auth = handler.headers.get("Authorization")
        if auth:
            headers["Authorization"] = auth
        elif self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _upstream(self, handler: BaseHTTPRequestHandler, path: str, body: bytes | None
                  ) -> tuple[int, dict[str, Any] | None, tuple[int, dict] | None]:
        """One upstream request: ``(status, JSON object, None)`` or ``(0, None, the error to send)``."""
        request = urllib.request.Request(self.upstream + path, data=body, headers=self._headers(handler),
                                         method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - the user's URL
                status, raw = response.status, response.read(self.max_reply_bytes + 1)
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read(self.max_reply_bytes + 1)
            exc.close()
        except TimeoutError:
            return 0, None, _error(504, f"the upstream endpoint did not answer within {self.timeout:g} s", "upstream_error")
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return 0, None, _error(502, f"the upstream endpoint cannot be reached ({type(reason).__name__})",
                                   "upstream_error")
        if len(raw) > self.max_reply_bytes:
            return 0, None, _error(502, f"the upstream reply is over {self.max_reply_bytes:,} bytes", "upstream_error")
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            payload = None
        if status >= 400:  # the upstream's own error, passed on with its status and a bounded message
            message = payload.get("error") if isinstance(payload, dict) else None
            if isinstance(message, dict):
                message = message.get("message")
            text = str(message if message is not None else raw[:ERROR_CHARS].decode("utf-8", "replace"))
            return 0, None, _error(status if status < 600 else 502, f"upstream: {text[:ERROR_CHARS]}",
                                   "upstream_error")
        if not isinstance(payload, dict):
            return 0, None, _error(502, "the upstream reply is not a JSON object", "upstream_error")
        return status, payload, None

    def _chat(self, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any] | bytes, str | None]:
        body, error = self._read_json(handler)
        if error is not None or body is None:
            return *(error or _error(400, "no body")), None
        tools = body.get("tools")
        if tools is not None and not isinstance(tools, list):
            return *_error(400, "tools must be a list"), None
        stream = body.pop("stream", False) is True
        options = body.pop("stream_options", None)
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        body["stream"] = False
        names: set[str] | None = None
        if tools and body.get("tool_choice", "auto") == "auto":
            constrained = schema_request(body, self.constrained) if self.tool_choice == "schema" else None
            if constrained is not None:
                names = {o["properties"]["name"]["const"]
                         for o in constrained["response_format"]["json_schema"]["schema"]["anyOf"]}
                body = constrained
            else:
                body["tool_choice"] = "required" if self.tool_choice == "schema" else self.tool_choice
        _, reply, error = self._upstream(handler, "/chat/completions", json.dumps(body).encode("utf-8"))
        if error is not None or reply is None:
            return *(error or _error(502, "no reply", "upstream_error")), None
        if not isinstance(reply.get("choices"), list):
            return *_error(502, "the upstream reply has no choices", "upstream_error"), None
        if names is not None:
            reply = tool_call_reply(reply, names)
        if stream:
            self._count("streamed")
            return 200, sse_body(reply, include_usage), "text/event-stream"
        self._count("json")
        return 200, reply, None

    def _models(self, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any]]:
        self._drain(handler)
        status, reply, error = self._upstream(handler, "/models", None)
        if error is not None or reply is None:
            return error or _error(502, "no reply", "upstream_error")
        self._count("models")
        return status, reply


class ProxiedAgent:
    """A chat agent whose endpoint is a :class:`ModelProxy` (``finenvs llm --model-proxy``): it answers as ``agent``
    does, and :meth:`describe` records the upstream and the proxy's tool choice instead of the proxy's passing
    address (``--resume`` starts a proxy of its own in front of the recorded upstream)."""

    def __init__(self, agent: Any, proxy: ModelProxy) -> None:
        self.agent = agent
        self.proxy = proxy
        self.name = agent.name

    def describe(self) -> dict[str, Any]:
        upstream = self.proxy.shown_upstream
        return {**self.agent.describe(), "base_url": upstream,
                "model_proxy": {"upstream": upstream, "tool_choice": self.proxy.tool_choice}}

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return await self.agent.complete(messages, tools)


__all__ = ["MAX_BODY_BYTES", "MAX_REPLY_BYTES", "TOOL_CHOICES", "ModelProxy", "ProxiedAgent", "ProxyError",
           "constrained_for", "constrained_tools", "schema_request", "sse_body", "sse_events", "tool_call_reply"]
