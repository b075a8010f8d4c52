"""Drive any finenvs text env from your own agent loop.

Every family has a ``<Name>-text-v0`` env: the observation is a prompt, the
action is a reply (or a ``commit_action`` tool call), and ``tool_specs()`` lists
the date-locked tools in the chat-completions format, so any model client plugs
in. The loop is the same for every family:

1. ``prompt, info = env.reset()``;
2. send the prompt and ``env.tool_specs()`` to your model;
3. for each tool call it makes, ``env.call_tool(name, arguments)`` and send the
   result back (``result.text()``) as a ``tool`` message;
4. when it calls ``commit_action`` (or replies with text), ``env.step(...)``;
   repeat from 2 with the new prompt until the episode ends.

The model client here is anything shaped like the ``openai`` client:
``client.chat.completions.create(model=..., messages=..., tools=...)``. Offline,
:class:`FakeModel` stands in for it (it reads the RSI through a tool call and
commits BUY below 50, SELL above); ``--base-url`` puts a real ``openai.OpenAI``
client in its place, and ``--agent scripted`` uses finenvs' offline scripted
agents (every family)::

    python examples/own_agent_loop.py                                   # FinTrading-text-v0, the fake model
    python examples/own_agent_loop.py --env FinQA-text-v0 --agent scripted
    python examples/own_agent_loop.py --env FinAudit-text-v0 --base-url http://127.0.0.1:8080/v1 --model qwen2.5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from types import SimpleNamespace
from typing import Any

import gymnasium as gym

import finenvs  # noqa: F401  (registers the envs)
from finenvs.tasks import Selection, task_of

MAX_TURNS = 12  # model turns per decision before the loop commits whatever the model said last


def play(env_id: str, client: Any, *, model: str = "fake", seed: int = 0,
         options: dict[str, Any] | None = None, **env_kwargs: Any) -> dict[str, Any]:
    """One episode of the text env ``env_id`` driven by a chat-completions ``client``.

    ``client`` is an ``openai.OpenAI`` client, :class:`FakeModel`, or any finenvs chat agent
    (``async complete(messages, tools)``, e.g. ``finenvs.evaluation.agents.ScriptedRouter``).
    """
    if not hasattr(client, "chat"):
        client = ChatAgentClient(client)
    if not env_kwargs and options is None:  # the family's first default episode (eval split)
        env_kwargs, options = _first_episode(env_id)
    env = gym.make(env_id, **env_kwargs)
    prompt, info = env.reset(seed=seed, options=options)
    tools = env.tool_specs()  # the date-locked tools, commit_action last
    decisions, total, tool_calls, done = 0, 0.0, 0, False
    while not done:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        action: Any = ""
        for _ in range(MAX_TURNS):
            message = client.chat.completions.create(model=model, messages=messages, tools=tools).choices[0].message
            calls = list(message.tool_calls or [])
            messages.append(_assistant_message(message.content, calls))
            commit = next((c for c in calls if c.function.name == "commit_action"), None)
            if commit is not None:
                action = {"name": "commit_action", "arguments": commit.function.arguments}
                break
            if not calls:  # a text reply: the env's protocol reads the decision from it
                action = message.content or ""
                break
            for call in calls:  # serve each tool call; the result goes back as a tool message
                result = env.call_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text()})
                tool_calls += 1
        prompt, reward, terminated, truncated, info = env.step(action)
        decisions, total, done = decisions + 1, total + float(reward), terminated or truncated
    env.close()
    return {"env": env_id, "decisions": decisions, "total_reward": total, "tool_calls": tool_calls,
            "format_errors": info["format_errors"]}


class FakeModel:
    """A stand-in for ``openai.OpenAI()`` that answers FinTrading-text-v0 with tool calls, offline.

    Turn 1 of a decision calls ``get_indicators`` for the RSI; turn 2 reads the tool message and calls
    ``commit_action``: BUY when RSI < 50, else SELL.
    """

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
        self._calls = 0

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               **_: Any) -> Any:
        self._calls += 1
        last = messages[-1]
        if last["role"] != "tool":
            return _response(None, [_tool_call(f"call_{self._calls}", "get_indicators", {"names": ["rsi"]})])
        values = json.loads(last["content"]).get("indicators", {}).get("rsi", {}).get("value", [])
        rsi = values[-1] if values and values[-1] is not None else 50.0
        action = "BUY" if rsi < 50 else "SELL"
        return _response(None, [_tool_call(f"call_{self._calls}", "commit_action",
                                           {"action": action, "reasoning": f"RSI(14) is {rsi:.1f}"})])


class ChatAgentClient:
    """Puts a finenvs chat agent (``async complete(messages, tools) -> ChatReply``) behind the client shape."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               **_: Any) -> Any:
        reply = asyncio.run(self.agent.complete(messages, tools))
        return _response(reply.content, [_tool_call(c.id, c.name, c.arguments) for c in reply.tool_calls])


def _tool_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> Any:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return SimpleNamespace(id=call_id, type="function", function=SimpleNamespace(name=name, arguments=text))


def _response(content: str | None, calls: list[Any]) -> Any:
    """The part of a chat-completions response the loop reads: ``choices[0].message``."""
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content, tool_calls=calls))])


def _assistant_message(content: str | None, calls: list[Any]) -> dict[str, Any]:
    """The assistant turn as a chat message (``content: ""`` beside tool calls: some servers refuse null)."""
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                 for c in calls]
    return message


def _first_episode(env_id: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The env arguments and reset options of the first episode of the family's eval plan."""
    episode = task_of(env_id).plan(Selection(split="eval", limit=1))[0]
    return dict(episode.env_kwargs), episode.options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="FinTrading-text-v0", help="a text env id")
    parser.add_argument("--agent", choices=("fake", "scripted"), default="fake",
                        help="offline: the fake model (FinTrading-text-v0) or finenvs' scripted agents (every family)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (replaces --agent)")
    parser.add_argument("--model", default="fake", help="the endpoint's model")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.base_url:  # a real model: the openai client goes exactly where FakeModel goes
        from openai import OpenAI

        client: Any = OpenAI(base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY", "none"))
    elif args.agent == "scripted":
        from finenvs.evaluation.agents import ScriptedRouter

        client = ScriptedRouter()
    else:
        client = FakeModel()
    print(json.dumps(play(args.env, client, model=args.model, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
