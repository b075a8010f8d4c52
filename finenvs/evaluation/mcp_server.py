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

Hostile input never ends the session. A call whose arguments break a limit of
:mod:`finenvs.text.safe_json` (nesting depth, number size, non-finite numbers),
or whose name and arguments exceed the reply cap every transport shares
(:data:`finenvs.text.protocol.MAX_REPLY_CHARS` characters of JSON), is refused
with an error result naming its size and nothing is recorded (a tool's or the
commit's own limit, ``MAX_ARGUMENT_CHARS``, then applies as on every path: a
tool error, or a commit taken as the default with the reason); a commit's
arguments are recorded once; lone surrogates in names and strings become
U+FFFD; a request line the transport cannot read (malformed or over-deep JSON,
a huge number literal, not JSON-RPC) is answered with a JSON-RPC error carrying
its id where one can be found. Every result's content text is at most the
episode's ``tool_max_chars`` (8,000 by default): a longer one is cut, lists and
strings largest first, with a note.

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

Requires the ``mcp`` extra (``pip install 'finenvs[mcp]'``).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finenvs.text.protocol import MAX_REPLY_CHARS

if TYPE_CHECKING:
    from finenvs.evaluation.runlog import RunMeta

OBSERVATION_TOOL = "get_observation"
SERVER_NAME = "finenvs"
#: Longest content text of a result when the episode gives no cap (characters of JSON).
MAX_RESULT_CHARS = 8_000


