"""Model endpoints: any OpenAI-compatible chat-completions server as a chat agent.

:class:`OpenAIChatAgent` asks a server (vLLM, Ollama, llama.cpp server, hosted
APIs) and returns a :class:`~finenvs.text.chat.ChatReply`; endpoint failures
surface as :class:`EndpointError` with a kind the runner acts on:

* ``transient`` — connection refused or reset, timeout, HTTP 408/409/429/5xx:
  retried with backoff;
* ``malformed`` — a 200 reply the client cannot read (not JSON, nested too
  deep, a number too long to convert, no choices) or one over the reply cap:
  recorded as an invalid step, never retried;
* ``permanent`` — any other HTTP error (bad request, auth, unknown model):
  recorded as an invalid step.

Every transport (this one, :mod:`finenvs.evaluation.a2a`, the MCP server) holds a reply to one cap,
:data:`finenvs.text.protocol.MAX_REPLY_CHARS` characters (text plus each tool call's id, name and
arguments). Over HTTP the body is read at most :data:`MAX_REPLY_BYTES` bytes (after decompression), so a
reply of any size costs at most that much memory; a reply over either limit is ``malformed``, and
its error carries its size and the first characters (:data:`~finenvs.text.chat.REPLY_EXCERPT_CHARS`),
never the reply.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from finenvs.text.chat import REPLY_EXCERPT_CHARS, ChatReply, ToolCall
from finenvs.text.protocol import MAX_REPLY_CHARS

TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Longest HTTP reply body read (bytes, decompressed): room for :data:`MAX_REPLY_CHARS` characters written as
#: JSON escapes (up to 12 bytes each) and the envelope of many small tool calls.
MAX_REPLY_BYTES = 32 * MAX_REPLY_CHARS


class EndpointError(Exception):
    """A chat request that failed.

    Attributes:
        kind: ``"transient"``, ``"malformed"`` or ``"permanent"``.
        status: HTTP status when there was one.
        retry_after: Seconds the server asked to wait (``Retry-After``), if any.
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None, retry_after: float | None = None,
                 excerpt: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        #: the first characters of a reply too long to keep (recorded once, with the decision's errors)
        self.excerpt = excerpt

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status else ""
        return f"{self.kind}{status}: {self.args[0]}"


def oversize_error(reply: ChatReply) -> EndpointError | None:
    """The ``malformed`` error of a reply over :data:`~finenvs.text.protocol.MAX_REPLY_CHARS` (its size, the limit
    and its first characters), or None."""
    reason = reply.oversize()
    return None if reason is None else EndpointError("malformed", reason, excerpt=reply.excerpt())


class ReplyBodyTooLarge(EndpointError):
    """An HTTP reply body over :data:`MAX_REPLY_BYTES`: ``malformed``, raised while reading it."""

    def __init__(self, size: int | None, excerpt: str | None = None) -> None:
        what = f"{size:,} bytes" if size is not None else "more bytes"
        super().__init__("malformed", f"the reply body has {what}; the limit is {MAX_REPLY_BYTES:,}", excerpt=excerpt)


@functools.cache
def tls_context(module: Any) -> Any:
    """The default TLS context of an ``httpx`` (or ``httpx2``, ``module``) client, built once per process and shared
    by every client made with ``verify=tls_context(module)``. Building one reads the whole CA bundle (about 30 ms);
    a client per request or per episode would read it every time. The context is the library's own default
    (certifi's bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` as they are when the first client is made)."""
    return module.create_ssl_context()


def body_limit_hook(module: Any, limit: int = MAX_REPLY_BYTES) -> Callable[[Any], Awaitable[None]]:
    """An async ``event_hooks["response"]`` hook for an ``httpx`` (or ``httpx2``, ``module``) client: the body is
    read at most ``limit`` bytes after decompression; beyond them, or when ``Content-Length`` declares more, reading
    stops with :class:`ReplyBodyTooLarge`."""
    stream_class = _limited_stream(module)

    async def hook(response: Any) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ReplyBodyTooLarge(int(declared))
        decoder = None
        get_decoder = getattr(response, "_get_content_decoder", None)
        if response.headers.get("content-encoding") and get_decoder is not None:
            # decompress here, counting what comes out (a small compressed body can inflate to gigabytes), and
            # let the client's own decoding pass the bytes through
            decoder = get_decoder()
            response._decoder = _PassThrough(inspect.isgeneratorfunction(type(decoder).decode))
        response.stream = stream_class(response.stream, limit, decoder)

    return hook


