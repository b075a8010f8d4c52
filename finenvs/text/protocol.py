"""Text actions: how an env reads an agent's reply, and what it does with a bad one.

Every env that agents can drive with text has a :class:`TextProtocol`: its task
instructions, its action vocabulary, the JSON Schema of its ``commit_action``
tool, and a parser. The text wrapper, the LLM rollout runner and the MCP server
all call the same protocol, so they cannot disagree on what a reply means.

Parsing rules for a reply (:meth:`TextProtocol.parse_text`), first match wins:

1. The whole reply (or a fenced ```json block) is a JSON object with an
   ``"action"`` field: that value.
2. A JSON object embedded in the text with an ``"action"`` field: its value
   (several that disagree make the reply ambiguous).
3. Marker lines ``Action: X``, ``Final action: X``, ``Decision: X``,
   ``Final answer: X`` (case-insensitive, markdown emphasis allowed), where X
   is an action word (letters, digits, ``_ . / -``; trailing punctuation is
   dropped, so pair words like ``AAPL/MSFT`` read whole). Markers whose value is not an action word (``Action:
   get_prices``) are ignored; markers that disagree make the reply ambiguous.
4. The whole reply is one action word (punctuation and emphasis stripped).

Anything else is *invalid*: free text that merely mentions an action ("I would
not BUY here") is never read as one. An invalid reply never raises: it maps to
the protocol's documented default action and carries the reason, which envs put
in ``info["invalid_action"]`` and the scorecard counts as a format error.

Replies longer than the protocol's ``max_chars`` are invalid (reason recorded);
text must be printable Unicode (newlines and tabs allowed); anything that is
not a ``str`` is invalid.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, field
from typing import Any

from gymnasium import spaces

from finenvs.text import safe_json

#: Longest reply a text env accepts (characters). Longer replies are invalid, not truncated.
MAX_ACTION_CHARS = 16_384
#: Longest prompt a text env emits (characters).
MAX_PROMPT_CHARS = 32_768
#: Longest ``commit_action`` (or any tool's) arguments accepted as JSON text (characters).
MAX_ARGUMENT_CHARS = 65_536
#: Longest agent reply accepted on every transport (characters): its text plus each tool call's id, name and
#: arguments (an OpenAI-compatible endpoint, an A2A agent, an in-process agent), or one MCP client call's name
#: and arguments. A longer reply is malformed: the decision takes the protocol's default, and the record keeps
#: its size and a short excerpt, never the reply. Twice :data:`MAX_ARGUMENT_CHARS`, so a reply holds a commit of
#: the longest arguments beside text.
MAX_REPLY_CHARS = 2 * MAX_ARGUMENT_CHARS

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_EMBEDDED = re.compile(r"\{[^{}]*\"action\"\s*:\s*\"([^\"]*)\"[^{}]*\}", re.IGNORECASE)
# A marker is found where its keyword starts, then checked to begin its line (:func:`marker_values`): a
# leading ``^[\s>*_#`-]*`` would rescan every following line from every line start (quadratic).
_MARKER = re.compile(
    r"(?:final\s++)?(?:action|decision|answer)\s*+[*_`]*+\s*+[:=]\s*+[*_`\"']*+\s*+([A-Za-z_][A-Za-z0-9_./-]*+)",
    re.IGNORECASE,
)
_LINE_LEAD = frozenset(" \t\r\f\v>*_#`-")
_WORD_STRIP = " \t\r\n*_`'\".!:;,()[]{}<>"


def starts_line(text: str, at: int, lead: frozenset[str] = _LINE_LEAD) -> bool:
    """Whether only ``lead`` characters stand between the start of ``at``'s line and ``at``.

    Walks back over the run of lead characters only (each run precedes one position), so checking
    every match of a pattern stays linear in the text.
    """
    i = at
    while i > 0:
        ch = text[i - 1]
        if ch == "\n":
            return True
        if ch not in lead and not ch.isspace():
            return False
        i -= 1
    return True


def marker_values(pattern: re.Pattern[str], text: str) -> list[str]:
    """Group 1 of each match of ``pattern`` that begins its line (after markdown lead characters)."""
    return [m.group(1) for m in pattern.finditer(text) if starts_line(text, m.start())]


@dataclass(frozen=True)
class ParsedAction:
    """What a reply means.

    Attributes:
        action: The env action to take (the default when invalid).
        name: Its name in the protocol's vocabulary.
        invalid: Why the reply was not understood (None when it was).
        via: How it was read: ``"json"``, ``"marker"``, ``"word"``, ``"tool"`` or ``"default"``.
        reasoning: Free text the agent gave with a tool commit (may be empty).
    """

    action: Any
    name: str
    invalid: str | None = None
    via: str = "default"
    reasoning: str = ""

    @property
    def valid(self) -> bool:
        return self.invalid is None


def is_printable_text(text: str) -> bool:
    """Printable Unicode, plus newline, carriage return and tab (C-speed string methods only)."""
    return text.isprintable() or text.replace("\n", "").replace("\r", "").replace("\t", "").isprintable()


def reply_problem(text: Any, max_chars: int) -> str | None:
    """Why a reply cannot be read at all (not text, over ``max_chars``, a non-printable character, empty), or
    None. The reason names at most one character of the reply, never echoes it."""
    if not isinstance(text, str):
        return f"the reply is a {type(text).__name__}, not text"
    if len(text) > max_chars:
        return f"the reply has {len(text)} characters; the limit is {max_chars}"
    if not is_printable_text(text):
        bad = next(ch for ch in text if not (ch.isprintable() or ch in "\n\r\t"))
        return f"the reply contains a non-printable character {bad!r}"
    if not text.strip():
        return "empty reply"
    return None


#: Characters :class:`PrintableText` samples from (membership allows any printable Unicode).
SAMPLE_CHARSET = "".join(ch for ch in string.printable if ch not in "\x0b\x0c") + "€£¥éüßçñ—…«»中文日本語한국어😀"


class PrintableText(spaces.Text):
    """Strings of printable Unicode (plus newline, CR and tab) with ``min_length..max_length`` characters.

    ``contains`` accepts any such string; ``sample`` draws from
    :data:`SAMPLE_CHARSET` (ASCII printables and some multi-byte characters).
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length and is_printable_text(x)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"PrintableText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PrintableText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    __hash__ = None  # type: ignore[assignment]  # mutable RNG state; like gymnasium's spaces


