"""The text interface: any finenvs env as a prompt-in, text-out env with date-locked tools.

``gym.make("FinTrading-text-v0", symbol="TSLA", split="eval")`` (every env with a
text protocol has a registered ``<Name>-text-v0`` variant taking the base env's
arguments) or ``TextInterface(gym.make("FinTrading-v0", ...))``::

    env = gym.make("FinTrading-text-v0", symbol="TSLA", split="eval")
    prompt, info = env.reset(seed=0)
    env.call_tool("get_prices", {"lookback": 5})          # any number of tool calls ...
    prompt, reward, terminated, truncated, info = env.step("Momentum is up.\\nAction: BUY")

* **Observation**: a prompt (:func:`finenvs.text.protocol.render_prompt`): task
  instructions and the answer format, the state lines that stay the same over
  the episode (the protocol's ``episode_labels``: symbol, costs, ...), the last
  ``history`` decisions, and the state at the current close (date, position,
  equity, ...); the tools are described by their schemas
  (:meth:`TextInterface.tool_specs`), not in the prompt. ``PrintableText(32768)``.
* **Action**: a reply, read by the env's own protocol
  (:class:`finenvs.text.protocol.TextProtocol`): a JSON object with ``"action"``,
  an ``Action: X`` line, or a bare action word; or a ``commit_action`` tool
  call given as ``{"name": "commit_action", "arguments": {...}}``.
  ``PrintableText(16384)``: printable Unicode plus newline, CR and tab, at most
  16,384 characters.
* **Bad input never raises**: an unreadable, ambiguous, over-long or
  non-printable reply, or a call of another tool in place of a commit, takes
  the protocol's default (HOLD for trading: flat, no market risk) and the step's
  ``info["invalid_action"]`` holds the reason (None for a valid reply);
  ``info["format_errors"]`` counts them over the episode and the scorecard
  reports them.
* **Tools**: :meth:`TextInterface.call_tool` reads through the env's as-of view
  at the current close; the date advances only on :meth:`step`. ``tools`` picks
  the mode (:data:`TOOL_MODES`): ``"fabpp"`` (default; the family's full toolset,
  the FAB++ paper's setting, where agents had tool servers) or ``"none"`` (closed
  book: only ``commit_action``; the agent computes everything itself). The mode is
  ``info["tools_mode"]`` at every reset and step; given to a registered text env
  (``gym.make("FinOptions-text-v0", tools="none")``) or in a run's ``env_kwargs``,
  it is also recorded with the env's arguments.

Text spaces are not for stable-baselines3 (it rejects them): RL uses the base env.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from finenvs.text.protocol import (
    MAX_PROMPT_CHARS,
    SAMPLE_CHARSET,
    ParsedAction,
    PrintableText,
    TextProtocol,
    render_prompt,
    trimmed,
)
from finenvs.tools import CLOSED_BOOK_TOOLSET
from finenvs.tools.registry import COMMIT_TOOL, DEFAULT_MAX_CHARS, ToolBox, ToolResult

DEFAULT_HISTORY = 5
#: Tool modes of a text env: the family's full toolset, or closed book (commit tool only).
TOOL_MODES = ("fabpp", "none")
DEFAULT_TOOL_MODE = "fabpp"
#: Arguments of the text wrapper that may travel with a base env's arguments (a run's ``env_kwargs``).
WRAPPER_KWARGS = ("tools", "debate", "debate_rule", "python")
#: Characters of the counter-argument (and half as many of the first answer) a debate's second prompt shows.
DEBATE_CHARS = 1_500
#: How the prompt of a debate's second turn frames the counter-argument.
DEBATE_FRAME = ("A reviewer disagrees with your answer:\n{counter}\n\nYour first answer: {first}\n"
                "Give your final answer in the same format: keep it or revise it. Only the final answer is scored.")


def split_text_kwargs(env_kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(base env arguments, text wrapper arguments)`` of a text env's arguments (:data:`WRAPPER_KWARGS`)."""
    return ({k: v for k, v in env_kwargs.items() if k not in WRAPPER_KWARGS},
            {k: v for k, v in env_kwargs.items() if k in WRAPPER_KWARGS})


def tool_mode(tools: Any) -> str:
    """The tool mode ``tools`` names: a mode of :data:`TOOL_MODES`, or a bool (True: ``"fabpp"``, False: ``"none"``).

    Raises:
        ValueError: Anything else.
    """
    if isinstance(tools, bool):
        return DEFAULT_TOOL_MODE if tools else "none"
    if isinstance(tools, str) and tools in TOOL_MODES:
        return tools
    raise ValueError(f"tools={str(tools)[:40]!r} is not a tool mode; valid: {list(TOOL_MODES)} (or True/False)")


def tool_call_parts(call: Any) -> tuple[Any, Any] | None:
    """``(name, arguments)`` of a tool call in chat-completions or flat form, else None."""
    if not isinstance(call, dict):
        return None
    if isinstance(call.get("function"), dict):
        call = call["function"]
    if "name" not in call:
        return None
    return call.get("name"), call.get("arguments")


