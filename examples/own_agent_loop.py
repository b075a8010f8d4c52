"""Drive any finenvs text env from your own agent loop.

Every family has a ``<Name>-text-v0`` env: the observation is a prompt, the
action is a reply (or a ``commit_action`` tool call), and ``tool_specs()`` lists
the date-locked tools in the chat-completions format, so any model client plugs
in. The loop is the same for every family:

1. ``prompt, info = env.reset()``
2. send the prompt and ``env.tool_specs()`` to your model;
3. for each tool call it makes, ``env.call_tool(name, arguments)`` and send the
   result back (``result.text()``);
4. when it calls ``commit_action`` (or replies with text), ``env.step(...)``;
   repeat from 2 with the new prompt until the episode ends.

Run it offline (each family's scripted agent answers) or against a model::

    python examples/own_agent_loop.py --env FinQA-text-v0
    python examples/own_agent_loop.py --env FinAudit-text-v0 --base-url http://127.0.0.1:8080/v1 --model qwen2.5
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import gymnasium as gym

import finenvs  # noqa: F401  (registers the envs)
from finenvs.tasks import Selection, task_of

MAX_TURNS = 12  # model turns per decision before the loop commits whatever the model said last


def play(env_id: str, agent: Any, *, seed: int = 0, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode of ``env_id`` (a text env) with ``agent`` (``async complete(messages, tools) -> reply``)."""
    env = gym.make(env_id)
    prompt, info = env.reset(seed=seed, options=options or _first_episode_options(env_id))
    tools = env.tool_specs()
    decisions, total, done = 0, 0.0, False
    while not done:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        action: Any = None
        for _ in range(MAX_TURNS):
            reply = asyncio.run(agent.complete(messages, tools))
            messages.append(reply.message())
            commits = [c for c in reply.tool_calls if c.name == "commit_action"]
            if commits:
                action = {"name": "commit_action", "arguments": commits[0].arguments}
                break
            if not reply.tool_calls:  # a text reply: the env's protocol reads the decision from it
                action = reply.content or ""
                break
            for call in reply.tool_calls:
                result = env.call_tool(call.name, call.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text()})
        prompt, reward, terminated, truncated, info = env.step(action if action is not None else "")
        decisions, total, done = decisions + 1, total + reward, terminated or truncated
    return {"env": env_id, "decisions": decisions, "total_reward": total, "format_errors": info["format_errors"]}


def _first_episode_options(env_id: str) -> dict[str, Any] | None:
    """The reset options of the first episode of the family's plan (a question index, a bank task, ...)."""
    plan = task_of(env_id).plan(Selection(split="eval", limit=1))
    return plan[0].options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="FinTrading-text-v0", help="a text env id")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: the offline scripted agents)")
    parser.add_argument("--model", help="the endpoint's model")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.base_url:
        from finenvs.evaluation.endpoints import OpenAIChatAgent

        agent: Any = OpenAIChatAgent(args.model, args.base_url)
    else:
        from finenvs.evaluation.agents import ScriptedRouter

        agent = ScriptedRouter()
    print(json.dumps(play(args.env, agent, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
