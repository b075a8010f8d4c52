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
   placeholders are replaced inside each argument, in one pass) confined by
   :mod:`finenvs.evaluation.confine`: the data, caches, run key and run folders
   hidden, writable only ``{workdir}`` and a private home and ``/tmp``, in its own
   PID namespace. Where no sandbox works the harness refuses unless ``unconfined``.
3. The agent reads data with the tools and commits one decision with
   ``commit_action``; later calls in the same decision are refused. The decision
   is taken the moment the commit arrives; the program then has ``commit_grace``
   seconds to exit before everything it started is ended.

A command that exits without a commit, or is still running after ``timeout``
seconds (everything it started is killed), made no decision: under HERCULEAN's rule
(the default, ``failure_rule="herculean"``) the decision is tried again up to
five times, and then the episode fails (shown as — in tables); under
``"default"`` it takes the protocol's documented default action. Each attempt's
command, exit code, outcome and time, its prompt and MCP config, and its output
(``stdout.log``/``stderr.log``, capped at :data:`OUTPUT_CAP_BYTES` each, the
tail in ``attempt.json``) are written to ``harness/<attempt>/`` in the run folder.

The run folder is the LLM runner's (:func:`finenvs.evaluation.llm.run_llm`
drives the episodes; the harness is its agent), so ``finenvs score``, ``bench``
and ``--resume`` treat it like any run. Episodes run one at a time: an agent
program is one process at a time. Placeholders: ``{prompt_file}``,
``{mcp_config}``, ``{url}`` (the MCP endpoint), ``{workdir}`` (the attempt's
scratch folder, removed after it), ``{env_id}``, ``{episode}``, ``{step}``, and with a model proxy
``{model_url}``; paths are absolute. The program's environment also holds ``FINENVS_MCP_URL`` (and with a model
proxy ``FINENVS_MODEL_URL``), for agent CLIs whose config file reads variables.

With ``model_proxy=UPSTREAM_URL`` (``--model-proxy``) the run serves the model endpoint through
:class:`finenvs.evaluation.model_proxy.ModelProxy` for agent CLIs that stream (opencode): the program talks to
``{model_url}``, the proxy to the upstream, non-streaming, with ``tool_choice`` set.

The command runs in the directory the harness was started from, so a relative program (``./agent.sh``) or script
(``python agent.py``) resolves as it would when typed there.