class _PassThrough:
    """A content decoder that leaves bytes as they are (the body was decompressed by the limited stream), in the
    client's decoder API: ``httpx2``'s yields pieces, ``httpx``'s returns bytes."""

    def __init__(self, pieces: bool) -> None:
        self.pieces = pieces

    def decode(self, data: bytes) -> Any:
        return iter((data,)) if self.pieces else data

    def flush(self) -> Any:
        return iter(()) if self.pieces else b""


def _pieces(decoded: Any) -> Any:
    """A decoder's output as pieces of bytes (``httpx2`` decoders yield bounded pieces; ``httpx``'s return bytes)."""
    return (decoded,) if isinstance(decoded, bytes) else decoded


@functools.cache
def _limited_stream(module: Any) -> type:
    class LimitedStream(module.AsyncByteStream):
        def __init__(self, stream: Any, limit: int, decoder: Any) -> None:
            self.stream, self.limit, self.decoder, self.seen, self.head = stream, limit, decoder, 0, b""

        def _count(self, data: bytes) -> bytes:
            self.seen += len(data)
            if len(self.head) < REPLY_EXCERPT_CHARS:
                self.head += data[: REPLY_EXCERPT_CHARS - len(self.head)]
            if self.seen > self.limit:
                raise ReplyBodyTooLarge(None, self.head.decode("utf-8", "replace"))
            return data

        async def __aiter__(self) -> Any:
            async for chunk in self.stream:
                if self.decoder is None:
                    yield self._count(chunk)
                    continue
                for piece in _pieces(self.decoder.decode(chunk)):
                    yield self._count(piece)
            if self.decoder is not None:
                for piece in _pieces(self.decoder.flush()):
                    yield self._count(piece)

        async def aclose(self) -> None:
            await self.stream.aclose()

    return LimitedStream


