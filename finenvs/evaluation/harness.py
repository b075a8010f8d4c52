"""External agent programs as HERCULEAN runs them: one invocation of a command per decision, grounded by MCP.

``finenvs harness --env FinTrading-v0 --agent-cmd 'my-agent --prompt {prompt_file} --mcp {mcp_config}'``
runs the family's episodes (the same plan and flags as ``finenvs llm``) by
invoking the command once per decision:

1. The harness serves the episode over MCP on ``127.0.0.1`` (Streamable HTTP, the
   same tools, ``get_observation`` and ``commit_action`` as ``finenvs mcp``), bound
   to the episode's state at the decision's date.
2. It writes the decision's prompt to ``{prompt_file}`` and an MCP client config
   (``{"mcpServers": {"finenvs": {"type": "http", "url": ...}}}``, the shape agent
   CLIs read) to ``{mcp_config}``, then runs the command (no shell; the
   placeholders are replaced inside each argument).
3. The agent reads data with the tools and commits one decision with
   ``commit_action``; later calls in the same decision are refused. The harness
   takes the committed action when the command exits.

A command that exits without a commit, or is still running after ``timeout``
seconds (its process group is killed), made no decision: under HERCULEAN's rule
(the default, ``failure_rule="herculean"``) the decision is tried again up to
five times, and then the episode fails (shown as — in tables); under
``"default"`` it takes the protocol's documented default action. Each attempt's
command, exit code, time and the tails of its output are written to
``harness/`` in the run folder.

The run folder is the LLM runner's (:func:`finenvs.evaluation.llm.run_llm`
drives the episodes; the harness is its agent), so ``finenvs score``, ``bench``
and ``--resume`` treat it like any run. Episodes run one at a time: an agent
program is one process at a time. Placeholders: ``{prompt_file}``,
``{mcp_config}``, ``{url}`` (the MCP endpoint), ``{workdir}`` (the attempt's
folder, for scratch files), ``{env_id}``, ``{episode}``, ``{step}``; paths are
absolute. The command runs in the directory the harness was started from, so a
relative program (``./agent.sh``) or script (``python agent.py``) resolves as it
would when typed there.

Requires the ``llm`` extra (the ``mcp`` SDK and ``uvicorn``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
import shlex
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finenvs.errors import FinEnvsError
from finenvs.evaluation.endpoints import EndpointError
from finenvs.text.chat import ChatReply, ToolCall

PLACEHOLDERS = ("{prompt_file}", "{mcp_config}", "{url}", "{workdir}", "{env_id}", "{episode}", "{step}")
#: Characters of an attempt's stdout and stderr kept in its log.
LOG_TAIL_CHARS = 4_000
#: What the prompt file adds to the decision's prompt.
HARNESS_NOTE = ("You are run by the finenvs harness for one decision. The MCP server named finenvs serves this "
                "episode's date-locked tools: call get_observation for the task if you need it again, read data with "
                "the tools, then call commit_action exactly once. The decision counts only through commit_action.")


class HarnessError(FinEnvsError):
    """The harness cannot run (a bad command template, no MCP SDK, a server that does not start)."""


def check_command(template: str) -> list[str]:
    """The command's arguments (``shlex`` split), checked to name a prompt: ``{prompt_file}`` or ``{url}``/
    ``{mcp_config}``.

    Raises:
        HarnessError: Empty, unbalanced quotes, or no placeholder that gives the agent its task.
    """
    try:
        args = shlex.split(template)
    except ValueError as exc:
        raise HarnessError(f"--agent-cmd {template[:200]!r}: {exc}") from None
    if not args:
        raise HarnessError("--agent-cmd is empty")
    if not any(p in a for a in args for p in ("{prompt_file}", "{mcp_config}", "{url}")):
        raise HarnessError(f"--agent-cmd {template[:200]!r} names none of {{prompt_file}}, {{mcp_config}}, {{url}}: "
                           "the agent would get neither its task nor the tools")
    return args


class DecisionGate:
    """What the MCP server serves: the open decision of the episode being run, or a refusal between decisions.

    It has the interface :func:`finenvs.evaluation.mcp_server.build_server` serves (``tool_list``, ``call``,
    ``max_result_chars``, ``instructions``). A ``commit_action`` call does not step the env: it records the
    arguments (the runner commits them when the command exits) and closes the decision to further calls.
    """

    def __init__(self, tool_max_chars: int) -> None:
        self.max_result_chars = int(tool_max_chars)
        self.instructions = ("finenvs harness: one decision of an episode. Call get_observation for the task and the "
                             "current state, read data with the other tools (nothing after the decision time is "
                             "visible), then call commit_action once.")
        self._lock = threading.Lock()
        self._session: Any = None
        self._tools: list[dict[str, Any]] | None = None
        self.committed: dict[str, Any] | None = None

    def tool_list(self) -> list[dict[str, Any]]:
        from finenvs.evaluation.mcp_server import OBSERVATION_TOOL

        listed = [{"name": OBSERVATION_TOOL, "description": "The prompt for the current decision: the task, the "
                   "state at the current close, recent decisions and the tools.",
                   "input_schema": {"type": "object", "properties": {}, "additionalProperties": False}}]
        return listed + list(self._tools or [])

    def set_tools(self, specs: list[dict[str, Any]]) -> None:
        self._tools = [{"name": s["function"]["name"], "description": s["function"]["description"],
                        "input_schema": s["function"]["parameters"]} for s in specs]

    def open(self, session: Any) -> None:
        with self._lock:
            self._session, self.committed = session, None

    def close(self) -> dict[str, Any] | None:
        with self._lock:
            self._session = None
            return self.committed

    def call(self, name: Any, arguments: Any) -> tuple[dict[str, Any], bool]:
        """Serve one call: ``(JSON-able result, is_error)``; never raises for what a client sends."""
        from finenvs.evaluation.mcp_server import OBSERVATION_TOOL, screen_call
        from finenvs.tools.registry import COMMIT_TOOL

        with self._lock:
            session = self._session
            if session is None:
                return {"error": "no decision is open: the harness runs the agent once per decision"}, True
            if self.committed is not None:
                return {"error": "this decision is committed; exit so the harness can take it"}, True
            name, arguments, error = screen_call(name, arguments)
            if error is not None:
                return error, True
            if name == OBSERVATION_TOOL:
                return {"observation": session.prompt, "date": session.date or None, "done": False}, False
            if name == COMMIT_TOOL:
                parsed = session.protocol.parse_commit(arguments)
                self.committed = arguments
                reply: dict[str, Any] = {"accepted": parsed.valid, "action": parsed.name,
                                         "note": "committed; exit now, the harness takes the decision"}
                if not parsed.valid:
                    reply["invalid"] = parsed.invalid
                return reply, False
            result = session.call_tool(name, arguments)
            return result.data, not result.ok


class _Server:
    """The gate served over Streamable HTTP on 127.0.0.1 by uvicorn in a daemon thread."""

    def __init__(self, gate: DecisionGate) -> None:
        try:
            import uvicorn

            from finenvs.evaluation.mcp_server import build_server
        except ImportError as exc:  # pragma: no cover - the llm extra brings both
            raise HarnessError("the harness needs the mcp SDK and uvicorn: pip install 'finenvs[llm]'") from exc
        app = build_server(gate).streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error",
                                                     lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self, timeout: float = 20.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise HarnessError(f"the harness's MCP server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@dataclass
class HarnessAgent:
    """The agent of a harness run: each ``complete`` runs the command once, bound to the open decision.

    The LLM runner calls :meth:`bind_session` as each episode starts (so the MCP server serves that episode) and
    :meth:`complete` per attempt; the reply is the ``commit_action`` call the program made over MCP, or, without
    one, a reply with no action (the runner's failure rule decides).

    Attributes:
        command: The command template (see the module docstring).
        root: Where each attempt's folder and log go (``<run>/harness``; set by :func:`run_harness`).
        timeout: Seconds an attempt may run before its process group is killed.
        tool_max_chars: Cap on each MCP result.
        env: Extra environment variables of the command.
    """

    command: str
    root: Path | None = None
    timeout: float = 600.0
    tool_max_chars: int = 8_000
    env: dict[str, str] | None = None
    name: str = "harness"

    def __post_init__(self) -> None:
        self.args = check_command(self.command)
        self.gate = DecisionGate(self.tool_max_chars)
        self._server: _Server | None = None
        self._session: Any = None
        self._attempts = 0
        self._cwd = Path.cwd()  # the command runs where finenvs harness was started: ./agent.sh, python agent.py,
        # .claude/skills resolve as when typed there; each attempt gets its own folder as {workdir}

    def describe(self) -> dict[str, Any]:
        return {"kind": "harness", "name": self.name, "command": self.command, "timeout": self.timeout}

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._server is None:
            self._server = _Server(self.gate)
            self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def bind_session(self, session: Any) -> None:
        """The episode whose decisions the next attempts serve (None when it ends)."""
        self._session = session
        if session is not None:
            self.gate.set_tools(session.tool_specs())

    # ------------------------------------------------------------------ one attempt
    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        if self._session is None or self._server is None:
            raise HarnessError("the harness agent runs only inside run_harness (no episode is bound)")
        session = self._session
        self._attempts += 1
        root = Path(self.root or ".").resolve()  # absolute placeholders, whatever the command's directory
        work = root / f"ep{session.spec.index:04d}-step{session.step_index:04d}-try{self._attempts}"
        work.mkdir(parents=True, exist_ok=True)
        prompt_file, config_file = work / "prompt.md", work / "mcp.json"
        turns = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        prompt_file.write_text(HARNESS_NOTE + "\n\n" + "\n\n".join(turns), encoding="utf-8")
        config_file.write_text(json.dumps({"mcpServers": {"finenvs": {"type": "http", "url": self._server.url}}},
                                          indent=2) + "\n")
        values = {"{prompt_file}": str(prompt_file), "{mcp_config}": str(config_file), "{url}": self._server.url,
                  "{workdir}": str(work), "{env_id}": session.spec.env_id, "{episode}": str(session.spec.index),
                  "{step}": str(session.step_index)}
        argv = []
        for arg in self.args:
            for key, value in values.items():
                arg = arg.replace(key, value)
            argv.append(arg)
        self.gate.open(session)
        began = time.perf_counter()
        outcome, code, out, err = await _run(argv, self._cwd, self.timeout, self.env)
        committed = self.gate.close()
        seconds = time.perf_counter() - began
        log = {"argv": argv, "exit_code": code, "outcome": outcome, "seconds": round(seconds, 3),
               "committed": committed, "stdout_tail": out[-LOG_TAIL_CHARS:], "stderr_tail": err[-LOG_TAIL_CHARS:]}
        (work / "attempt.json").write_text(json.dumps(log, indent=2, default=str, ensure_ascii=False) + "\n")
        if committed is not None:  # an agent program's tokens are its own: unknown here (usage None, n/a)
            return ChatReply(None, [ToolCall(f"harness_{self._attempts}", "commit_action", json.dumps(committed))],
                             usage=None)
        why = (f"the agent command {outcome} after {seconds:.1f} s (exit code {code}) without calling commit_action"
               if outcome != "timeout" else f"the agent command made no commit within {self.timeout:g} s")
        # no decision: the runner tries again (HERCULEAN: five attempts), then fails the episode or takes the default
        raise EndpointError("transient", why)


async def _run(argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None) -> tuple[str, int | None, str,
                                                                                                   str]:
    """Run one attempt; ``(outcome, exit code, stdout, stderr)``; the process group is killed at the timeout."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, env={**os.environ, **(env or {})})
    except OSError as exc:
        return "could not start", None, "", f"{type(exc).__name__}: {exc}"
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout)
        outcome = "exited"
    except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = await proc.communicate()
        if isinstance(exc, asyncio.CancelledError):
            raise
        outcome = "timeout"
    return outcome, proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def run_harness(config: Any, agent: HarnessAgent, **kwargs: Any) -> Any:
    """Run (or with ``resume=RUN_DIR`` continue) ``config``'s episodes with the agent program; see the module
    docstring. ``kwargs`` go to :func:`finenvs.evaluation.llm.run_llm` (``out``, ``name``, ``resume``,
    ``progress``). Episodes run one at a time.

    Returns:
        The runner's :class:`~finenvs.evaluation.llm.RunSummary`.
    """
    from finenvs.evaluation.llm import HERCULEAN_ATTEMPTS, run_llm

    config.concurrency = 1
    config.request_timeout = float(agent.timeout)
    # an attempt without a commit is tried again under HERCULEAN's rule (five attempts), once otherwise
    config.max_retries = HERCULEAN_ATTEMPTS - 1 if config.failure_rule == "herculean" else 0
    config.backoff_base = 0.0
    config.max_consecutive_endpoint_failures = None
    config.decision_timeout = max(float(config.decision_timeout), (config.max_retries + 1) * (agent.timeout + 10))
    if kwargs.get("resume") is not None:
        agent.root = Path(kwargs["resume"]) / "harness"
    else:
        kwargs["name"] = kwargs.get("name") or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        agent.root = Path(kwargs.get("out", "finenvs-runs")) / kwargs["name"] / "harness"
    agent.start()
    try:
        return run_llm(config, agent, **kwargs)
    finally:
        agent.stop()


__all__ = ["HARNESS_NOTE", "PLACEHOLDERS", "DecisionGate", "HarnessAgent", "HarnessError", "check_command",
           "run_harness"]
