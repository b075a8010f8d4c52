"""Which agent a run drives: a model endpoint, a remote A2A agent, or the family's offline scripted agent.

:func:`make_agent` is what ``finenvs llm`` and ``finenvs bench --base-url`` call:

* ``a2a_url``: :class:`~finenvs.evaluation.a2a.A2AChatAgent` (a remote Agent-to-Agent agent);
* ``base_url`` (else ``$OPENAI_BASE_URL``, else OpenAI's own URL when ``$OPENAI_API_KEY`` is set) with ``model``:
  :class:`~finenvs.evaluation.endpoints.OpenAIChatAgent`, the key read from
  ``api_key_env`` (``OPENAI_API_KEY`` by default) — flags first, then the
  openai client's own environment variables;
* neither: the env's task spec's offline scripted agent.

:func:`agent_from_record` rebuilds the agent a run recorded in its ``run.json``
(``finenvs llm --resume``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from finenvs.tasks import task_of

#: The openai client's default endpoint, used when ``--model`` is given with no URL and no ``OPENAI_BASE_URL``.
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


def endpoint_url(base_url: str | None, model: str | None, api_key_env: str = "OPENAI_API_KEY") -> str | None:
    """The endpoint a run uses: the flag, else ``$OPENAI_BASE_URL``, else OpenAI's own when a model is named and
    its key is set (the openai client's defaults); None without a model.

    Raises:
        ValueError: A model with no URL anywhere and no key for OpenAI's endpoint.
    """
    if base_url:
        return base_url
    if not model:
        return None
    url = os.environ.get("OPENAI_BASE_URL")
    if url:
        return url
    if os.environ.get(api_key_env):
        return OPENAI_DEFAULT_URL
    raise ValueError(f"--model needs --base-url or OPENAI_BASE_URL (or {api_key_env} for OpenAI's own endpoint); "
                     "without a model the offline scripted agent runs")


def make_agent(env_id: str, *, base_url: str | None = None, model: str | None = None, a2a_url: str | None = None,
               api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0, temperature: float | None = 0.0,
               max_tokens: int | None = 1024, tool_choice: str | None = None,
               extra_body: dict[str, Any] | None = None) -> Any:
    """The agent of a run (see the module docstring).

    Raises:
        ValueError: Both an endpoint and an A2A agent, an endpoint without ``model``, or a bad option.
        KeyError: ``env_id`` is not a finenvs env.
    """
    task = task_of(env_id)
    if a2a_url:
        if base_url or model:
            raise ValueError("give --a2a-url or --base-url/--model, not both")
        from finenvs.evaluation.a2a import A2AChatAgent

        return A2AChatAgent(a2a_url, timeout=timeout)
    url = endpoint_url(base_url, model, api_key_env)
    if url:
        if not model:
            raise ValueError("--model is required with --base-url")
        from finenvs.evaluation.endpoints import OpenAIChatAgent

        return OpenAIChatAgent(model, url, api_key_env=api_key_env, timeout=timeout, temperature=temperature,
                               max_tokens=max_tokens, tool_choice=tool_choice, extra_body=extra_body)
    return task.make_scripted_agent()


def agent_from_record(env_id: str, recorded: dict[str, Any], *, timeout: float | None = None) -> Any:
    """The agent a run's ``run.json`` describes (``describe()`` of the agent that ran)."""
    kind = recorded.get("kind")
    if kind == "openai-compatible":
        from finenvs.evaluation.endpoints import OpenAIChatAgent

        return OpenAIChatAgent(recorded["model"], recorded["base_url"], api_key_env=recorded.get("api_key_env",
                               "OPENAI_API_KEY"), timeout=timeout or recorded.get("timeout", 60.0),
                               temperature=recorded.get("temperature"), max_tokens=recorded.get("max_tokens"),
                               tool_choice=recorded.get("tool_choice"), extra_body=recorded.get("extra_body"))
    if kind == "a2a":
        from finenvs.evaluation.a2a import A2AChatAgent

        return A2AChatAgent(recorded["url"], timeout=timeout or recorded.get("timeout", 60.0),
                            name=recorded.get("name"))
    cls = task_of(env_id).scripted_agent
    if kind == "scripted" and isinstance(cls, type) and dataclasses.is_dataclass(cls):
        keys = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in recorded.items() if k in keys})
    raise ValueError(f"cannot rebuild the run's agent {recorded!r}; pass --base-url/--model or --a2a-url")


class ScriptedRouter:
    """Every family's offline scripted agent behind one chat agent: each conversation goes to the agent of the
    env its prompt names (the prompt's first line is ``# <env id>``).

    What the test chat server, the A2A test agent and a demo endpoint serve: one "model" that answers any
    finenvs env offline. A prompt that names no registered env gets a text reply with no action.
    """

    name = "scripted-router"

    def __init__(self) -> None:
        self._agents: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        return {"kind": "scripted-router", "name": self.name}

    def agent_for(self, messages: list[dict[str, Any]]) -> Any | None:
        prompt = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        first = prompt.split("\n", 1)[0] if isinstance(prompt, str) else ""
        env_id = first[2:].strip() if first.startswith("# ") else ""
        try:
            task = task_of(env_id)
        except KeyError:
            return None
        if task.family not in self._agents:
            self._agents[task.family] = task.make_scripted_agent()
        return self._agents[task.family]

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """The next turn of this conversation, from the family's scripted agent (a pure function of its inputs)."""
        from finenvs.text.chat import NO_USAGE, ChatReply

        agent = self.agent_for(messages)
        if agent is None:
            return ChatReply("This prompt names no finenvs env; I have no decision.", usage=dict(NO_USAGE))
        return agent.reply(messages, tools)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return self.reply(messages, tools)


__all__ = ["OPENAI_DEFAULT_URL", "ScriptedRouter", "agent_from_record", "endpoint_url", "make_agent"]
