"""The fixed agents of tests/test_one_score.py and benchmarks/one_score_paths.py, and the harness's agent program.

    python tests/one_score_agent.py KIND PROMPT_FILE MCP_CONFIG

Kinds (:func:`commit_for`, for FinQA-v0's analytical questions): ``bare`` commits the right answer only;
``structured`` commits it with the method and the key intermediates (FAB++'s methodology and calculation);
``yield`` commits the structured right answer, then, challenged by the debate's counter-argument, withdraws it
(``{"answer": null}``). As the harness's program it reads the decision's observation over MCP and commits.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

#: The challenge a debated second prompt carries (the text interface's and the Debate wrapper's framing).
CHALLENGE = "A reviewer disagrees"
KINDS = ("bare", "structured", "yield")


def reference(prompt: str) -> dict[str, Any]:
    """The right structured answer to the analytical question a prompt asks (its ``Task:`` line names it)."""
    from finenvs.tasks.qa import analysis, methods

    task = next(line for line in prompt.splitlines() if line.startswith("Task: "))
    _, topic, seed = task.removeprefix("Task: ").split(" ")[0].split("/")
    return methods.reference_structured(analysis.generate(topic, int(seed)))


def commit_for(kind: str, prompt: str, challenged: bool) -> dict[str, Any]:
    """The ``commit_action`` arguments of agent ``kind`` for a FinQA-v0 analytical prompt."""
    ref = reference(prompt)
    if kind == "bare":
        return {"answer": ref["answer"]}
    if kind == "yield" and challenged:
        return {"answer": None}
    return {"method": ref["method"], "intermediates": ref["intermediates"], "answer": ref["answer"]}


class FixedAgent:
    """A chat agent that commits :func:`commit_for`'s answer at once; ``scripted``: the family's scripted agent."""

    def __init__(self, kind: str) -> None:
        from finenvs.evaluation.agents import ScriptedRouter

        self.kind, self.router, self.name = kind, ScriptedRouter(), f"fixed-{kind}"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        from finenvs.text.chat import ChatReply, ToolCall, first_prompt

        if self.kind == "scripted":
            return self.router.reply(messages, tools)
        challenged = any(m.get("role") == "user" and CHALLENGE in str(m.get("content")) for m in messages)
        args = commit_for(self.kind, first_prompt(messages), challenged)
        return ChatReply(None, [ToolCall(f"call_{len(messages)}", "commit_action", json.dumps(args))])

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return self.reply(messages, tools)


async def _play(kind: str, config_file: str) -> int:
    from mcp import Client

    url = json.loads(Path(config_file).read_text())["mcpServers"]["finenvs"]["url"]
    async with Client(url) as client:
        observed = await client.call_tool("get_observation", {})
        prompt = (observed.structured_content or {})["observation"]
        result = await client.call_tool("commit_action", commit_for(kind, prompt, CHALLENGE in prompt))
        print(json.dumps(result.structured_content))
    return 0


if __name__ == "__main__":
    kind, prompt_file, mcp_config = sys.argv[1:4]
    Path(prompt_file).read_text()  # the prompt is there (the server's get_observation is the same text)
    sys.exit(asyncio.run(_play(kind, mcp_config)))
