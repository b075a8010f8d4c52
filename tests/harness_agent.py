"""A small agent program for ``finenvs harness`` tests: it plays each family's scripted agent over MCP.

    python tests/harness_agent.py PROMPT_FILE MCP_CONFIG [--no-commit] [--sleep S] [--spam N] [--linger]

It reads the MCP config an agent CLI would read, connects to the server it names (Streamable HTTP), asks
``get_observation`` for the decision's prompt and answers with :class:`finenvs.evaluation.agents.ScriptedRouter`:
every tool call goes to the server, and the decision is its ``commit_action`` call (a text reply is committed as
the commit schema's text field). ``--no-commit`` reads the
tools and exits without a decision; ``--sleep`` waits first (a slow agent). ``--spam N`` first calls a data tool N
times whatever the answers (an agent looping on ``get_state``); ``--linger`` keeps calling ``commit_action`` after its
commit and never exits (an agent CLI that does not stop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time


async def spam(client, tools: list, times: int) -> None:
    name = next(t.name for t in tools if t.name not in ("get_observation", "commit_action"))
    refused = 0
    for _ in range(times):
        result = await client.call_tool(name, {})
        refused += "budget" in "".join(getattr(block, "text", "") for block in result.content)
    print(f"{times} calls of {name}, {refused} refused over the budget", flush=True)


async def linger(client, args: dict) -> None:
    while True:
        await client.call_tool("commit_action", args)
        await asyncio.sleep(0.05)


async def play(config_file: str, commit: bool, spam_calls: int = 0, lingering: bool = False) -> int:
    from mcp import Client

    from finenvs.evaluation.agents import ScriptedRouter

    url = json.loads(open(config_file).read())["mcpServers"]["finenvs"]["url"]
    router = ScriptedRouter()
    async with Client(url) as client:
        observed = await client.call_tool("get_observation", {})
        prompt = (observed.structured_content or {})["observation"]
        listing = await client.list_tools()
        if spam_calls:
            await spam(client, listing.tools, spam_calls)
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                   "parameters": t.input_schema}}
                 for t in listing.tools if t.name != "get_observation"]
        messages: list[dict] = [{"role": "system", "content": "harness test agent"}, {"role": "user", "content": prompt}]
        for _ in range(40):
            reply = router.reply(messages, tools)
            if not reply.tool_calls:  # a text reply: committed under the commit schema's one text field
                if not commit or not reply.content:
                    print(f"no decision: {str(reply.content)[:200]}")
                    return 0
                schema = next(t for t in listing.tools if t.name == "commit_action").input_schema
                field = next((k for k in ("report", "answer", "action") if k in schema.get("properties", {})), "action")
                result = await client.call_tool("commit_action", {field: reply.content})
                print(json.dumps(result.structured_content))
                return 0
            messages.append(reply.message())
            for call in reply.tool_calls:
                args = json.loads(call.arguments) if call.arguments else {}
                if call.name == "commit_action":
                    if not commit:
                        print("would commit; --no-commit given")
                        return 0
                    result = await client.call_tool("commit_action", args)
                    print(json.dumps(result.structured_content), flush=True)
                    if lingering:
                        await linger(client, args)
                    return 0
                result = await client.call_tool(call.name, args)
                text = "".join(getattr(block, "text", "") for block in result.content)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    print("no decision after 40 turns")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("prompt_file")
    parser.add_argument("mcp_config")
    parser.add_argument("--no-commit", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--spam", type=int, default=0)
    parser.add_argument("--linger", action="store_true")
    args = parser.parse_args()
    open(args.prompt_file).read()  # the prompt is there (the server's get_observation is the same text)
    time.sleep(args.sleep)
    return asyncio.run(play(args.mcp_config, not args.no_commit, args.spam, args.linger))


if __name__ == "__main__":
    sys.exit(main())
