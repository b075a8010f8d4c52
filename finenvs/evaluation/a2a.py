"""Agent-to-Agent (A2A) protocol: evaluate a remote A2A agent, or serve any chat agent over A2A.

:class:`A2AChatAgent` is a chat agent (``name``, ``describe()``, ``async
complete(messages, tools)``) that asks a remote agent speaking Google's A2A
protocol (spec 1.0 over JSON-RPC or HTTP+JSON; 0.3 agents through the SDK's
compatibility layer). :func:`a2a_app` and :func:`serve_a2a` do the reverse:
they expose any chat agent (a model endpoint, an offline scripted agent) as an
A2A agent. Both need the ``a2a`` extra (``pip install 'finenvs[a2a]'``).

finenvs' wire convention. Each ``complete()`` sends ONE message (role user, no
task or context id: every request is stateless) with two parts:

* a text part: the conversation's new content (everything after the last
  assistant turn) as readable text: the system and user prompts of a fresh
  decision, ``Result of <tool>:`` blocks with each tool result's JSON in a
  follow-up round. A generic text-only agent answers in text (a reply ending
  ``Action: BUY``), which the env's text protocol reads;
* a data part ``{"finenvs": 1, "messages": [...], "tools": [...]}``: the full
  chat-completions messages and tool specs, so that a finenvs-aware agent can
  act statelessly with tool calls.

The reply is the agent's Message or, when it answers with a Task, that Task
once in a terminal state (polled until then): its artifacts' parts, or its
status message's when it has no artifacts. The text parts, joined with
newlines, are the content; a data part ``{"tool_calls": [{"id", "name",
"arguments"}], "usage": {"prompt_tokens", "completion_tokens"},
"finish_reason", "model"}`` (every key optional; ids are made up when missing,
object arguments are dumped to JSON text) carries tool calls and token usage
(None, reported n/a, when absent).

Failures are :class:`~finenvs.evaluation.endpoints.EndpointError`: connection
failures, timeouts, HTTP 408/409/429/5xx, the SDK's internal errors and a
``failed`` task are ``transient``; a reply of any other shape, or over the reply cap every transport shares
(:data:`finenvs.text.protocol.MAX_REPLY_CHARS` characters of text and tool calls; an HTTP body over
:data:`~finenvs.evaluation.endpoints.MAX_REPLY_BYTES` bytes is not read further), is ``malformed``, with its size and
first characters, never the reply; anything else (other
HTTP errors, a rejected or canceled task, a task asking for input) is
``permanent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from finenvs.evaluation.endpoints import (
    MAX_REPLY_BYTES,
    TRANSIENT_STATUS,
    EndpointError,
    ReplyBodyTooLarge,
    body_limit_hook,
    oversize_error,
    tls_context,
)
from finenvs.text.chat import ChatAgent, ChatReply, ToolCall
from finenvs.text.protocol import MAX_REPLY_CHARS

#: Version of finenvs' data part (the value of its ``"finenvs"`` key).
WIRE_VERSION = 1
#: Id of the one skill in the Agent Card of a served agent.
SKILL_ID = "finenvs-agent"
_TOOLS_NOTE = (
    "(finenvs-aware agents: the full chat and the tools ({names}) are in this message's data part. "
    "Text-only agents: answer in text, ending with one line 'Action: <decision>'.)"
)


def _sdk() -> None:
    try:
        import a2a  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("A2A support needs the a2a-sdk package: pip install 'finenvs[a2a]'") from exc


def _short(text: Any, limit: int = 300) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(value: Any) -> Any:
    """JSON from a protobuf ``Value``, with whole numbers back to ints (``Value`` stores doubles)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _parts(parts: Any) -> tuple[list[str], list[Any]]:
    """``(texts, data objects)`` of A2A parts; file and URL parts are ignored."""
    from google.protobuf.json_format import MessageToDict

    texts = [p.text for p in parts if p.HasField("text")]
    return texts, [_plain(MessageToDict(p.data)) for p in parts if p.HasField("data")]


# ---------------------------------------------------------------------------- the wire convention
def render_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The conversation's new content (after the last assistant turn) as text for a text-only agent."""
    start = max((i + 1 for i, m in enumerate(messages) if m.get("role") == "assistant"), default=0)
    names = {c.get("id"): (c.get("function") or {}).get("name")
             for m in messages for c in m.get("tool_calls") or []}
    blocks = []
    for msg in messages[start:]:
        content = msg.get("content")
        content = content if isinstance(content, str) else json.dumps(content)
        if msg.get("role") == "tool":
            content = f"Result of {names.get(msg.get('tool_call_id')) or 'a tool'}:\n{content}"
        blocks.append(content)
    if tools:
        names_offered = ", ".join(str((t.get("function") or {}).get("name")) for t in tools)
        blocks.append(_TOOLS_NOTE.format(names=names_offered))
    return "\n\n".join(b for b in blocks if b) or "(no new content)"