# ---------------------------------------------------------------------------- endpoint
class OpenAIChatAgent:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        model: Model name the server knows.
        base_url: Server URL ending in ``/v1`` (e.g. ``http://127.0.0.1:8080/v1``).
        api_key_env: Environment variable holding the key; servers that need
            none (llama.cpp, vLLM, Ollama) get a placeholder when it is unset.
            The key is never written to run files.
        timeout: Seconds per request.
        temperature: Sampling temperature (0 = greedy where the server honours it).
        max_tokens: Cap on each reply's tokens (None = server default).
        tool_choice: ``"auto"``, ``"required"`` or ``"none"``, sent with the tools; None
            sends nothing (the spec's default is ``auto``, but llama.cpp's Python server
            with ``--chat_format chatml-function-calling`` offers the tools to the model
            only when it is set).
        extra_body: Extra JSON fields for the request (server-specific options).

    Requires the ``llm`` extra (``pip install 'finenvs[llm]'``).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1024,
        tool_choice: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("OpenAIChatAgent needs the openai package: pip install 'finenvs[llm]'") from exc
        self._openai = openai
        self.name = model
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.temperature = temperature
        self.max_tokens = max_tokens
        if tool_choice not in (None, "auto", "required", "none"):
            raise ValueError(f"tool_choice={tool_choice!r}; valid: None, 'auto', 'required', 'none'")
        self.tool_choice = tool_choice
        self.extra_body = dict(extra_body or {})
        self._key = os.environ.get(api_key_env) or "not-needed"
        self.key_from_env = api_key_env in os.environ
        self._clients: dict[int, _LoopClient] = {}  # id(event loop) -> its client

    @property
    def _client(self) -> Any:
        """The OpenAI client of the running event loop (see :meth:`_loop_client`)."""
        return self._loop_client().client

    def _loop_client(self) -> _LoopClient:
        """The running event loop's client. An HTTP client's pooled (keep-alive) connections belong to the loop
        that opened them: reused from another loop (the endpoint check before a run, then the run; one run after
        another) a request fails with "Event loop is closed", so each loop gets a client of its own."""
        import asyncio

        loop = asyncio.get_running_loop()
        held = self._clients.get(id(loop))
        if held is None or held.loop is not loop:
            import httpx2  # openai's own HTTP client (3.x)

            openai = self._openai
            for old in list(self._clients.values()):  # clients of finished loops: dropped
                if old.loop.is_closed():
                    self._clients.pop(id(old.loop), None)
            http = openai.DefaultAsyncHttpx2Client(timeout=self.timeout, verify=tls_context(httpx2),
                                                   event_hooks={"response": [body_limit_hook(httpx2)]})
            held = _LoopClient(loop, openai.AsyncOpenAI(api_key=self._key, base_url=self.base_url,
                                                        timeout=self.timeout, max_retries=0, http_client=http), http)
            self._clients[id(loop)] = held
        return held

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "openai-compatible",
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "api_key_set": self.key_from_env,
            "timeout": self.timeout,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "tool_choice": self.tool_choice,
            "extra_body": self.extra_body,
        }

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body of one chat-completions request (``extra_body`` is merged in by the client), its keys in
        the order ``chat.completions.create`` writes them."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if tools:
            if self.tool_choice is not None:
                body["tool_choice"] = self.tool_choice
            body["tools"] = tools
        return body

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        openai = self._openai
        # The client's generic ``post`` (its documented way to any route), not ``chat.completions.create``: the
        # same request (body, headers, options, reply parsing) without ``create``'s walk of every message and
        # tool schema against the SDK's type annotations, an identity on these plain-JSON bodies that cost 1-2 ms
        # a request (tests/test_llm.py checks the bytes on the wire are the same).
        options: Any = {"security": {"bearer_auth": True}}  # the client's RequestOptions
        if self.extra_body:
            options["extra_json"] = self.extra_body
        try:
            # the HTTP response itself (status errors are raised as before); its JSON is read here as the SDK reads
            # it (_reply_data), without building the SDK's reply model, which costs ~0.1 ms a request
            held = self._loop_client()
            body = self.request_body(messages, tools)
            direct = held.direct
            if isinstance(direct, _DirectPost) and direct.usable():
                http_response = await direct.post(body, self.extra_body)
            else:
                http_response = await held.client.post("/chat/completions", cast_to=_http_response_type(), body=body,
                                                       options=options)
                if direct is None:
                    held.direct = _DirectPost.after(held, http_response, openai)
            response = _reply_data(http_response)
        except openai.APITimeoutError as exc:
            raise EndpointError("transient", f"timed out after {self.timeout:g} s") from exc
        except openai.APIConnectionError as exc:
            raise EndpointError("transient", f"cannot reach {self.base_url}: {exc}") from exc
        except openai.APIStatusError as exc:
            status = int(exc.status_code)
            retry_after = _retry_after(getattr(exc, "response", None))
            kind = "transient" if status in TRANSIENT_STATUS or status >= 500 else "permanent"
            raise EndpointError(kind, _short(str(exc)), status=status, retry_after=retry_after) from exc
        except (openai.APIResponseValidationError, ValueError, TypeError, RecursionError, OverflowError) as exc:
            # RecursionError: a body nested deeper than the JSON decoder recurses ("[[[[..."); ValueError includes
            # an integer literal of more than 4,300 digits
            raise EndpointError("malformed", f"unreadable reply: {_short(str(exc))}") from exc
        reply = _reply_from_data(response)
        too_long = oversize_error(reply)
        if too_long is not None:
            raise too_long
        return reply


class _LoopClient:
    """One event loop's OpenAI client, its HTTP client, and (after its first reply) its direct post."""

    def __init__(self, loop: Any, client: Any, http: Any) -> None:
        self.loop, self.client, self.http = loop, client, http
        #: None until the client's first reply; then its direct post, or False where the SDK's path serves them all
        self.direct: _DirectPost | bool | None = None