def _require_mcp() -> Any:
    try:
        import mcp
        import mcp.types  # noqa: F401
    except ImportError as exc:
        raise ImportError("the MCP server needs the mcp package: pip install 'finenvs[mcp]'") from exc
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
        from finenvs.evaluation.runlog import (
            RunFiles,
            TrajectoryWriter,
            record_chain_head,
            run_metadata,
            write_run_json,
        )
        from finenvs.evaluation.seal import load_or_create_key
        from finenvs.evaluation.session import EpisodeSession

        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        what = spec.env_kwargs.get("symbol") or ("pairs" if spec.env_kwargs.get("symbols") else f"{spec.index}")
        what = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(
            (spec.options or {}).get("task_id") or (spec.options or {}).get("index", what)))
        root = Path(out) / (name or f"mcp-{spec.env_id}-{what}-{stamp}")
        if root.exists():
            raise FileExistsError(f"{root} exists; pass another --name")
        root.mkdir(parents=True)
        self.files = RunFiles(root)
        key = load_or_create_key()  # seals run.json and every trajectory line (finenvs.evaluation.seal)
        self._write_run_json = lambda path, meta: write_run_json(path, meta, key=key)
        self._record_chain_head = record_chain_head
        self.meta: RunMeta = run_metadata(root, "mcp", agent={"kind": "mcp-client"},
                                                 config={"history": history, "tool_max_chars": tool_max_chars},
                                                 episodes=[spec])
        self.writer = TrajectoryWriter(self.files.trajectories, genesis=self.meta["integrity"]["genesis"], key=key)
        self.session = EpisodeSession(spec, writer=self.writer, history=history, tool_max_chars=tool_max_chars,
                                      **toolbox_kwargs)
        self.protocol = self.session.protocol
        self._write_run_json(self.files.run, self.meta)
        self.score: Any = None
        self.max_result_chars = int(tool_max_chars)  # cap on each result's content text
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

    def call(self, name: Any, arguments: Any) -> tuple[dict[str, Any], bool]:
        """Serve one call: ``(JSON-able result, is_error)``. Never raises for what a client sends.

        Arguments that break a limit are refused before the session sees them (nothing is recorded and the
        clock does not move); lone surrogates are replaced by U+FFFD.
        """
        from finenvs.tools.registry import COMMIT_TOOL

        if self.session.done:
            return {"error": f"the episode is over; results are in {self.files.root}", "done": True,
                    "results": str(self.files.root / "score.json")}, True
        name, arguments, error = screen_call(name, arguments)
        if error is not None:
            return error, True
        if name == OBSERVATION_TOOL:
            return {"observation": self.session.prompt, "date": self.session.date or None, "done": False}, False
        if name == COMMIT_TOOL:
            return self._commit(arguments)
        result = self.session.call_tool(name, arguments)
        return result.data, not result.ok

    def _commit(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        from finenvs.tools.registry import ignored_fields_note

        parsed = self.protocol.parse_commit(arguments)
        raw = json.dumps(arguments, ensure_ascii=False, default=str)
        seconds = time.perf_counter() - self._decision_began
        # the client's arguments are its whole reply: kept once, as the commit that `finenvs score` re-reads
        record = self.session.commit(parsed, raw_text=None, usage=None, cost_usd=None,
                                     timing={"seconds": seconds}, extra={"commit_arguments": raw})
        self._decision_began = time.perf_counter()
        info = self.session.last_info
        # the action the env took: the parse, after any stage check (FinHedging-v0's pair/trade words)
        reply: dict[str, Any] = {
            "accepted": record["invalid"] is None,
            "action": record["action"],
            "date": record["date"] or None,  # null for a task without a date
            "reward": record["reward"],
            "equity": record["equity"],
            "position": record["position"],
            "done": self.session.done,
        }
        reply.update(ignored_fields_note(arguments, self.protocol.commit_schema()))  # named, bounded
        if record["invalid"] is not None:
            reply["invalid"] = record["invalid"]
            reply["note"] = f"{record['action']} was taken by default" + (f"; {reply['note']}" if "note" in reply
                                                                          else "")
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
        self._record_chain_head(self.meta, self.writer)
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
            self._record_chain_head(self.meta, self.writer)
            self._write_run_json(self.files.run, self.meta)
        self.writer.close()
        self.session.close()


#: Longest error message a refusal sends (the client gets the reason, never an unbounded echo).
MAX_ERROR_CHARS = 2_000


# ---------------------------------------------------------------------------- bounds on what crosses the wire
def refusal(arguments: Any, name: str = "") -> str | None:
    """Why a call's arguments are refused (not an object, too deep, a huge or non-finite number, or with ``name``
    over :data:`~finenvs.text.protocol.MAX_REPLY_CHARS`), or None. Never echoes the input."""
    from finenvs.text import safe_json

    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    problem = safe_json.check_value(arguments)
    if problem is not None:
        return problem
    size = len(name) + len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_REPLY_CHARS:
        return f"the call has {size:,} characters of name and JSON; the limit is {MAX_REPLY_CHARS:,}"
    return None


def screen_call(name: Any, arguments: Any) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """A client's call made safe to serve: ``(name, arguments, None)`` with lone surrogates replaced, or
    ``(name, arguments, error result)`` for a name that is not a string or arguments :func:`refusal` refuses
    (never echoed). Every server of a session's tools (this one, the harness's gate) screens calls here."""
    if not isinstance(name, str):
        return "", {}, {"error": f"a tool name must be a string, got {type(name).__name__}"}
    arguments = arguments if arguments is not None else {}
    problem = refusal(arguments, name)
    name = scrub_text(name[:MAX_REPLY_CHARS + 1])  # a name over the cap is refused: only its head is shown
    if problem is not None:
        return name, {}, {"error": f"arguments of {name[:80]!r} refused: {problem}; nothing was done"}
    return name, scrub(arguments), None


def scrub_text(text: str) -> str:
    """``text`` with lone surrogates (which UTF-8 cannot carry) replaced by U+FFFD; surrogate pairs joined."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def scrub(value: Any) -> Any:
    """``value`` (JSON-like, depth already bounded) with every string and key passed through :func:`scrub_text`."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub_text(str(k)): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def content_of(data: Any, limit: int = MAX_RESULT_CHARS) -> tuple[str, Any]:
    """A result as ``(content text, structured value)``: strict JSON, UTF-8-safe, at most ``limit`` characters.

    A longer dict is cut by :func:`~finenvs.tools.registry.cap_output` (lists and strings, largest first, with a
    ``truncated`` note); one that still does not fit, or a value that cannot be written, becomes an error object.
    """
    from finenvs.evaluation.runlog import jsonable
    from finenvs.tools.registry import cap_output

    try:
        data = scrub(jsonable(data))
        text = _dumps(data)
    except (ValueError, TypeError, RecursionError) as exc:
        data = {"error": f"the result cannot be written as JSON ({type(exc).__name__})"}
        text = _dumps(data)
    if len(text) > limit:
        try:
            data, _ = cap_output(data, limit) if isinstance(data, dict) else (None, False)
            text = _dumps(data)
        except (ValueError, TypeError, RecursionError):
            text = ""
        if data is None or len(text) > limit:
            data = {"error": f"the result has {len(text)} characters of JSON; the limit is {limit}"}
            text = _dumps(data)
    return text, data


def build_server(episode: McpEpisode | Any | None, *, error: str | None = None) -> Any:
    """A low-level ``mcp.server.Server`` serving ``episode``'s tools (an :class:`McpEpisode`, or any object with its
    ``tool_list``, ``call`` and ``max_result_chars`` and an ``instructions`` text: the harness's decision gate).

    With ``episode=None`` the server refuses: it lists ``get_observation`` and answers every call with an MCP
    error result carrying ``error`` (the reason the episode could not start), so an MCP client shows the message
    rather than a closed connection. A call that fails inside the server is an error result too, never a crash.
    """
    _require_mcp()
    from mcp import types
    from mcp.server import Server

    import finenvs
    from finenvs.tools.registry import redact_paths  # the agent learns nothing of where files are

    limit = episode.max_result_chars if episode is not None else MAX_RESULT_CHARS

    def result(data: Any, is_error: bool) -> Any:
        text, data = content_of(data, limit)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=data if isinstance(data, dict) else {"result": data},
                                    is_error=is_error)

    if episode is None:
        message = redact_paths(f"finenvs mcp could not start the episode: {error or 'unknown error'}")[:MAX_ERROR_CHARS]
        listing = [types.Tool(name=OBSERVATION_TOOL, description="Why this finenvs server has no episode.",
                              input_schema={"type": "object", "properties": {}})]

        async def refuse_list(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=listing)

        async def refuse_call(ctx: Any, params: Any) -> Any:
            return result({"error": message, "done": True}, True)

        return Server(SERVER_NAME, version=finenvs.__version__, instructions=message, on_list_tools=refuse_list,
                      on_call_tool=refuse_call)

    async def list_tools(ctx: Any, params: Any) -> Any:  # listed per request: the harness's gate changes episodes
        return types.ListToolsResult(tools=[types.Tool(name=t["name"], description=t["description"],
                                                       input_schema=t["input_schema"]) for t in episode.tool_list()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            data, is_error = episode.call(params.name, params.arguments)
            return result(data, is_error)
        except Exception as exc:  # a bug must not end the client's session: it gets the reason
            return result({"error": f"internal error in {scrub_text(str(params.name))[:80]}: {type(exc).__name__}: "
                                    f"{redact_paths(scrub_text(str(exc)))[:MAX_ERROR_CHARS]}"}, True)

    instructions = getattr(episode, "instructions", None)
    if instructions is None:
        spec = episode.session.spec
        instructions = (
            f"finenvs episode: {spec.describe()}. Call {OBSERVATION_TOOL} for the task and the current "
            "state, read data with the other tools (nothing after the current decision time is visible), then call "
            "commit_action once per decision. The episode ends after the last decision; the last commit's reply "
            "gives the results."
        )
    return Server(
        SERVER_NAME,
        version=finenvs.__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"|[{}\[\],:]|[^\s"{}\[\],:]++')


def request_id(line: str) -> int | str | None:
    """The top-level ``"id"`` of a JSON-RPC line that did not parse (one linear scan), or None."""
    depth, key_next, key, want = 0, False, None, False
    for match in _TOKEN.finditer(line):
        token = match.group()
        if want:
            if re.fullmatch(r"-?\d{1,18}", token):
                return int(token)
            if token.startswith('"') and len(token) <= 256:
                try:
                    return scrub_text(json.loads(token))
                except ValueError:
                    return None
            return None
        if token in "{[":
            depth += 1
            key_next = depth == 1 and token == "{"
        elif token in "}]":
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 1:
            if token == ",":
                key_next = True
            elif token == ":":
                want, key = key == '"id"', None
            elif key_next:
                key, key_next = token, False
    return None


async def _answer_unreadable(problem: Exception, write_stream: Any) -> None:
    """Answer a line the transport could not read with a JSON-RPC error (its id when one can be found), so a
    client is not left waiting; blank lines are ignored."""
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    errors = problem.errors() if hasattr(problem, "errors") else []
    first = errors[0] if errors else {}
    given = first.get("input")  # the line when it is not JSON; the decoded value (or a field of it) when it is
    if first.get("type") == "json_invalid" and isinstance(given, str):
        if not given.strip():
            return
        code, rid = PARSE_ERROR, request_id(given)
    else:  # JSON, but not a JSON-RPC message: its id if the value shows one, else null (as JSON-RPC says)
        rid = given.get("id") if isinstance(given, dict) else None
        code, rid = INVALID_REQUEST, rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None
    message = scrub_text(str(first.get("msg") or type(problem).__name__))[:200]
    await write_stream.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=scrub_text(rid) if isinstance(rid, str)
                                                        else rid, error=ErrorData(code=code, message=message))))


