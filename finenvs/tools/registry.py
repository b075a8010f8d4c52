"""The tool registry: typed, date-locked functions an agent calls between decisions.

A :class:`Tool` is a name, a description, a JSON Schema for its arguments and a
function of a :class:`ToolContext`. Tools are grouped per task family
(:data:`TOOLSETS`); a :class:`ToolBox` binds a family's tools to one env and is
the only way agents call them — from the text wrapper, the LLM runner or the MCP
server alike.

Contract of :meth:`ToolBox.call` (it never raises):

* arguments may be a dict or a JSON string; they are checked against the
  schema (types, enums, bounds, required and unknown fields) and a failure is
  an error result naming the field;
* every read goes through the env's as-of view at its current decision time, so
  a tool cannot see the future; a request past it returns what was visible and
  the result's ``look_ahead`` counts the attempts (the env's counter too);
* output is compact JSON-able data capped at ``max_chars`` of JSON: an
  oversized list or text is cut and the result carries
  ``"truncated": {"field", "kept", "of", "note"}``;
* ``commit_action`` is parsed with the env's text protocol but does not step
  the env: the caller (wrapper, runner, MCP server) does;
* an error result never shows a file-system path: a data or file problem
  met inside a tool (a user-layer file that fails its hash, an unreadable
  XBRL bundle) reaches the agent with every absolute path replaced by
  ``<path>`` (:func:`redact_paths`), so an agent learns nothing of where
  finenvs, its data or its caches are installed;
* an error result never repeats what the agent sent: a string argument of
  :data:`ECHO_MIN_CHARS` characters or more (or a cut copy of its first part)
  met in the message is replaced by the argument's name in angle brackets
  (``<bundle> is not ...``, :func:`unechoed`), so an error names the argument
  at fault and stays as short as the tool's own words.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from finenvs.data.asof import AsOfView
from finenvs.data.documents import FilingStore, NewsStore
from finenvs.errors import FinEnvsError, shown
from finenvs.text import safe_json
from finenvs.text.protocol import MAX_ARGUMENT_CHARS, ParsedAction, TextProtocol

#: Default cap on a tool result, in characters of JSON.
DEFAULT_MAX_CHARS = 8_000
#: Smallest cap a ToolBox accepts: every tool's fixed fields plus a truncation marker fit in it.
MIN_MAX_CHARS = 1_000
COMMIT_TOOL = "commit_action"
#: Longest error message a result carries (characters); messages never echo more of the input.
MAX_ERROR_CHARS = 1_000
#: An absolute path of two or more parts (POSIX, ``~/``, or a Windows drive), not inside a word, a URL or a
#: ratio such as ``AAPL/MSFT``: it ends at white space, a quote, a bracket or ``,;:|<>``.
_PATH_CHARS = r"[^\s'\"`/\\<>|,;:()\[\]{}]"
_ABSOLUTE_PATH = re.compile(rf"(?<![\w.~:/\\-])(?:~|[A-Za-z]:)?[/\\](?:{_PATH_CHARS}+[/\\])+{_PATH_CHARS}*")

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    # an int is finite however large (math.isfinite would overflow on a 400-digit one)
    "number": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and math.isfinite(v)),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


#: Unknown field names a message names at most (the rest are counted), and characters shown of each.
MAX_NAMED_FIELDS = 10
MAX_FIELD_NAME_CHARS = 40


def unknown_fields(value: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The fields of ``value`` that the object ``schema`` does not declare, bounded for a message: at most
    :data:`MAX_NAMED_FIELDS` names, each cut to :data:`MAX_FIELD_NAME_CHARS` characters (control characters
    escaped), then ``"... N more"``; in the order given. One pass over the keys."""
    props = schema.get("properties", {})
    names: list[str] = []
    more = 0
    for key in value:
        if key in props:
            continue
        if len(names) < MAX_NAMED_FIELDS:
            text = key if isinstance(key, str) else shown(key, MAX_FIELD_NAME_CHARS)
            cut = text[:MAX_FIELD_NAME_CHARS] + ("..." if len(text) > MAX_FIELD_NAME_CHARS else "")
            names.append(cut if cut.isprintable() else repr(cut)[1:-1])
        else:
            more += 1
    return names + ([f"... {more} more"] if more else [])


