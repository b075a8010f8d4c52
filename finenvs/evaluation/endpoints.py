"""Model endpoints: any OpenAI-compatible chat-completions server as a chat agent.

:class:`OpenAIChatAgent` asks a server (vLLM, Ollama, llama.cpp server, hosted
APIs) and returns a :class:`~finenvs.text.chat.ChatReply`; endpoint failures
surface as :class:`EndpointError` with a kind the runner acts on:

* ``transient`` — connection refused or reset, timeout, HTTP 408/409/429/5xx:
  retried with backoff;
* ``malformed`` — a 200 reply the client cannot read (not JSON, nested too
  deep, a number too long to convert, no choices): recorded as an invalid step;
* ``permanent`` — any other HTTP error (bad request, auth, unknown model):
  recorded as an invalid step.
"""

from __future__ import annotations

import json
import os
from typing import Any

from finenvs.text.chat import ChatReply, ToolCall

TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class EndpointError(Exception):
    """A chat request that failed.

    Attributes:
        kind: ``"transient"``, ``"malformed"`` or ``"permanent"``.
        status: HTTP status when there was one.
        retry_after: Seconds the server asked to wait (``Retry-After``), if any.
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status else ""
        return f"{self.kind}{status}: {self.args[0]}"


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
        key = os.environ.get(api_key_env) or "not-needed"
        self.key_from_env = api_key_env in os.environ
        self._client = openai.AsyncOpenAI(api_key=key, base_url=base_url, timeout=self.timeout, max_retries=0)

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

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
            if self.tool_choice is not None:
                kwargs["tool_choice"] = self.tool_choice
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        try:
            response = await self._client.chat.completions.create(**kwargs)
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
        return _reply_from_response(response)


def _retry_after(response: Any) -> float | None:
    try:
        value = response.headers.get("retry-after") if response is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        content = msg.content if isinstance(msg.content, str) else None
        return ChatReply(content, calls, usage, choice.finish_reason, getattr(response, "model", None))
    except EndpointError:
        raise
    except (AttributeError, TypeError, IndexError) as exc:
        raise EndpointError("malformed", f"reply does not have the chat-completions shape: {exc}") from exc


__all__ = ["TRANSIENT_STATUS", "EndpointError", "OpenAIChatAgent"]