async def serve(episode: McpEpisode | None, *, error: str | None = None, stdin: Any = None,
                stdout: Any = None) -> None:
    """Serve ``episode`` (or, with ``None``, a refusal carrying ``error``) over stdio until the client disconnects.

    ``stdin``/``stdout``: text streams to use instead of the process's (anyio async files, or objects with the same
    ``async for line`` / ``await write(text)`` / ``await flush()``), e.g. to drive the server in process.
    """
    _require_mcp()
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    server = build_server(episode, error=error)
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        readable_send, readable = anyio.create_memory_object_stream[SessionMessage](0)

        async def screen() -> None:  # the transport's unreadable lines get an answer, the rest go on
            async with readable_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await _answer_unreadable(item, write_stream)
                    else:
                        await readable_send.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(screen)
            await server.run(readable, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()


def serve_stdio(episode: McpEpisode | None, *, error: str | None = None) -> None:
    """Serve ``episode`` (or, with ``None``, a refusal carrying ``error``) over stdin/stdout until the client
    disconnects (:func:`serve`)."""
    try:  # the episode is closed (marked incomplete if unfinished) however serving ends, Ctrl-C included
        _require_mcp()
        import anyio

        anyio.run(lambda: serve(episode, error=error))
    finally:
        if episode is not None:
            episode.close()


__all__ = ["MAX_RESULT_CHARS", "OBSERVATION_TOOL", "McpEpisode", "build_server", "content_of", "refusal", "request_id",
           "screen_call", "scrub", "scrub_text", "serve", "serve_stdio"]