class TextInterface(gym.Wrapper):
    """Turn a finenvs env with a text protocol into a text env with tools.

    Args:
        env: A finenvs env whose unwrapped class has ``text_protocol`` (and
            ``task_family`` for tools).
        history: Recent decisions shown in the prompt (0 for none).
        tools: Tool mode (:data:`TOOL_MODES`): ``"fabpp"`` (default, also True) offers the task's toolset,
            ``"none"`` (also False) only the commit tool.
        tool_max_chars: Cap on each tool result's JSON.
        toolset: Name of the toolset in :data:`finenvs.tools.TOOLSETS` (default: the env's task spec's, or
            its ``task_family``).
        python: Offer the sandboxed ``run_python`` tool (:mod:`finenvs.tools.sandbox`: standard-library Python in
            Pyodide under Deno, no files, no network; off by default; needs ``finenvs sandbox setup``).
        debate: Play FAB++'s adversarial debate (:class:`finenvs.wrappers.debate.Debate`, for envs whose task
            spec names a debate round): the first reply is answered with a counter-argument shown in the next
            prompt, the second reply is the final answer. Recorded in ``info["debate"]``.
        debate_rule: The debate's rule (:data:`finenvs.text.debate.DEBATE_RULES`): ``"finenvs"`` (default) or
            ``"reference"`` (the reference implementation's multiplier values); only with ``debate``.
        toolbox_kwargs: Extra arguments of :class:`~finenvs.tools.ToolBox`
            (e.g. ``news=`` / ``filings=`` stores).
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        history: int = DEFAULT_HISTORY,
        tools: bool | str = DEFAULT_TOOL_MODE,
        tool_max_chars: int = DEFAULT_MAX_CHARS,
        toolset: str | None = None,
        debate: bool = False,
        python: bool = False,
        debate_rule: str | None = None,
        **toolbox_kwargs: Any,
    ) -> None:
        if not isinstance(debate, bool):
            raise ValueError(f"debate={str(debate)[:40]!r} must be True or False")
        if debate_rule is not None and not debate:
            raise ValueError("debate_rule is for a debated episode (debate=True)")
        if debate:
            from finenvs.wrappers.debate import Debate

            env = Debate(env) if debate_rule is None else Debate(env, rule=debate_rule)
        super().__init__(env)
        #: Whether the episode is debated (a counter-argument after the first answer).
        self.debate = debate
        self._challenge: str | None = None
        protocol = getattr(env.unwrapped, "text_protocol", None)
        if not isinstance(protocol, TextProtocol):
            raise TypeError(f"{type(env.unwrapped).__name__} has no text protocol; it cannot be used as a text env")
        if isinstance(history, bool) or not isinstance(history, int) or history < 0:
            raise ValueError(f"history={history!r} must be an integer >= 0")
        self.protocol = protocol
        self.history = history
        if toolset is None:
            try:
                from finenvs.tasks import task_of

                toolset = task_of(env).toolset
            except KeyError:  # an env not made from a finenvs id: its class names its toolset
                toolset = getattr(env.unwrapped, "task_family", None)
        #: ``"fabpp"`` (the task's toolset) or ``"none"`` (closed book: the commit tool only); in every info.
        self.tools_mode = tool_mode(tools)
        if self.tools_mode == "none":
            toolset = CLOSED_BOOK_TOOLSET
        if not isinstance(python, bool):
            raise ValueError(f"python={str(python)[:40]!r} must be True or False")
        extra = []
        if python:  # the opt-in sandboxed Python tool: refused here, not at the first call, when it is not set up
            from finenvs.tools.sandbox import PythonSandbox, python_tool

            status = PythonSandbox().status()
            if not status["available"]:
                raise ValueError(f"python=True needs the sandbox: {status['reason']}")
            extra.append(python_tool())
        #: Whether the sandboxed ``run_python`` tool is offered.
        self.python = python
        self.toolbox = ToolBox(env, max_chars=tool_max_chars, family=toolset, extra=extra, **toolbox_kwargs)
        state_fn = getattr(env.unwrapped, "text_state", None)
        self._state_takes_tools = callable(state_fn) and "tools" in inspect.signature(state_fn).parameters
        self.observation_space = PrintableText(MAX_PROMPT_CHARS)
        self.action_space = PrintableText(protocol.max_chars)
        self._decisions: list[str] = []
        #: The action the last step took (after any stage check), with its reason when it was a default.
        self.last_parsed: ParsedAction | None = None
        self._format_errors = 0
        self._tool_calls = 0
        self._tool_calls_total = 0

    # ------------------------------------------------------------------ prompts
    def prompt(self) -> str:
        """The prompt for the current decision."""
        base: Any = self.env.unwrapped  # a family's env (__init__ checked its protocol): it has text_state()
        # a family whose text_state takes the offered tools' names may point to a tool instead of repeating it
        state = base.text_state(tools=self.toolbox.names) if self._state_takes_tools else base.text_state()
        recent = self._decisions[-self.history :] if self.history else None
        prompt = render_prompt(self.protocol, state, history=recent)
        if not self._challenge:
            return prompt
        return f"{prompt[: MAX_PROMPT_CHARS - len(self._challenge) - 2]}\n\n{self._challenge}"

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools in chat-completions format (empty without tools)."""
        return self.toolbox.specs() if self.toolbox is not None else []

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        _, info = self.env.reset(seed=seed, options=options)
        self._decisions = []
        self._format_errors = 0
        self._tool_calls = 0
        self._tool_calls_total = 0
        self._challenge = None
        info = dict(info)
        info["format_errors"] = 0
        info["tools_mode"] = self.tools_mode
        return self.prompt(), info

    def parse(self, action: Any) -> ParsedAction:
        """What ``action`` (a reply or a commit tool call) means; never raises."""
        parts = tool_call_parts(action)
        if parts is not None:
            name, arguments = parts
            if name != COMMIT_TOOL:
                return self.protocol.invalid(
                    f"step() takes a reply or a {COMMIT_TOOL} call; {str(name)[:50]!r} is not a commit "
                    "(call other tools with call_tool())"
                )
            return self.protocol.parse_commit(arguments)
        return self.protocol.parse_text(action)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        parsed = self.parse(action)
        return self.step_parsed(parsed)

    def step_parsed(self, parsed: ParsedAction, *, resolve: bool = True) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step with an already parsed action (the runner and MCP server parse replies themselves).

        ``resolve=False`` takes ``parsed.action`` as the env action itself (a replay of a recorded one).
        """
        text_action = getattr(self.env.unwrapped, "text_action", None) if resolve else None
        if text_action is not None:  # envs whose words depend on the stage or state (FinHedging-v0) check them
            parsed = text_action(parsed)
        self.last_parsed = parsed
        _, reward, terminated, truncated, info = self.env.step(parsed.action)
        if not parsed.valid:
            self._format_errors += 1
        info = dict(info)
        info["parsed_action"] = parsed.name
        info["action_via"] = parsed.via
        info["invalid_action"] = parsed.invalid
        info["format_errors"] = self._format_errors
        info["tool_calls"] = self._tool_calls
        info["tool_calls_total"] = self._tool_calls_total
        info["tools_mode"] = self.tools_mode
        self._tool_calls = 0
        note = f" (format error: {parsed.invalid})" if parsed.invalid else ""
        debate = info.get("debate")
        if not isinstance(debate, dict):
            debate = {}
        if debate.get("turn") == 2 and "multiplier" not in debate:  # a debate's first answer, now challenged
            answer = self.protocol.encode(parsed.action) if parsed.valid else f"{parsed.name}{note}"
            answer = answer if isinstance(answer, str) else str(answer)
            if len(answer) > DEBATE_CHARS:
                answer = answer[:DEBATE_CHARS] + " ... (cut)"
            self._challenge = DEBATE_FRAME.format(counter=str(debate.get("counter_argument", ""))[:DEBATE_CHARS],
                                                  first=answer)
            return self.prompt(), float(reward), terminated, truncated, info
        self._challenge = None
        equity = info.get("equity")
        self._decisions.append(  # the columns of render_prompt's "recent decisions" heading
            f"{info.get('date', len(self._decisions) + 1)} {parsed.name}{note} {trimmed(f'{reward:+.5f}')}"
            + (f" {trimmed(f'{equity:.4f}')}" if isinstance(equity, (int, float)) else "")
        )
        return self.prompt(), float(reward), terminated, truncated, info

    # ------------------------------------------------------------------ tools
    def call_tool(self, name: Any, arguments: Any = None) -> ToolResult:
        """Call a tool at the current decision; never raises (errors come back in the result)."""
        if self.toolbox is None:
            return ToolResult(str(name), None, False, {"error": "this text env has no tools"}, "this text env has no tools")
        self._tool_calls += 1
        self._tool_calls_total += 1
        return self.toolbox.call(name, arguments)

    @property
    def format_errors(self) -> int:
        return self._format_errors


def make_text_env(base_id: str, *, history: int = DEFAULT_HISTORY, tool_max_chars: int = DEFAULT_MAX_CHARS,
                  tools: bool | str = DEFAULT_TOOL_MODE, debate: bool = False, python: bool = False,
                  debate_rule: str | None = None, **env_kwargs: Any) -> TextInterface:
    """Entry point of the registered ``<Name>-text-v0`` variants: the base env, with its task spec's
    ``text_kwargs`` (a text action mode), wrapped in :class:`TextInterface` with the spec's tools in mode
    ``tools`` (:data:`TOOL_MODES`), debated when ``debate`` (FAB++'s adversarial debate)."""
    from finenvs.tasks import task_of

    task = task_of(base_id)
    env = gym.make(base_id, **{**task.text_kwargs, **env_kwargs})
    return TextInterface(env, history=history, tool_max_chars=tool_max_chars, toolset=task.toolset, tools=tools,
                         debate=debate, python=python, debate_rule=debate_rule)


__all__ = ["DEFAULT_HISTORY", "DEFAULT_TOOL_MODE", "SAMPLE_CHARSET", "TOOL_MODES", "WRAPPER_KWARGS", "PrintableText",
           "TextInterface", "make_text_env", "split_text_kwargs", "tool_call_parts", "tool_mode"]