Requires the ``mcp`` extra (the ``mcp`` SDK and ``uvicorn``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
import re
import shlex
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finenvs.errors import FinEnvsError
from finenvs.evaluation.confine import Sandbox, make_sandbox, protected_paths
from finenvs.evaluation.endpoints import EndpointError
from finenvs.text.chat import ChatReply, ToolCall

PLACEHOLDERS = ("{prompt_file}", "{mcp_config}", "{url}", "{workdir}", "{env_id}", "{episode}", "{step}",
                "{model_url}")
#: Characters of an attempt's stdout and stderr kept in its attempt.json.
LOG_TAIL_CHARS = 4_000
#: Bytes of each of an attempt's stdout and stderr written to its log files (the rest is counted, not kept).
OUTPUT_CAP_BYTES = 1_048_576
#: Seconds an agent program may go on after its commit before the harness ends it.
COMMIT_GRACE_SECONDS = 5.0
#: Calls refused over the tool budget after which an attempt is ended (a program looping on refusals would otherwise
#: hold the decision for its whole timeout).
OVER_BUDGET_CALLS = 20
#: The outcome of an attempt ended for going :data:`OVER_BUDGET_CALLS` calls over its tool budget.
OVER_BUDGET = "ended over its tool budget"
#: Seconds the harness waits for an ended attempt's output to drain.
DRAIN_SECONDS = 2.0
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

    The family's limits hold over MCP as in the in-process runner: at most ``budget`` tool calls per decision (the
    first ``get_observation`` is the prompt the runner would send and is free; later ones count), each result at most
    ``max_result_chars``; a call over the budget is refused unserved, and after :data:`OVER_BUDGET_CALLS` refusals the
    attempt is ended (``on_over``) as one that made no commit.
    """

    def __init__(self, tool_max_chars: int, budget: int | None = None) -> None:
        self.max_result_chars = int(tool_max_chars)
        #: tool calls per decision (the run's ``tool_budget``, as the in-process runner allows); None: no limit
        self.budget = budget
        #: per open decision: the calls served (counted against ``budget``) and the calls refused over it
        self.used = 0
        self.refused = 0
        self._observed = False
        self.instructions = ("finenvs harness: one decision of an episode. Call get_observation for the task and the "
                             "current state, read data with the other tools (nothing after the decision time is "
                             "visible), then call commit_action once.")
        self._lock = threading.Lock()
        self._session: Any = None
        self._tools: list[dict[str, Any]] | None = None
        self._on_commit: Callable[[], object] | None = None
        self._on_over: Callable[[], object] | None = None
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

    def open(self, session: Any, on_commit: Callable[[], object] | None = None,
             on_over: Callable[[], object] | None = None) -> None:
        """Serve ``session``'s decision; ``on_commit`` is called (from the server's thread) when it is committed,
        ``on_over`` when the program has gone :data:`OVER_BUDGET_CALLS` calls over its budget."""
        with self._lock:
            self._session, self.committed, self._on_commit, self._on_over = session, None, on_commit, on_over
            self.used = self.refused = 0
            self._observed = False

    def close(self) -> dict[str, Any] | None:
        with self._lock:
            self._session, self._on_commit, self._on_over = None, None, None
            return self.committed

    def _over_budget(self) -> tuple[dict[str, Any], bool] | None:
        """Count one call against the budget: None when it may be served, else the refusal."""
        if self.budget is None or self.used < self.budget:
            self.used += 1
            return None
        self.refused += 1
        if self.refused == OVER_BUDGET_CALLS and self._on_over is not None:
            self._on_over()
        return {"error": f"the budget is {self.budget} tool calls per decision and it is spent; call "
                         "commit_action now"}, True

    def call(self, name: Any, arguments: Any) -> tuple[dict[str, Any], bool]:
        """Serve one call: ``(JSON-able result, is_error)``; never raises for what a client sends."""
        from finenvs.evaluation.mcp_server import OBSERVATION_TOOL, screen_call
        from finenvs.tools.registry import COMMIT_TOOL, ignored_fields_note

        with self._lock:
            session = self._session
            if session is None:
                return {"error": "no decision is open: the harness runs the agent once per decision"}, True
            if self.committed is not None:
                return {"error": "this decision is committed; exit so the harness can take it"}, True
            free = name == COMMIT_TOOL or (name == OBSERVATION_TOOL and not self._observed)
            if not free and (refusal := self._over_budget()) is not None:  # a refused or malformed call counts too
                return refusal
            name, arguments, error = screen_call(name, arguments)
            if error is not None:
                return error, True
            if name == OBSERVATION_TOOL:
                self._observed = True
                return {"observation": session.prompt, "date": session.date or None, "done": False}, False
            if name == COMMIT_TOOL:
                parsed = session.protocol.parse_commit(arguments)
                self.committed = arguments
                if self._on_commit is not None:
                    self._on_commit()
                ignored = ignored_fields_note(arguments, session.protocol.commit_schema())
                reply: dict[str, Any] = {"accepted": parsed.valid, "action": parsed.name, **ignored,
                                         "note": "committed; exit now, the harness takes the decision"
                                         + (f"; {ignored['note']}" if ignored else "")}
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
        except ImportError as exc:  # pragma: no cover - the mcp extra brings both
            raise HarnessError("the harness needs the mcp SDK and uvicorn: pip install 'finenvs[mcp]'") from exc
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
class Attempt:
    """What one run of the agent command did (written to its ``attempt.json``)."""

    outcome: str
    exit_code: int | None
    seconds: float
    streams: dict[str, _Capture]


class _Capture:
    """One output stream of an attempt: written to a file up to ``cap`` bytes, its tail kept in memory."""

    def __init__(self, path: Path, cap: int, tail: int) -> None:
        self.path, self.cap, self.tail_bytes = path, int(cap), int(tail)
        self.total = 0
        self._tail = bytearray()

    async def pump(self, reader: asyncio.StreamReader) -> None:
        with open(self.path, "wb") as fh:
            while chunk := await reader.read(65_536):
                if self.total < self.cap:
                    fh.write(chunk[: self.cap - self.total])
                self.total += len(chunk)
                self._tail += chunk
                if len(self._tail) > 2 * self.tail_bytes:
                    del self._tail[: len(self._tail) - self.tail_bytes]

    def note(self, text: str) -> None:
        """Add the harness's own line to the stream's tail (why the program could not start)."""
        self._tail += text.encode("utf-8", "replace")

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def tail(self, chars: int) -> str:
        return bytes(self._tail[-self.tail_bytes:]).decode("utf-8", "replace")[-chars:]


@dataclass
class HarnessAgent:
    """The agent of a harness run: each ``complete`` runs the command once, bound to the open decision.

    The LLM runner calls :meth:`bind_session` as each episode starts (so the MCP server serves that episode) and
    :meth:`complete` per attempt; the reply is the ``commit_action`` call the program made over MCP, or, without
    one, a reply with no action (the runner's failure rule decides).

    Attributes:
        command: The command template (see the module docstring).
        root: Where each attempt's log folder goes (``<run>/harness``; set by :func:`run_harness`).
        timeout: Seconds an attempt may run before everything it started is killed.
        tool_max_chars: Cap on each MCP result.
        env: Extra environment variables of the command.
        unconfined: Run the command without a sandbox, with the evaluator's access to every file (recorded in
            run.json and shown by ``finenvs score`` and the scorecard). False: confined by bubblewrap
            (:mod:`finenvs.evaluation.confine`), and the harness refuses to start where no sandbox works.
        mask: Further paths the confined program must not read (``--mask``).
        home: A folder bound writable as the program's ``HOME`` (its own settings and state across attempts);
            None: an empty private home per attempt.
        commit_grace: Seconds the program may go on after its ``commit_action`` before it is ended (the decision
            is taken at the commit, whatever the program does after).
        output_cap: Bytes of each of stdout and stderr written to the attempt's log files; the rest is counted,
            and the last :data:`LOG_TAIL_CHARS` characters are kept for ``attempt.json``.
        model_proxy: An upstream chat-completions URL: the run serves it through a
            :class:`~finenvs.evaluation.model_proxy.ModelProxy` on 127.0.0.1 (non-streamed upstream, ``tool_choice``
            set, replies re-streamed), whose URL the program gets as ``{model_url}`` and ``FINENVS_MODEL_URL``.
        model_tool_choice: The ``tool_choice`` the proxy sets on requests with tools whose own is absent or
            ``"auto"``.
        model_constrained: In the proxy's schema mode, the parameters it forces per tool name
            (:func:`~finenvs.evaluation.model_proxy.constrained_tools` of the run's episodes).
    """

    command: str
    root: Path | None = None
    timeout: float = 600.0
    tool_max_chars: int = 8_000
    env: dict[str, str] | None = None
    name: str = "harness"
    unconfined: bool = False
    mask: tuple[Path, ...] = ()
    home: Path | None = None
    commit_grace: float = COMMIT_GRACE_SECONDS
    output_cap: int = OUTPUT_CAP_BYTES
    model_proxy: str | None = None
    model_tool_choice: str = "required"
    model_constrained: dict[str, dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.args = check_command(self.command)
        if self.model_proxy is None and any("{model_url}" in a for a in self.args):
            raise HarnessError("--agent-cmd names {model_url}, which only --model-proxy UPSTREAM_URL serves")
        self._proxy: Any = None
        self.gate = DecisionGate(self.tool_max_chars)
        self.sandbox: Sandbox | None = None
        #: the run folder and the folder of runs it sits in (set by :func:`run_harness`; both are masked)
        self.run_dir: Path | None = None
        self.out: Path | None = None
        self._server: _Server | None = None
        self._session: Any = None
        self._attempts = 0
        self._scratch: Path | None = None
        self._cwd = Path.cwd()  # the command runs where finenvs harness was started: ./agent.sh, python agent.py,
        # .claude/skills resolve as when typed there; each attempt gets its own scratch folder as {workdir}

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"kind": "harness", "name": self.name, "command": self.command,
                                     "timeout": self.timeout, "commit_grace": self.commit_grace}
        if self.sandbox is not None:
            described["confinement"] = self.sandbox.describe()
        if self.model_proxy is not None:
            described["model_proxy"] = {"upstream": self.model_proxy.split("?", 1)[0],
                                        "tool_choice": self.model_tool_choice}
        return described

    # ------------------------------------------------------------------ lifecycle
    def confine(self) -> Sandbox:
        """Build (once) the sandbox the attempts run in; see :mod:`finenvs.evaluation.confine`.

        Raises:
            ConfinementError: No sandbox works here and ``unconfined`` is False, or the working directory is inside
                a protected path.
        """
        if self.sandbox is None:
            protected = protected_paths(run_dir=self.run_dir, out=self.out, cwd=self._cwd, extra=self.mask)
            self.sandbox = make_sandbox(unconfined=self.unconfined, protected=protected, cwd=self._cwd,
                                        home=self.home)
        return self.sandbox

    def start(self) -> None:
        self.confine()
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="finenvs-harness-"))
        if self._server is None:
            self._server = _Server(self.gate)
            self._server.start()
        if self.model_proxy is not None and self._proxy is None:
            from finenvs.evaluation.model_proxy import ModelProxy

            self._proxy = ModelProxy(self.model_proxy, tool_choice=self.model_tool_choice, timeout=self.timeout,
                                     constrained=self.model_constrained).start()

    def stop(self) -> None:
        if self._proxy is not None:
            self._proxy.stop()
            self._proxy = None
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def bind_session(self, session: Any) -> None:
        """The episode whose decisions the next attempts serve (None when it ends)."""
        self._session = session
        if session is not None:
            self.gate.set_tools(session.tool_specs())

    # ------------------------------------------------------------------ one attempt
    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        if self._session is None or self._server is None or self._scratch is None or self.sandbox is None:
            raise HarnessError("the harness agent runs only inside run_harness (no episode is bound)")
        session = self._session
        self._attempts += 1
        label = f"ep{session.spec.index:04d}-step{session.step_index:04d}-try{self._attempts}"
        log_dir = Path(self.root or ".").resolve() / label  # the harness's record: masked from the program
        work = self._scratch / label  # the program's scratch folder, the only one it may write
        log_dir.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        turns = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        prompt = HARNESS_NOTE + "\n\n" + "\n\n".join(turns)
        config = json.dumps({"mcpServers": {"finenvs": {"type": "http", "url": self._server.url}}}, indent=2) + "\n"
        for folder in (work, log_dir):
            (folder / "prompt.md").write_text(prompt, encoding="utf-8")
            (folder / "mcp.json").write_text(config)
        values = {"{prompt_file}": str(work / "prompt.md"), "{mcp_config}": str(work / "mcp.json"),
                  "{url}": self._server.url, "{workdir}": str(work), "{env_id}": session.spec.env_id,
                  "{episode}": str(session.spec.index), "{step}": str(session.step_index),
                  "{model_url}": self._proxy.base_url if self._proxy is not None else ""}
        argv = substitute(self.args, values)
        # the addresses also as variables: an agent CLI's own config file can name them ({env:FINENVS_MCP_URL})
        variables = {"FINENVS_MCP_URL": self._server.url, **({"FINENVS_MODEL_URL": values["{model_url}"]}
                                                             if self._proxy is not None else {})}
        loop = asyncio.get_running_loop()
        committed_now, over_budget = asyncio.Event(), asyncio.Event()
        self.gate.open(session, on_commit=lambda: loop.call_soon_threadsafe(committed_now.set),
                       on_over=lambda: loop.call_soon_threadsafe(over_budget.set))
        try:
            attempt = await _run(self.sandbox.command(argv, workdir=work), self._cwd, self.timeout,
                                 {**os.environ, **(self.env or {}), **variables}, log_dir, committed_now,
                                 grace=self.commit_grace, cap=self.output_cap, over_budget=over_budget)
        finally:
            committed = self.gate.close()
            shutil.rmtree(work, ignore_errors=True)
        log = {"argv": argv, "exit_code": attempt.exit_code, "outcome": attempt.outcome,
               "seconds": round(attempt.seconds, 3), "committed": committed,
               "tool_calls": self.gate.used, "refused_over_budget": self.gate.refused, "budget": self.gate.budget,
               "confined": self.sandbox.confined}
        for name, capture in attempt.streams.items():
            log[f"{name}_bytes"] = capture.total
            log[f"{name}_truncated"] = capture.truncated
            log[f"{name}_tail"] = capture.tail(LOG_TAIL_CHARS)
        (log_dir / "attempt.json").write_text(json.dumps(log, indent=2, default=str, ensure_ascii=False) + "\n")
        if committed is not None:  # an agent program's tokens are its own: unknown here (usage None, n/a)
            return ChatReply(None, [ToolCall(f"harness_{self._attempts}", "commit_action", json.dumps(committed))],
                             usage=None)
        seconds, code = attempt.seconds, attempt.exit_code
        if attempt.outcome == "timeout":
            why = f"the agent command made no commit within {self.timeout:g} s"
        elif attempt.outcome == OVER_BUDGET:
            why = (f"the agent command was ended after {seconds:.1f} s: {OVER_BUDGET_CALLS} calls over its budget of "
                   f"{self.gate.budget} tool calls, without calling commit_action")
        else:
            why = (f"the agent command {attempt.outcome} after {seconds:.1f} s (exit code {code}) without calling "
                   "commit_action")
        # no decision: the runner tries again (HERCULEAN: five attempts), then fails the episode or takes the default
        raise EndpointError("transient", why)


_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def substitute(args: list[str], values: dict[str, str]) -> list[str]:
    """Each argument with its placeholders replaced in one pass (a value that contains a placeholder, such as
    a run name ``runs {step}``, stays as it is)."""
    return [_PLACEHOLDER.sub(lambda m: values[m.group(0)], arg) for arg in args]


def _end(proc: asyncio.subprocess.Process) -> None:
    """Kill what the attempt started. Confined: the sandbox's PID namespace ends with ``bwrap``, taking every
    process in it; unconfined: the command's process group (a process that left it survives)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _run(argv: list[str], cwd: Path, timeout: float, env: dict[str, str], log_dir: Path,
               committed: asyncio.Event, *, grace: float, cap: int,
               over_budget: asyncio.Event | None = None) -> Attempt:
    """Run one attempt to its end: the program's exit, ``grace`` seconds after its commit, ``over_budget`` (set by
    the gate), or ``timeout``; then everything it started is killed and its output (streamed to ``log_dir`` as it
    comes, so what a killed program wrote is kept) drained for at most :data:`DRAIN_SECONDS`."""
    began = time.perf_counter()
    streams = {name: _Capture(log_dir / f"{name}.log", cap, 4 * LOG_TAIL_CHARS) for name in ("stdout", "stderr")}
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, env=env)
    except OSError as exc:
        streams["stderr"].note(f"{type(exc).__name__}: {exc}")
        return Attempt("could not start", None, time.perf_counter() - began, streams)
    pumps = [asyncio.ensure_future(streams["stdout"].pump(proc.stdout)),  # type: ignore[arg-type]
             asyncio.ensure_future(streams["stderr"].pump(proc.stderr))]  # type: ignore[arg-type]
    exited = asyncio.ensure_future(proc.wait())
    commit = asyncio.ensure_future(committed.wait())
    over = asyncio.ensure_future((over_budget or asyncio.Event()).wait())
    outcome = "timeout"
    try:
        done, _ = await asyncio.wait({exited, commit, over}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if exited in done:
            outcome = "exited"
        elif over in done and commit not in done:
            outcome = OVER_BUDGET
        elif commit in done:  # the decision is taken; the program may tidy up for a moment
            left = max(0.0, timeout - (time.perf_counter() - began))
            done, _ = await asyncio.wait({exited}, timeout=min(grace, left))
            outcome = "exited" if exited in done else "ended after its commit"
    finally:
        _end(proc)
        commit.cancel()
        over.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(exited), timeout=DRAIN_SECONDS)
        except asyncio.TimeoutError:
            pass
        _, pending = await asyncio.wait(pumps, timeout=DRAIN_SECONDS)
        for pump in pending:  # a process outside the sandbox still holds the pipe: stop reading it
            pump.cancel()
    transport = getattr(proc, "_transport", None)  # close the pipes a stopped reader left open
    if transport is not None:
        transport.close()
    return Attempt(outcome, proc.returncode, time.perf_counter() - began, streams)


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
    # the family's limits over MCP, as the in-process runner applies them: tool calls per decision, result size
    agent.gate.budget = config.tool_budget
    agent.gate.max_result_chars = int(config.tool_max_chars)
    # an attempt without a commit is tried again under HERCULEAN's rule (five attempts), once otherwise
    config.max_retries = HERCULEAN_ATTEMPTS - 1 if config.failure_rule == "herculean" else 0
    config.backoff_base = 0.0
    config.max_consecutive_endpoint_failures = None
    config.decision_timeout = max(float(config.decision_timeout), (config.max_retries + 1) * (agent.timeout + 10))
    if kwargs.get("resume") is not None:
        agent.run_dir = Path(kwargs["resume"])
    else:
        kwargs["name"] = kwargs.get("name") or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        agent.run_dir = Path(kwargs.get("out", "finenvs-runs")) / kwargs["name"]
    agent.out = agent.run_dir.parent
    agent.root = agent.run_dir / "harness"
    agent.start()
    try:
        return run_llm(config, agent, **kwargs)
    finally:
        agent.stop()


__all__ = ["HARNESS_NOTE", "PLACEHOLDERS", "DecisionGate", "HarnessAgent", "HarnessError", "check_command",
           "run_harness"]