def ignored_fields_note(arguments: Any, schema: dict[str, Any], tool: str = COMMIT_TOOL) -> dict[str, Any]:
    """What a lenient tool (``commit_action``) tells a caller whose arguments hold fields its schema does not
    declare: ``{"ignored_fields": [...], "note": "..."}`` naming them (bounded, :func:`unknown_fields`), or ``{}``.
    The call is still read: the fields the protocol knows decide."""
    if not isinstance(arguments, dict):
        return {}
    extra = unknown_fields(arguments, schema)
    if not extra:
        return {}
    named = len(extra) - (1 if len(extra) > MAX_NAMED_FIELDS else 0)  # the last of a long list counts the rest
    word = "field" if len(extra) == 1 else "fields"
    shown_names = ", ".join([f"'{n}'" for n in extra[:named]] + extra[named:])
    return {"ignored_fields": extra,
            "note": f"{tool} has no {word} {shown_names}; ignored (its fields: "
                    f"{', '.join(schema.get('properties', {}))})"}


def validate_arguments(value: Any, schema: dict[str, Any], path: str = "arguments") -> str | None:
    """Check ``value`` against the JSON Schema subset the tools use.

    Supported keywords: ``type`` (a name or a list), ``enum``, ``minimum``,
    ``maximum``, ``minLength``, ``maxLength``, ``minItems``, ``maxItems``,
    ``items``, ``properties``, ``required``, ``additionalProperties`` (bool).

    Returns:
        None when valid, else a message naming the offending field.
    """
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_JSON_TYPES[k](value) for k in names):
            return f"{path} must be of type {' or '.join(names)}, got {type(value).__name__} {shown(value, 60)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} must be one of {schema['enum']}, got {shown(value, 60)}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path} must be >= {schema['minimum']}, got {value}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path} must be <= {schema['maximum']}, got {value}"
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{path} must have at least {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{path} must have at most {schema['maxLength']} characters, got {len(value)}"
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path} must have at least {schema['minItems']} item(s)"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path} must have at most {schema['maxItems']} items, got {len(value)}"
        if "items" in schema:
            for i, item in enumerate(value):
                problem = validate_arguments(item, schema["items"], f"{path}[{i}]")
                if problem:
                    return problem
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"{path} is missing the required field {name!r}"
        if schema.get("additionalProperties", True) is False:
            extra = unknown_fields(value, schema)
            if extra:
                return f"{path} has unknown {'field' if len(extra) == 1 else 'fields'} {extra}; valid fields: {sorted(props)}"
        for name, sub in props.items():
            if name in value:
                problem = validate_arguments(value[name], sub, f"{path}.{name}" if path != "arguments" else name)
                if problem:
                    return problem
    return None


@dataclass(frozen=True)
class Tool:
    """One tool.

    Attributes:
        name: Tool name (what the agent calls).
        description: What it returns, for the model.
        parameters: JSON Schema of the arguments (an object schema).
        func: ``func(ctx, **arguments) -> JSON-able``; raises ``FinEnvsError``
            (or ``ValueError``/``KeyError``) for a bad request, which becomes an
            error result.
        keep: Which end of an oversized list to keep: ``"head"`` or ``"tail"``.
        summary: One line for prompts (default: the description's first sentence).
        advertised: The arguments' schema as the model reads it, when shorter words say the same (default:
            ``parameters``); calls are always checked against ``parameters``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any] | None
    keep: str = "head"
    summary: str = ""
    advertised: dict[str, Any] | None = None

    def one_line(self) -> str:
        return self.summary or self.description.split(". ")[0].rstrip(".")

    def spec(self) -> dict[str, Any]:
        """The tool in the chat-completions ``tools`` format: its advertised schema without the keywords that only
        bound hostile input (:func:`advertised_schema`); a call is still checked against all of them."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": advertised_schema(self.advertised or self.parameters)},
        }


#: Schema keywords a model needs not read: size bounds against hostile input (a ticker is never 20 characters
#: long) and the closed-object flag (an unknown field is refused with the valid ones named). Every tool call is
#: checked against the full schema; the tool specs leave these out (they are re-sent with every request).
VALIDATION_ONLY = frozenset({"minLength", "maxLength", "minItems", "maxItems", "additionalProperties"})