class _DirectPost:
    """The chat-completions request the client's ``post`` builds, sent without rebuilding its constant parts.

    Per request the SDK copies its request options twice, makes an idempotency key it does not send for this
    client, merges its headers, parses and joins the URL (``httpx2`` parses it again) and merges the HTTP client's
    headers and cookies: about 0.25 ms of a 0.7 ms request against a local server at concurrency 16. All but the
    body is the same for every request of a client whose key is a fixed string and that never retries: the URL,
    the headers (the key, the SDK's platform and timeout headers, ``x-stainless-retry-count: 0``) and the timeout.
    They are taken from the request the SDK itself sent for the client's first reply (not rebuilt here: they are
    the SDK's, whatever its version). Each later request is that request with the new body, written as the SDK
    writes it (its ``openapi_dumps`` of the body merged with ``extra_body``), sent through the same HTTP client
    with the same arguments, its failures raised as the SDK raises them (the same exception types and texts:
    timeouts, connection errors, HTTP status errors). ``tests/test_llm.py`` compares the bytes on the wire with
    ``chat.completions.create``'s and every failure with the SDK path's.

    Used only where that holds: a key given as a string (no key provider, provider runtime or workload identity),
    no custom auth, no retries, no idempotency header, no redirect before the first reply, and while the HTTP
    client holds no cookie (a server that sets one gets the SDK's path, which sends it).
    """

    def __init__(self, held: _LoopClient, request: Any, sdk: Any, openai: Any) -> None:
        self.held, self.sdk, self.openai = held, sdk, openai
        self.url = request.url
        self.headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        self.extensions = dict(request.extensions)

    @classmethod
    def after(cls, held: _LoopClient, response: Any, openai: Any) -> _DirectPost | bool:
        """The direct post of ``held``'s client from the request behind its first reply (``response``), or False
        when its requests can differ from one another in more than the body (see the class)."""
        try:
            from openai import _base_client as sdk

            for name in ("openapi_dumps", "request_exceptions", "timeout_exceptions", "status_exceptions",
                         "_merge_mappings", "RAW_RESPONSE_HEADER"):
                getattr(sdk, name)
        except (ImportError, AttributeError):  # another SDK layout: its own path serves every request
            return False
        client, request = held.client, getattr(response, "request", None)
        fixed = (all(getattr(client, name, True) is None for name in (
                     "_provider_runtime", "_api_key_provider", "_workload_identity_auth", "_idempotency_header"))
                 and getattr(client, "custom_auth", True) is None and getattr(client, "max_retries", 1) == 0
                 and callable(getattr(client, "_make_status_error_from_response", None)))
        if (not fixed or request is None or getattr(response, "history", None) != [] or request.method != "POST"
                or sdk.RAW_RESPONSE_HEADER in request.headers or "cookie" in request.headers
                or not _no_cookie(held)):
            return False
        return cls(held, request, sdk, openai)

    def usable(self) -> bool:
        """Whether the next request can be sent directly (the HTTP client has no cookie to add to it)."""
        return _no_cookie(self.held)

    async def post(self, body: dict[str, Any], extra_body: dict[str, Any]) -> Any:
        """What ``client.post("/chat/completions", cast_to=httpx2.Response, body=body, options=...)`` returns or
        raises for this client."""
        import httpx2

        sdk, openai = self.sdk, self.openai
        content = sdk.openapi_dumps(sdk._merge_mappings(body, extra_body) if extra_body else body)
        extensions = {k: dict(v) if isinstance(v, dict) else v for k, v in self.extensions.items()}
        request = httpx2.Request("POST", self.url, headers=self.headers, content=content, extensions=extensions)
        try:
            response = await self.held.http.send(request, stream=False)
        except sdk.timeout_exceptions() as err:
            raise openai.APITimeoutError(request=request) from err
        except openai.OpenAIError:
            raise
        except sdk.request_exceptions() as err:
            raise openai.APIConnectionError(request=request) from err
        try:
            response.raise_for_status()
        except sdk.status_exceptions() as err:
            if not err.response.is_closed:
                await err.response.aread()
            raise self.held.client._make_status_error_from_response(err.response) from None
        return response


def _no_cookie(held: _LoopClient) -> bool:
    return len(held.http.cookies.jar) == 0


async def check_reachable(agent: Any, timeout: float = 10.0) -> None:
    """One cheap request before any work: does ``agent``'s endpoint answer at all? (``GET {base_url}/models``; any
    HTTP answer but 401/403 counts, a server without that route included.) An agent without a ``base_url`` (the
    offline scripted agents, A2A) is not checked here.

    Raises:
        EndpointError: Not reached or no answer within ``timeout`` (``transient``), or the key refused (401/403).
    """
    base_url = getattr(agent, "base_url", None)
    if not base_url or not hasattr(agent, "_openai"):
        return
    client = agent._client
    openai = agent._openai
    try:
        await client.with_options(timeout=timeout, max_retries=0).models.list()
    except openai.APITimeoutError as exc:
        raise EndpointError("transient", f"{base_url} did not answer within {timeout:g} s") from exc
    except openai.APIConnectionError as exc:
        raise EndpointError("transient", f"cannot reach {base_url}: {_short(str(exc))}") from exc
    except openai.APIStatusError as exc:
        if int(exc.status_code) in (401, 403):
            raise EndpointError("permanent", f"{base_url} refused the request ({exc.status_code}): check "
                                             f"${agent.api_key_env}", status=int(exc.status_code)) from exc
    except Exception:  # noqa: BLE001 - it answered (an unreadable models list is not this check's business)
        return


def _retry_after(response: Any) -> float | None:
    try:
        value = response.headers.get("retry-after") if response is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@functools.cache
