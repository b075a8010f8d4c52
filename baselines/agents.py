"""Chat agents: any OpenAI-compatible endpoint, and an offline scripted agent speaking the same protocol.

An agent turns a chat (OpenAI chat-completions messages) and a list of tools
into one reply: text and/or tool calls. :class:`OpenAIChatAgent` asks a
server (vLLM, Ollama, llama.cpp server, hosted APIs);
:class:`ScriptedTradingAgent` answers by rules, offline, reading the tool
results in the messages exactly as a model would. Both return a
:class:`ChatReply`; endpoint failures surface as :class:`EndpointError` with a
kind the runner acts on:

* ``transient`` — connection refused or reset, timeout, HTTP 408/409/429/5xx:
  retried with backoff;
* ``malformed`` — a 200 reply the client cannot read (not JSON, no choices):
  recorded as an invalid step;
* ``permanent`` — any other HTTP error (bad request, auth, unknown model):
  recorded as an invalid step.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

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


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply; ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str

    def message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ChatReply:
    """One assistant turn."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    model: str | None = None

    def message(self) -> dict[str, Any]:
        """The turn as a chat message to append to the conversation.

        An assistant turn with tool calls and no text is sent with ``content: ""``:
        the chat-completions spec also allows null, but some servers (llama.cpp's
        Python server) reject it.
        """
        content = self.content if self.content is not None or not self.tool_calls else ""
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if self.tool_calls:
            msg["tool_calls"] = [c.message() for c in self.tool_calls]
        return msg


class ChatAgent(Protocol):
    """What the runner needs of an agent."""

    name: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply: ...

    def describe(self) -> dict[str, Any]: ...


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
        except (openai.APIResponseValidationError, ValueError, TypeError) as exc:
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


