"""MCP server: one finenvs episode served to an external agent over stdio.

``finenvs mcp --env FinTrading-v0 --symbol TSLA --split eval`` starts a Model
Context Protocol server (the official ``mcp`` SDK, 2.x) on stdin/stdout. It
serves the task's date-locked tools, ``get_observation`` (the prompt: task
instructions, the state at the current close, the tools) and
``commit_action``. The market clock advances only on ``commit_action``; every
other tool reads as of the current close, so an agent may call them as often
as it likes. A request past the clock returns only what was visible and is
counted as a look-ahead attempt; the count is reported with the results after
the last commit, not during the episode (so it cannot tell an agent whether an
id it guessed exists in the future).

The episode is recorded as a finenvs run folder (``run.json`` and
``trajectories.jsonl``, the LLM runner's format); on the last commit the server
re-scores it offline and writes ``score.json`` / ``score.md`` there, so
``finenvs score RUN_DIR`` works on it like on any run. The commit's reply names
the folder.

Register it with an agent, e.g. in a project's ``.mcp.json``::

    {"mcpServers": {"finenvs-trading": {
        "command": "finenvs",
        "args": ["mcp", "--env", "FinTrading-v0", "--symbol", "TSLA", "--split", "eval",
                 "--out", "finenvs-mcp-runs"]}}}

Requires the ``llm`` extra (``pip install 'finenvs[llm]'``).
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any

OBSERVATION_TOOL = "get_observation"
SERVER_NAME = "finenvs"


def _require_mcp() -> Any:
    try:
        import mcp
        import mcp.types  # noqa: F401
    except ImportError as exc:
        raise ImportError("the MCP server needs the mcp package: pip install 'finenvs[llm]'") from exc
    return mcp


class McpEpisode:
    """The state behind the server: one recorded :class:`~finenvs.evaluation.session.EpisodeSession`.

    Args:
        spec: The episode to serve.
        out: Parent folder of the run folder.
        name: Run folder name (default: ``mcp-<env>-<symbol>-<UTC time>``).
        history: Recent decisions in the prompt.
        tool_max_chars: Cap on each tool result.
    """

    def __init__(self, spec: Any, *, out: Path | str = "finenvs-mcp-runs", name: str | None = None,
                 history: int = 5, tool_max_chars: int = 8_000, **toolbox_kwargs: Any) -> None:
        from finenvs.evaluation.session import (
            EpisodeSession,
            RunFiles,
            TrajectoryWriter,
            run_metadata,
            write_run_json,
        )

        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        what = spec.env_kwargs.get("symbol") or ("pairs" if spec.env_kwargs.get("symbols") else f"{spec.index}")
        what = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(
            (spec.options or {}).get("task_id") or (spec.options or {}).get("index", what)))
        root = Path(out) / (name or f"mcp-{spec.env_id}-{what}-{stamp}")
        if root.exists():
            raise FileExistsError(f"{root} exists; pass another --name")
        root.mkdir(parents=True)
        self.files = RunFiles(root)
        self._write_run_json = write_run_json
        self.writer = TrajectoryWriter(self.files.trajectories)
        self.session = EpisodeSession(spec, writer=self.writer, history=history, tool_max_chars=tool_max_chars,
                                      **toolbox_kwargs)
        self.protocol = self.session.protocol
        self.meta: dict[str, Any] = run_metadata(root, "mcp", agent={"kind": "mcp-client"},
                                                 config={"history": history, "tool_max_chars": tool_max_chars},
                                                 episodes=[spec])
        write_run_json(self.files.run, self.meta)
        self.score: Any = None
        self._decision_began = time.perf_counter()

    # ------------------------------------------------------------------ tools
    def tool_list(self) -> list[dict[str, Any]]:
        """``{"name", "description", "input_schema"}`` for every served tool."""
        tools = [{
            "name": OBSERVATION_TOOL,
            "description": "The prompt for the current decision: task instructions, the state at the current "
                           "close (date, position, equity), recent decisions and the tools.",
            "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        }]
        for spec in self.session.tool_specs():
            fn = spec["function"]
            tools.append({"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]})
        return tools

    def call(self, name: str, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """Serve one call: ``(JSON-able result, is_error)``. Never raises."""
        from finenvs.tools.registry import COMMIT_TOOL

        arguments = arguments if arguments is not None else {}
        if self.session.done:
            return {"error": f"the episode is over; results are in {self.files.root}", "done": True,
                    "results": str(self.files.root / "score.json")}, True
        if name == OBSERVATION_TOOL:
            return {"observation": self.session.prompt, "date": self.session.date, "done": False}, False
        if name == COMMIT_TOOL:
            return self._commit(arguments)
        result = self.session.call_tool(name, arguments)
        return result.data, not result.ok

    def _commit(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        parsed = self.protocol.parse_commit(arguments)
        raw = json.dumps(arguments, ensure_ascii=False, default=str)
        seconds = time.perf_counter() - self._decision_began
        record = self.session.commit(parsed, raw_text=raw, usage=None, cost_usd=None,
                                     timing={"seconds": seconds}, extra={"commit_arguments": raw})
        self._decision_began = time.perf_counter()
        info = self.session.last_info
        # the action the env took: the parse, after any stage check (FinHedging-v0's pair/trade words)
        reply: dict[str, Any] = {
            "accepted": record["invalid"] is None,
            "action": record["action"],
            "date": record["date"],
            "reward": record["reward"],
            "equity": record["equity"],
            "position": record["position"],
            "done": self.session.done,
        }
        if record["invalid"] is not None:
            reply["invalid"] = record["invalid"]
            reply["note"] = f"{record['action']} was taken by default"
        if self.session.done:
            reply.update(self.finish())
            reply["look_ahead_attempts"] = int(info.get("look_ahead_attempts", 0))
        else:
            reply["next_date"] = record["next_date"]
            reply["observation"] = self.session.prompt
        return reply, False

    def finish(self) -> dict[str, Any]:
        """Close the trajectory, re-score it offline and write the results files."""
        from finenvs.evaluation.score import score_run

        self.writer.close()
        self.meta["status"] = "complete"
        self.meta["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self._write_run_json(self.files.run, self.meta)
        self.score = score_run(self.files.root)
        return {
            "results_dir": str(self.files.root),
            "results_file": str(self.files.root / "score.json"),
            "metrics": self.score.run_metrics(),
            "reproduced_offline": self.score.reproduced,
        }

    def close(self) -> None:
        if not self.session.done:
            self.meta["status"] = "incomplete"
            self._write_run_json(self.files.run, self.meta)
        self.writer.close()
        self.session.close()


#: Longest error message a refusal sends (the client gets the reason, never an unbounded echo).
MAX_ERROR_CHARS = 2_000


def build_server(episode: McpEpisode | None, *, error: str | None = None) -> Any:
    """A low-level ``mcp.server.Server`` serving ``episode``'s tools.

    With ``episode=None`` the server refuses: it lists ``get_observation`` and answers every call with an MCP
    error result carrying ``error`` (the reason the episode could not start), so an MCP client shows the message
    rather than a closed connection. A call that fails inside the server is an error result too, never a crash.
    """
    _require_mcp()
    from mcp import types
    from mcp.server import Server

    import finenvs
    from finenvs.evaluation.session import jsonable

    def result(data: Any, is_error: bool) -> Any:
        data = jsonable(data)
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=data if isinstance(data, dict) else {"result": data},
                                    is_error=is_error)

    if episode is None:
        message = f"finenvs mcp could not start the episode: {error or 'unknown error'}"[:MAX_ERROR_CHARS]
        listing = [types.Tool(name=OBSERVATION_TOOL, description="Why this finenvs server has no episode.",
                              input_schema={"type": "object", "properties": {}})]

        async def refuse_list(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=listing)

        async def refuse_call(ctx: Any, params: Any) -> Any:
            return result({"error": message, "done": True}, True)

        return Server(SERVER_NAME, version=finenvs.__version__, instructions=message, on_list_tools=refuse_list,
                      on_call_tool=refuse_call)

    tools = [types.Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
             for t in episode.tool_list()]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            data, is_error = episode.call(params.name, params.arguments)
        except Exception as exc:  # a bug must not end the client's session: it gets the reason
            data, is_error = {"error": f"internal error in {str(params.name)[:80]}: {type(exc).__name__}: "
                                       f"{str(exc)[:MAX_ERROR_CHARS]}"}, True
        return result(data, is_error)

    spec = episode.session.spec
    return Server(
        SERVER_NAME,
        version=finenvs.__version__,
        instructions=(
            f"finenvs {spec.env_id} episode ({spec.label()}). Call {OBSERVATION_TOOL} for the task and the current "
            "state, read data with the other tools (nothing after the current decision time is visible), then call "
            "commit_action once per decision. The episode ends after the last decision; results are written "
            f"to {episode.files.root}."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_stdio(episode: McpEpisode | None, *, error: str | None = None) -> None:
    """Serve ``episode`` (or, with ``None``, a refusal carrying ``error``) over stdin/stdout until the client
    disconnects."""
    _require_mcp()
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(episode, error=error)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        if episode is not None:
            episode.close()


__all__ = ["OBSERVATION_TOOL", "McpEpisode", "build_server", "serve_stdio"]