def _http_response_type() -> type:
    import httpx2  # openai's own HTTP client (3.x)

    return httpx2.Response


def _reply_data(response: Any) -> Any:
    """A 200 reply's body as the SDK reads one for a model type: its JSON, or (a content type other than JSON whose
    body is not JSON) its text; a JSON content type with a body that is not JSON raises ``ValueError``."""
    content_type = response.headers.get("content-type", "*").split(";")[0]
    if content_type.endswith("json"):
        return response.json()
    try:
        return response.json()
    except Exception:  # noqa: BLE001 - the SDK returns the text then (which has no chat-completions shape)
        return response.text


def _field(obj: Any, name: str) -> Any:
    """``obj.name`` as the SDK's lenient reply model reads it from JSON: an object's field (None when absent); any
    other value has no fields."""
    if isinstance(obj, dict):
        return obj.get(name)
    raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")


def _cached_tokens(details: dict[str, Any]) -> Any:
    """``prompt_tokens_details.cached_tokens`` as the SDK's model reads it (an optional integer it coerces leniently:
    ``true``, ``2.0`` and ``"3"`` read as integers): the SDK reads the small object itself."""
    from openai._models import construct_type
    from openai.types.completion_usage import PromptTokensDetails

    return getattr(construct_type(type_=PromptTokensDetails, value=details), "cached_tokens", None)


def _reply_from_data(data: Any) -> ChatReply:
    """The reply in a chat-completions body (parsed JSON), read field by field as :func:`_reply_from_response` reads
    the SDK's lenient model of it (``tests/test_llm.py`` compares the two over hostile shapes)."""
    try:
        choices = _field(data, "choices")
        if not choices:
            raise EndpointError("malformed", "reply has no choices")
        choice = choices[0]
        msg = _field(choice, "message")
        calls = []
        for k, tc in enumerate(_field(msg, "tool_calls") or []):
            if isinstance(tc, dict) and tc.get("type") == "custom":  # the SDK's custom tool call has no function
                raise AttributeError("'ChatCompletionMessageCustomToolCall' object has no attribute 'function'")
            function = _field(tc, "function")
            arguments = _field(function, "arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            calls.append(ToolCall(str(_field(tc, "id") or f"call_{k}"), str(_field(function, "name")), arguments))
        usage = None
        reported = _field(data, "usage")
        if reported is not None:
            usage = {
                "prompt_tokens": int(_field(reported, "prompt_tokens") or 0),
                "completion_tokens": int(_field(reported, "completion_tokens") or 0),
            }
            details = reported.get("prompt_tokens_details")
            cached = _cached_tokens(details) if isinstance(details, dict) else None
            if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0:  # the provider's cache hits
                usage["cached_tokens"] = cached
        content = _field(msg, "content")
        return ChatReply(content if isinstance(content, str) else None, calls, usage, _field(choice, "finish_reason"),
                         data.get("model"))
    except EndpointError:
        raise
    except (AttributeError, TypeError, IndexError) as exc:
        raise EndpointError("malformed", f"reply does not have the chat-completions shape: {exc}") from exc


def _reply_from_response(response: Any) -> ChatReply:
    try:
        choices = response.choices
        if not choices:
            raise EndpointError("malformed", "reply has no choices")
        choice = choices[0]
        msg = choice.message
        calls = []
        for k, tc in enumerate(msg.tool_calls or []):
            function = tc.function
            arguments = function.arguments
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            calls.append(ToolCall(str(tc.id or f"call_{k}"), str(function.name), arguments))
        usage = None
        if response.usage is not None:
            usage = {
                "prompt_tokens": int(response.usage.prompt_tokens or 0),
                "completion_tokens": int(response.usage.completion_tokens or 0),
            }
            cached = getattr(getattr(response.usage, "prompt_tokens_details", None), "cached_tokens", None)
            if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0:  # the provider's cache hits
                usage["cached_tokens"] = cached
        content = msg.content if isinstance(msg.content, str) else None
        return ChatReply(content, calls, usage, choice.finish_reason, getattr(response, "model", None))
    except EndpointError:
        raise
    except (AttributeError, TypeError, IndexError) as exc:
        raise EndpointError("malformed", f"reply does not have the chat-completions shape: {exc}") from exc


__all__ = ["MAX_REPLY_BYTES", "TRANSIENT_STATUS", "EndpointError", "check_reachable", "OpenAIChatAgent", "ReplyBodyTooLarge",
           "body_limit_hook", "oversize_error"]