def advertised_schema(schema: Any) -> Any:
    """``schema`` without the :data:`VALIDATION_ONLY` keywords at any depth (a schema-valued
    ``additionalProperties`` is kept; property names, enums and defaults are kept as they are)."""
    if isinstance(schema, list):
        return [advertised_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in VALIDATION_ONLY and not (key == "additionalProperties" and isinstance(value, dict)):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: advertised_schema(sub) for name, sub in value.items()}
        elif key in ("enum", "default", "const", "examples"):
            out[key] = value
        else:
            out[key] = advertised_schema(value)
    return out


@dataclass
class ToolResult:
    """The outcome of one tool call, as recorded in trajectories.

    Attributes:
        name: Tool called (as given by the agent).
        arguments: Parsed arguments (None when they could not be parsed).
        ok: False for any error (unknown tool, bad arguments, a refused read).
        data: What the agent gets back (JSON-able); ``{"error": ...}`` when not ok.
        error: The error message, or None.
        truncated: Whether the output was cut to the size cap.
        look_ahead: Look-ahead attempts this call made.
        seconds: Wall time of the call.
        commit: For ``commit_action``: the parsed decision (valid or not).
    """

    name: str
    arguments: dict[str, Any] | None
    ok: bool
    data: Any
    error: str | None = None
    truncated: bool = False
    look_ahead: int = 0
    seconds: float = 0.0
    commit: ParsedAction | None = None
    #: Cap on :meth:`text` (the ToolBox's ``max_chars``).
    max_chars: int = DEFAULT_MAX_CHARS
    #: ``data``'s compact JSON when :meth:`ToolBox.call` already wrote it (sizing the result against the cap).
    written: str | None = field(default=None, repr=False, compare=False)

    def text(self) -> str:
        """The JSON the agent reads (compact, Unicode kept), at most ``max_chars`` characters.

        Non-finite numbers are written as ``null`` (JSON has no NaN); a result that would still be longer
        than the cap (only possible for a custom tool that bypasses :func:`cap_output`) is replaced by a
        truncation object naming its size.
        """
        try:
            text = self.written if self.written is not None else json.dumps(
                self.data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
        except ValueError:  # NaN/inf somewhere: null them
            text = json.dumps(_finite(self.data), ensure_ascii=False, separators=(",", ":"), default=str)
        except RecursionError:
            text = json.dumps({"error": "the result is nested too deeply to write"})
        if len(text) <= self.max_chars:
            return text
        return safe_json.dumps_capped(self.data, self.max_chars, ensure_ascii=False, separators=(",", ":"))

    def record(self) -> dict[str, Any]:
        """JSON-able summary for a trajectory."""
        out: dict[str, Any] = {
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "error": self.error,
            "truncated": self.truncated,
            "look_ahead": self.look_ahead,
            "seconds": round(self.seconds, 6),
        }
        if self.commit is not None:
            out["commit"] = {"action": self.commit.name, "invalid": self.commit.invalid}
        return out


def _finite(data: Any) -> Any:
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


@dataclass
class ToolContext:
    """What a tool function sees: the env (at its current decision) and document overrides."""

    env: Any
    news: NewsStore | None = None
    filings: FilingStore | None = None
    max_chars: int = DEFAULT_MAX_CHARS
    #: The view :meth:`ToolBox.call` opened for the call in progress (same env, same decision: reused, not rebuilt).
    call_view: AsOfView | None = field(default=None, repr=False, compare=False)

    def view(self) -> AsOfView:
        """The env's as-of view at the current decision time (document overrides applied)."""
        view = self.call_view if self.call_view is not None else self.env.as_of_view()
        if self.news is not None or self.filings is not None:
            view = view.with_documents(self.news, self.filings)
        return view

    @property
    def symbol(self) -> str:
        """The symbol the current episode trades (FinHedging-v0: the pair's first leg, or before the
        pair is chosen, the universe's first symbol)."""
        pair: Any = getattr(self.env, "pair", False)
        if pair is not False:  # pairs envs: the pair's first leg, else the universe's first symbol
            if getattr(self.env, "state", None) is None:
                raise FinEnvsError("no episode: call reset() first")
            return str(pair[0] if pair else self.env.universe[0])
        market = getattr(self.env, "market", None)
        if market is None:
            raise FinEnvsError("no episode: call reset() first")
        return str(market.symbol)


#: task family -> its tools (without commit_action, which comes from the env's protocol). The tool
#: modules register here when the package ``finenvs.tools`` is imported (its ``__init__`` imports them),
#: which happens before this module can be used; the registry itself never imports a tool module.
TOOLSETS: dict[str, tuple[Tool, ...]] = {}


def register_tools(family: str, tools: Sequence[Tool]) -> None:
    """Register (or replace) the tools of a task family."""
    names = [t.name for t in tools]
    if len(set(names)) != len(names) or COMMIT_TOOL in names:
        raise ValueError(f"tool names must be unique and not {COMMIT_TOOL!r}: {names}")
    TOOLSETS[family] = tuple(tools)


#: The toolset of a closed-book text env (``tools="none"``), and of a family without tools: no tool but the
#: commit tool every ToolBox adds.
CLOSED_BOOK_TOOLSET = "none"
register_tools(CLOSED_BOOK_TOOLSET, ())


def json_size(data: Any) -> int:
    """Length of ``data``'s compact JSON (what the agent reads)."""
    return _json_size(data)


def _json_size(data: Any) -> int:
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str))