@dataclass(frozen=True)
class TextProtocol:
    """An env's text interface: instructions, vocabulary, commit schema, parser.

    Attributes:
        task: Env id the protocol belongs to.
        instructions: Task description for the prompt.
        actions: Action word -> env action (canonical words, upper case).
        synonyms: Extra accepted words -> canonical word.
        default: Canonical word taken when a reply is invalid.
        default_reason: Why that default is safe (documented in prompts and docs).
        max_chars: Longest accepted reply.
        hint: How to write an action, for prompts and error messages, when listing
            every word would be too long (default: the words joined with ``|``).
    """

    task: str
    instructions: str
    actions: dict[str, Any]
    default: str
    default_reason: str
    synonyms: dict[str, str] = field(default_factory=dict)
    max_chars: int = MAX_ACTION_CHARS
    hint: str = ""
    #: Replaces the prompt's generic answer paragraph (protocols whose action is not a word).
    answer_note: str = ""
    #: The ``commit_action`` tool's description, when it should not repeat the prompt's answer paragraph (default:
    #: ``answer_note``, else a line naming the valid actions).
    commit_note: str = ""
    #: State labels whose lines stay the same over an episode (the symbol, the costs, the option sold, ...): the prompt
    #: gives them in an ``## Episode`` section before the recent decisions, inside the prefix every decision of the
    #: episode shares, instead of in ``## Now``.
    episode_labels: tuple[str, ...] = ()

    @property
    def answer_format(self) -> str:
        """What goes after ``Action:`` (the hint, or every word joined with ``|``)."""
        return self.hint or "|".join(self.action_words)

    # ---------------------------------------------------------------- vocabulary
    @property
    def action_words(self) -> list[str]:
        return list(self.actions)

    def word_of(self, action: Any) -> str:
        """The canonical word of an env action."""
        for word, value in self.actions.items():
            if value == action:
                return word
        raise KeyError(f"{action!r} is not an action of {self.task}")

    def _lookup(self, word: str) -> str | None:
        key = word.strip().rstrip(".,;:!").upper()
        if key in self.actions:
            return key
        return self.synonyms.get(key)

    def _ok(self, word: str, via: str, reasoning: str = "") -> ParsedAction:
        return ParsedAction(self.actions[word], word, None, via, reasoning)

    def invalid(self, reason: str) -> ParsedAction:
        """The default action, carrying ``reason``."""
        return ParsedAction(self.actions[self.default], self.default, reason, "default")

    def commit_for(self, parsed: ParsedAction) -> dict[str, Any]:
        """``commit_action`` arguments that mean ``parsed`` (to forward a text reply where only commits go)."""
        return {"action": parsed.name}

    # ---------------------------------------------------------------- trajectories
    def encode(self, action: Any) -> Any:
        """An env action as JSON (what a trajectory records; :meth:`decode` gives the action back)."""
        if hasattr(action, "tolist"):  # numpy scalars and arrays
            return action.tolist()
        if isinstance(action, tuple):
            return [self.encode(a) for a in action]
        return action

    def decode(self, value: Any) -> Any:
        """The env action a trajectory recorded with :meth:`encode` (``finenvs score`` replays it)."""
        return value

    # ---------------------------------------------------------------- commit tool
    def commit_advertised(self) -> dict[str, Any]:
        """The ``commit_action`` schema as the model reads it (default: :meth:`commit_schema`); a protocol may say
        the same in fewer words. Commits are read by :meth:`parse_commit`, and fields are named against
        :meth:`commit_schema`."""
        return self.commit_schema()

    def commit_constrained(self) -> dict[str, Any]:
        """The ``commit_action`` schema a server that constrains decoding to JSON schemas may force (the model
        proxy's schema mode: a grammar, which costs no prompt tokens); default :meth:`commit_advertised`. A protocol
        whose advertised schema leaves out what a grammar can enforce (an enum too long to re-send with every
        request) gives it back here."""
        return self.commit_advertised()

    def commit_schema(self) -> dict[str, Any]:
        """JSON Schema of the ``commit_action`` tool's arguments."""
        return {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": self.action_words},
                # no maxLength here: llama.cpp turns long string bounds into grammars it cannot
                # load; parse_commit cuts reasoning to max_chars instead
                "reasoning": {"type": "string"},  # optional (not required); its name says what it is
            },
            "required": ["action"],
            "additionalProperties": False,
        }

    def parse_commit(self, arguments: Any) -> ParsedAction:
        """Read ``commit_action`` arguments (a dict or a JSON string). Never raises."""
        arguments, problem = AnswerProtocol.commit_arguments(arguments)
        if problem is not None:
            return self.invalid(problem)
        value = arguments.get("action")
        if not isinstance(value, str):
            return self.invalid(
                f"commit_action needs a string 'action', one of {self.action_words}; got {value!r}"[:300]
            )
        word = self._lookup(value)
        if word is None:
            return self.invalid(f"unknown action {value[:50]!r}; valid: {self.action_words}")
        reasoning = arguments.get("reasoning", "")
        reasoning = reasoning[: self.max_chars] if isinstance(reasoning, str) else ""
        return self._ok(word, "tool", reasoning)

    # ---------------------------------------------------------------- free text
    def parse_text(self, text: Any) -> ParsedAction:
        """Read a free-text reply by the rules in the module docstring. Never raises."""
        problem = reply_problem(text, self.max_chars)
        if problem is not None:
            return self.invalid(problem)
        stripped = text.strip()

        whole = _FENCE.fullmatch(stripped)
        candidate = whole.group(1) if whole else stripped
        if candidate.startswith("{"):
            obj, _ = safe_json.try_loads(candidate, allow_non_finite=True)
            if isinstance(obj, dict):
                keys = {k.lower(): k for k in obj if isinstance(k, str)}
                if "action" not in keys:
                    return self.invalid("JSON reply without an 'action' field")
                value = obj[keys["action"]]
                word = self._lookup(value) if isinstance(value, str) else None
                if word is None:
                    return self.invalid(f"JSON 'action' {value!r:.50} is not one of {self.action_words}")
                reasoning = obj.get("reasoning", "")
                return self._ok(word, "json", reasoning if isinstance(reasoning, str) else "")

        embedded = [self._lookup(v) for v in _EMBEDDED.findall(text)]
        embedded_words = {w for w in embedded if w is not None}
        if len(embedded_words) > 1:
            return self.invalid(f"ambiguous: JSON actions {sorted(embedded_words)} disagree")
        if embedded_words:
            return self._ok(embedded_words.pop(), "json")

        markers = {w for w in (self._lookup(v) for v in marker_values(_MARKER, text)) if w is not None}
        if len(markers) > 1:
            return self.invalid(f"ambiguous: action lines {sorted(markers)} disagree")
        if markers:
            return self._ok(markers.pop(), "marker")

        bare = stripped.strip(_WORD_STRIP)
        if bare and " " not in bare and "\n" not in bare:
            word = self._lookup(bare)
            if word is not None:
                return self._ok(word, "word")
        if self.hint:
            return self.invalid(f"no action found; end the reply with a line 'Action: <{self.hint}>'")
        words = " or ".join(f"'Action: {w}'" for w in self.action_words)
        return self.invalid(f"no action found; end the reply with a line {words}")