def request_message(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """The A2A message (text part + finenvs data part) of one ``complete()`` call."""
    from a2a.helpers import new_data_part, new_message, new_text_part
    from a2a.types import Role

    data = new_data_part({"finenvs": WIRE_VERSION, "messages": messages, "tools": tools})
    return new_message([new_text_part(render_text(messages, tools)), data], role=Role.ROLE_USER)


def chat_request(message: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(messages, tools)`` of a request: its finenvs data part, else its text as one user message.

    Raises:
        ValueError: The finenvs data part lacks its ``messages`` and ``tools`` lists.
    """
    texts, data = _parts(message.parts if message is not None else [])
    for item in data:
        if isinstance(item, dict) and "finenvs" in item:
            messages, tools = item.get("messages"), item.get("tools") or []
            if not (isinstance(messages, list) and isinstance(tools, list)
                    and all(isinstance(m, dict) for m in messages + tools)):
                raise ValueError("the finenvs data part needs 'messages' and 'tools' lists of objects")
            return messages, tools
    return [{"role": "user", "content": "\n".join(texts)}], []


def reply_parts(reply: ChatReply) -> list[Any]:
    """A chat reply as A2A parts: its text (if any) and a data part with its tool calls and usage."""
    from a2a.helpers import new_data_part, new_text_part

    data: dict[str, Any] = {
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
        "usage": reply.usage,
    }
    for key in ("finish_reason", "model"):
        if getattr(reply, key) is not None:
            data[key] = getattr(reply, key)
    return ([new_text_part(reply.content)] if reply.content is not None else []) + [new_data_part(data)]


def reply_from_parts(parts: Any) -> ChatReply:
    """Read a remote agent's reply parts.

    Raises:
        EndpointError: ``malformed`` for anything but the documented shape.
    """
    texts, data = _parts(parts)
    content = "\n".join(texts) if texts else None
    calls: list[ToolCall] = []
    usage: dict[str, int] | None = None
    extra: dict[str, str | None] = {"finish_reason": None, "model": None}
    for item in data:
        if not isinstance(item, dict):
            raise EndpointError("malformed", f"a data part is not an object: {_short(json.dumps(item), 100)}")
        raw_calls = item.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise EndpointError("malformed", f"tool_calls is not a list: {_short(json.dumps(raw_calls), 80)}")
        calls += [_tool_call(c, len(calls) + k) for k, c in enumerate(raw_calls)]
        if item.get("usage") is not None:
            usage = _usage(item["usage"])
        for key in extra:
            if item.get(key) is not None:
                if not isinstance(item[key], str):
                    raise EndpointError("malformed", f"{key} is not a string")
                extra[key] = _short(item[key], 200)
    if content is None and not calls:
        raise EndpointError("malformed", "the reply has no text and no tool calls")
    reply = ChatReply(content, calls, usage, extra["finish_reason"], extra["model"])
    too_long = oversize_error(reply)
    if too_long is not None:
        raise too_long
    return reply


def _tool_call(raw: Any, index: int) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise EndpointError("malformed", f"a tool call needs a name: {_short(json.dumps(raw), 100)}")
    name, arguments, call_id = _short(raw["name"], 200), raw.get("arguments", {}), raw.get("id")
    if not isinstance(arguments, str):
        if not isinstance(arguments, (dict, list)):
            raise EndpointError("malformed", f"arguments of {name[:60]} are neither JSON text nor an object")
        arguments = json.dumps(arguments)
    return ToolCall(_short(call_id, 200) if isinstance(call_id, str) and call_id else f"a2a_call_{index}",
                    name, arguments)


def _usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        raise EndpointError("malformed", "usage is not an object")
    usage = {k: raw[k] for k in ("prompt_tokens", "completion_tokens") if raw.get(k) is not None}
    for key, value in usage.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise EndpointError("malformed", f"usage.{key} is not a whole number >= 0")
    return usage or None


# ---------------------------------------------------------------------------- client
class A2AChatAgent:
    """A remote A2A agent as a chat agent, speaking finenvs' wire convention (see the module docstring).

    Args:
        url: Base URL of the agent; its Agent Card is read from ``/.well-known/agent-card.json``.
        timeout: Seconds per ``complete()`` call (card, request and task polling included).
        name: Name in run files. None reads the card now (a blocking request; raises
            :class:`EndpointError` when it cannot be read) and takes the card's name; with a
            name, the card is read on first use.

    Requires the ``a2a`` extra (``pip install 'finenvs[a2a]'``).
    """

    def __init__(self, url: str, *, timeout: float = 60.0, name: str | None = None) -> None:
        _sdk()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url={url!r} must be an http(s) URL of an A2A agent")
        if not float(timeout) > 0:
            raise ValueError(f"timeout={timeout!r} must be > 0")
        from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

        self.url = url
        self.card_url = parts._replace(path=parts.path.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH).geturl()
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        port = f":{parts.port}" if parts.port else ""
        #: the URL without credentials or query (tokens): what run files and error messages show
        self.public_url = f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")
        self.timeout = float(timeout)
        self._card: Any = None
        if name is None:
            import httpx

            try:
                with httpx.Client(timeout=self.timeout, verify=tls_context(httpx)) as http, http.stream("GET", self.card_url) as response:
                    response.raise_for_status()
                    body = bytearray()
                    for chunk in response.iter_bytes():  # decompressed; read no further than the cap
                        body += chunk
                        if len(body) > MAX_REPLY_BYTES:
                            raise ReplyBodyTooLarge(None)
                    self._card = _read_card(httpx.Response(response.status_code, content=bytes(body),
                                                          request=response.request))
            except Exception as exc:
                raise _endpoint_error(exc, self.public_url) from exc
        self.name = name if name is not None else (_short(self._card.name, 100) or "a2a-agent")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "a2a", "url": self.public_url, "name": self.name,
                               "timeout": self.timeout}
        if self._card is not None:
            out.update(card_name=_short(self._card.name, 100), card_version=_short(self._card.version, 100))
        return out

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        try:
            return await asyncio.wait_for(self._complete(messages, tools), timeout=self.timeout)
        except EndpointError:
            raise
        except asyncio.TimeoutError as exc:
            raise EndpointError("transient", f"no reply within {self.timeout:g} s") from exc
        except Exception as exc:
            raise _endpoint_error(exc, self.public_url) from exc

    async def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        import httpx
        from a2a.client import ClientConfig, ClientFactory
        from a2a.types import GetTaskRequest, SendMessageRequest, TaskState

        # A client per call: run_llm opens a new event loop per run, and httpx clients are bound to theirs.
        async with httpx.AsyncClient(timeout=self.timeout, verify=tls_context(httpx),
                                     event_hooks={"response": [body_limit_hook(httpx)]}) as http:
            if self._card is None:
                self._card = _read_card(await http.get(self.card_url))
            config = ClientConfig(httpx_client=http, streaming=False,
                                  supported_protocol_bindings=["JSONRPC", "HTTP+JSON"])
            try:
                client = ClientFactory(config).create(self._card)
            except ValueError as exc:
                raise EndpointError("permanent", f"the agent card offers no JSON-RPC or HTTP+JSON "
                                                 f"interface: {_short(exc, 200)}") from exc
            result = None
            request = SendMessageRequest(message=request_message(messages, tools))
            async for event in client.send_message(request):
                result = event
            if result is not None and result.HasField("message"):
                return reply_from_parts(result.message.parts)
            if result is None or not result.HasField("task"):
                raise EndpointError("malformed", "the reply is neither a message nor a task")
            task = result.task
            while task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING):
                await asyncio.sleep(0.2)
                task = await client.get_task(GetTaskRequest(id=task.id))
        state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower()
        if state != "completed":
            said = _short(" ".join(_parts(task.status.message.parts)[0]), 200)
            kind = "transient" if state == "failed" else "permanent"
            raise EndpointError(kind, f"the agent's task ended {state}: {said}")
        return reply_from_parts([p for a in task.artifacts for p in a.parts] or task.status.message.parts)


def _read_card(response: Any) -> Any:
    from a2a.client.card_resolver import parse_agent_card

    response.raise_for_status()
    return parse_agent_card(response.json())


def _endpoint_error(exc: BaseException, url: str) -> EndpointError:
    """Classify an SDK, HTTP or parsing failure, walking the exception's causes."""
    import httpx
    from a2a.client.errors import A2AClientError
    from a2a.utils.errors import A2A_ERROR_MAPPING, A2AError
    from google.protobuf.json_format import Error as ProtoJsonError

    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 10:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    message = _short(f"{type(exc).__name__}: {exc}")

    def kind(status: int) -> str:
        return "transient" if status in TRANSIENT_STATUS or status >= 500 else "permanent"

    for err in chain:
        if isinstance(err, EndpointError):  # ours, raised inside the SDK (a body over the cap)
            return err
        if isinstance(err, (httpx.TimeoutException, asyncio.TimeoutError)):
            return EndpointError("transient", f"timed out talking to {url}")
        if isinstance(err, httpx.RequestError):
            return EndpointError("transient", f"cannot reach {url}: {_short(err, 200)}")
        if isinstance(err, httpx.HTTPStatusError):
            status = err.response.status_code
            retry_after = None
            with contextlib.suppress(TypeError, ValueError):
                retry_after = max(0.0, float(err.response.headers.get("retry-after")))
            said = _short(err.response.reason_phrase, 100)  # not httpx's message: it shows the URL's query
            return EndpointError(kind(status), f"{said} from {url}", status=status, retry_after=retry_after)
        # a JSON-RPC/REST error: its kind from the SDK's HTTP equivalent
        if isinstance(err, A2AError) and type(err) in A2A_ERROR_MAPPING:
            return EndpointError(kind(A2A_ERROR_MAPPING[type(err)].http_code), message)
    if isinstance(exc, (A2AClientError, ProtoJsonError, ValueError, TypeError, KeyError, AttributeError)):
        return EndpointError("malformed", f"unreadable reply: {message}")
    return EndpointError("permanent", message)


# ---------------------------------------------------------------------------- server
def a2a_app(agent: Any, *, url: str, name: str | None = None, description: str | None = None) -> Any:
    """A Starlette app serving ``agent`` over A2A: JSON-RPC at ``/``, the Agent Card at the well-known path.

    Args:
        agent: A chat agent (``name``, ``describe()``, ``async complete(messages, tools)``),
            answered with finenvs' wire convention; or an ``a2a`` ``AgentExecutor``, served as is.
        url: The URL clients reach the app at (written into the card).
        name: Card name (default: the agent's ``name``).
        description: Card description.
    """
    _sdk()
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    from finenvs import __version__

    executor = agent if isinstance(agent, AgentExecutor) else chat_executor(agent)
    name = name or str(getattr(agent, "name", None) or type(agent).__name__)
    skill = AgentSkill(
        id=SKILL_ID, name="finenvs agent", tags=["finenvs", "finance"],
        description="Acts in finenvs environments: reads the chat and the tools of a finenvs data part and "
                    "replies with text and/or tool calls; plain text is read as one user message.",
    )
    card = AgentCard(
        name=name,
        description=description or f"{name}: a finenvs chat agent served over A2A",
        version=__version__,
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url)],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[skill],
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def chat_executor(agent: ChatAgent) -> Any:
    """An ``a2a`` ``AgentExecutor`` answering each message with one ``agent.complete`` (wire convention)."""
    from a2a.helpers import new_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.utils.errors import InvalidParamsError, TaskNotCancelableError

    class ChatAgentExecutor(AgentExecutor):
        async def execute(self, context: Any, event_queue: Any) -> None:
            try:
                messages, tools = chat_request(context.message)
            except ValueError as exc:
                raise InvalidParamsError(str(exc)) from exc
            reply = await agent.complete(messages, tools)
            await event_queue.enqueue_event(new_message(reply_parts(reply), context_id=context.context_id))

        async def cancel(self, context: Any, event_queue: Any) -> None:
            raise TaskNotCancelableError("a chat reply is a single message; there is nothing to cancel")

    return ChatAgentExecutor()


@contextlib.contextmanager
def serve_a2a(agent: Any, host: str = "127.0.0.1", port: int = 0, **app_kwargs: Any) -> Iterator[str]:
    """Serve ``agent`` (see :func:`a2a_app`) with uvicorn in a background thread; yields the base URL.

    Args:
        agent: A chat agent or an ``a2a`` ``AgentExecutor``.
        host: Interface to bind (this machine only by default).
        port: Port (0: a free one).
        app_kwargs: ``name`` and ``description`` for :func:`a2a_app`.

    Raises:
        RuntimeError: The server did not start within 10 s.
    """
    _sdk()
    import uvicorn

    sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    bound = sock.getsockname()[1]
    base = f"http://{f'[{host}]' if ':' in host else host}:{bound}"
    try:
        app = a2a_app(agent, url=base + "/", **app_kwargs)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"a2a-{bound}",
                                  daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10.0
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the A2A server on {base} did not start")
                time.sleep(0.01)
            yield base
        finally:
            server.should_exit = True
            thread.join(timeout=10.0)
    finally:
        sock.close()


__all__ = ["MAX_REPLY_CHARS", "SKILL_ID", "WIRE_VERSION", "A2AChatAgent", "a2a_app", "chat_executor",
           "chat_request", "render_text", "reply_from_parts", "reply_parts", "request_message", "serve_a2a"]