def _fields(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every non-empty list or string held by a dict, at any depth of nested dicts."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "truncated":
                continue
            if isinstance(value, (list, str)) and value:
                found.append(((*path, str(key)), value))
            if isinstance(value, dict):
                found += _fields(value, (*path, str(key)))
    return found


def _longest_fit(full: list[Any] | str, keep: str, budget: int) -> int:
    """The most items (characters) of ``full`` whose JSON adds at most ``budget`` characters to its empty form,
    counting the marker's ``kept`` number growing past one digit. Lists are sized item by item, once."""
    if isinstance(full, str):
        lo, hi = 0, len(full)
        while lo < hi:  # the string alone is re-measured, never the whole result
            mid = (lo + hi + 1) // 2
            if len(json.dumps(full[:mid], ensure_ascii=False)) - 2 + len(str(mid)) - 1 <= budget:
                lo = mid
            else:
                hi = mid - 1
        return lo
    kept, used = 0, 0
    for k, item in enumerate(full if keep == "head" else reversed(full), start=1):
        used += _json_size(item) + (k > 1)  # the item and its comma
        if used + len(str(k)) - 1 > budget:
            break
        kept = k
    return kept


def cap_output(data: Any, max_chars: int, keep: str = "head") -> tuple[Any, bool]:
    """Cut lists and strings of ``data`` (largest first) until its JSON fits ``max_chars``.

    Lists keep their ``keep`` end (``"head"`` or ``"tail"``); strings keep their
    start. A truncated result gains ``"truncated": {"fields": {path: {"kept", "of"}},
    "note"}``, so the agent knows what it is missing and can narrow its request.

    Returns:
        ``(data, truncated)``.

    Raises:
        ValueError: Even with every list and string emptied the result does not
            fit (the cap is too small for this result's fixed fields).
    """
    if not isinstance(data, dict) or _json_size(data) <= max_chars:
        return data, False
    out = json.loads(json.dumps(data, default=str))  # a private deep copy
    marker: dict[str, Any] = {"fields": {}, "note": ""}
    out["truncated"] = marker
    done: set[tuple[str, ...]] = set()
    while _json_size(out) > max_chars:
        fields = [(p, v) for p, v in _fields(out) if p not in done]
        if not fields:
            break
        path, full = max(fields, key=lambda pv: _json_size(pv[1]))
        done.add(path)
        parent = out
        for part in path[:-1]:
            parent = parent[part]
        name, total = path[-1], len(full)
        label = ".".join(path)

        def put(n: int, parent: dict = parent, name: str = name, full: Any = full, total: int = total,
                label: str = label) -> None:
            parent[name] = full[:n] if isinstance(full, str) or keep == "head" else full[total - n :]
            marker["fields"][label] = {"kept": n, "of": total}
            marker["note"] = (
                f"output capped at {max_chars} characters of JSON; "
                + ("lists keep their newest items" if keep == "tail" else "lists keep their first items")
                + "; narrow the request to see the rest"
            )

        put(0)
        budget = max_chars - _json_size(out)  # what the field may add to its empty form (and the marker's digits)
        put(_longest_fit(full, keep, budget))
    if _json_size(out) > max_chars:
        raise ValueError(
            f"the result does not fit max_chars={max_chars} even with every list and text emptied; "
            "raise the cap or narrow the request"
        )
    return out, True


class ToolBox:
    """A task family's tools bound to one env.

    Args:
        env: A finenvs env (wrappers allowed); it must be reset before tools are called.
        max_chars: Cap on each result's JSON size.
        news: News store replacing the shipped one (tests, custom corpora).
        filings: Filing store replacing the shipped one.
        family: Task family (default: the env's ``task_family``).
        extra: Tools offered beside the family's (the opt-in ``run_python`` of :mod:`finenvs.tools.sandbox`).
    """

    def __init__(
        self,
        env: Any,
        *,
        max_chars: int = DEFAULT_MAX_CHARS,
        news: NewsStore | None = None,
        filings: FilingStore | None = None,
        family: str | None = None,
        extra: Sequence[Tool] = (),
    ) -> None:
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        family = family or getattr(self.env, "task_family", None)
        if family not in TOOLSETS:
            raise KeyError(f"no tools for task family {family!r}; families with tools: {sorted(TOOLSETS)}")
        protocol = getattr(self.env, "text_protocol", None)
        if not isinstance(protocol, TextProtocol):
            raise TypeError(f"{type(self.env).__name__} has no text_protocol; it cannot take text actions")
        if max_chars < MIN_MAX_CHARS:
            raise ValueError(f"max_chars={max_chars} is too small for the tools' results; use >= {MIN_MAX_CHARS}")
        self.family = family
        self.protocol = protocol
        self.max_chars = int(max_chars)
        self.context = ToolContext(self.env, news=news, filings=filings, max_chars=self.max_chars)
        commit = Tool(
            name=COMMIT_TOOL,
            description=(
                protocol.commit_note or protocol.answer_note
                or "Commit today's decision (it ends the day)."
            ),
            parameters=protocol.commit_schema(),
            advertised=protocol.commit_advertised(),
            func=None,
            summary="commit today's decision (ends your turn)",
        )
        self.tools: dict[str, Tool] = {t.name: t for t in [*TOOLSETS[family], *extra]}
        self.tools[COMMIT_TOOL] = commit

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def specs(self) -> list[dict[str, Any]]:
        """Every tool in the chat-completions ``tools`` format (commit_action last)."""
        return [t.spec() for t in self.tools.values()]

    def summaries(self) -> list[tuple[str, str]]:
        """``(name, one line)`` per tool, for prompts."""
        return [(t.name, t.one_line()) for t in self.tools.values()]

    def view(self) -> AsOfView:
        return self.context.view()

    def call(self, name: Any, arguments: Any = None) -> ToolResult:
        """Call a tool; never raises (see the module docstring)."""
        began = time.perf_counter()
        try:  # one view per call, which the tool reads through (its counter is the episode's)
            view = self.env.as_of_view()
            counter = view.counter
        except Exception:  # no episode yet (reset not called): tools answer with an error
            view = counter = None
        before = counter.attempts if counter is not None else 0
        self.context.call_view = view
        try:
            result = self._call(name, arguments, has_episode=counter is not None)
        finally:
            self.context.call_view = None
        result.max_chars = self.max_chars
        if counter is not None:
            result.look_ahead = counter.attempts - before
        result.seconds = time.perf_counter() - began
        return result

    def _call(self, name: Any, arguments: Any, *, has_episode: bool) -> ToolResult:
        if not isinstance(name, str) or name not in self.tools:
            label = name[:80] if isinstance(name, str) else shown(name, 80)
            return _error(label, None, f"unknown tool {label!r}; available tools: {self.names}")
        tool = self.tools[name]
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            if len(arguments) > MAX_ARGUMENT_CHARS:
                return _error(name, None, f"arguments of {name} have {len(arguments)} characters; the limit is "
                              f"{MAX_ARGUMENT_CHARS}")
            arguments, problem = (safe_json.try_loads(arguments, allow_non_finite=True) if arguments.strip()
                                  else ({}, None))
            if problem is not None:
                return _error(name, None, f"arguments of {name} are not valid JSON ({problem})")
        if not isinstance(arguments, dict):
            return _error(name, None, f"arguments of {name} must be a JSON object, got {type(arguments).__name__}")
        problem = safe_json.check_value(arguments, allow_non_finite=True)  # the schema names a non-finite field
        if problem is None and json_size(arguments) > MAX_ARGUMENT_CHARS:
            problem = f"{json_size(arguments)} characters of JSON; the limit is {MAX_ARGUMENT_CHARS}"
        if problem is not None:
            return _error(name, None, f"arguments of {name} break a limit: {problem}")
        if name == COMMIT_TOOL:  # lenient by design: case and synonyms are the protocol's to judge
            parsed = self.protocol.parse_commit(arguments)
            data = {"accepted": parsed.valid, "action": parsed.name, **ignored_fields_note(arguments, tool.parameters)}
            if not parsed.valid:
                data["invalid"] = parsed.invalid
                data["note"] = f"{parsed.name} is taken by default" + (f"; {data['note']}" if "note" in data else "")
            return ToolResult(name, arguments, parsed.valid, data, parsed.invalid, commit=parsed)
        problem = validate_arguments(arguments, tool.parameters)
        if problem is not None:
            return _error(name, arguments, problem, tool.parameters)
        if not has_episode:
            return _error(name, arguments, "no episode is running: reset the env first")
        defaults = {k: v["default"] for k, v in tool.parameters.get("properties", {}).items() if "default" in v}
        kwargs = {**defaults, **arguments}
        assert tool.func is not None  # only commit_action has none, and it was answered above
        try:
            data = tool.func(self.context, **kwargs)
        except (FinEnvsError, ValueError, KeyError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            return _error(name, arguments, _message(message), tool.parameters)
        except Exception as exc:  # a bug must not end an agent's run: record it
            return _error(name, arguments, f"internal error in {name}: {type(exc).__name__}: {_message(exc)}",
                          tool.parameters)
        written = _compact_json(data) if isinstance(data, dict) else None
        if written is not None and len(written) <= self.max_chars:  # fits: cap_output would return it as it is
            truncated = False
        else:
            written = None
            try:
                data, truncated = cap_output(data, self.max_chars, tool.keep)
            except ValueError as exc:
                return _error(name, arguments, str(exc), tool.parameters)
        truncated = truncated or (isinstance(data, dict) and "truncated" in data)
        return ToolResult(name, arguments, True, data, truncated=truncated, written=written)


def _compact_json(data: Any) -> str | None:
    """``data`` as :meth:`ToolResult.text` writes it, when that is also what :func:`cap_output` measures (no NaN or
    infinity, which the two write differently): one write serves both. None otherwise."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return None


def _message(value: Any) -> str:
    """An exception's message (or a KeyError's key), at most :data:`MAX_ERROR_CHARS` characters."""
    if isinstance(value, BaseException):
        try:
            value = str(value)
        except Exception:  # str() of an exception holding a huge integer raises
            value = f"{type(value).__name__}"
    text = value if isinstance(value, str) else shown(value, MAX_ERROR_CHARS)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 30] + f"... [{len(text)} characters]"


def redact_paths(text: str) -> str:
    """``text`` with every absolute file-system path replaced by ``<path>`` (see :data:`_ABSOLUTE_PATH`)."""
    return _ABSOLUTE_PATH.sub("<path>", text)


#: The shortest string argument an error message may not repeat (shorter ones are symbols and codes the message
#: may name in its own words: ``"BUY"``, ``"1d"``).
ECHO_MIN_CHARS = 4
#: The shortest cut copy of an argument's first part that counts as an echo (``shown(value, 40)`` keeps 36).
_ECHO_PREFIX = 8


def _vocabulary(schema: dict[str, Any] | None, key: str) -> set[Any]:
    """The values the tool's schema itself names for ``key`` (an enum, or its items' enum): words of the tool, not
    something the agent made up, so an error may say them."""
    prop = ((schema or {}).get("properties") or {}).get(key) or {}
    words = list(prop.get("enum") or []) + list((prop.get("items") or {}).get("enum") or [])
    return {w for w in words if isinstance(w, str)}


def _argument_strings(arguments: dict[str, Any], schema: dict[str, Any] | None) -> list[tuple[str, str]]:
    """``(name, value)`` of each string argument (and each string in a list argument) long enough to count as an
    echo and not a word of the schema; at most 64 of them, longest first (a value inside a longer one is then
    replaced as part of it)."""
    found: list[tuple[str, str]] = []
    for key, value in list(arguments.items())[:64]:
        values = value if isinstance(value, list) else [value]
        words = _vocabulary(schema, key)
        found += [(str(key)[:40], v) for v in values[:64]
                  if isinstance(v, str) and len(v) >= ECHO_MIN_CHARS and v not in words]
    return sorted(found[:64], key=lambda kv: -len(kv[1]))


def unechoed(message: str, arguments: dict[str, Any] | None, schema: dict[str, Any] | None = None) -> str:
    """``message`` with every copy of an agent's string argument replaced by its name: ``start='x'`` becomes
    ``start``, a quoted or bare copy ``<start>``, and so does a cut copy: a quoted run of at least
    :data:`_ECHO_PREFIX` characters matching its start that ends at the cut (``'abcdefgh...'`` from ``shown``,
    ``'abcdefgh'`` from a slice's repr); a quoted name that merely starts like the value stays. Values the tool's ``schema`` names (enums) are its
    own words and stay. Linear in the message per argument (the message is at most :data:`MAX_ERROR_CHARS`
    characters)."""
    if not isinstance(arguments, dict):
        return message
    for key, value in _argument_strings(arguments, schema):
        label = f"<{key}>"
        message = message.replace(f"{key}={value!r}", key).replace(repr(value), label).replace(value, label)
        if len(value) < _ECHO_PREFIX:
            continue
        head, out, at = value[:_ECHO_PREFIX], [], 0
        while (hit := message.find(head, at)) >= 0:
            end = hit + _ECHO_PREFIX
            while end < len(message) and end - hit < len(value) and message[end] == value[end - hit]:
                end += 1
            quote = message[hit - 1] if hit else ""
            cut = quote in ("'", '"') and (message.startswith("...", end) or message.startswith(quote, end))
            if not cut:  # a cut copy is quoted and ends at the cut (shown, a slice's repr); other text stays
                out.append(message[at:end])
            else:  # the quotes, the cut's "..." and the end reprlib keeps after it go with it
                if message.startswith("...", end):
                    end += 3
                    close = message.find(quote, end, end + len(value) + 1)
                    if close >= 0 and value.endswith(message[end:close]):
                        end = close
                end += 1 if message.startswith(quote, end) else 0
                out += [message[at:hit - 1], label]
            at = end
        message = "".join(out) + message[at:]
    return message


def _error(name: str, arguments: dict[str, Any] | None, message: str, schema: dict[str, Any] | None = None) -> ToolResult:
    message = unechoed(redact_paths(_message(message)), arguments, schema)
    return ToolResult(name, arguments, False, {"error": message}, message)


@dataclass
class ToolUsage:
    """Counts of tool use over a run (efficiency reporting)."""

    calls: int = 0
    errors: int = 0
    look_ahead: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)

    def add(self, result: ToolResult) -> None:
        self.calls += 1
        self.errors += 0 if result.ok else 1
        self.look_ahead += result.look_ahead
        self.by_tool[result.name] = self.by_tool.get(result.name, 0) + 1


__all__ = [
    "COMMIT_TOOL",
    "DEFAULT_MAX_CHARS",
    "MAX_ERROR_CHARS",
    "MIN_MAX_CHARS",
    "TOOLSETS",
    "CLOSED_BOOK_TOOLSET",
    "Tool",
    "ToolBox",
    "ToolContext",
    "ToolResult",
    "ToolUsage",
    "VALIDATION_ONLY",
    "advertised_schema",
    "cap_output",
    "redact_paths",
    "register_tools",
    "validate_arguments",
    "unknown_fields",
    "ignored_fields_note",
]