def trimmed(number: str) -> str:
    """A fixed-point number as written, without its trailing zeros (``+0.01200`` -> ``+0.012``, ``1.0000`` -> ``1``,
    ``-0.00000`` -> ``-0``): the same digits in fewer tokens, for prompt lines re-sent with every request."""
    return number.rstrip("0").rstrip(".") if "." in number else number


def render_prompt(
    protocol: TextProtocol,
    state: dict[str, Any],
    *,
    history: list[str] | None = None,
) -> str:
    """The text observation: instructions and answer format first, then recent decisions and the state at the clock.

    What stays the same over an episode comes first and what changes comes last, so the prompts of an episode's
    decisions share a long byte-identical prefix that providers' prompt caches reuse: the state lines the protocol
    names in ``episode_labels`` go in an ``## Episode`` section before the recent decisions, the rest in the
    ``## Now`` section that ends the prompt.

    Args:
        protocol: The env's protocol.
        state: Label -> value lines (``Symbol``, ``Date``, ``Position``, ...), in order.
        history: One line per recent decision, oldest first: date (or step), action, reward and equity.

    The prompt does not list the tools: their schemas go beside it with every request (chat endpoints, MCP's tool
    list, :meth:`~finenvs.wrappers.TextInterface.tool_specs`), and the runner's system prompt says how to use them.
    """
    lines = [f"# {protocol.task}", "", protocol.instructions.strip()]
    if protocol.answer_note:
        lines += ["", "## Answer", protocol.answer_note]
    else:
        lines += [
            "",
            "## Answer",
            f"Commit with commit_action or end with a line 'Action: <{protocol.answer_format}>'; else {protocol.default} "
            f"({protocol.default_reason}), counted as a format error.",
        ]
    episode = [f"{label}: {value}" for label, value in state.items() if label in protocol.episode_labels]
    if episode:
        lines += ["", "## Episode", *episode]
    if history:
        lines += ["", "## Recent decisions (oldest first: date, action, reward, equity)", *history]
    lines += ["", "## Now"]
    lines += [f"{label}: {value}" for label, value in state.items() if label not in protocol.episode_labels]
    text = "\n".join(lines)
    if len(text) > MAX_PROMPT_CHARS:  # never expected with the shipped protocols; keep the space contract
        text = text[: MAX_PROMPT_CHARS - 20] + "\n[prompt truncated]"
    return text