# ---------------------------------------------------------------------------- offline
@dataclass
class _ScriptedAgent:
    """Shared plumbing of the offline agents: a stateless reply per conversation, read from its messages."""

    name: str = "scripted"

    def describe(self) -> dict[str, Any]:
        return {"kind": "scripted", **asdict(self)}

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        return self.reply(messages, tools)

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def _turn(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[set[Any], dict[str, Any], int]:
        """``(tool names offered, this decision's tool results by name, assistant turns so far)``."""
        turn = _current_turn(messages)
        names = {t.get("function", {}).get("name") for t in tools or []}
        return names, _tool_results(turn), sum(1 for m in turn if m.get("role") == "assistant")

    @staticmethod
    def _calls(round_no: int, *calls: tuple[str, dict[str, Any]]) -> ChatReply:
        """A turn that calls ``(tool, arguments)`` pairs."""
        return ChatReply(None, [ToolCall(f"call_{round_no}_{k}", name, json.dumps(args))
                                for k, (name, args) in enumerate(calls)], usage=_NO_USAGE)


@dataclass
class ScriptedTradingAgent(_ScriptedAgent):
    """Offline trading agent that speaks the chat protocol: tools first, then a committed decision.

    Each decision takes up to three assistant turns, all derived from the
    messages alone (it keeps no state between calls, so the same conversation
    always gets the same reply):

    1. call ``get_indicators`` (EMA(``fast``), SMA(``slow``), RSI, realised
       volatility) and ``list_news`` (last ``news_days`` days);
    2. if there is news, call ``get_news`` on the newest item to read the
       provider's sentiment label;
    3. commit: BUY when EMA(fast) > SMA(slow) (momentum), unless realised
       volatility exceeds ``max_vol``, RSI exceeds ``overbought`` or the newest
       news is labelled Negative, in which case HOLD; HOLD when momentum is
       down. It never shorts.

    A tool error or a missing indicator value leads to HOLD, with the reason in
    the commit's reasoning. Without tools it answers ``Action: HOLD`` in text.
    """

    fast: int = 5
    slow: int = 20
    max_vol: float = 1.0
    overbought: float = 80.0
    news_days: int = 3
    name: str = "scripted-momentum"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, results, round_no = self._turn(messages, tools)
        if not {"get_indicators", "commit_action"} <= names:
            return ChatReply("I cannot read market data without tools, so I stay flat.\nAction: HOLD", usage=_NO_USAGE)
        if "get_indicators" not in results:
            calls: list[tuple[str, dict[str, Any]]] = [("get_indicators", {
                "names": ["ema", "sma", "rsi", "realized_vol"],
                "params": {"ema": {"window": self.fast}, "sma": {"window": self.slow}},
            })]
            if "list_news" in names:
                calls.append(("list_news", {"lookback_days": self.news_days}))
            return self._calls(round_no, *calls)
        news = results.get("list_news") or {}
        items = news.get("items") or []
        if items and "get_news" in names and "get_news" not in results:
            return self._calls(round_no, ("get_news", {"id": items[0]["id"]}))
        action, reasoning = self.decide(results)
        return self._calls(round_no, ("commit_action", {"action": action, "reasoning": reasoning}))

    def decide(self, results: dict[str, Any]) -> tuple[str, str]:
        """``(action, reasoning)`` from the tool results of this decision."""
        indicators = (results.get("get_indicators") or {}).get("indicators")
        if not isinstance(indicators, dict):
            error = (results.get("get_indicators") or {}).get("error", "no indicator data")
            return "HOLD", f"indicators unavailable ({error}); staying flat"

        def last(name: str) -> float | None:
            rows = (indicators.get(name) or {}).get("rows") or []
            value = rows[-1].get("value") if rows else None
            return float(value) if isinstance(value, (int, float)) else None

        fast, slow, rsi, vol = last("ema"), last("sma"), last("rsi"), last("realized_vol")
        if fast is None or slow is None:
            return "HOLD", "not enough history for the moving averages; staying flat"
        trend = f"EMA{self.fast} {fast:.2f} vs SMA{self.slow} {slow:.2f}"
        if fast <= slow:
            return "HOLD", f"momentum down ({trend}); staying flat"
        if vol is not None and vol > self.max_vol:
            return "HOLD", f"momentum up ({trend}) but realised volatility {vol:.0%} > {self.max_vol:.0%}"
        if rsi is not None and rsi > self.overbought:
            return "HOLD", f"momentum up ({trend}) but RSI {rsi:.1f} is overbought"
        sentiment = (results.get("get_news") or {}).get("provider_sentiment")
        if sentiment == "Negative":
            return "HOLD", f"momentum up ({trend}) but the latest news is labelled Negative"
        return "BUY", f"momentum up ({trend}); RSI {rsi if rsi is None else round(rsi, 1)}, vol {vol if vol is None else round(vol, 3)}"


@dataclass
class ScriptedPairsAgent(_ScriptedAgent):
    """Offline FinHedging-v0 agent that speaks the chat protocol: tools first, then a committed decision.

    Stateless like :class:`ScriptedTradingAgent` (the same conversation always
    gets the same reply). Each decision takes three assistant turns:

    1. call ``get_state`` (the stage, the pair, the position);
    2. call ``get_pair_stats``: without a pair on the first decision (every pair
       ranked by its Dickey-Fuller statistic over ``lookback`` days), with the
       chosen pair afterwards;
    3. commit: on the first decision the top-ranked pair (most mean-reverting
       spread); afterwards the z-score rule on the ``z_days`` z-score: flat, enter
       SHORT_LONG when ``entry < z < stop`` and LONG_SHORT when ``-stop < z <
       -entry``; in a position, CLOSE once the spread has reverted past ``exit``
       or moved beyond ``stop`` against it, else HOLD. Keeping no state, it has
       no cool-down after a stop (the ``zscore_coint`` baseline has one).

    A tool error leads to HOLD (or, on the first decision, the first pair the
    ranking lists), with the reason in the commit's reasoning.
    """

    lookback: int = 60
    z_days: int = 20
    entry: float = 2.0
    exit: float = 0.5
    stop: float = 4.0
    name: str = "scripted-pairs"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, results, round_no = self._turn(messages, tools)
        if not {"get_state", "get_pair_stats", "commit_action"} <= names:
            return ChatReply("I cannot read the pairs' statistics without tools.\nAction: HOLD", usage=_NO_USAGE)
        if "get_state" not in results:
            return self._calls(round_no, ("get_state", {}))
        state = results["get_state"] or {}
        pair = _pair_of(state)
        if "get_pair_stats" not in results:
            args: dict[str, Any] = {"lookback": self.lookback}
            if pair is not None:
                args["pair"] = pair
            return self._calls(round_no, ("get_pair_stats", args))
        action, reasoning = self.decide(state, results["get_pair_stats"] or {}, pair)
        return self._calls(round_no, ("commit_action", {"action": action, "reasoning": reasoning}))

    def decide(self, state: dict[str, Any], stats: dict[str, Any], pair: str | None) -> tuple[str, str]:
        """``(action, reasoning)`` from ``get_state`` and ``get_pair_stats``."""
        if pair is None:
            ranked = stats.get("pairs") or []
            if not ranked:
                return "HOLD", f"no pair statistics ({stats.get('error', 'empty ranking')}); default pair"
            best = ranked[0]
            return best["pair"], (f"most mean-reverting spread over {stats.get('days')} days: Dickey-Fuller t "
                                  f"{best['df_tstat']}, half-life {best['half_life_days']} days")
        z = (stats.get("zscore") or {}).get(str(self.z_days))
        if not isinstance(z, (int, float)):
            return "HOLD", f"no {self.z_days}-day z-score ({stats.get('error', 'missing')}); keeping the book"
        position = str(state.get("position", "FLAT")).split(",")[0].strip()
        if position == "LONG_SHORT":
            if z < -self.stop:
                return "CLOSE", f"z {z:+.2f} beyond the stop {-self.stop:+.1f}"
            return ("CLOSE", f"z {z:+.2f} reverted past {-self.exit:+.1f}") if z > -self.exit else ("HOLD", f"z {z:+.2f}")
        if position == "SHORT_LONG":
            if z > self.stop:
                return "CLOSE", f"z {z:+.2f} beyond the stop {self.stop:+.1f}"
            return ("CLOSE", f"z {z:+.2f} reverted past {self.exit:+.1f}") if z < self.exit else ("HOLD", f"z {z:+.2f}")
        if self.entry < z < self.stop:
            return "SHORT_LONG", f"spread rich: z {z:+.2f} > {self.entry}"
        if -self.stop < z < -self.entry:
            return "LONG_SHORT", f"spread cheap: z {z:+.2f} < {-self.entry}"
        return "HOLD", f"z {z:+.2f} inside the entry band; staying flat"


def _pair_of(state: dict[str, Any]) -> str | None:
    """The chosen pair from ``get_state``'s stage line (None on the selection step)."""
    stage = str(state.get("stage", ""))
    prefix = "trade the pair "
    if stage.startswith(prefix):
        return stage[len(prefix) :].split(" ")[0]
    return None


_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0}


def _current_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages after the last user message (this decision's assistant and tool turns)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[i + 1 :]
    return list(messages)


def _tool_results(turn: list[dict[str, Any]]) -> dict[str, Any]:
    """Tool name -> parsed JSON result, for the tool calls of this turn (the latest of each name)."""
    names: dict[str, str] = {}
    out: dict[str, Any] = {}
    for msg in turn:
        for call in msg.get("tool_calls") or []:
            names[call.get("id")] = (call.get("function") or {}).get("name")
        if msg.get("role") == "tool":
            name = names.get(msg.get("tool_call_id"))
            try:
                out[name] = json.loads(msg.get("content") or "null")
            except ValueError:
                out[name] = {"error": "unreadable tool result"}
    return out


#: task family -> the offline scripted agent ``finenvs bench`` runs through its text interface
SCRIPTED_AGENTS: dict[str, type] = {"trading": ScriptedTradingAgent, "hedging": ScriptedPairsAgent}

__all__ = ["SCRIPTED_AGENTS", "ChatAgent", "ChatReply", "EndpointError", "OpenAIChatAgent", "ScriptedPairsAgent",
           "ScriptedTradingAgent", "ToolCall"]