@dataclass(frozen=True)
class AnswerProtocol(TextProtocol):
    """A protocol whose action is a free-form answer (FinAudit-v0, FinQA-v0), not a word.

    ``parse_text`` never raises: a reply that is not text, too long or not
    printable is marked invalid with ``via="default"`` (nothing was read); any
    other reply is the answer, marked invalid when :meth:`check` finds it
    unreadable. Subclasses give :meth:`check` and ``parse_commit``.
    """

    def invalid(self, reason: str) -> ParsedAction:
        """No answer was read: the empty answer (it scores 0 wherever it goes), carrying ``reason``."""
        return ParsedAction("", self.default, reason, "default")

    def commit_for(self, parsed: ParsedAction) -> dict[str, Any]:
        """The answer as ``commit_action`` arguments: its JSON object, or ``{"answer": text}``."""
        obj = safe_json.try_loads(parsed.action)[0] if isinstance(parsed.action, str) else None
        return obj if isinstance(obj, dict) else {"answer": parsed.action}

    def check(self, answer: Any) -> str | None:  # pragma: no cover - every subclass overrides it
        """Why ``answer`` cannot be scored, or None."""
        raise NotImplementedError

    def answer(self, obj: Any, via: str, reasoning: str = "") -> ParsedAction:
        action = obj if isinstance(obj, str) else json.dumps(obj, default=str)
        return ParsedAction(action, "ANSWER", self.check(obj), via, reasoning)

    @staticmethod
    def commit_arguments(arguments: Any) -> tuple[Any, str | None]:
        """``commit_action`` arguments as an object, or ``({}, why they are not one)``.

        A string is parsed by :func:`finenvs.text.safe_json.loads`; a decoded value is checked against
        the same limits (depth, number size), so what comes back is safe to walk and score. NaN and
        infinities pass: each protocol's own check names the field that is not finite.
        """
        given_text = isinstance(arguments, str)
        if given_text:
            if len(arguments) > MAX_ARGUMENT_CHARS:
                return {}, f"commit_action arguments have {len(arguments)} characters; the limit is {MAX_ARGUMENT_CHARS}"
            if not arguments.strip():
                return {}, None
            arguments, problem = safe_json.try_loads(arguments, allow_non_finite=True)
            if problem is not None:
                return {}, f"commit_action arguments are not JSON ({problem})"
        elif arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return {}, f"commit_action arguments must be a JSON object, not a {type(arguments).__name__}"
        problem = safe_json.check_value(arguments, allow_non_finite=True)  # each protocol checks its numbers
        if problem is None and not given_text:  # an object (an MCP client's): the size limit of the text above
            size = len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str))
            if size > MAX_ARGUMENT_CHARS:
                problem = f"{size} characters of JSON; the limit is {MAX_ARGUMENT_CHARS}"
        if problem is not None:
            return {}, f"commit_action arguments break a limit: {problem}"
        return arguments, None

    def parse_text(self, text: Any) -> ParsedAction:
        if isinstance(text, dict):
            problem = safe_json.check_value(text, allow_non_finite=True)
            if problem is None:
                written = json.dumps(text, default=str)
                if len(written) > self.max_chars:
                    problem = f"the answer has {len(written)} characters of JSON; the limit is {self.max_chars}"
            if problem is not None:
                return ParsedAction("", "ANSWER", f"the answer object breaks a limit: {problem}", "default")
            return self.answer(text, "json")
        # a reply that is not read carries no answer: the action is "", which scores 0 wherever it goes
        if not isinstance(text, str):
            return ParsedAction("", "ANSWER", f"the reply is a {type(text).__name__}, not text", "default")
        if len(text) > self.max_chars:
            return ParsedAction("", "ANSWER", f"the reply has {len(text)} characters; the limit is {self.max_chars}",
                                "default")
        if not is_printable_text(text):
            return ParsedAction("", "ANSWER", "the reply contains a non-printable character", "default")
        return self.answer(text, "json")


__all__ = ["MAX_ACTION_CHARS", "MAX_ARGUMENT_CHARS", "MAX_PROMPT_CHARS", "MAX_REPLY_CHARS", "SAMPLE_CHARSET", "AnswerProtocol", "ParsedAction", "PrintableText",
           "TextProtocol", "is_printable_text", "render_prompt", "reply_problem",
           "trimmed"]
